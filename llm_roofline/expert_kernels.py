"""Fused-MoE kernel shapes the efficiency model prices (efficiency.py): how a kernel's M blocks pad an expert's
rows, how a kernel that walks an expert's rows in token tiles re-reads the weights the L2 cannot hold (restreamed),
and the fused block's inputs an expert GEMM passes to FamilyFit.efficiency (expert_inputs)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from .roofline import Efficiency, stacked
from .units import f64 as _float, where_positive

if TYPE_CHECKING:
    from .ops import Op


# fused-MoE kernels' M blocks from the routed rows per local expert R: rule -> (sizes, whether one fits R). 1: vLLM's
# fused_marlin_moe (int4): R / block < 0.9. 2: OpenAI triton_kernels (GPT-OSS on Hopper): next power of two of floor(R)
M_BLOCK_RULES = {1: ((8.0, 16.0, 32.0, 48.0, 64.0), lambda r, b: r < 0.9 * b),
                 2: ((16.0, 32.0, 64.0, 128.0), lambda r, b: np.floor(r) <= b)}


def m_block_padding(tokens, block_rows, rule: float, spread=0.0) -> np.ndarray:
    """T / (blocks * b): an expert's T rows in whole blocks of b rows, b the smallest of the rule's sizes
    (M_BLOCK_RULES) that fits R = block_rows, else the largest; 1 where T or R is unknown (<= 0) or the rule is none of
    them. blocks = ceil(T / b) where every expert has T rows (spread 0: the collector's balanced routing); where they
    vary about T (spread 1: real routing) the last block is half full on average: max(1, T / b + 1/2), smooth in T."""
    sizes, fits = M_BLOCK_RULES.get(rule, ((), None))
    if not sizes:
        return np.float64(1.0)
    r, t = np.asarray(_float(block_rows)), np.asarray(_float(tokens))
    block = np.full(r.shape, sizes[-1])
    for size in reversed(sizes[:-1]):  # the smallest block that fits wins
        block = np.where(fits(r, size), size, block)
    known = (t > 0) & (r > 0)
    tt = np.where(known, t, 1.0)
    blocks = np.where(_float(spread) > 0, np.maximum(1.0, tt / block + 0.5), np.ceil(tt / block))
    return np.where(known, tt / (blocks * block), 1.0)[()]  # 0-d: a scalar


def block_rows_per_expert(routed, local_experts):
    """Routed rows per local expert (what fused MoE kernels size their M blocks to); 0: unknown."""
    return where_positive(_float(local_experts), lambda e: routed / e, 0.0)


def restreamed_weight_bytes(weight_bytes, rows, block_bytes, l2_bytes: float, tile: float):
    """HBM bytes an expert GEMM reads beyond its weights once: a fused kernel that walks each expert's `rows` in
    tiles of `tile` tokens streams the expert's weights for every tile; where the block's weights of one expert
    (`block_bytes`: gate, up and down) outgrow the L2, each later tile re-reads the share the L2 cannot hold:
    weight_bytes x (ceil(rows / tile) - 1) x max(0, 1 - L2 / block_bytes). 0 where tile, L2 or block_bytes is 0.
    FlashInfer's TRT-LLM MoE kernels (vLLM's default on Blackwell) cap their token tile at 64."""
    if not (tile > 0 and l2_bytes > 0):
        return np.float64(0.0)
    share = where_positive(_float(block_bytes), lambda b: np.maximum(0.0, 1.0 - l2_bytes / b), 0.0)
    passes = np.ceil(np.maximum(_float(rows), 1.0) / tile)
    return (_float(weight_bytes) * (passes - 1.0) * share)[()]


def restreamed(e: Efficiency, ops: "list[Op]", tokens, l2_bytes, tile: float, shape=None) -> Efficiency:
    """e with its memory fraction scaled by hbm / (hbm + re-read weight bytes) (restreamed_weight_bytes): the expert
    GEMMs `ops` of a kernel walking each expert's rows in tiles of `tile` tokens, on an L2 of l2_bytes (None: 0).
    shape: the stacked shape of several ops (efficiency.CalibratedModel.for_ops; None: one op)."""
    def stack(f):
        vals = [getattr(op, f) for op in ops]
        return _float(vals[0]) if shape is None else stacked(vals, shape)
    hbm = stack("hbm_bytes")
    extra = restreamed_weight_bytes(stack("weight_bytes"), tokens, stack("expert_block_bytes"), l2_bytes or 0.0, tile)
    return replace(e, memory=e.memory * where_positive(hbm, lambda h: h / (h + extra), 1.0))


def expert_inputs(routed, token_elems, k, n, width, local_experts, expert_chips) -> dict:
    """An expert GEMM's fused-block inputs of FamilyFit.efficiency: the walked elements (routed rows x (K + N)), the
    rows per local expert, the expert's width, moe_ep, the per-token elements, spread 1 (a model's routing: random)."""
    return dict(walked=routed * (k + n), block_rows=block_rows_per_expert(routed, local_experts), width=width,
                expert_chips=expert_chips, token_elems=token_elems, spread=1.0)
