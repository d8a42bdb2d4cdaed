"""Prediction and fitting of the efficiency model (efficiency.py) on measured kernel timings.

Prediction (`predict`) prices every measured row with roofline.score / roofline.score_collective (the only
place terms become a time) under a family's FamilyFit. Fitting (`fit`): Nelder-Mead (simplex.py: numpy only, fixed
start, deterministic) on a robust loss of log(predicted / measured), per family; parameters are rounded to four
significant digits, as the chip TOML stores them, so two fits of the same rows give the same parameters.
"""

from __future__ import annotations

import datetime as _dt
import math
import time
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

import numpy as np

from ..attention_shapes import decode_kernels, query_tiles, unsplit, wide_tile_weight, windowed_heads
from ..chip_fits import attention_from_gemm
from ..collectives import CollectiveTerms, collective_terms
from ..expert_kernels import block_rows_per_expert, restreamed_weight_bytes
from ..gemm_tiles import SM89_FP8, tiled
from ..efficiency import (ATTENTION_FAMILIES, COLLECTIVE_FAMILIES, DECODE_FAMILIES, FAMILIES, GEMM_FAMILIES, IDEAL_FIT,
                          MOE_FAMILIES, PARAM_TOP, PARAMS, CalibratedModel, FamilyFit)
from ..hardware import Chip, load_chip
from ..roofline import score, score_collective, with_serial_share
from ..units import dtype_bytes
from .aic_vllm import MOE_WEIGHT_BITS
from .measurements import single_node
from .simplex import nelder_mead

if TYPE_CHECKING:
    import pandas as pd

MEMORY_FAMILIES = ("elementwise", "activation", "rope", "norm", "embedding")


# =============================================================================== prediction
@dataclass(frozen=True)
class _Terms:
    """Ideal-roofline inputs of a family's rows, computed once (the fit re-scores them many times).
    Collectives carry their alpha-beta terms (`comm`), every other family flops, bytes and peaks."""

    fam: str
    tokens: np.ndarray
    kernels: np.ndarray
    flops: np.ndarray | None = None
    bytes: np.ndarray | None = None
    peak: np.ndarray | None = None
    hbm: float = 1.0
    comm: CollectiveTerms | None = None
    keys: np.ndarray | float = 0.0  # attention: mean keys per query (decode: the KV length; attention_shapes)
    elems: np.ndarray | float = 0.0  # attention: Q+O elements
    kv_row_bytes: np.ndarray | float = 0.0  # decode attention: (bytes - Q+O bytes) / keys
    cols: np.ndarray | float = 0.0  # GEMM: output columns n
    dim: np.ndarray | float = 0.0  # attention: head_dim
    out_elems: np.ndarray | float = 0.0  # GEMM: output elements m * n
    group: np.ndarray | float = 0.0  # attention: query heads per K/V head
    walked: np.ndarray | float = 0.0  # moe: walked-row elements per kernel
    token_elems: np.ndarray | float = 0.0  # moe: hidden-vector elements passed once per token, per kernel
    chips: np.ndarray | float = 0.0  # collectives: GPUs in the group
    depth: np.ndarray | float = 0.0  # GEMM: inner dimension k (split-K)
    windowed_heads: np.ndarray | float = 0.0  # decode attention with a sliding window: query rows x heads
    head_tiles: np.ndarray | float = 0.0  # prefill: query tiles per query head (attention_shapes.query_tiles)
    group_tiles: np.ndarray | float = 0.0  # prefill: query tiles per GQA group
    kv_streams: np.ndarray | float = 0.0  # decode attention: sequences x KV heads
    window_keys: np.ndarray | float = 0.0  # decode attention past its sliding window: its keys (the window)
    width: np.ndarray | float = 0.0  # moe: the expert's intermediate size per GPU (n)
    block_rows: np.ndarray | float = 0.0  # moe: routed rows per local expert (routed / experts; 0: unknown)
    expert_chips: np.ndarray | float = 0.0  # moe: chips the routed experts are split over (moe_ep; 0: unknown)
    split_kv: np.ndarray | float = 0.0  # decode attention: 1 where it may split its keys (decode_kernels)
    regrouped: np.ndarray | float = 0.0  # decode attention: 1 where FlashAttention-2 copies Q and O to fold a GQA group
    unsplit: np.ndarray | float = 0.0  # decode attention: 1 where one CTA walks a stream (attention_shapes.unsplit)
    wide_tiles: np.ndarray | float = 0.0  # decode attention: attention_shapes.wide_tile_weight (G > 16), else 0
    spread: np.ndarray | float = 0.0  # moe: 1 where the experts' rows vary (skewed routing: m_block_padding), 0: balanced
    in_l2: np.ndarray | float = 0.0  # 1 where the row's working set fits in the chip's L2 (onchip_bytes)
    weights: np.ndarray | float = 0.0  # moe: the touched experts' weight bytes of the block (touched x block)
    block: np.ndarray | float = 0.0  # moe: one expert's weight bytes in the block (gate, up, down)
    l2: float = 0.0  # the chip's L2 bytes (onchip_bytes; 0: unknown)
    units: float = 0.0  # the chip's SMs (onchip_units; 0: unknown)
    tile_rule: float = 0.0  # the GEMM kernel's tile rule on this chip (_TILE_RULE; gemm_tiles), 0: none

    @property
    def expert_parallel(self):
        """1 for the rows run under expert parallelism (expert_chips > 1: overhead_ep_s prices them), else 0."""
        return (np.asarray(self.expert_chips) > 1.0).astype(np.float64)

    @property
    def unsplit_streams(self):
        """kv_streams of the rows memory_unsplit_half prices (attention_shapes.unsplit), else 0."""
        return np.where(np.asarray(self.unsplit) > 0, self.kv_streams, 0.0)

    def time_s(self, p: FamilyFit) -> np.ndarray:
        """roofline.score with this family's efficiency: the calibrated (or, with IDEAL_FIT, ideal) time."""
        tokens = 0.0 if self.fam == "attention" else self.tokens  # decode: tokens = sequences (a floor per sequence)
        eff = p.efficiency(tokens, self.kernels, keys=self.keys, elems=self.elems, kv_row_bytes=self.kv_row_bytes,
                           cols=self.cols, dim=self.dim, out_elems=self.out_elems, group=self.group,
                           walked=self.walked, chips=self.chips, depth=self.depth, windowed_heads=self.windowed_heads,
                           head_tiles=self.head_tiles, group_tiles=self.group_tiles, kv_streams=self.kv_streams,
                           window_keys=self.window_keys, width=self.width, block_rows=self.block_rows,
                           expert_chips=self.expert_chips, token_elems=self.token_elems, split_kv=self.split_kv,
                           regrouped=self.regrouped, spread=self.spread, unsplit=self.unsplit)
        if self.comm is not None:
            return score_collective(self.comm, eff).t_s
        eff = tiled(eff, p, self.tokens, self.cols, self.units)  # under a tile rule: its waves over the SMs
        hbm = self.hbm
        if p.memory_l2_extra:  # replays of a working set within L2 (_terms): read at (1 + x) x the HBM rate
            gain = 1.0 + p.memory_l2_extra * self.in_l2
            hbm = hbm * gain
            if p.memory_streams_half or p.memory_unsplit_half:  # S / hypot(S, h) at g x the rate is g x its rate for
                # S / g: a decode stream's own rate (its CTAs') stays what it is, whichever level serves it
                eff = replace(eff, memory=p.memory(tokens, np.asarray(self.kv_streams) / gain, self.window_keys,
                                                   self.unsplit))
        if p.memory_token_tile:  # a fused expert kernel re-reading the weights its L2 cannot hold (expert_kernels)
            extra = restreamed_weight_bytes(self.weights, self.tokens, self.block, self.l2, p.memory_token_tile)
            eff = replace(eff, memory=eff.memory * self.bytes / (self.bytes + extra))
        eff = with_serial_share(eff, self.flops, self.bytes, self.peak, hbm, p.memory_serial)
        return score(self.flops, self.bytes, peak_flops_per_s=self.peak, hbm_bytes_per_s=hbm, efficiency=eff).t_s


