"""The runtime efficiency model: how far real kernels fall short of the roofline, per chip and op family, read
from the chip TOML's `[efficiency.*]` tables (fitted by the calibrate package), applied per op (`estimate(...,
efficiency="calibrated")`).

The model (per chip and op family; a few parameters, each with a physical meaning), T = op.tokens::

    eff.compute    = compute_max * f(T, compute_tokens_half) * f(L, compute_keys_half) * f(X, compute_elems_half)
                     * f(N, compute_cols_half) * f(T*N, compute_outs_half) * f(K, compute_depth_half)
                     * f(D, compute_dim_half) * f(G, ...)
                     f(x, h) = x / (x + h)  (a factor is 1 when its h is 0 or x is unknown)
    eff.memory(T)  = memory_max * T / sqrt(T**2 + memory_tokens_half**2)   fraction of peak HBM bandwidth
    eff.comm       = comm_max                                              fraction of link bandwidth (beta)
    eff.comm_switch = comm_switch_max                                      the same when the switch reduces (NVLS)
    eff.comm_hop_s = comm_step_s + comm_step_per_doubling_s * log2(n)      latency per collective step (alpha)
    eff.overhead_s = overhead_s + overhead_per_kv_row_byte_s * R           fixed time per kernel
                     + overhead_per_output_elem_s * T*N + overhead_per_token_s * T (+ walked-row elements)

and roofline.py turns them into a time (compute_time_s, memory_time_s, link_time_s: the only formulas of a time)::

    t = max(flops / (peak * eff.compute), bytes / (hbm * eff.memory)) + eff.overhead_s
    collective: t = hops * (latency_s + eff.comm_hop_s) + link_bytes / (link_bytes_per_s * comm_max) + overhead_s
                (comm_switch_max for the bytes an NVLink switch reduces: collectives.ALL_REDUCE_ALGOS)

Families (`family_of`) and what measured them (benchmarks/CALIBRATION.md: data, fits, held-out errors):

    gemm              kind='gemm', bf16/fp16 compute     vLLM GEMMs (aic-vllm gemm_perf, bfloat16)
    gemm_fp8          kind='gemm', fp8/int8 compute      vLLM CUTLASS fp8 GEMMs (gemm_perf, fp8 per-tensor)
    gemm_fp4          kind='gemm', fp4 compute (NVFP4)   vLLM's NVFP4 GEMMs (gemm_perf nvfp4, W4A4: FlashInfer CuTe
                                                         DSL on Blackwell); without a fit: the chip's gemm_fp8
    gemm_fp8_block    the same with block-scaled weights  vLLM block-scaled fp8 GEMMs (gemm_perf fp8_block: DeepGEMM,
                      (op.weight_block > 0: DeepSeek-V3,   CUTLASS/FlashInfer blockwise; Triton on L40S), the rows
                      Qwen3 fp8 checkpoints)               whose kernel time shows above the host floor; without a
                                                           fit: the chip's gemm_fp8
    moe               expert GEMMs (style 'expert')      vLLM fused-MoE block (moe_perf, bf16, balanced)
    moe_quant         expert GEMMs with fp4 weights      the weight-only fp4 fused-MoE rows of vLLM's default kernel
                      (MXFP4 / NVFP4 + block scales)     (w4a16_mxfp4, GPT-OSS: TRT-LLM on Blackwell, OAI Triton on
                      computing in bf16 (W4A16)          Hopper, Marlin on Ada; balanced): moe's terms, packed
                                                         weights per touched expert, FLOPs at the bf16 peak;
                                                         without a fit: the chip's moe
    moe_fp4           expert GEMMs with fp4 weights      the nvfp4 fused-MoE rows (TRT-LLM on Blackwell, balanced):
                      computing in fp4 (W4A4)            moe_quant's terms, FLOPs at the fp4 peak; without a fit:
                                                         the chip's moe_quant
    moe_int4          expert GEMMs with int4 weights     the int4 weight-only rows (int4_wo: vLLM's Marlin MoE,
                      (AWQ / GPTQ / compressed-tensors)  AWQ / GPTQ checkpoints): the same terms; without a fit:
                                                         the chip's moe_quant, else moe
    moe_fp8           expert GEMMs with 8-bit weights    the block-scaled fp8 fused-MoE rows (fp8_block: 128 x 128
                      (fp8 / int8 + scales), computing   weight scales, DeepSeek-V3 / Qwen3 FP8 checkpoints): same
                      in 8 bits (W8A8; weight-only 8-bit  terms as moe, FLOPs at the fp8 peak (vLLM's W8A8
                      experts: moe)                      kernels); without a fit: the chip's moe
    attention         attn.core, prefill                 causal FlashAttention (context_attention_perf)
    attention_decode  attn.core reading a KV cache       FlashAttention decode (generation_attention_perf),
                      larger than its Q/O traffic (or   bf16 KV cache; judged point by point
                      a 1-token query: decode_points)    (an op of a grid takes both families)
    attention_decode_fp8  the same, KV cache in <= 8 bits  the fp8 KV cache rows (dequantized in the inner loop)
    elementwise, activation, rope, norm, embedding       Vidur's PyTorch kernels (A100, H100 only)
    collective        kind='collective' inside the       vLLM custom all-reduce in a CUDA graph; all_gather,
                      scale-up domain                    reduce_scatter and p2p borrow it;
                                                         multi-node collectives stay ideal
    all_to_all        kind='collective', all_to_all      MoE expert-parallel dispatch / combine (moe_a2a_perf:
                      (expert-parallel dispatch and      DeepEP low-latency and high-throughput kernels, the
                      combine) inside the domain         faster per shape): a fixed floor overhead_s (tens of us:
                                                         the kernels' layout, signalling and polling), a time
                                                         per token sent (overhead_per_token_s), the bytes at
                                                         comm_max; without a fit: the collective fit (BORROWS)
    mla_glue          attn.mla_glue (MLA layers): the    vLLM's whole MLA module of DeepSeek-V3 (mla_*_module) minus
                      module's kernels outside its       its other attn.* ops: overhead_s per layer + overhead_per_
                      GEMMs, rope and attention kernel   token_s per query-head row (benchmarks/validate_mla.py --fit)

- gemm / gemm_fp8 / moe: compute_max is what a large GEMM reaches; compute_tokens_half a padding cost (the FLOP time
  of T + T_half rows: M padded to tiles, wave quantization) and compute_cols_half the same in N (op.gemm_n, the output
  columns of one kernel); compute_outs_half: output parallelism (T*N outputs: few output tiles leave SMs idle while
  each CTA walks all of K; with compute_k_split K_s > 0 it counts T*N*max(1, K/K_s) work units: split-K);
  compute_depth_half (bf16): each output tile's pipeline fill and epilogue amortized over its K loop; memory_max:
  weight streaming at small T; overhead_s the launch floor (moe: per grouped GEMM, two per block);
  overhead_per_output_elem_s the epilogue (writing C, not overlapped); overhead_per_token_s (gemm_fp8) the activations'
  dynamic fp8 quantization, a pass per row. T for an expert GEMM is its rows per touched expert;
  overhead_per_walked_elem_s (moe) the routed rows the fused block passes over outside its grouped GEMMs
  (op.walked_rows x (K + N): sort, activation, top-k sum; under expert parallelism over tokens every chip holds, all
  T*k rows), overhead_per_token_elem_s its passes once per token (op.token_elems = tokens x d_model); moe_fp8 also
  overhead_per_depth_s per element of each GEMM's K (block-scaled fp8 walks K in 128-wide rescaled blocks). fp8 and
  fp4 GEMMs (gemm_fp8; gemm_fp4 also the outs factor) have their own fit of every parameter, and past one M tile of
  compute_m_tile rows (0, 128 or 256) a factor T / (ceil(T / tile) * tile): a kernel sized to M up to a tile. Where
  the kernel's tile rule is known (compute_tile_rule: vLLM's fp8 GEMM on Ada) the tile grid replaces the tokens and
  columns factors: waves of tiles over the chip's SMs, a time per wave and per tall tile's output (gemm_tiles.py).
- MoE: compute_m_block_rule pads each expert's T rows to the kernel's M blocks (m_block_padding); compute_width_half:
  f(i / tp, h) (op.expert_width): narrow experts (high moe_tp) spread each tile's fixed work over fewer multiply-adds;
  overhead_ep_s (fitted for moe_quant, moe_fp4): a floor per kernel where the routed experts are split over chips
  (op.expert_chips > 1): the expert-parallel path's own work (H100 GPT-OSS mxfp4, 1 token: 68 us at ep 4-128, 63 us
  at ep 1 reading 4x the weights); memory_token_tile (moe, moe_fp8 on Blackwell: 64, TRT-LLM's cap): each token tile
  after the first re-reads the share of an expert's block weights the chip's L2 cannot hold, the memory fraction
  scaled by hbm / (hbm + those bytes) (expert_kernels.restreamed_weight_bytes; Mixtral-like 352 MB experts).
- Weight-only quantized GEMMs (int4/int8/fp8 weights, bf16 compute) run dequantizing kernels: the packed-weight read
  plus a dequant cost on the vector units, never the padded rows; where vLLM runs Marlin (off Hopper; fp8 / fp4
  weights on Hopper too), at its tensor-core ceiling: the chip's moe_int4 fit (dequant.py, dequant_cap).
- attention (prefill): L = keys per query (causal: (q+1)/2 + prefix) and X = Q+O elements B*q*H*(dqk+dv), both read
  back from the op's counts (attention_shape), and D = op.head_dim: short sequences waste FlashAttention's diagonal
  tiles, few heads x sequences leave SMs idle, small heads spend more of each tile on the softmax (exp, max, rescale
  per score: work per score fixed, matmul work per score ~ D), and G = op.q_per_kv: MHA (G = 1) loads K/V tiles once
  per query head, GQA kernels share them over the group. Plus a time per query tile (query_tiles: Q_TILE = 128 query
  rows; a 16-token sequence still runs a whole one): overhead_per_head_tile_s * B*H*ceil(q/128) for kernels that tile
  each query head (TRT-LLM on Blackwell), overhead_per_group_tile_s * B*n_kv*ceil(q*G/128) for those packing a GQA
  group into one (FlashAttention-3). Q, K, V, O stream at memory_max where the rows show it (fit._OPTIONAL), not hidden
  under the math (memory_serial 1: t_compute + t_memory). attention_decode (attention_decode_fp8 for 8-bit KV caches):
  the KV stream at memory_max plus a floor overhead_per_token_s per sequence (T = B for decode: block-table walk,
  split-KV combine) and overhead_s + overhead_per_kv_row_byte_s * R, R = KV bytes of one context position over the
  batch (B*n_kv*(dqk+dv)*e_kv: grows with batch x KV heads). Its compute term (overlapping the stream: the roofline's
  max) is compute_max * f(L, compute_keys_half) * f(G, compute_group_half), L = keys = min(kv, window): the GQA group
  padded to the kernel's query tile (G query rows per K/V tile) and a per-query-head cost worth compute_keys_half keys
  (Q load, softmax, O store); flops / f(L, h) = flops * (L + h) / L: the compute TIME is affine in the context. Where
  the kernel is FlashInfer's tensor-core decode (compute_q_tile_rule: vLLM's 8-bit KV caches on Ada) the group fills a
  CTA tile of P = 16 / 64 / 128 rows (attention_shapes.query_tile_rows), its time that of P rows: the factor is G / (P
  + compute_group_half), plus overhead_wide_tile_s * (D / 128)^2 per kernel where P > 16 (wide_tile_weight). Memory
  efficiency memory_max * S / hypot(S, memory_streams_half), S = B*n_kv KV streams: split-KV (flash-decoding) caps the
  CTAs one stream gets, so one sequence x one KV head cannot fill HBM (memory_unsplit_half and floor overhead_unsplit_s
  where set, for the streams FlashAttention-2 gives one CTA walking all their keys with no split-KV combine: MHA, G =
  1, and a 16-bit KV cache past its sliding window: attention_shapes.unsplit); and overhead_per_kv_stream_s * S, the
  floor per stream (its CTAs, the split-KV combine). overhead_per_windowed_head_s * B*(H - n_kv): a sliding-window
  decode on FlashAttention-2 (vLLM's kernel on Ampere / Ada packs a GQA group into one tile only without a window) runs
  one tile per query head, G - 1 more per KV head (~0 where the kernel packs it: FA3, FlashInfer). attention_decode_fp8
  adds, past a sliding window of W keys (op.kv_len > W), memory * W / (W + memory_window_half) and overhead_window_s
  per kernel: the kernel reads whole KV blocks and a window ending anywhere straddles one more, walked serially and
  masked (its bytes at large batch, its latency at small). FlashAttention-2 (vLLM on Ampere / Ada, G > 1;
  attention_shapes.decode_kernels): overhead_split_s past one KV block (its combine kernel) and overhead_regroup_s
  where B >= 2 and n_kv >= 2 (Q and O copied to fold each GQA group into one tile). Memory efficiency and overheads
  never depend on the KV length but for these steps at the window and at a KV block (breakpoints:
  spec.context_breakpoints, attention_shapes.KV_BLOCKS), so within a decode stretch every op's compute and memory times
  stay affine and phases.py's closed-form decode sum stays exact.
- Every efficiency is <= 1 and every overhead >= 0, so a calibrated time is never below the ideal roofline bound
  (tests check it with hypothesis). An op with tokens = 0 (unknown) gets the asymptotic efficiencies.
- err_p10 / err_p90: held-out measured / predicted percentiles: est.uncertainty (uncertainty.uncertainty_of).

chip_fits.py picks the fits: a chip's own tables, the families it lacks borrowed from its family default chip
(chip_fits.FAMILY_DEFAULTS; said in `CalibratedModel.label` and per family in `.sources`), TPU_DEFAULT on TPUs
(uncalibrated: compute 0.95 per the book's footnote, memory and links 0.9, 1 us per op). A family missing everywhere
falls back along BORROWS (gemm_fp4 -> gemm_fp8 -> gemm, moe -> gemm, attention_decode -> attention -> gemm's
fractions; moe_quant, moe_fp8 -> moe; moe_int4, moe_fp4 -> moe_quant).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Mapping

import numpy as np

from .errors import ChipError, shown
from .hardware import CHIP_RANGES, Chip, load_chip
from .roofline import Efficiency, stacked, where as _where, with_serial_share
from .units import everywhere, f64 as _float, where_positive
from .attention_shapes import (decode_family, attention_shape, decode_points, is_decode_attention, query_tile_rows,
                               wide_tile_weight)
from .dequant import dequant_efficiency, marlin_compute_max, weight_only_quantized
from .expert_kernels import M_BLOCK_RULES, expert_inputs, m_block_padding, restreamed
from .gemm_tiles import TILE_RULES, tiled

if TYPE_CHECKING:
    from .ops import Op

FAMILIES = ("gemm", "gemm_fp8", "moe", "moe_quant", "attention", "attention_decode", "attention_decode_fp8",
            "elementwise", "activation", "rope", "norm", "embedding", "collective", "moe_fp8", "gemm_fp8_block",
            "all_to_all", "mla_glue", "moe_int4", "gemm_fp4", "moe_fp4")
FP8_COMPUTE = {"fp8": "gemm_fp8", "int8": "gemm_fp8", "fp4": "gemm_fp4", "int4": "gemm_fp8"}  # dtype -> dense family
FP4_EXPERTS = {"fp4": "moe_fp4"}  # fp4 experts' compute dtype -> family (W4A4; else moe_quant: W4A16, bf16 compute)
# a family without its own fit borrows: family -> the family it falls back to (and says so)
BORROWS = {"gemm_fp8": "gemm", "moe": "gemm", "moe_quant": "moe", "attention_decode_fp8": "attention_decode",
           "moe_int4": "moe_quant", "attention_decode": "attention", "moe_fp8": "moe", "gemm_fp8_block": "gemm_fp8",
           "all_to_all": "collective", "gemm_fp4": "gemm_fp8", "moe_fp4": "moe_quant"}


def borrowed_base(family: str, have) -> str:
    """The first family along BORROWS from `family` (itself first) that `have` holds, else the chain's last."""
    while family not in have and family in BORROWS:
        family = BORROWS[family]
    return family


