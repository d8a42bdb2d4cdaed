"""Dense remote-code families read as Llama's block (remote_code.py has their rows): the keys of their own that
change no shape, checked and named, and PLaMo-3's legacy window key.

- Solar Pro (SolarForCausalLM, vLLM solar.py): before the layers bskcn_1 and bskcn_2 list, the hidden state and the
  residual are kept; before the layers bskcn_3 and bskcn_4 list, they are blended with the first and second kept pair
  by bskcn_tv[1] (bskcn_tv[0] in training). Elementwise blends without weights.
- Tele-FLM (TeleFLMForCausalLM, vLLM teleflm.py): with use_mup the embeddings are scaled by input_mult and the logits by
  output_mult / mup_scale_factor. Scalars, no weights.
- PLaMo-3 (the hub's configuration_plamo3.py, which vLLM loads): an older config states its window as sliding_window,
  an integer or a per-layer list whose entries are null (full) or the window; the config class keeps the common window
  as window_size and lays out the full layers by sliding_window_pattern alone, as the reader then does.
"""

from __future__ import annotations


from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .key_names import BOUNDS
from .reader import ConfigReader, as_int, bound_of, is_finite_number

_SKIPS = ("bskcn_1", "bskcn_2", "bskcn_3", "bskcn_4")


def plamo3_raw(raw: dict) -> dict:
    """PLaMo-3's legacy sliding_window (an integer, or null / window entries per layer) read as window_size, as
    Plamo3Config does (a window_size the file states beside it is overridden by it, as there)."""
    legacy = raw.get("sliding_window")
    if legacy is None:
        return raw
    out = {k: v for k, v in raw.items() if k != "sliding_window"}
    if not isinstance(legacy, list):
        out["window_size"] = as_int(legacy, "sliding_window")
        return out
    windows = {as_int(v, f"sliding_window[{i}]") for i, v in enumerate(legacy[: BOUNDS["layers"] + 1])
               if v is not None}
    if len(windows) > 1:
        raise UnsupportedArchitectureError(
            f"sliding_window lists windows of {len(windows)} sizes (model_type=plamo3): Plamo3Config keeps one "
            "window_size for every sliding layer and would ignore them")
    if windows:
        out["window_size"] = windows.pop()
    return out


def note_solar(r: ConfigReader) -> None:
    """Solar Pro's backbone skip connections: the layer indices checked, the blends named (not priced)."""
    n_layers = r.count("num_hidden_layers", allow_zero=False)
    lists = {key: r.int_list(key) or [] for key in _SKIPS}
    for key, layers in lists.items():
        bad = next((i for i in layers if i >= n_layers), None)
        if bad is not None:
            raise ModelConfigError(f"{key} lists layer {bad}, past the model's {n_layers} layers")
    for keep, blend in (("bskcn_1", "bskcn_3"), ("bskcn_2", "bskcn_4")):
        if lists[blend] and (not lists[keep] or min(lists[keep]) >= min(lists[blend])):
            raise ModelConfigError(f"{blend} blends at layer {min(lists[blend])} a state {keep} keeps no earlier")
    weights = r.typed("bskcn_tv", (list,), "a list of two blend weights (training, inference)")
    if weights is not None and (len(weights) != 2 or not all(_fraction(w) for w in weights)):
        raise ModelConfigError("bskcn_tv must be two blend weights in [0, 1] (training, inference)")
    blends = len(lists["bskcn_3"]) + len(lists["bskcn_4"])
    if blends:
        r.assume(f"Solar's backbone skip connections: {blends} layers (bskcn_3, bskcn_4) blend a hidden state kept "
                 "earlier (bskcn_1, bskcn_2) into their input; elementwise, without weights, not priced.")


def note_teleflm(r: ConfigReader) -> None:
    """Tele-FLM's muP multipliers (use_mup): the embeddings and the logits scaled by constants, not priced."""
    if not r.boolean("use_mup"):
        return
    for key in ("input_mult", "output_mult", "mup_scale_factor"):
        value = r.get(key)
        if not is_finite_number(value) or value == 0 or abs(value) > bound_of("width"):
            raise ModelConfigError(f"{key} must be a finite nonzero number when use_mup is true, got {shown(value)}")
    r.assume("Tele-FLM use_mup: the embeddings are scaled by input_mult and the logits by output_mult / "
             "mup_scale_factor, elementwise passes not priced.")


def _fraction(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value <= 1