def _terms(df: "pd.DataFrame", chip: Chip, fam: str) -> _Terms:
    tokens = df["m"].to_numpy(np.float64)
    kernels = df["kernels"].to_numpy(np.float64)
    if fam in COLLECTIVE_FAMILIES:
        return _Terms(fam, tokens, kernels, comm=_collective_terms(df, chip), chips=df["tp"].to_numpy(np.float64))
    if fam in GEMM_FAMILIES + MOE_FAMILIES + ATTENTION_FAMILIES:
        peaks = {d: chip.peak_flops_per_s(d) for d in set(df["dtype"])}
        peak = df["dtype"].map(peaks).to_numpy(np.float64)
    else:
        peak = np.full(len(df), chip.peak_flops_per_s("vector"))
    keys = df["keys"].to_numpy(np.float64) if fam in ATTENTION_FAMILIES and "keys" in df else np.zeros(len(df))
    elems = df["elems"].to_numpy(np.float64) if fam in ATTENTION_FAMILIES and "elems" in df else np.zeros(len(df))
    flops, nbytes = df["flops"].to_numpy(np.float64), df["bytes"].to_numpy(np.float64)
    row = heads = streams = past = split = regrouped = walks = wide = 0.0
    cols = df["n"].to_numpy(np.float64) if fam in GEMM_FAMILIES else 0.0
    out = tokens * cols
    dim = df["head_dim"].to_numpy(np.float64) if fam in ATTENTION_FAMILIES and "head_dim" in df else 0.0
    group = df["q_per_kv"].to_numpy(np.float64) if fam in ATTENTION_FAMILIES and "q_per_kv" in df else 0.0
    walked = df["walked"].to_numpy(np.float64) / kernels if fam in MOE_FAMILIES and "walked" in df else 0.0
    width = blocks = ep = per_token = weights = block = 0.0
    if fam in MOE_FAMILIES:  # normalize fills the optional columns (0: unknown)
        width, ep, per_token = (df[c].fillna(0.0).to_numpy(np.float64) for c in ("n", "ep", "token_elems"))
        per_token = per_token / kernels
        blocks = block_rows_per_expert(df["routed"].to_numpy(np.float64), df["experts"].to_numpy(np.float64))
        weights, block = _expert_weights(df, fam)
    if fam in DECODE_FAMILIES:  # KV bytes per context position over the batch, as attention_shapes.attention_shape
        e = df["dtype"].map(dtype_bytes).to_numpy(np.float64)
        row = np.where(keys > 0, (nbytes - elems * e) / np.where(keys > 0, keys, 1.0), 0.0)
        kv_elem = 2.0 * dim * df["kv_bits"].to_numpy(np.float64) / 8.0 if "kv_bits" in df else 0.0
        # B * n_kv (attention_shapes._kv_streams counts B * H / G: the same for the tables' rows, none of them MLA)
        streams = np.where(kv_elem > 0, row / np.where(kv_elem > 0, kv_elem, 1.0), 0.0)
        w = df["window"].to_numpy(np.float64) if "window" in df else np.zeros(len(df))
        # as attention_shapes.attention_shape: the unpacked query heads where a window is set; keys past the window
        heads = np.where(w > 0, windowed_heads(elems, dim, group), 0.0)
        if "kv_len" in df:
            past = np.where((w > 0) & (df["kv_len"].to_numpy(np.float64) > w), keys, 0.0)
        split, regrouped = decode_kernels(tokens, tokens, streams, keys, dim, group, w)  # B sequences, 1 row each
        walks = unsplit(group, past, df["kv_bits"].to_numpy(np.float64) if "kv_bits" in df else 0.0)
        wide = wide_tile_weight(group, dim)
    tiles = _prefill_tiles(tokens, keys, elems, dim, group) if fam == "attention" else (0.0, 0.0)
    # the tables replay their timed loop on the same buffers (CUDA graph), so a working set within L2 is read from L2
    # after the first replay; an inference step streams each layer's weights and KV from HBM between other layers'
    # (the product prices no L2): L40S decode attention over 16-100 MB reads at up to 2.9x its 864 GB/s, none past
    # ~110 MB (its 96 MiB L2); its bf16 GEMMs at M = 1 (six layers a loop: working_set) only below ~16-24 MB
    in_l2 = (df["working_set"].to_numpy(np.float64) <= chip.onchip_bytes).astype(np.float64) \
        if chip.onchip_bytes and "working_set" in df else 0.0
    return _Terms(fam, tokens, kernels, flops, nbytes, peak, chip.hbm_bytes_per_s, in_l2=in_l2, head_tiles=tiles[0],
                  group_tiles=tiles[1], kv_streams=streams, window_keys=past,
                  keys=keys if fam in ATTENTION_FAMILIES else 0.0,
                  elems=elems, kv_row_bytes=row, cols=cols, dim=dim, out_elems=out, group=group, walked=walked,
                  windowed_heads=heads, width=width, block_rows=blocks, expert_chips=ep, token_elems=per_token,
                  depth=_depth(df, fam), split_kv=split, regrouped=regrouped, unsplit=walks, wide_tiles=wide,
                  weights=weights,
                  block=block, l2=chip.onchip_bytes or 0.0, units=chip.onchip_units or 0.0,
                  tile_rule=_TILE_RULE.get((fam, chip.family), 0.0) if chip.onchip_units else 0.0)