# without an own fit these use the chip's own bf16 fit (BORROWS), not another chip's fit of the 8-bit family
OWN_BF16_FALLBACK = ("gemm_fp8", "attention_decode_fp8", "moe_quant", "moe_fp8", "gemm_fp8_block", "moe_int4",
                     "gemm_fp4", "moe_fp4")
GEMM_FAMILIES = ("gemm", "gemm_fp8", "gemm_fp8_block", "gemm_fp4")  # dense: bf16, fp8 per-tensor / block-scaled, fp4
ATTENTION_FAMILIES = ("attention", "attention_decode", "attention_decode_fp8")  # prefill; decode: bf16, 8-bit KV
DECODE_FAMILIES = ATTENTION_FAMILIES[1:]
MOE_FAMILIES = ("moe", "moe_quant", "moe_fp8", "moe_int4", "moe_fp4")  # fused MoE: bf16, fp4 W4A16, 8-bit, int4, W4A4
COLLECTIVE_FAMILIES = ("collective", "all_to_all")  # priced by alpha-beta terms (roofline.score_collective)


# =============================================================================== parameters
@dataclass(frozen=True)
class FamilyFit:
    """Efficiency parameters of one op family on one chip (see the module docstring)."""

    compute_max: float = 1.0  # asymptotic fraction of peak FLOP/s, (0, 1]
    compute_tokens_half: float = 0.0  # tokens at which compute efficiency is compute_max / 2, >= 0
    memory_max: float = 1.0  # asymptotic fraction of peak HBM bandwidth, (0, 1]
    memory_tokens_half: float = 0.0  # tokens at which memory efficiency is memory_max / sqrt(2), >= 0
    comm_max: float = 1.0  # fraction of link bandwidth, (0, 1]
    overhead_s: float = 0.0  # fixed time per kernel, >= 0
    compute_keys_half: float = 0.0  # attention: keys per query at which the key factor is 1/2, >= 0
    compute_elems_half: float = 0.0  # attention: Q+O elements at which the occupancy factor is 1/2, >= 0
    compute_cols_half: float = 0.0  # GEMM: output columns N at which the column factor is 1/2 (N tiles), >= 0
    compute_dim_half: float = 0.0  # attention: head_dim at which the head-dim factor is 1/2, >= 0
    compute_group_half: float = 0.0  # attention: query heads per K/V head at which the group factor is 1/2, >= 0
    compute_outs_half: float = 0.0  # GEMM: output elements T * N at which the parallelism factor is 1/2, >= 0
    overhead_per_kv_row_byte_s: float = 0.0  # decode attention: floor per byte of one context position's K,V over the batch
    overhead_per_output_elem_s: float = 0.0  # GEMM: epilogue time per output element (T * N), not overlapped, >= 0
    overhead_per_token_s: float = 0.0  # time per row T (fp8 GEMM: the activations' dynamic quantization; decode
    #   attention: per sequence), >= 0
    overhead_per_walked_elem_s: float = 0.0  # moe: time per element (K + N per row) of the routed rows a fused expert
    #   block passes over outside its GEMMs (sort, activation, top-k sum; EP: zero-filled rows of others' experts), >= 0
    err_p10: float = 1.0  # held-out measured / predicted, 10th percentile (uncertainty band), > 0
    err_p90: float = 1.0  # held-out measured / predicted, 90th percentile, > 0
    fitted_on: str = ""
    comm_switch_max: float = 1.0  # collective: fraction of link bandwidth when the switch reduces (NVLS), (0, 1]
    comm_step_s: float = 0.0  # collective: latency per algorithm step beyond the link's latency_s (flag barrier), >= 0
    comm_step_per_doubling_s: float = 0.0  # collective: growth of that step latency per doubling of the GPUs, >= 0
    compute_k_split: float = 0.0  # GEMM: K per split of a split-K kernel: the output-parallelism factor counts T * N *
    #   max(1, K / compute_k_split) work units (a skinny GEMM's serial K walk stops growing past it); 0: none, >= 0
    overhead_per_windowed_head_s: float = 0.0  # decode with a sliding window: time per query head beyond one per KV
    #   head, B*(H - n_kv) (FlashAttention-2 packs a GQA group in one tile only without a window; ~0 elsewhere), >= 0
    overhead_per_head_tile_s: float = 0.0  # prefill attention: time per query tile of one query head (B*H*ceil(q/Q_TILE)
    #   tiles: kernels that give each query head its own tiles; a short sequence still fills a whole tile), >= 0
    overhead_per_group_tile_s: float = 0.0  # prefill attention: time per query tile of one GQA group (B*n_kv*
    #   ceil(q*G/Q_TILE): kernels that pack the group's query heads into one tile, FlashAttention-3), >= 0
    memory_streams_half: float = 0.0  # decode attention: KV streams S (sequences x KV heads) at which the stream
    #   factor S / hypot(S, h) is 1/sqrt(2): split-KV caps the CTAs per stream, so few streams leave HBM idle, >= 0
    memory_unsplit_half: float = 0.0  # the same for the streams FlashAttention-2 does not split (MHA, G = 1; a 16-bit
    #   KV cache past its window: attention_shapes.unsplit); 0: the above
    overhead_unsplit_s: float = 0.0  # decode attention, those streams: overhead_s (no split-KV combine); 0: overhead_s
    overhead_per_kv_stream_s: float = 0.0  # decode attention: time per KV stream (sequence x KV head: the split-KV
    #   kernel's CTAs and combine per stream), >= 0
    memory_window_half: float = 0.0  # fp8-KV decode past its window of W keys: whole KV blocks, W / (W + h), >= 0
    overhead_window_s: float = 0.0  # fp8-KV decode past its window: time per kernel (the masked block walked), >= 0
    compute_m_tile: float = 0.0  # fp8 GEMM: T rows > one tile run ceil(T / tile) whole tiles (factor T / padded), >= 0
    compute_depth_half: float = 0.0  # GEMM: inner dimension K at which the depth factor is 1/2 (each output tile's
    #   pipeline fill and epilogue amortized over its K loop), >= 0
    compute_width_half: float = 0.0  # expert GEMM: intermediate size per chip at which the width factor is 1/2, >= 0
    compute_m_block_rule: float = 0.0  # expert GEMM: its kernel's M block rule (M_BLOCK_RULES); 0: none
    overhead_ep_s: float = 0.0  # expert GEMM with its experts split over chips (expert_chips > 1): time per kernel on
    #   top of overhead_s (the expert-parallel path's own work), >= 0
    overhead_per_token_elem_s: float = 0.0  # moe: time per hidden-vector element its fused block passes once per token
    #   (op.token_elems: input gathered and quantized, top-k outputs combined), >= 0
    overhead_per_depth_s: float = 0.0  # time per element of K of a kernel (its CTAs' serial walk of K), >= 0
    overhead_split_s: float = 0.0  # decode attention, G > 1: the split-KV combine kernel, where the keys span more than
    #   one KV block (attention_shapes.kv_block_keys; FlashAttention-2 splits nothing shorter), >= 0
    overhead_regroup_s: float = 0.0  # decode attention, G > 1, no window: the copies of Q in and O out that fold a KV
    #   head's G query heads into its query tile (FlashAttention-2), where B >= 2 and n_kv >= 2 (else a view), >= 0
    memory_l2_extra: float = 0.0  # fit only: a table's replays of a set in L2 read at (1 + this) x HBM (fit._Terms)
    compute_q_tile_rule: float = 0.0  # decode: 1 where a KV head's G query heads fill FlashInfer's CTA tile of P = 16 /
    #   64 / 128 rows (attention_shapes.query_tile_rows): group factor G / (P + compute_group_half); 0: G / (G + ...)
    overhead_wide_tile_s: float = 0.0  # under it: time per kernel x wide_tile_weight ((D / 128)^2 where G > 16), >= 0
    memory_serial: float = 0.0  # share of min(compute, memory time) not hidden (roofline.with_serial_share), [0, 1]
    memory_token_tile: float = 0.0  # expert GEMM: token tile of a fused kernel that re-reads an expert's weights past
    #   the L2 once per tile (expert_kernels.restreamed_weight_bytes; a kernel fact, fit._KERNEL_GRID); 0: none
    compute_tile_rule: float = 0.0  # GEMM: its kernel's output tiles (gemm_tiles.TILE_RULES; 1: vLLM's SM89 CUTLASS
    #   fp8): compute x the useful share of the tile waves on the chip's SMs; 0: none (the smooth factors)
    overhead_per_wave_s: float = 0.0  # under it: time per wave of output tiles (each tile's fill and epilogue), >= 0
    overhead_per_tall_output_s: float = 0.0  # under it: time per output of a 256-row tile (gemm_tiles), >= 0

    def __post_init__(self):
        for name in ("compute_max", "memory_max", "comm_max", "comm_switch_max"):
            v = getattr(self, name)
            if isinstance(v, bool) or not (isinstance(v, (int, float)) and 0 < v <= 1):
                raise ChipError(f"efficiency {name} must be in (0, 1], got {shown(v)}")
        for name in (k for k in PARAMS if not k.endswith("_max")):  # halves, overheads, band: finite, >= 0, capped
            v, top = getattr(self, name), PARAM_TOP[name]
            if isinstance(v, bool) or not (isinstance(v, (int, float)) and 0 <= v <= top and math.isfinite(v)):
                raise ChipError(f"efficiency {name} must be a number in [0, {top:g}], got {shown(v)}")
        for name in ("compute_m_tile", "memory_token_tile"):  # tiles of rows: none (0) or at least one row
            if 0 < getattr(self, name) < 1:
                raise ChipError(f"efficiency {name} must be 0 (none) or at least 1 row, got {getattr(self, name)!r}")
        if (rule := self.compute_m_block_rule) and rule not in M_BLOCK_RULES:  # a kernel's rule, or 0
            raise ChipError(f"efficiency compute_m_block_rule must be 0, 1 or 2, got {shown(rule)}")
        for name, rules in (("compute_q_tile_rule", (0.0, 1.0)), ("compute_tile_rule", TILE_RULES)):  # a kernel's
            if getattr(self, name) not in rules:  # tile rule (FlashInfer's decode tile, a GEMM's tiles), or none
                raise ChipError(f"efficiency {name} must be 0 or 1, got {shown(getattr(self, name))}")

    def compute(self, tokens, keys=0.0, elems=0.0, cols=0.0, dim=0.0, group=0.0, outs=0.0, depth=0.0, width=0.0,
                block_rows=0.0, spread=0.0) -> np.ndarray:
        """compute_max * f(T, compute_tokens_half) * f(keys, compute_keys_half) * f(elems, compute_elems_half)
        * f(cols, compute_cols_half) * f(dim, compute_dim_half) * f(group, compute_group_half) * f(outs, ...)
        * f(depth, compute_depth_half) * f(width, compute_width_half) (* m_block_padding where compute_m_block_rule),
        f(x, h) = x / (x + h); a factor whose x <= 0 (unknown) or h = 0 is 1. GEMM: outs counts
        T * N * max(1, K / compute_k_split) when compute_k_split > 0 and depth K is known (split-K). spread: see
        m_block_padding."""
        out = np.float64(self.compute_max)
        halves, rows = self._set_terms[0], group
        if self.compute_q_tile_rule:  # the tile's P rows are computed, G of them useful: G / (P + half); G unknown: 1
            rows = where_positive(_float(group), lambda g: query_tile_rows(g, dim), 0.0)
            out = out * where_positive(rows, lambda r: _float(group) / r, 1.0)
        if halves:
            if self.compute_k_split > 0 and self.compute_outs_half > 0:
                outs = _float(outs) * np.maximum(1.0, _float(depth) / max(self.compute_k_split, 1.0))  # >= 1 element
            xs = (tokens, keys, elems, cols, dim, rows, outs, depth, width)
            for i, half in halves:
                out = out * _saturation(xs[i], half)
        if self.compute_m_tile > 0:  # past one tile: whole tiles (a GEMM of fewer rows runs a kernel sized to it)
            t, m = np.maximum(_float(tokens), 1.0), self.compute_m_tile
            out = out * _where(t > m, t / (np.ceil(t / m) * m), 1.0)
        if self.compute_m_block_rule > 0:
            out = out * m_block_padding(tokens, block_rows, self.compute_m_block_rule, spread)
        return out

    def memory(self, tokens, streams=0.0, window_keys=0.0, unsplit=0.0) -> np.ndarray:
        """memory_max * T / sqrt(T^2 + memory_tokens_half^2) (* S / hypot(S, h), decode KV streams S, h =
        memory_unsplit_half where `unsplit` (attention_shapes.unsplit) and it is set, else memory_streams_half;
        * f(W, memory_window_half), W = window_keys); T <= 0: memory_max; 0 < T < 1: one row; S, W <= 0: factor 1."""
        if not self.memory_tokens_half:  # T / hypot(T, 0) = 1 at every T: memory_max, one number
            out = np.float64(self.memory_max)
        elif everywhere((t := _float(tokens)) >= 1.0):  # every T a row or more (the common case)
            out = self.memory_max * t / np.hypot(t, self.memory_tokens_half)
        else:
            known = t > 0
            tt = _where(known, np.maximum(t, 1.0), 1.0)
            out = _where(known, self.memory_max * tt / np.hypot(tt, self.memory_tokens_half), self.memory_max)
        if self.memory_streams_half or self.memory_unsplit_half:
            s, h = _float(streams), self.memory_streams_half
            h = _where(_float(unsplit) > 0, self.memory_unsplit_half, h) if self.memory_unsplit_half else h
            out = out * where_positive(s, lambda v: v / np.hypot(v, h), 1.0)
        return out * _saturation(window_keys, self.memory_window_half) if self.memory_window_half else out

    def efficiency(self, tokens=0.0, kernels=1.0, label: str = "calibrated", keys=0.0, elems=0.0, kv_row_bytes=0.0,
                   cols=0.0, dim=0.0, out_elems=0.0, group=0.0, walked=0.0, chips=0.0, depth=0.0, windowed_heads=0.0,
                   head_tiles=0.0, group_tiles=0.0, kv_streams=0.0, window_keys=0.0, width=0.0,
                   block_rows=0.0, expert_chips=0.0, token_elems=0.0, split_kv=0.0, regrouped=0.0,
                   spread=0.0, unsplit=0.0) -> Efficiency:
        """The Efficiency at T = tokens (GEMM: also its output columns; attention: keys per query, Q+O
        elements, head_dim and, for decode, the KV bytes of one context position over the batch); overhead
        (overhead_s + overhead_per_kv_row_byte_s * kv_row_bytes + overhead_per_output_elem_s * out_elems) once
        per kernel; windowed_heads: query rows x heads of a sliding-window decode (0 without a window); head_tiles,
        group_tiles: a prefill's query tiles (query_tiles); kv_streams: a decode's sequences x KV heads; window_keys:
        a decode's keys W past its sliding window (else 0); width, block_rows, spread: compute()'s (expert GEMMs);
        expert_chips: an expert GEMM's moe_ep (> 1: overhead_ep_s per kernel); token_elems: its op.token_elems;
        split_kv, regrouped: 1 where a decode pays overhead_split_s, overhead_regroup_s (attention_shape), else 0;
        unsplit: 1 where its streams are walked unsplit (attention_shapes.unsplit: memory_unsplit_half,
        overhead_unsplit_s)."""
        ovh = (_where(_float(unsplit) > 0, self.overhead_unsplit_s, self.overhead_s) if self.overhead_unsplit_s
               else self.overhead_s)
        if self.overhead_wide_tile_s and self.compute_q_tile_rule:
            ovh = ovh + self.overhead_wide_tile_s * wide_tile_weight(group, dim)
        coefs = self._set_terms[1]
        if coefs:  # the terms whose coefficient is set
            xs = (kv_row_bytes, windowed_heads, kv_streams, head_tiles, group_tiles, out_elems, walked, tokens,
                  _float(window_keys) > 0, _float(expert_chips) > 1,  # past the window, under EP: once per kernel
                  token_elems, depth, split_kv, regrouped)
            for i, c in coefs:
                ovh = ovh + c * np.maximum(_float(xs[i]), 0.0)
        return Efficiency(compute=self.compute(tokens, keys, elems, cols, dim, group, out_elems, depth, width,
                                               block_rows, spread),
                          memory=self.memory(tokens, kv_streams, window_keys, unsplit), comm=self.comm_max,
                          overhead_s=ovh * _float(kernels), label=label, comm_switch=self.comm_switch_max,
                          comm_hop_s=self.step_s(chips))

    @cached_property
    def _set_terms(self) -> tuple:
        """(the compute factors, the overhead terms) whose parameter is set, as (position, parameter): compute()'s
        and efficiency()'s argument order. A factor of h = 0 is 1 and a term of coefficient 0 adds 0, so only these
        are computed (kept: the fit is immutable)."""
        halves = (self.compute_tokens_half, self.compute_keys_half, self.compute_elems_half, self.compute_cols_half,
                  self.compute_dim_half, self.compute_group_half, self.compute_outs_half, self.compute_depth_half,
                  self.compute_width_half)
        coefs = (self.overhead_per_kv_row_byte_s, self.overhead_per_windowed_head_s, self.overhead_per_kv_stream_s,
                 self.overhead_per_head_tile_s, self.overhead_per_group_tile_s, self.overhead_per_output_elem_s,
                 self.overhead_per_walked_elem_s, self.overhead_per_token_s, self.overhead_window_s, self.overhead_ep_s,
                 self.overhead_per_token_elem_s, self.overhead_per_depth_s, self.overhead_split_s,
                 self.overhead_regroup_s)
        return tuple((i, h) for i, h in enumerate(halves) if h > 0), tuple((i, c) for i, c in enumerate(coefs) if c)

    def step_s(self, chips) -> np.ndarray:
        """Collective latency per step beyond the link's: comm_step_s + comm_step_per_doubling_s * log2(chips >= 1)."""
        if not self.comm_step_per_doubling_s:
            return self.comm_step_s
        return self.comm_step_s + self.comm_step_per_doubling_s * np.log2(np.maximum(_float(chips), 1.0))

    def params(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in PARAMS}


