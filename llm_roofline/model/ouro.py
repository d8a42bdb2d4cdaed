"""Reader of Ouro's looped stack (model_type ouro; ByteDance/Ouro-1.4B, -2.6B, -Thinking: the hub's modeling_ouro.py,
vLLM's models/ouro.py).

Ouro is a Qwen2-style decoder (q, k, v, o and a gated SiLU MLP without bias; RMSNorms before and after attention and
the MLP, 4 a block) whose whole stack of num_hidden_layers layers runs total_ut_steps times in turn for every token,
the weights stored once: vLLM builds one attention (one KV cache) per layer and step, and applies the final norm after
every step. Read as a plain decoder it would price a quarter of the compute, weight reads and KV cache of the
released total_ut_steps 4. Here every group runs count x total_ut_steps times with its weights stored count times
(LayerGroup.loops), and the early-exit gate (Linear(hidden, 1) with bias) is counted beside the final norm.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, shown
from .key_names import BOUNDS
from .reader import ConfigReader
from .spec import LayerGroup


def ouro_loops(r: ConfigReader, groups: tuple[LayerGroup, ...], d_model: int) -> tuple[tuple[LayerGroup, ...], int]:
    """The groups of one pass through the stack, run total_ut_steps times; and the exit gate's parameters."""
    steps = r.count("total_ut_steps", allow_zero=False)
    layers = sum(g.count for g in groups)
    if layers * steps > BOUNDS["layers"]:
        raise ModelConfigError(f"total_ut_steps ({steps}) x num_hidden_layers ({layers}) exceeds the physical bound of "
                               f"{BOUNDS['layers']:,} layer runs")
    threshold = r.get("early_exit_threshold", default=1.0)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise ModelConfigError(f"early_exit_threshold must be a number in [0, 1], got {shown(threshold)}")
    r.assume(f"Ouro: the {layers} layers run total_ut_steps = {steps} times for every token ({layers * steps} layer "
             "runs, each reading the layer's weights and with a KV cache of its own, as vLLM builds one attention per "
             "layer and step); the weights are stored once. The final norm after each step is priced once and the "
             "early-exit gate (hidden_size + 1 parameters, counted) is not run, as in vLLM.")
    if threshold < 1:
        r.assume(f"early_exit_threshold {threshold}: transformers' Ouro may leave the loop early per token; vLLM (and "
                 "this estimate) always runs every step.")
    return tuple(replace(g, count=g.count * steps, loops=steps) for g in groups), d_model + 1