def _expert_weights(df: "pd.DataFrame", fam: str):
    """(the touched experts' block weight bytes, one expert's) of fused-MoE rows: a row's block of T rows per touched
    expert over h x i/tp (k, n) does 6 x pairs x h x i FLOPs, so touched = FLOPs / (6 h i T); one expert's block
    holds gate, up and down, 3 h i weights."""
    k, n, m = (df[c].to_numpy(np.float64) for c in ("k", "n", "m"))
    block = 3.0 * k * n * MOE_WEIGHT_BITS[fam] / 8.0
    ok = (k > 0) & (n > 0) & (m > 0)
    touched = np.where(ok, df["flops"].to_numpy(np.float64) / np.where(ok, 6.0 * k * n * m, 1.0), 0.0)
    return touched * block, np.where(ok, block, 0.0)


def _depth(df: "pd.DataFrame", fam: str):
    """K of the rows' kernels: a GEMM's k; a fused-MoE block's two GEMMs (up K = h, down K = i / tp) on average."""
    if fam in GEMM_FAMILIES:
        return df["k"].to_numpy(np.float64)
    return (df["k"].to_numpy(np.float64) + df["n"].to_numpy(np.float64)) / 2.0 if fam in MOE_FAMILIES else 0.0


def _prefill_tiles(tokens, keys, elems, dim, group):
    """attention_shapes.query_tiles of prefill rows without a cached prefix (keys = (q + 1) / 2): q = 2 * keys - 1,
    B = tokens / q, H = elems / (tokens * 2 * head_dim); no tiles where a row lacks keys, head_dim or tokens."""
    dim = np.broadcast_to(np.asarray(dim, dtype=np.float64), np.shape(tokens))
    ok = (keys > 0.5) & (tokens > 0) & (dim > 0)
    q = np.where(ok, 2.0 * keys - 1.0, 1.0)
    tok = np.where(ok, tokens, 1.0)
    heads = np.where(ok, elems / (tok * 2.0 * np.where(ok, dim, 1.0)), 0.0)
    return query_tiles(np.where(ok, tok / q, 0.0), q, heads, group)


def _collective_terms(df: "pd.DataFrame", chip: Chip) -> CollectiveTerms:
    """collectives.collective_terms of every row (kind = family, chips = tp, buffer = bytes), row-aligned."""
    lb, hops, bw, lat, sw = (np.zeros(len(df)) for _ in range(5))
    kinds = df["family"].replace({"send_recv": "p2p"}).to_numpy()
    chips = df["tp"].to_numpy(np.float64)
    v = df["bytes"].to_numpy(np.float64)
    for kind, c in sorted(set(zip(kinds, chips))):
        sel = (kinds == kind) & (chips == c)
        ct = collective_terms(kind, v[sel], int(c), chip)
        lb[sel], hops[sel], bw[sel], lat[sel] = ct.link_bytes, ct.hops, ct.link_bytes_per_s, ct.latency_s
        sw[sel] = ct.switch_reduced
    return CollectiveTerms(lb, hops, bw, lat, "scaleup", "", sw)


def predict(df: "pd.DataFrame", chip, fits: "Mapping[str, FamilyFit] | CalibratedModel | None" = None) -> np.ndarray:
    """Predicted seconds of every row of a normalized measurement frame (None: the ideal roofline)."""
    chip = load_chip(chip)
    if isinstance(fits, CalibratedModel):
        fits = fits.families
    out = np.full(len(df), np.nan)
    for fam in FAMILIES:
        sel = (df["fam"] == fam).to_numpy()
        if sel.any():
            p = IDEAL_FIT if fits is None else fits.get(fam, IDEAL_FIT)
            out[sel] = _terms(df[sel], chip, fam).time_s(p)
    return out


# =============================================================================== fitting
def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-min(max(x, -50.0), 50.0)))


def _logit(p):
    return math.log(p / (1.0 - p))


# free parameters per family, their starting values and their transforms (unbounded -> valid range)
# decode attention's terms (the _FREE comment at "attention_decode" says what each prices) and MHA's own half and floor
_MOE = (("compute_max", 0.6), ("compute_tokens_half", 64.0), ("memory_max", 0.7), ("overhead_s", 1e-5),
        ("overhead_per_walked_elem_s", 1e-12), ("compute_width_half", 64.0))
# fp4 experts, W4A16 (moe_quant) and W4A4 (moe_fp4): also each token's pass and the expert-parallel floor (_FREE)
_MOE_FP4 = _MOE + (("overhead_per_token_elem_s", 1e-12), ("overhead_ep_s", 1e-5))
_DECODE = (("memory_max", 0.8), ("overhead_s", 1e-5), ("overhead_per_kv_row_byte_s", 1e-11), ("compute_max", 0.5),
           ("compute_keys_half", 64.0), ("compute_group_half", 8.0), ("overhead_per_windowed_head_s", 1e-8),
           ("memory_streams_half", 1.0), ("overhead_per_kv_stream_s", 1e-8))