def _saturation(x, half: float) -> np.ndarray:
    """x / (x + half), 1 where x <= 0 (unknown)."""
    return where_positive(_float(x), lambda v: v / (v + half), 1.0)


PARAMS = ("compute_max", "compute_tokens_half", "memory_max", "memory_tokens_half", "comm_max", "overhead_s",
          "compute_keys_half", "compute_elems_half", "compute_cols_half", "compute_dim_half", "compute_group_half",
          "compute_outs_half", "overhead_per_kv_row_byte_s", "overhead_per_output_elem_s", "overhead_per_token_s",
          "overhead_per_walked_elem_s", "err_p10", "err_p90", "comm_switch_max", "comm_step_s",
          "comm_step_per_doubling_s", "compute_k_split", "overhead_per_windowed_head_s", "overhead_per_head_tile_s",
          "overhead_per_group_tile_s", "memory_streams_half", "overhead_per_kv_stream_s", "memory_window_half",
          "overhead_window_s", "compute_m_tile", "memory_unsplit_half", "overhead_unsplit_s", "compute_depth_half",
          "compute_width_half", "compute_m_block_rule", "overhead_ep_s", "overhead_per_token_elem_s",
          "overhead_per_depth_s", "overhead_split_s", "overhead_regroup_s", "memory_l2_extra", "memory_token_tile",
          "compute_q_tile_rule", "overhead_wide_tile_s", "memory_serial", "compute_tile_rule", "overhead_per_wave_s",
          "overhead_per_tall_output_s")
