"""What the efficiency model reads back from a fused attention op (efficiency.py prices with it; calibrate/fit.py
computes the same quantities from the measured tables' columns): keys per query, Q+O elements, the KV bytes of one
context position, KV streams, a sliding window's rows and keys, a prefill's query tiles; whether a point of an
op's grid is decode-like, and which decode family (bf16 or 8-bit KV cache) prices it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .roofline import where as _where
from .units import DTYPE_BITS, everywhere, f64 as _float, where_positive

if TYPE_CHECKING:
    from .ops import Op

KV8_BITS = 8.0  # a KV cache stored in this many bits or fewer (fp8, int8) decodes with the attention_decode_fp8 fit


def attention_shape(op: "Op", decode: bool) -> dict:
    """keys (mean keys per query), elems (Q+O elements) and kv_row_bytes of a fused attention op, read back
    from its counts: act_bytes = B*q*H*(dqk+dv)*e (e = bytes of the compute dtype), flops = B*pairs*2H*(dqk+dv)
    and kv_bytes = B*kv*n_kv*(dqk+dv)*e_kv, so elems = act_bytes / e, keys = pairs / q = flops * e / (2 *
    act_bytes) and, for decode (pairs = kv), kv_row_bytes = kv_bytes / keys = B*n_kv*(dqk+dv)*e_kv.
    Decode also returns windowed_heads = B*q*H = elems / (dqk+dv) for an op with a sliding window (else 0),
    kv_streams = B*n_kv (B = op.seqs, n_kv = H / op.q_per_kv; 0 where there is no sequence) and window_keys = keys
    where the context is past the window (op.kv_len > op.window > 0; else 0: constant on each side of the window).
    Decode keys = pairs = min(kv, window) too: its only use is the compute factor f(keys, compute_keys_half),
    which makes the compute TIME flops / (peak * cm * keys / (keys + h)) = (flops + h * 2 * act / e) / (peak * cm)
    affine in the context (flops ~ pairs, act fixed), so the closed-form decode sum stays exact; kv_row_bytes is
    fixed within a decode stretch (the floor grows with batch x KV heads); split_kv and regrouped: decode_kernels;
    unsplit: unsplit().
    Prefill also returns its query tiles (query_tiles: B = op.seqs, q = tokens / B, H = elems / (tokens * (dqk+dv));
    0 when op.seqs is unknown)."""
    e = DTYPE_BITS.get(op.compute_dtype, 16) / 8
    act = _float(op.act_bytes)
    keys = _positive_ratio(_float(op.flops) * e, 2.0, act)  # no division by 0
    if decode:
        row = _positive_ratio(_float(op.kv_bytes), 1.0, keys)
        w = getattr(op, "window", 0.0)
        heads = windowed_heads(act / e, op.head_dim, op.q_per_kv) if w > 0 else 0.0
        past = _where((_float(getattr(op, "kv_len", 0.0)) > w) & (w > 0), keys, 0.0) if w > 0 else 0.0
        streams = _kv_streams(op, act / e)
        split, regrouped = decode_kernels(_float(getattr(op, "seqs", 0.0)), _float(op.tokens), streams, keys,
                                          op.head_dim, op.q_per_kv, w)
        return {"keys": keys, "elems": act / e, "kv_row_bytes": row, "windowed_heads": heads,
                "kv_streams": streams, "window_keys": past, "split_kv": split, "regrouped": regrouped,
                "unsplit": unsplit(op.q_per_kv, past, getattr(op, "kv_bits", 0.0))}
    b, t = _float(getattr(op, "seqs", 0.0)), _float(op.tokens)
    known = (b > 0) & (t > 0) & (op.head_dim > 0)
    if everywhere(known):
        h = act / e / (2.0 * max(op.head_dim, 1e-9)) / t
        head_tiles, group_tiles = query_tiles(b, t / b, h, op.q_per_kv)
        return {"keys": keys, "elems": act / e, "head_tiles": head_tiles, "group_tiles": group_tiles}
    tt = _where(known, t, 1.0)
    h = _where(known, act / e / (2.0 * max(op.head_dim, 1e-9)) / tt, 0.0)  # query heads: (B*q*H) / (B*q)
    head_tiles, group_tiles = query_tiles(_where(known, b, 0.0), tt / _where(known, b, 1.0), h, op.q_per_kv)
    return {"keys": keys, "elems": act / e, "head_tiles": head_tiles, "group_tiles": group_tiles}


KV_BLOCKS = (64, 128, 256)  # every value kv_block_keys takes


def kv_block_keys(head_dim) -> np.ndarray:
    """Keys per KV block of FlashAttention-2's split-KV decode kernel (flash_fwd_launch_template.h, kBlockN of
    run_mha_fwd_splitkv_dispatch: 256 keys for head_dim <= 64, 128 up to 128, 64 beyond): a decode over at most one
    block is never split, so it launches no combine kernel. Each is a decode breakpoint (KV_BLOCKS,
    estimate.kernel_breakpoints)."""
    d = _float(head_dim)
    return np.where(d <= 64, 256.0, np.where(d <= 128, 128.0, 64.0))[()]


def query_tile_rows(group, head_dim) -> np.ndarray:
    """Query rows a KV head's decode tile holds in FlashInfer's tensor-core decode (vLLM's FlashInfer backend runs
    BatchDecodeWithPagedKVCacheWrapper with use_tensor_cores=True: its FA2 prefill kernel over the G query heads of
    one query row each, packed as G rows): the CTA tile FA2DetermineCtaTileQ picks for G packed rows, 16 up to 16,
    64 up to 64 (and beyond at head_dim >= 256), else 128; a group past one tile fills whole tiles."""
    g, d = np.maximum(_float(group), 1.0), _float(head_dim)
    tile = np.where(g <= NARROW_TILE_ROWS, NARROW_TILE_ROWS, np.where((g <= 64.0) | (d >= 256.0), 64.0, 128.0))
    return (np.ceil(g / tile) * tile)[()]


NARROW_TILE_ROWS = 16.0  # FlashInfer's smallest CTA tile (one warp's 16 query rows, the KV split over four warps)


def wide_tile_weight(group, head_dim) -> np.ndarray:
    """(head_dim / 128)^2 where that tile is wider than NARROW_TILE_ROWS (G > 16: four warps of query rows, each
    walking the whole KV block), else 0: the weight of the wider tile's time per kernel (overhead_wide_tile_s). L40S,
    fp8 KV: +1 us at head_dim 64 and +7 us at 128 over the G <= 16 kernel, at every batch (1-256 sequences) and
    context (2-8k keys); a square of head_dim fits the two (in-sample loss 0.591 / 0.550 / 0.547 for a power 1 / 2 /
    3, 0.630 flat); the cause inside the kernel is not identified."""
    d = _float(head_dim)
    return np.where(_float(group) > NARROW_TILE_ROWS, (d / 128.0) ** 2, 0.0)[()]


def windowed_heads(elems, head_dim, group):
    """B*q*(H - n_kv) of a sliding-window decode of Q+O `elems` = B*q*H*(dqk+dv): the query heads FlashAttention-2
    runs in tiles of their own where, without a window, it packs a KV head's G query heads into one (0 for MHA,
    G = 1: one head a tile either way; L40S, bf16 KV, 64 keys, window 128: 1.04x the unwindowed time at G = 1,
    2.7x at G = 8)."""
    g = np.maximum(_float(group), 1.0)
    return where_positive(_float(head_dim), lambda d: elems / (2.0 * d) * (1.0 - 1.0 / g), 0.0)


def decode_kernels(seqs, tokens, streams, keys, head_dim, group, window) -> tuple[np.ndarray, np.ndarray]:
    """(split_kv, regrouped), each 1 or 0, of a decode-like attention of B = seqs sequences, `tokens` query rows,
    S = streams (B x n_kv) KV streams, keys per query, G = group query heads per KV head and a sliding window (0: none).
    G = 1 (MHA) is neither: one CTA walks a stream's keys, as FlashAttention-2 runs it. split_kv: the keys span more
    than one KV block (kv_block_keys), so the kernel may split them and combine the splits. regrouped: with one query
    row per sequence and no window, FlashAttention-2 folds a KV head's G query heads into its query tile
    (mha_varlen_fwd, seqlenq_ngroups_swapped) by reshaping Q (B, 1, n_kv*G, d) to (B*G, n_kv, d) and O back: a view
    where B = 1 or n_kv = 1, else a copy kernel each way."""
    gqa = _float(group) > 1.0
    split = gqa & (_float(keys) > kv_block_keys(head_dim))
    b, s = _float(seqs), _float(streams)
    regrouped = gqa & (_float(window) <= 0) & (b >= 2.0) & (s >= 2.0 * b) & (_float(tokens) == b)
    return split.astype(np.float64)[()], regrouped.astype(np.float64)[()]


def unsplit(group, window_keys, kv_bits) -> np.ndarray:
    """1 where FlashAttention-2's decode (vLLM's kernel for a 16-bit KV cache on Ampere / Ada) gives each KV stream
    one CTA walking all its keys, with no split-KV (memory_unsplit_half's rate, overhead_unsplit_s): MHA (G = 1),
    and a 16-bit KV cache past its sliding window (window_keys > 0): the splits are cut from the whole context, so
    the window's keys fall in one of them (L40S, bf16 KV, kv 32k, window 8192: 167 us at 1 to 16 sequences, ~25 GB/s
    a stream, where the unwindowed fit gave 21-34 us). The 8-bit caches' kernels split a window's keys as any
    others (L40S fp8 rows past a 1024 / 8192 window: 0.94 / 1.05x the fit without this rate). Else 0. Kernels that
    split every stream fit memory_unsplit_half near memory_streams_half (Hopper, Blackwell)."""
    past16 = (_float(window_keys) > 0.0) & (_float(kv_bits) > KV8_BITS)
    return ((_float(group) == 1.0) | past16).astype(np.float64)[()]


def _kv_streams(op: "Op", elems) -> np.ndarray:
    """B*n_kv of a decode op: B = op.seqs, n_kv = H / op.q_per_kv, H = elems / (tokens * (dqk+dv)); 0: no sequence."""
    b, t, d, g = _float(getattr(op, "seqs", 0.0)), _float(op.tokens), 2.0 * op.head_dim, op.q_per_kv
    if d <= 0 or g <= 0:
        return 0.0
    known = (b > 0) & (t > 0)
    if everywhere(known):
        return b * (elems / (t * d)) / g
    return _where(known, b * (elems / (_where(known, t, 1.0) * d)) / g, 0.0)


def _positive_ratio(num, k: float, den):
    """num / (k * den) where den > 0, else 0 (no division by 0)."""
    return where_positive(den, lambda d: num / (k * d), 0.0)


Q_TILE = 128.0  # query rows per tile of the FlashAttention-style prefill kernels (FA2 / FA3 / TRT-LLM, head_dim <= 128)


def query_tiles(seqs, q, heads, group) -> tuple[np.ndarray, np.ndarray]:
    """(head tiles, group tiles) of a prefill of B = seqs sequences of q query rows, H = heads, G = group: one
    query head's q rows fill ceil(q / Q_TILE) tiles (B*H*ceil(q/Q_TILE): a 16-token sequence still runs a whole
    tile); a kernel packing a GQA group's G heads into one tile fills B*(H/G)*ceil(q*G/Q_TILE). 0 where B = 0."""
    b, q, h, g = _float(seqs), _float(q), _float(heads), np.maximum(_float(group), 1.0)
    return b * h * np.ceil(q / Q_TILE), b * (h / g) * np.ceil(q * g / Q_TILE)