_UNSPLIT = (("memory_unsplit_half", 1.0), ("overhead_unsplit_s", 1e-5))
# FlashAttention-2's decode floors (attention_shapes.decode_kernels): its split-KV combine, past one KV block, and the
# Q / O copies that fold a GQA group into a query tile (A100 held out: median 8.9 -> 4.1 %, p90 37 -> 17 %)
_FA2 = (("overhead_split_s", 3e-6), ("overhead_regroup_s", 3e-6))
_FP8_GEMM = (("compute_max", 0.7), ("compute_tokens_half", 64.0), ("compute_cols_half", 128.0), ("memory_max", 0.8),
             ("overhead_s", 5e-6), ("overhead_per_output_elem_s", 1e-13), ("overhead_per_token_s", 1e-9))
_FREE = {
    # GEMMs: M and N padded to the kernel's tiles (tokens and cols halves) and too few output tiles to fill the
    # SMs, each walking all of K (outs half: output elements T * N); each tile's pipeline fill and epilogue amortized
    # over its K loop (depth half)
    "gemm": (("compute_max", 0.7), ("compute_tokens_half", 64.0), ("compute_cols_half", 128.0),
             ("compute_outs_half", 1e4), ("memory_max", 0.8), ("overhead_s", 5e-6), ("overhead_per_output_elem_s", 1e-13),
             ("compute_k_split", 2048.0), ("compute_depth_half", 64.0)),
    # fp8: wide tiles (cols half), no outs factor (it fits no better held out), the activations' quantization per row;
    # under a kernel's tile rule (_TILE_RULE) its waves replace the tokens and cols halves
    "gemm_fp8": _FP8_GEMM + (("overhead_per_wave_s", 2e-6), ("overhead_per_tall_output_s", 1e-12)),
    # NVFP4 (W4A4, FlashInfer's CuTe DSL kernel on Blackwell): gemm_fp8's terms plus gemm's output parallelism (outs
    # half): its skinny GEMMs (N <= 2k, K >= 4k) take time ~ K, 0.57-0.92x predicted without it (B200 held out 8.4 /
    # 25.7 -> 6.3 / 18.9 %, GB200 8.9 / 26.4 -> 6.7 / 20.3 %; split-K and the depth factor add <= 0.2 point)
    "gemm_fp4": _FP8_GEMM[:3] + (("compute_outs_half", 1e4),) + _FP8_GEMM[3:],  # outs after the tile factors, as gemm
    # block-scaled fp8 (DeepSeek 128x128 weight blocks, 1x128 activation groups): gemm_fp8's terms, fitted on the
    # kernel-time rows (calibrate/aic_vllm.py): other kernels (DeepGEMM, CUTLASS / FlashInfer blockwise, Triton);
    # overhead_s is gemm_fp8's (_base)
    "gemm_fp8_block": (("compute_max", 0.7), ("compute_tokens_half", 64.0), ("compute_cols_half", 128.0),
                       ("memory_max", 0.8), ("overhead_per_output_elem_s", 1e-13), ("overhead_per_token_s", 1e-9)),
    # the fused-MoE expert block (two grouped GEMMs, kernels = 2), T = rows per touched expert; the width factor
    # of narrow experts (i / tp: high moe_tp); the passes over each token's hidden vector, once whatever its top-k
    # (overhead_per_token_elem_s: B200 fp8 experts at ep 128-256, where the GEMMs are small, take ~5 ps per token per
    # element of h for top-1 as for top-10). moe_fp8 (block-scaled 8-bit experts) and moe_int4 (int4 experts): these
    # terms (below), streaming the packed weights, block scales included, per touched expert, the FLOPs at the
    # kernel's compute dtype peak (int4: bf16); the 4-bit kernels also each expert's rows in whole M blocks (_GRID)
    "moe": _MOE + (("overhead_per_token_elem_s", 1e-12),),
    # block-scaled 8-bit experts: also a floor per element of K (overhead_per_depth_s): the kernels walk K in 128-wide
    # blocks, each rescaled into the fp32 sums, serially in a CTA; one token on B200 takes 19-21 us at h 2048 and
    # 36-46 us at h 7168 (held out p90 B200 24.7 -> 23.0 %, GB200 25.8 -> 24.2 %; bf16 and fp4 rows gain nothing)
    "moe_fp8": _MOE + (("overhead_per_token_elem_s", 1e-12), ("overhead_per_depth_s", 1e-9)),
    # int4: one model shape measured (Kimi-K2, top-8), whose routed rows are 8x its tokens everywhere: the rows cannot
    # tell a pass per token from one per routed row, so the walked rows alone
    "moe_int4": _MOE,
    # fp4 experts (w4a16: FLOPs at the bf16 peak; moe_fp4, nvfp4 W4A4: at the fp4 peak): also a floor per kernel
    # under expert parallelism (overhead_ep_s). Free for this family alone: its rows fit ~18 us per kernel on H100 / H200 (OAI
    # Triton mxfp4: 1 token takes 68 us at ep 4-128 against 63 us at ep 1 reading 4x the weights); bf16 rows fit 4.5 us
    # on H100 (held-out 5.9 / 23.4 -> 5.8 / 23.3 %: not worth a parameter)
    "moe_quant": _MOE_FP4,
    "moe_fp4": _MOE_FP4,
    # causal FlashAttention prefill: compute-bound; short sequences waste the diagonal tiles (keys half),
    # few heads x sequences leave SMs idle (elems half); a time per query tile (a short sequence fills a whole
    # 128-row tile): per query head or per GQA group, as the kernel tiles them (the fit picks the mix); short
    # sequences at large batch stream Q, K, V, O below the bandwidth (memory_max: _OPTIONAL)
    "attention": (("compute_max", 0.6), ("memory_max", 0.8), ("compute_keys_half", 500.0),
                  ("compute_elems_half", 1e6), ("compute_dim_half", 32.0), ("compute_group_half", 0.5),
                  ("overhead_s", 5e-6), ("overhead_per_head_tile_s", 2e-8), ("overhead_per_group_tile_s", 2e-8)),
    # decode: the KV stream at a bandwidth fraction plus a floor growing with batch x heads (per KV stream =
    # sequence x KV head, and per byte of a context position over the batch); the compute term
    # (overlapping the stream: roofline max) pays the GQA group padded to the kernel's query tile (group half)
    # and a per-query-head cost worth compute_keys_half keys (Q load, softmax, O store, split-KV combine); few KV
    # streams (sequences x KV heads) stream below the bandwidth (streams half: split-KV caps a stream's CTAs)
    # (streams of one query head per KV head, MHA, their own half and floor: FlashAttention-2 does not split them, one
    # CTA walks a stream's keys, A100 and L40S ~20-23 ns a key up to ~64 streams, and there is no combine kernel)
    "attention_decode": _DECODE + _UNSPLIT + _FA2,
    # the KV cache in 8 bits or fewer: the same terms plus, past its sliding window, whole KV blocks read: h keys more
    # than the window (window half) and a time per kernel (the straddled block walked serially and masked)
    # (and where FlashInfer's tile rule runs them, compute_q_tile_rule: a time per kernel of its wide tile)
    "attention_decode_fp8": _DECODE + (("memory_window_half", 128.0), ("overhead_window_s", 1e-6)) + _UNSPLIT + _FA2
    + (("overhead_wide_tile_s", 3e-6),),
    "memory": (("memory_max", 0.5), ("memory_tokens_half", 64.0), ("overhead_s", 2e-6)),
    # collectives: the bandwidth fraction of GPU-driven copies (one-shot, two-shot) and of the switch's own
    # reduction (NVLS), the latency per algorithm step and its growth per doubling of the GPUs (log2 n: it fits
    # the 2/4/8-GPU rows as well as a linear growth in n and stays modest at 72), a fixed cost per call
    "collective": (("comm_max", 0.6), ("comm_switch_max", 0.5), ("comm_step_s", 2e-6),
                   ("comm_step_per_doubling_s", 2e-7), ("overhead_s", 1e-6)),
    # MoE all-to-all (DeepEP dispatch / combine): one direct step, a large fixed floor (layout, per-expert
    # signalling and polling: tens of us), the bytes at a fraction of the link and a time per token sent
    "all_to_all": (("comm_max", 0.5), ("overhead_s", 3e-5), ("overhead_per_token_s", 1e-8)),
    # MLA module glue (attn.mla_glue): a floor per layer and per query-head row, fitted on whole-module rows by
    # benchmarks/validate_mla.py (a non-negative least squares on top of the other families), not by fit()
    "mla_glue": (("overhead_s", 5e-5), ("overhead_per_token_s", 1e-10)),
}
# further starting points (overrides of _FREE's values) a family's fit also tries, keeping the lowest loss: the
# GEMM loss (bf16, and fp4 with its outs factor) has a basin where the tile factors (tokens, cols) carry the shortfall
# and one where the output parallelism (outs) does, and (bf16) one with split-K off (K / 1e9 < 1: the former model's
# basin); decode, with 15 free parameters, one where the GQA group half is near A100's (the default start ends with
# G half 0 on A100's generation table: in sample p90 19.2 % against 13.7 %; held out 4.1 / 17.3 -> 3.7 / 14.6 %; the
# other chips within 0.7 point)
_OUTS_START = {"compute_tokens_half": 1.0, "compute_cols_half": 1.0, "compute_outs_half": 2e5}
_ALT_STARTS = {"gemm": (_OUTS_START, {"compute_k_split": 1e9}), "gemm_fp4": (_OUTS_START,),
               **{f: ({"compute_group_half": 64.0, "compute_keys_half": 300.0, "memory_streams_half": 3.0},)
                  for f in DECODE_FAMILIES}}