# ceilings far above any fit (halves: tokens, keys, elements, columns; overheads: s per kernel, row, byte or element;
# the band: measured / predicted; memory_l2_extra: a rate ratio), so a hostile chip file cannot overflow a time
PARAM_CEILING = {"compute": 1e15, "memory": 1e15, "overhead": 1.0, "err": 1e3, "comm": 1.0}
# each parameter's: its kind's, or the chip file's range where tighter (CHIP_RANGES: every fit must load back)
PARAM_TOP = {n: min(PARAM_CEILING[n.split("_")[0]], CHIP_RANGES.get(f"efficiency.{n}", (0, math.inf))[1])
             for n in PARAMS}
IDEAL_FIT = FamilyFit(fitted_on="ideal roofline")
# TPU: not calibrated; compute 0.95: the book (Part 1 footnote: "TPUs reach 95% in normal use"); the rest ASSUMED
TPU_DEFAULT = FamilyFit(compute_max=0.95, memory_max=0.9, comm_max=0.9, overhead_s=1e-6,
                        fitted_on="tpu default (uncalibrated): compute 0.95 per the book's footnote; memory 0.9, "
                                  "links 0.9, overhead 1 us are assumptions")

def family_of(op: "Op") -> str:
    """The efficiency family of an estimator op (see the module docstring)."""
    if op.kind == "gemm":
        if op.style == "expert" and quantized_experts(op):
            if getattr(op, "weight_dtype", "") == "int4":
                return "moe_int4"
            return FP4_EXPERTS.get(op.compute_dtype, "moe_quant")
        if op.style == "expert" and eight_bit_experts(op):
            return "moe_fp8"
        if fam := FP8_COMPUTE.get(op.compute_dtype):  # the 8-bit and narrower kernels (NVFP4: its own)
            return "gemm_fp8_block" if fam == "gemm_fp8" and block_scaled(op) else fam
        return "moe" if op.style == "expert" else "gemm"
    if op.kind == "attention":
        return decode_family(op) if is_decode_attention(op) else "attention"
    if op.kind == "collective" and op.collective == "all_to_all":
        return "all_to_all"
    if op.kind in ("norm", "embedding", "collective"):
        return op.kind
    name = op.name.rsplit(".", 1)[-1]
    if name in ("act", "activation"):
        return "activation"
    if name == "rope":
        return "rope"
    if name == "mla_glue":
        return "mla_glue"
    return "elementwise"