def decode_family(op: "Op") -> str:
    """The decode family of an attention op: its KV cache in <= 8 bits (attention_decode_fp8) or not."""
    return "attention_decode_fp8" if 0 < getattr(op, "kv_bits", 0.0) <= KV8_BITS else "attention_decode"


def decode_points(op: "Op"):
    """Where an attention op is decode-like (a bool, or a bool array over its grid): it streams a KV cache larger than
    its Q/O traffic, kv_bytes > act_bytes, with too few query rows to fill one query tile of a prefill kernel, q x G
    <= Q_TILE (q query tokens per sequence, G the GQA group: a decode, or a short chunk after a long prefix). A decode
    step reads kv_len * n_kv*(dqk+dv) cache elements per sequence against H*(dqk+dv) Q/O elements, so it is decode
    once kv_len > H / n_kv (the GQA group; MLA: ~70 tokens); prefill without a prefix reads about 1/G of its Q/O
    bytes. A longer chunk after a long prefix (chunked prefill of a long prompt) fills its tiles and runs the prefill
    kernel, whatever the prefix: the decode fit's compute side, set by one-token rows, does not describe it.
    A query of one token per sequence (tokens = seqs) is a decode too: vLLM runs it with its decode kernel (B200:
    TRT-LLM decode for the 1-token rows of the prefill table), whatever the KV length."""
    kv, act = _float(op.kv_bytes), _float(op.act_bytes)
    b, t = _float(getattr(op, "seqs", 0.0)), _float(op.tokens)
    rows = t / np.where(b > 0, b, 1.0) * np.maximum(_float(getattr(op, "q_per_kv", 0.0)), 1.0)  # per KV head
    short = (b <= 0) | (rows <= Q_TILE)  # unknown sequences: by bytes alone
    return ((kv > act) & short) | ((b > 0) & (t == b))


def is_decode_attention(op: "Op") -> bool:
    """Whether every point of an attention op's grid is decode-like (decode_points): family_of's family (and band) of
    the op; one decode-like at some points only is priced point by point (CalibratedModel.for_op)."""
    return bool(np.all(dec := decode_points(op))) and np.size(dec) > 0