# a discrete parameter a family's fit picks from a few values (the rest fitted at each, the lowest loss kept): the
# M tile of fp8 GEMMs past their first tile (efficiency.FamilyFit.compute_m_tile; 0: none, the smooth tokens factor
# alone): Hopper's CUTLASS fp8 kernel for large M runs 128-row tiles in clusters of two; the M block rule of the 4-bit
# fused-MoE kernels (expert_kernels.M_BLOCK_RULES: none, Marlin's, triton_kernels'): the rows show which the kernel runs
_GRID = {**{f: ("compute_m_tile", (0.0, 128.0, 256.0)) for f in ("gemm_fp8", "gemm_fp4")},
         **{f: ("compute_m_block_rule", (0.0, 1.0, 2.0)) for f in ("moe_int4", "moe_quant", "moe_fp4")},
         **{f: ("memory_token_tile", (0.0,)) for f in ("moe", "moe_fp8")},
         "attention_decode_fp8": ("compute_q_tile_rule", (0.0,))}
# where the kernel's source fixes the discrete value, (family, chip family) -> the values left: vLLM's SM90 CUTLASS fp8
# GEMM for M > 128 (csrc/quantization/cutlass_w8a8/c3x/scaled_mm_sm90_fp8_dispatch.cuh, sm90_fp8_config_default)
# runs TileShape 128 x 128 x 128 in ClusterShape 2 x 1 x 1: 256 rows per cluster on every Hopper GPU (the rows alone
# hardly tell 128 from 256: benchmarks/CALIBRATION.md).
# FlashInfer's TRT-LLM fused MoE (vLLM's default for bf16 and block-scaled fp8 experts on Blackwell) walks each
# expert's rows in token tiles of at most 64 (vLLM's calculate_tile_tokens_dim: "Cap to 8-64 tokens per CTA tile as
# it's the range supported by the kernel"), re-reading per tile the expert weights the L2 cannot hold
# (expert_kernels; benchmarks/CALIBRATION.md "Blackwell's MoE kernels re-stream"); Hopper's Triton MoE shows no such
# step. vLLM decodes an 8-bit KV cache on Ada with FlashInfer (the L40S table's kernel_source vllm_flashinfer_fidecode;
# head_dim 192, which FlashInfer lacks, runs Triton's), whose tensor-core decode packs a KV head's G query heads into a
# CTA tile of 16, 64 or 128 rows (attention_shapes.query_tile_rows); FlashAttention-3 (Hopper) and TRT-LLM's decode
# (Blackwell) run other tiles, and without the rule their fits keep the smooth group factor
_KERNEL_GRID = {("gemm_fp8", "hopper"): (256.0,), ("moe", "blackwell"): (64.0,), ("moe_fp8", "blackwell"): (64.0,),
                ("attention_decode_fp8", "ada"): (1.0,)}