@dataclass(frozen=True)
class CalibratedModel:
    """Per-family efficiency parameters of one chip. `for_op(op, chip)` -> Efficiency (estimate.py)."""

    chip: str
    label: str
    families: Mapping[str, FamilyFit]
    sources: Mapping[str, str] = field(default_factory=dict)  # family -> where its numbers came from

    def fit_for(self, family: str) -> FamilyFit:
        fit = self._fits.get(family)
        if fit is None:
            fit = self._fits[family] = self.families.get(borrowed_base(family, self.families), IDEAL_FIT)
        return fit

    def __post_init__(self):
        object.__setattr__(self, "bands", {})  # family -> (p10, p90), filled by uncertainty.family_band
        # key -> (tokens array, chip, Efficiency): the ops of a graph share one tokens array, so consecutive ops of a
        # family (dequantizing GEMMs: and chip, compute dtype, ceiling) ask for the same one (held: its id is not
        # reused)
        object.__setattr__(self, "_by_tokens", {})
        object.__setattr__(self, "_fits", {})  # family -> the fit pricing it (fit_for, remembered)
        object.__setattr__(self, "_caps", {})  # (chip name, weight dtype) -> the dequantizing kernel's ceiling

    def dequant_cap(self, chip: Chip, weight_dtype: str = "") -> float:
        """The tensor-core ceiling of `chip`'s dequantizing GEMM kernel for `weight_dtype` weights where it is below
        the gemm fit's (dequant.marlin_compute_max under this model's moe_int4 fit; 1: none that binds), remembered
        per chip and dtype."""
        cap = self._caps.get((chip.name, weight_dtype))
        if cap is None:
            src = self.sources.get("moe_int4", UNCALIBRATED)
            donor = src[len(BORROWED):] if src.startswith(BORROWED) else chip.name
            measured = src != UNCALIBRATED and donor not in FAMILIES
            cap = marlin_compute_max(chip, self.families.get("moe_int4"),
                                     (chip if donor == chip.name else load_chip(donor)) if measured else None,
                                     weight_dtype)
            cap = self._caps[(chip.name, weight_dtype)] = cap if cap < self.fit_for("gemm").compute_max else 1.0
        return cap

    def for_op(self, op: "Op", chip: Chip) -> Efficiency:
        return self._priced(op, chip, family_of(op))

    def _priced(self, op: "Op", chip: Chip, fam: str) -> Efficiency:
        """for_op of an op of family `fam` (family_of(op), read once by for_ops)."""
        if fam in COLLECTIVE_FAMILIES and crosses_domain(op, chip):
            return Efficiency(label=self.label + "; multi-node collective: ideal (not calibrated)")
        p = self.fit_for(fam)
        if dequantizing(op, fam):  # it reads the tokens, the chip's peaks and the dtype
            cap = self.dequant_cap(chip, op.weight_dtype)
            if not getattr(op.tokens, "ndim", 0):
                return dequant_efficiency(p, op, chip, self.label, cap)
            return self._shared(("dequant", op.compute_dtype, cap), op.tokens, chip,
                                lambda: dequant_efficiency(p, op, chip, self.label, cap))
        if op.kind == "attention":
            dec = decode_points(op) if fam == "attention" else True
            if getattr(dec, "ndim", 0) and np.any(dec):  # decode-like at some points only: each priced by its family
                d = self._attention(op, self.fit_for(decode_family(op)), True, chip)
                if np.all(dec | (_float(op.hbm_bytes) <= 0)):  # wherever it has work: the decode fit's numbers (an
                    # op with none launches no kernel there: roofline.launched_overhead_s; its time is 0 at any fit)
                    return d
                pre = self._attention(op, p, False, chip)
                return Efficiency(*(np.where(dec, getattr(d, k), getattr(pre, k)) for k in ("compute", "memory")),
                                  overhead_s=np.where(dec, d.overhead_s, pre.overhead_s), label=self.label)
            return self._attention(op, p, fam != "attention", chip)
        if op.kind == "gemm":  # a GEMM's efficiency also depends on its own output columns (T * N: its epilogue)
            n, k = op.gemm_n, op.gemm_k
            moe = expert_inputs(op.walked_rows, op.token_elems, k, n, op.expert_width, op.local_experts,
                                op.expert_chips) if fam in MOE_FAMILIES else {}
            if any(getattr(x, "ndim", 0) for x in (op.tokens, *moe.values())):
                e = p.efficiency(op.tokens, label=self.label, cols=n, out_elems=_float(op.tokens) * n, depth=k, **moe)
            else:
                e = _efficiency_at(p, op.tokens, self.label, n, k, **{f: float(v) for f, v in moe.items()})
            if moe and p.memory_token_tile:
                e = restreamed(e, [op], op.tokens, chip.onchip_bytes, p.memory_token_tile)
            return e if moe else tiled(e, p, op.tokens, n, chip.onchip_units)
        if fam in COLLECTIVE_FAMILIES:  # direct kernels: a step latency growing with the GPUs; rings (PCIe switch,
            # xGMI / NVLink-bridge mesh): NCCL's steps at the link's latency_s; all_to_all: + a time per token sent
            e = _collective_efficiency(p, int(op.group_chips), self.label, chip.scaleup.nvlink_switch)
            return replace(e, overhead_s=e.overhead_s + t * _float(op.tokens)) if (t := p.overhead_per_token_s) else e
        if not getattr(op.tokens, "ndim", 0):
            return _efficiency_at(p, op.tokens, self.label)
        return self._shared(fam, op.tokens, None, lambda: p.efficiency(op.tokens, label=self.label))

    def _attention(self, op: "Op", p: FamilyFit, decode: bool, chip: Chip) -> Efficiency:
        """A fused attention op at fit p: decode's floor per sequence (tokens), prefill's shape (attention_shape)."""
        e = p.efficiency(op.tokens if decode else 0.0, label=self.label, dim=op.head_dim, group=op.q_per_kv,
                         **attention_shape(op, decode=decode))
        return e if decode else with_serial_share(e, op.flops, op.hbm_bytes, chip.peak_flops_per_s(op.compute_dtype),
                                                  chip.hbm_bytes_per_s, p.memory_serial)

    def for_ops(self, ops: "list[Op]", chip: Chip, grid: tuple) -> list[tuple[list[int], Efficiency]]:
        """for_op of every op as (rows, Efficiency) parts covering each op once: an op priced alone is
        ([j], for_op(ops[j], chip)); the GEMMs over the grid (array tokens or walked rows) share one p.efficiency
        call per family, their T, N, K and walked elements stacked (m, *axes they vary on), the Efficiency's fields
        broadcasting to (m, *grid): for_op's numbers, the formulas being elementwise. (Other ops of a family share
        their tokens array, so for_op prices each family once per grid already.)"""
        if type(self).for_op is not CalibratedModel.for_op:  # a subclass prices ops its own way
            return [([j], self.for_op(op, chip)) for j, op in enumerate(ops)]
        parts, groups = [], {}
        for j, op in enumerate(ops):
            fam = family_of(op)
            if op.kind != "gemm" or dequantizing(op, fam) or not any(
                    getattr(x, "ndim", 0) for x in (op.tokens, op.walked_rows, op.token_elems)):
                parts.append(([j], self._priced(op, chip, fam)))
            else:
                groups.setdefault(fam, []).append(j)
        for fam, rows in groups.items():
            sub = [ops[j] for j in rows]
            shapes = {getattr(x, "shape", ()) for op in sub for x in (op.tokens, op.walked_rows, op.token_elems)} - {()}
            inner = shapes.pop() if len(shapes) == 1 else np.broadcast_shapes(*shapes)  # one grid: its shape
            shape = (len(rows),) + (1,) * (len(grid) - len(inner)) + inner  # the grid axes the GEMMs vary on
            col = (len(rows),) + (1,) * len(grid)
            per_op = lambda f: np.array([getattr(op, f) for op in sub], dtype=np.float64).reshape(col)  # noqa: E731
            n, k, tok = per_op("gemm_n"), per_op("gemm_k"), stacked([op.tokens for op in sub], shape)
            moe = {}
            if fam in MOE_FAMILIES:
                grids = (stacked([getattr(op, f) for op in sub], shape) for f in ("walked_rows", "token_elems"))
                moe = expert_inputs(*grids, k, n, *map(per_op, ("expert_width", "local_experts", "expert_chips")))
            p = self.fit_for(fam)
            e = p.efficiency(tok, label=self.label, cols=n, out_elems=tok * n, depth=k, **moe)
            e = e if moe else tiled(e, p, tok, n, chip.onchip_units)
            parts.append((rows, restreamed(e, sub, tok, chip.onchip_bytes, p.memory_token_tile, shape)
                          if moe and p.memory_token_tile else e))
        return parts

    def pricing_keys(self, ops: "list[Op]", chip: Chip, memo: dict) -> tuple:
        """What for_op(op, chip) reads besides each op, as a key (roofline.stacked_efficiency reuses a stack under
        it): the fit of the op's family (a prefill attention op's decode fit too: its decode-like points), whether a
        collective crosses the chip's scale-up domain and whether that domain is an NVLink switch (its step latency),
        the chip itself for a dequantizing GEMM (its peaks). memo: a dict kept with `ops` (their families, chip-free,
        once). None (no reuse) when a subclass prices ops its own way."""
        if type(self).for_op is not CalibratedModel.for_op:
            return None
        shapes = memo.get("families")
        if shapes is None:  # the distinct families, the chips of each collective, whether any GEMM dequantizes
            fams = [family_of(op) for op in ops]
            mixed = [decode_family(op) for op, f in zip(ops, fams) if f == "attention"]  # decode-like points: for_op
            shapes = memo["families"] = (tuple(dict.fromkeys(fams + mixed)),
                                         tuple(int(op.group_chips) for op, f in zip(ops, fams)
                                               if f in COLLECTIVE_FAMILIES),
                                         any(dequantizing(op, f) for op, f in zip(ops, fams)))
        families, collective_chips, dequant = shapes
        domain, fits = chip.scaleup.domain_size, tuple(self.fit_for(f) for f in families)
        key = (tuple(map(id, fits)), tuple(n > domain for n in collective_chips),  # the chip's peaks: dequantizing
               bool(collective_chips) and chip.scaleup.nvlink_switch,  # GEMMs, prefill attention's serial share
               id(chip) if dequant or any(f.memory_serial for f in fits) else 0,
               chip.onchip_bytes if any(f.memory_token_tile for f in fits) else 0,  # restreamed reads the L2,
               chip.onchip_units if any(f.compute_tile_rule for f in fits) else 0)  # tiled the SMs
        memo.setdefault("kept", {}).setdefault(key, (fits, chip))  # the objects behind the ids live as long as the
        return key  # memo (and the stacks cached under the key in it), so no other fit or chip can reuse an id

    def _shared(self, key, tokens, chip, make) -> Efficiency:
        """make() once for consecutive ops under `key` on the same tokens array and chip (the ops of a graph share
        their tokens array; it is held, so identity is safe)."""
        last = self._by_tokens.get(key)
        if last is None or last[0] is not tokens or last[1] is not chip:
            last = self._by_tokens[key] = (tokens, chip, make())
        return last[2]


