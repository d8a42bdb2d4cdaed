"""openPangu-Embedded (model_type PanguEmbedded; remote code modeling_openpangu_dense.py, PanguEmbeddedForCausalLM):
Llama's decoder with a bias on q, k, v and o when `bias` is true (its config class's default). Its table row is in
remote_code.py; this module refuses what vLLM's openpangu.py builds for the same class from keys the checkpoint's
code never reads (windows, sandwich norms, sink keys and values, MLA, experts), and attention_bias / qkv_bias that
that disagree with `bias` (vLLM reads them, the checkpoint's code does not).

openPangu's MoE checkpoints (PanguUltraMoEForCausalLM, PanguProMoEV2ForCausalLM, PanguProMoEForCausalLM,
OpenPanguV2ForCausalLM) are refused by class name (refusals.REFUSED_ARCHITECTURES).
"""

from __future__ import annotations

from ..errors import UnsupportedArchitectureError
from .reader import ConfigReader

# keys through which vLLM's openpangu.py builds another layer from a PanguEmbeddedForCausalLM config
_VLLM_ONLY = {
    "interleaved_sliding_window": "sliding-window layers",
    "sandwich_norm": "norms after attention and MLP",
    "param_sink_number": "static sink keys and values",
    "qk_nope_dim": "a sink attention of its own head widths",
    "v_channels": "a sink attention of its own head widths",
    "kv_lora_rank": "MLA",
    "n_routed_experts": "experts",
    "use_mhc": "mHC residual streams",
}


def note_pangu_embedded(r: ConfigReader) -> None:
    """Refuse the keys vLLM reads and the checkpoint's code does not; is_causal false is an encoder."""
    for key, what in _VLLM_ONLY.items():
        value = r.get(key)
        if value not in (None, False, 0, [], {}):
            raise UnsupportedArchitectureError(
                f"{key} is set (model_type=PanguEmbedded): vLLM's openpangu.py builds {what} from it, the checkpoint's "
                "modeling_openpangu_dense.py does not; not read")
    bias = r.flag("bias")  # vLLM: q/k/v/o bias = attention_bias or bias, q/k/v's = qkv_bias where stated
    for key, differs in (("attention_bias", r.flag("attention_bias") and not bias),
                         ("qkv_bias", r.get("qkv_bias") is not None and r.flag("qkv_bias") != bias)):
        if differs:
            raise UnsupportedArchitectureError(
                f"{key} differs from bias (model_type=PanguEmbedded): the checkpoint's code puts bias={bias} on q, k, "
                f"v and o, vLLM's openpangu.py reads {key}; not read")
    r.switch("is_causal", True, "a bidirectional (encoder) stack is not modelled")