# parameters free only on the chip families whose kernel has the mechanism: vLLM decodes with FlashAttention-2 on
# Ampere and Ada alone (Hopper: FlashAttention-3, which packs the GQA group inside its kernel; Blackwell: TRT-LLM's
# decode); left free on B200 they pick up noise (held-out median 4.9 -> 5.3 %, p90 15.4 -> 16.3 %)
_KERNEL_ONLY = {n: ("ampere", "ada") for n, _ in _FA2}
# (family, chip family) -> the tile rule of the GEMM kernel vLLM runs there, where the chip file gives its SMs
# (gemm_tiles: Ada's fp8 GEMM is CUTLASS 2.x, tiles by M and N); its waves replace the tokens, cols halves and M tile
_TILE_RULE = {("gemm_fp8", "ada"): SM89_FP8}
_TILE_FREE, _TILE_REPLACED = ("overhead_per_wave_s", "overhead_per_tall_output_s"), ("compute_tokens_half",
                                                                                      "compute_cols_half")
# parameters a family's fit keeps only where the rows show them: fitted with and without, kept where they lower the
# loss (_loss, ~0.5 on real rows) by more than OPTIONAL_GAIN. Prefill attention's memory side: a short prompt at a
# large batch streams Q, K, V and O below the bandwidth (L40S, FlashAttention-2: 0.67 of its GDDR6 past the L2;
# B200 / GB200, TRT-LLM: 0.36): the loss drops by 0.128 / 0.072 / 0.070; on H100, H200 and A100 by < 1e-5 (their
# rows never bind there: memory_max would wander, priced by nothing)
_OPTIONAL = {"attention": ("memory_max", "memory_l2_extra")}
OPTIONAL_GAIN = 0.005
_FRACTIONS = ("compute_max", "memory_max", "comm_max", "comm_switch_max")
LOSS_SCALE = 0.1  # pseudo-Huber scale of the log residual: quadratic below ~10 %, linear above


def _to_x(name, v):
    return _logit(min(max(v, 1e-6), 1 - 1e-9)) if name in _FRACTIONS else math.log(v)


def _from_x(name, x):
    if name in _FRACTIONS:
        return _sigmoid(x)
    return min(math.exp(min(max(x, -700.0), 50.0)), PARAM_TOP[name])  # a simplex gone far: capped


def _trial(base: FamilyFit, params: dict) -> FamilyFit:
    """base with these parameters, not validated: a fit's trial point (in range by construction: _from_x, the grid;
    FamilyFit.__post_init__ took a third of each evaluation). fit_family validates the fit it returns."""
    new = object.__new__(FamilyFit)  # its fields alone: a cached property of base (its set terms) is not new's
    new.__dict__.update({k: v for k, v in base.__dict__.items() if k in _FIT_FIELDS}, **params)
    return new


_FIT_FIELDS = frozenset(f.name for f in fields(FamilyFit))


def _loss(pred, measured):
    r = np.log(pred / measured) / LOSS_SCALE
    return float(np.mean(np.sqrt(1.0 + r * r) - 1.0))


_SAME_AS = {f: "memory" for f in MEMORY_FAMILIES}  # families fitted with another's free parameters


def _free(fam: str) -> tuple[tuple[str, float], ...]:
    """(name, start value) of the parameters fitted for `fam`: _FREE's, and memory_l2_extra for the families that
    stream weights or a KV cache (identified only where the rows show L2 hits: _identified). Not the memory-bound
    elementwise families: the activations they read were just written by the kernel before, in L2 in inference too,
    so their fits keep the L2 inside memory_max."""
    own = _FREE[_SAME_AS.get(fam, fam)]
    return own + (("memory_l2_extra", 1.0),) if "memory_max" in dict(own) and fam not in MEMORY_FAMILIES else own


# a parameter that prices only some rows (its _Terms input) stays 0 when no fitted row has that input: the rows
# cannot tell its value (A100 has no sliding-window decode rows), and a simplex left free would wander
_ONLY_WITH = {"overhead_per_windowed_head_s": "windowed_heads", "overhead_per_head_tile_s": "head_tiles",
              "overhead_per_group_tile_s": "group_tiles", "memory_window_half": "window_keys",
             "overhead_window_s": "window_keys", "memory_unsplit_half": "unsplit_streams",
             "overhead_unsplit_s": "unsplit_streams", "compute_width_half": "width", "overhead_ep_s": "expert_parallel",
             "overhead_per_token_elem_s": "token_elems", "overhead_split_s": "split_kv",
             "overhead_regroup_s": "regrouped", "overhead_wide_tile_s": "wide_tiles", "overhead_per_token_s": "tokens"}
BASE_FAMILY = {"gemm_fp8_block": "gemm_fp8"}  # a family whose fit fixes a parameter at another family's (_base)


def fit_family(terms: _Terms, measured: np.ndarray, fam: str, base: FamilyFit = IDEAL_FIT,
               chip_family: str = "") -> FamilyFit:
    """Fit one family's free parameters (the others stay at base's values: ideal by default; _ONLY_WITH ones without
    rows to price stay 0; comm_switch_max only where some row's bytes are reduced in the switch; _KERNEL_ONLY ones
    only on their chip families, or where it is not given); the discrete one
    (_GRID) among the values the chip family's kernel allows (_KERNEL_GRID)."""
    free = tuple((n, v) for n, v in _free(fam) if _identified(n, terms, chip_family, measured))
    base = replace(base, compute_tile_rule=terms.tile_rule) if terms.tile_rule else base
    optional = _OPTIONAL.get(fam, ())
    if optional and any(n in optional for n, _ in free):  # kept only where they lower the loss by OPTIONAL_GAIN
        (val, p), (val_all, p_all) = (_fit_free(terms, measured, fam, base, chip_family, f)
                                      for f in (tuple(f for f in free if f[0] not in optional), free))
        p = p_all if val - val_all > OPTIONAL_GAIN else p
    else:
        p = _fit_free(terms, measured, fam, base, chip_family, free)[1]
    names = {n for n, _ in free}
    if "comm_max" in names and "comm_switch_max" not in names:  # no switch-reduced row: as the copies (unmeasured)
        p = replace(p, comm_switch_max=p.comm_max)
    return p