@lru_cache(maxsize=4096)
def _efficiency_at(p: FamilyFit, tokens: float, label: str, cols: float = 0.0, depth: float = 0.0,
                   **expert) -> Efficiency:
    """p.efficiency at a scalar token count (GEMM: N and K; expert GEMMs: expert_inputs, as floats), kept."""
    return p.efficiency(tokens, label=label, cols=cols, out_elems=tokens * cols, depth=depth, **expert)


def quantized_experts(op: "Op") -> bool:
    """Whether an expert GEMM's weights are 4-bit (fp4 / int4 + block scales: < QUANT_EXPERT_BITS bits): the 4-bit
    fused-MoE kernels price it (moe_quant, computing in fp4: moe_fp4; int4 weights, op.weight_dtype: vLLM's Marlin
    MoE, moe_int4); 8-bit experts have their own fit (moe_fp8, eight_bit_experts)."""
    return 0 < getattr(op, "weight_bits", 0.0) < QUANT_EXPERT_BITS


@lru_cache(maxsize=256)
def _collective_efficiency(p: FamilyFit, chips: int, label: str, direct: bool) -> Efficiency:
    """p.efficiency of a collective over `chips` GPUs (no token dependence), remembered; without the step
    latency unless `direct` (an NVLink switch: one-shot, two-shot, switch reduction, direct gathers)."""
    eff = p.efficiency(0.0, label=label, chips=chips)
    return eff if direct else replace(eff, comm_hop_s=0.0)


