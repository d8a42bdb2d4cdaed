"""build_ops: ONE operator-graph builder for every phase (prefill, decode step, speculative verify).

A phase is data: `batch` sequences, each with `q_len` new tokens attending to `kv_len` tokens (the
new ones included). Every op is per chip and per instance (one layer of its group); sharding decides
the per-chip shapes (see sharding.py for the styles). Shapes in comments: T = tokens this step on the
chip = b*q, d = d_model, H/KV = heads per chip, hd = head dim, F = d_ff per chip, V = vocabulary.

context.py: Phase, Dtypes and what every builder reads (Ctx, with the parts of a graph kept over several builds);
attention.py: the attention side of a layer; layers.py: the FFN, recurrent mixers, hybrid blocks, the model's head
and tail, and build_ops / handoff_ops over them.
"""

from .context import ATTENTION_MODES, Dtypes, Phase, resolve_dtypes
from .layers import build_ops, handoff_ops

__all__ = ["ATTENTION_MODES", "Dtypes", "Phase", "build_ops", "handoff_ops", "resolve_dtypes"]