def _fit_free(terms: _Terms, measured: np.ndarray, fam: str, base: FamilyFit, chip_family: str,
              free: tuple) -> tuple[float, FamilyFit]:
    """(loss, fit) of the parameters `free` ((name, start) pairs) from their starts and _ALT_STARTS, for each value
    of the family's discrete parameter (_GRID, _KERNEL_GRID): the lowest loss kept (ties: the first)."""
    names = [n for n, _ in free]
    grid_name, grid = _GRID.get(fam, ("", (None,)))
    grid = (0.0,) if terms.tile_rule else _KERNEL_GRID.get((fam, chip_family), grid)  # its tiles: no M tile

    def unpack(x, g=None) -> FamilyFit:
        b = base if g is None else _trial(base, {grid_name: g})
        return _trial(b, {n: _from_x(n, v) for n, v in zip(names, x)})  # _from_x keeps each in its range

    found = []
    for g in grid:  # a discrete parameter: each value tried
        for start in ({},) + _ALT_STARTS.get(fam, ()):
            x = np.array([_to_x(n, start.get(n, v)) for n, v in free])
            best = math.inf
            for _ in range(4):  # restart from the best point until the loss stops improving
                x, val = nelder_mead(lambda y: _loss(terms.time_s(unpack(y, g)), measured), x)
                if best - val < 1e-9:
                    break
                best = val
            found.append((val, len(found), x, g))
    val, _, x, g = min(found, key=lambda f: f[:2])
    return val, replace(unpack(x, g))  # validated


def _identified(name: str, terms: _Terms, chip_family: str, measured: np.ndarray) -> bool:
    """Whether the rows can tell parameter `name`: some row prices it (_ONLY_WITH), some row's bytes are reduced in
    the switch (comm_switch_max), L2 hits show (memory_l2_extra) and the chip family's kernel has its mechanism
    (_KERNEL_ONLY; overhead_wide_tile_s: FlashInfer's tile; a GEMM tile rule's: _TILE_FREE, not _REPLACED)."""
    if name in _ONLY_WITH and not np.any(np.asarray(getattr(terms, _ONLY_WITH[name])) > 0):
        return False
    if name == "comm_switch_max" and not _switch_reduced(terms):
        return False
    if name == "memory_l2_extra" and not _l2_hits(terms, measured):
        return False
    if (name == "overhead_wide_tile_s" and 1.0 not in _KERNEL_GRID.get((terms.fam, chip_family), ())) or \
            name in (_TILE_REPLACED if terms.tile_rule else _TILE_FREE):  # FlashInfer's wide tile, a GEMM's waves
        return False  # (_TILE_RULE): only where the kernel's tile rule runs
    return not chip_family or name not in _KERNEL_ONLY or chip_family in _KERNEL_ONLY[name]


L2_HIT_SHARE = 0.01  # memory_l2_extra is fitted where this share of the rows within L2 beats the HBM roofline


def _l2_hits(terms: _Terms, measured: np.ndarray) -> bool:
    """Whether at least L2_HIT_SHARE of the rows whose working set fits in L2 are measured faster than the ideal
    roofline from HBM allows (L40S: 3-27 % per family, up to 3.2x; H100 at most 0.42 % (46 bf16 GEMMs of 10,985);
    H200, B200, A100 at most 0.1 %)."""
    in_l2 = np.broadcast_to(np.asarray(terms.in_l2, dtype=np.float64), measured.shape) > 0
    return bool(in_l2.any()) and float(np.mean(measured[in_l2] < terms.time_s(IDEAL_FIT)[in_l2])) >= L2_HIT_SHARE


def _switch_reduced(terms: _Terms) -> bool:
    return terms.comm is not None and bool(np.any(terms.comm.switch_reduced))


def shown_params(fam: str, p: FamilyFit) -> dict[str, float]:
    """The parameters worth showing for a family: its free ones (memory_l2_extra, overhead_wide_tile_s, a tile rule's
    and the _OPTIONAL ones where fitted: a chip's replays, a kernel's tile) and any that differ from ideal."""
    hidden = ("memory_l2_extra", "overhead_wide_tile_s") + _OPTIONAL.get(fam, ()) + _TILE_FREE + \
        (_TILE_REPLACED if p.compute_tile_rule else ())
    free = {n for n, _ in _free(fam) if n not in hidden} | {"err_p10", "err_p90"}
    return {k: v for k, v in p.params().items() if k in free or v != getattr(IDEAL_FIT, k)}


def ratio_band(ratio) -> dict[str, float]:
    """err_p10 / err_p90 (three significant digits) of measured / predicted ratios."""
    r = np.asarray(ratio, dtype=np.float64)
    return {"err_p10": float(f"{np.percentile(r, 10):.3g}"), "err_p90": float(f"{np.percentile(r, 90):.3g}")}


def _rounded(p: FamilyFit) -> FamilyFit:
    """Four significant digits (what the chip TOML stores); overheads per kernel or step below 1 ns, per-unit
    overheads below 1e-20 s and half-saturation scales below 0.01 are zero."""
    def r(k, v):
        per_kernel = k.startswith(("overhead_", "comm_step")) and k.endswith("_s") and not k.startswith("overhead_per_")
        if (per_kernel and v < 1e-9) or \
                (k.endswith("_half") and v < 1e-2) or \
                (k.startswith("overhead_per_") and v < 1e-20):
            return 0.0
        return min(float(f"{v:.4g}"), 1.0) if k in _FRACTIONS else float(f"{v:.4g}")

    return FamilyFit(**{k: r(k, v) for k, v in p.params().items()})


@dataclass(frozen=True)
class FitResult:
    """Fitted parameters per family (fitted_on notes included), points used, in-sample median |error|
    (a fraction), and the fit's wall time."""

    chip: str
    fits: Mapping[str, FamilyFit]
    points: Mapping[str, int]
    median_abs_err: Mapping[str, float]
    seconds: float