def block_scaled(op: "Op") -> bool:
    """Whether a (non-expert) 8-bit GEMM's weights carry one scale per block of weights (DeepSeek-style 128x128
    fp8 blocks, quantization_config weight_block_size): the block-scaled kernels (DeepGEMM, CUTLASS / FlashInfer
    blockwise, Triton on Ada) rescale the partial sums per 128-deep K block (gemm_fp8_block)."""
    return op.style != "expert" and getattr(op, "weight_block", 0.0) > 0


QUANT_EXPERT_BITS = 6.0  # expert weights narrower than this (4-bit formats, scales included) run 4-bit MoE kernels
EIGHT_BIT_EXPERT_BITS = 12.0  # expert weights from QUANT_EXPERT_BITS up to this (8-bit + scales) run fp8 MoE kernels


def eight_bit_experts(op: "Op") -> bool:
    """Whether an expert GEMM runs vLLM's W8A8 fused-MoE kernels (moe_fp8): weights 8-bit (fp8 / int8 with their
    scales: QUANT_EXPERT_BITS up to EIGHT_BIT_EXPERT_BITS) and computing in an 8-bit dtype (the kernels quantize
    the activations per token group themselves; FLOPs at that peak). 8-bit experts computing in bf16 (a chip
    without fp8 units, a weight dtype override: weight-only, Marlin-style) run the bf16 kernel path: family moe."""
    return QUANT_EXPERT_BITS <= getattr(op, "weight_bits", 0.0) < EIGHT_BIT_EXPERT_BITS and \
        op.compute_dtype in FP8_COMPUTE


def dequantizing(op: "Op", fam: str = "") -> bool:
    """Whether `op` is a dense GEMM that runs a dequantizing kernel: weight-only quantized, in the gemm family
    (fam: family_of(op), when the caller has it)."""
    return (fam or family_of(op)) == "gemm" and weight_only_quantized(op)


def crosses_domain(op: "Op", chip: Chip) -> bool:
    return int(op.group_chips) > chip.scaleup.domain_size


BORROWED = "borrowed: "  # sources[family] of a fit taken from another chip (or another family)
UNCALIBRATED = "uncalibrated"
NOT_MEASURED = "NOT MEASURED"  # how the note of a fit derived from another family's (no rows of its own) begins
