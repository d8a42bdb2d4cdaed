"""Parameter counts of every causal-LM default config transformers ships, against transformers' own model class.

For each model type in transformers' causal-LM mapping: its config class's defaults are read by llm_roofline (the
reader never imports transformers: the config goes through JSON), and the same config builds transformers' model on
the meta device (no weights allocated); the parameters are summed, the vision / audio towers and projectors left out
as the reader leaves them out. Prints how many parse, how many transformers builds, and every type off by more than
0.005 % (or that transformers cannot build). The README's "Model families" paragraph quotes this.

Maintainer tool: needs torch and transformers, which are not dependencies of the package (a separate virtualenv:
`pip install torch --index-url https://download.pytorch.org/whl/cpu transformers`), and takes about a minute.

    PYTHONPATH=. python benchmarks/check_param_counts.py
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import warnings

_TOWER_WORDS = ("vision", "visual", "audio", "multi_modal_projector", "embed_vision", "embed_audio", "mm_projector",
               "embed_tokens_extend")  # Phi-4-multimodal: its image and audio towers and projectors


def _reference(auto_model, cfg) -> int:
    """transformers' parameter count of the text model and LM head, built on the meta device."""
    import torch

    with torch.device("meta"):
        model = auto_model.from_config(cfg)
    return sum(p.numel() for n, p in model.named_parameters() if not any(w in n for w in _TOWER_WORDS))


def main() -> int:
    try:
        if importlib.util.find_spec("torch") is None:  # the meta device
            raise ImportError("No module named 'torch'")
        from transformers import CONFIG_MAPPING, AutoModelForCausalLM
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    except ImportError as e:
        print(f"check_param_counts: needs torch and transformers (not dependencies of the package): {e}",
              file=sys.stderr)
        return 2
    import llm_roofline as lr

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    parsed, built, off = 0, 0, []
    for model_type in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES):
        try:
            cfg = CONFIG_MAPPING[model_type]()
            ours = lr.load_model(json.loads(json.dumps(cfg.to_dict(), default=str))).params_total
        except lr.RooflineError:
            continue
        except Exception:  # noqa: BLE001 - a config class that cannot build its own defaults
            continue
        parsed += 1
        try:
            ref = _reference(AutoModelForCausalLM, cfg)
        except Exception as e:  # noqa: BLE001 - transformers cannot build this default config
            off.append(f"{model_type:24s} {ours:>18,}  transformers cannot build it: {' '.join(str(e).split())[:70]}")
            continue
        built += 1
        gap = (ours - ref) / ref * 100
        if abs(gap) > 0.005:
            off.append(f"{model_type:24s} {ours:>18,}  transformers {ref:>18,}  {gap:+.4f} %")
    within = built - sum(1 for line in off if "%" in line and abs(float(line.split()[-2])) > 0.5)
    print(f"{parsed} of {len(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)} causal-LM default configs parse; transformers "
          f"builds {built}; {within} of those within 0.5 % of its count")
    print("\n".join(off))
    return 0


if __name__ == "__main__":
    sys.exit(main())