def fit(df: "pd.DataFrame", chip, *, source: str = "", date: str | None = None) -> FitResult:
    """Fit every family present in the (normalized) rows of one chip. Multi-node collectives are skipped.

    Attention without measurements gets gemm's parameters (constant in tokens) and says so."""
    chip = load_chip(chip)
    t0 = time.perf_counter()
    date = date or _dt.date.today().isoformat()
    df = single_node(df)
    fits, points, med = {}, {}, {}
    for fam in FAMILIES:
        rows = df[df["fam"] == fam]
        if rows.empty:
            continue
        terms = _terms(rows, chip, fam)
        measured = rows["measured_s"].to_numpy(np.float64)
        fitted = _fittable(rows, terms, measured, fam)
        p = _rounded(fit_family(_terms(rows[fitted], chip, fam), measured[fitted], fam, _base(fam, fits),
                                chip.family))
        pred = terms.time_s(p)
        err = np.abs(pred / measured - 1.0)
        p = replace(p, **ratio_band(measured / pred))  # in sample; refit_chips.py stores held-out bands
        points[fam], med[fam] = len(rows), float(np.median(err))
        fits[fam] = replace(p, fitted_on=_note(fam, p, rows, med[fam], source, date))
    if "gemm" in fits and "attention" not in fits:
        fits["attention"] = attention_from_gemm(fits["gemm"])
    return FitResult(chip.name, MappingProxyType(fits), MappingProxyType(points), MappingProxyType(med),
                     time.perf_counter() - t0)


def _base(fam: str, fits: Mapping[str, FamilyFit]) -> FamilyFit:
    """The fixed parameters of a family's fit: gemm_fp8_block keeps the per-tensor fp8 kernel's floor (gemm_fp8's
    overhead_s, where `fits` has it): its rows are all large shapes (aic_vllm.py), which cannot tell a floor from the
    shape terms. Prefill attention runs at the no-overlap bound, t_compute + t_memory (memory_serial 1: a CTA loads
    its Q tile and first K/V tiles before its math and stores O after it; a free share came out 1.0 on H100 and B200,
    0.90 on L40S: CALIBRATION.md "Prefill attention's loads and stores")."""
    if BASE_FAMILY.get(fam) in fits:
        return replace(IDEAL_FIT, overhead_s=fits[BASE_FAMILY[fam]].overhead_s)
    return replace(IDEAL_FIT, memory_serial=1.0) if fam == "attention" else IDEAL_FIT


def _fittable(rows: "pd.DataFrame", terms: _Terms, measured: np.ndarray, fam: str) -> np.ndarray:
    """The rows a family is fitted on. Collectives: those measured no faster than the ideal alpha-beta time (the
    best algorithm's lower bound, collectives.ALL_REDUCE_ALGOS: no vLLM all-reduce row is below it), which a
    model never faster than ideal cannot match; left in, such a row only drags comm_max to where the others are
    wrong. Fused-MoE blocks: those measured no faster than the ideal roofline, and, where the rows show L2 hits
    (_l2_hits: memory_l2_extra prices their replays), those whose working set fits in L2 (L40S: 5.6 % of its bf16
    rows beat the GDDR6 roofline, up to 2.4x, 231 of the 262 in its 96 MiB L2); a serving step streams every
    layer's experts from memory."""
    keep = np.ones(len(rows), dtype=bool)
    if fam in MOE_FAMILIES or fam in COLLECTIVE_FAMILIES:
        keep = terms.time_s(IDEAL_FIT) <= measured
        if fam in MOE_FAMILIES and _l2_hits(terms, measured):  # the rows memory_l2_extra prices
            keep |= np.broadcast_to(np.asarray(terms.in_l2), keep.shape) > 0
        if keep.sum() < 3:  # (nearly) every row beats the roofline: fit them all rather than nothing
            keep[:] = True
    return keep


def _note(fam: str, p: FamilyFit, rows: "pd.DataFrame", median_err: float, source: str, date: str) -> str:
    """The fitted_on text of one family's fit: source, points, ops, in-sample median error, date."""
    ops = ", ".join(sorted(set(rows["op"])))
    shaped = any(getattr(p, h) > 0 for h in PARAMS if h.startswith("compute_") and h.endswith("_half"))
    at_one = [k for k in _FRACTIONS if getattr(p, k) == 1.0 and k in dict(_free(fam)) and k != "comm_switch_max"
              and not (k == "compute_max" and shaped) and k not in _OPTIONAL.get(fam, ())]  # shape factors < 1
    # carry the shortfall; an optional parameter at 1 was not kept
    return (f"{source + '; ' if source else ''}{len(rows)} points ({ops}); median |err| {median_err:.1%}; "
            f"fitted {date}" + (f"; {', '.join(at_one)} at its bound 1 (some kernels measured faster than "
                                "the roofline: L2-cache hits)" if at_one else ""))


# =============================================================================== error tables
def abs_pct_errors(pred, measured) -> np.ndarray:
    """|pred / measured - 1| in percent."""
    return np.abs(np.asarray(pred) / np.asarray(measured) - 1.0) * 100.0


def error_rows(df: "pd.DataFrame", preds: Mapping[str, np.ndarray], by=("fam",)) -> list[dict]:
    """Median and 90th-percentile absolute % error of each prediction, grouped by `by` columns."""
    meas = df["measured_s"].to_numpy(np.float64)
    errs = {name: abs_pct_errors(p, meas) for name, p in preds.items()}
    rows = []
    keys = df[list(by)].astype(str).agg("|".join, axis=1).to_numpy() if by else np.full(len(df), "")
    for key in sorted(set(keys), key=lambda k: [_sort_key(x) for x in k.split("|")]):
        sel = keys == key
        row = dict(zip(by, key.split("|"))) if by else {}
        row["n"] = int(sel.sum())
        for name, e in errs.items():
            row[f"{name}_median_pct"] = float(np.median(e[sel]))
            row[f"{name}_p90_pct"] = float(np.percentile(e[sel], 90))
        rows.append(row)
    return rows


def _sort_key(x: str):
    order = {f: i for i, f in enumerate(FAMILIES)}
    return (0, order[x], "") if x in order else (1, 0, x)
