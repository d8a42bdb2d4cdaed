"""Converter for NVIDIA AIConfigurator's vLLM kernel tables (aiconfigurator-core, Apache-2.0): the
`<system>/<table>.csv.gz` files (parquet converted to gzip CSV) -> the measured-timings schema
(calibrate/measurements.py), plus the `keys` column for attention.

Each row of those tables is one kernel call (one layer, one GPU) of vLLM's own kernels, timed by CUDA-graph
replay after warm-ups with locked clocks; `latency` is in milliseconds. Tables converted (others are ignored):

    gemm_perf                  Y[m,n] = X[m,k] W[k,n], gemm_dtype bfloat16 | fp8 (per-tensor) | fp8_block (the
                               gemm_fp8_block family: its kernel-time rows, see _block_kernel_time) | nvfp4
                               (B200 / GB200; the gemm_fp4 family)
    context_attention_perf     causal FlashAttention prefill, batch_size sequences of isl tokens, no prefix
    generation_attention_perf  one decode step, KV length isl + step (isl = 1)
    custom_allreduce_perf      vLLM's custom NVLink all-reduce of message_size bf16 elements (CUDA-graph rows)
    moe_perf                   the fused-MoE expert block of one layer (bf16, 4-bit and block-scaled fp8 experts,
                               balanced routing rows; a100_sxm has bf16 power_law_1.01 rows only: priced with
                               that skew, power_law_routing)
    moe_a2a_perf               MoE expert-parallel dispatch / combine of one layer (DeepEP, ep_size GPUs of one node)

Several kernels (kernel_source) measured the same shape: the fastest one is kept, as vLLM picks the best
kernel it has. Byte accounting (e = element bytes: bf16 2, fp8 1, nvfp4 4.5 / 8 (4 bits + an fp8 scale per 16);
outputs bf16):

    gemm       flops 2mkn; bytes (m*k + k*n) * e_in + m*n * 2; fp8_block adds the fp32 scales, one per 1x128
               activation group and one per 128x128 weight block: (m*k/128 + k*n/16384) * 4
    attention  H, n_kv per GPU, d = head_dim (dqk = dv = d); Q+O elements B*q*H*2d (`elems`)
      prefill  q = kv = L:  flops = B * L(L+1)/2 * 2H * 2d (causal pairs); bytes = elems*2 + B*L*n_kv*2d*2
               keys = (L+1)/2; sliding-window and fp8-KV rows, and head_dim 512, are left out; isl = 1 rows
               are decode rows of KV length 1 (vLLM's decode kernel runs a 1-token query)
      decode   q = 1, kv = min(isl + step, window or inf): flops = B * kv * 2H * 2d;
               bytes = elems*2 + B*kv*n_kv*2d*e_kv; keys = kv; window = window_size (0: none); kv_len = isl + step
    all_reduce bytes = message_size * 2 (the bf16 buffer each GPU holds), tp = num_gpus
    moe        T tokens, hidden h, intermediate i, top-k, E experts over moe_tp x moe_ep: pairs assignments on
               the measured GPU (rank 0: experts [0, E/ep)) over touched local experts, rows per expert m = pairs /
               touched, counted exactly from the collector's balanced routing (balanced_routing: T*k/ep and
               min(E/ep, T*k/ep) on average, but at T*k < ep rank 0 still gets one whole expert); gated up
               (h -> 2i/tp) and down (i/tp -> h): flops 6*pairs*h*i/tp; kernels 2 (two grouped GEMMs: overhead_s
               counts twice, as for the estimator's ops); bytes (touched*3*h*i/tp + pairs*(2h + 3i/tp)) * 2.
               Every GPU holds all T tokens (expert parallelism without token dispatch): the block receives all
               T*k routed rows, and its passes outside the grouped GEMMs (alignment sort, activation, top-k sum,
               zero-filled outputs of experts held elsewhere) run over every one of them, as separate kernels
               that do not overlap the GEMMs: walked = T*k * ((h + 2i/tp) + (i/tp + h)) elements (K + N of the
               two GEMMs), priced by the fitted overhead_per_walked_elem_s (FlashInfer's Blackwell kernels fuse
               them: ~0); k = h, n = i/tp (the expert's width), routed = T*k rows, experts = E/ep local experts
               (the rows per local expert 4-bit MoE kernels size their M blocks to: expert_kernels.m_block_padding),
               ep = moe_ep (above 1 the expert-parallel path: overhead_ep_s), token_elems = 2*T*h: each token's
               hidden vector passed once by each GEMM's side of the block whatever the top-k (input gathered and
               quantized, outputs combined: overhead_per_token_elem_s).
               Left out: shape groups measured faster than streaming their touched experts' weights at peak HBM
               bandwidth (_NOT_AS_NAMED)
    all_to_all T = num_tokens on each rank, h = hidden_size, k = topk: bytes = T * k * h * 2 (each rank's send buffer
               of k routed bf16 copies per token: what the estimator's all_to_all op carries, graph.layers._dispatch_combine;
               DeepEP low-latency sends exactly that, one copy per (token, expert); the high-throughput kernels send
               a token once per destination rank, fewer bytes, which the fitted comm_max absorbs), tp = ep_size.
               Both phases at 2 bytes per element: the collector's comm_dtype is 'default' (bf16 hidden states, no
               fp8 dispatch). Per (phase, shape, tokens) the faster of DeepEP low-latency (measured up to 256
               tokens) and high-throughput (16 and up) is kept, as a deployment picks them for decode and prefill;
               the DeepEP v2 rows (h100 only) are left out, so every GPU has the same kernels. This table's
               `latency` is in MICROseconds (= transmit_us + notify_us)

The `model` column names a shape group for leave-one-group-out validation: GEMM (n, k), attention
(heads, kv heads, head_dim), all-reduce the GPU count, all-to-all (hidden, top-k, experts).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import RooflineError
from .measurements import CSV_ORDER

if TYPE_CHECKING:
    import pandas as pd

# AIConfigurator system folder -> chip file name
SYSTEMS = {"a100_sxm": "a100-80gb", "h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200",
           "gb200": "gb200", "l40s": "l40s"}
AIC_SOURCE = "AIConfigurator vLLM kernel tables (aiconfigurator-core 0.12.0, vLLM 0.24.0; a100 0.14.0) {gpus}"
AIC_TABLES = ("gemm_perf", "context_attention_perf", "generation_attention_perf", "custom_allreduce_perf", "moe_perf",
              "moe_a2a_perf")
AIC_OPS = {"gemm_bf16", "gemm_fp8", "gemm_fp8_block", "gemm_nvfp4", "context_attention", "generation_attention",
           "custom_allreduce", "moe", "moe_nvfp4", "moe_w4a16_mxfp4", "moe_int4_wo",
           "moe_fp8_block", "moe_a2a_dispatch", "moe_a2a_combine"}
AIC_COLUMNS = (CSV_ORDER[:CSV_ORDER.index("flops")] + ("keys", "head_dim", "kv_bits", "q_per_kv", "walked", "routed",
                                                                 "experts", "ep", "token_elems", "window", "kv_len")
               + ("flops", "bytes", "working_set") + CSV_ORDER[CSV_ORDER.index("kernels"):])
# fp8_block: DeepSeek-style block-scaled fp8 (DeepGEMM, CUTLASS / FlashInfer blockwise; Triton on L40S), the
# gemm_fp8_block family. Its rows carry a floor per kernel that no GPU work explains (H100: 55 us FlashInfer, 77 us
# DeepGEMM, 151 us CUTLASS even at m = n = k = 32, where the per-tensor kernel takes 4.7 us; B200 ~150 us, GB200
# ~245 us, L40S ~280 us: 10-50x the per-tensor fp8 kernel of the same shape, and GB200's twice B200's on the same
# silicon), so a row's time is max(that floor, the kernel's time). Kept are the shapes whose per-tensor fp8 kernel
# (the same work without block scales) takes >= BLOCK_FLOOR_MARGIN x the floor of the block kernel that ran them
# (its smallest time on that GPU): their time is the kernel's own, which the estimator prices (the floor, host-side
# or a per-call setup of this vLLM version, is not modelled)
# nvfp4 (W4A4, FlashInfer's CuTe DSL kernel on Blackwell): weights and activations 4 bits + one fp8 scale per 16
_GEMM_DTYPES = {"bfloat16": ("bf16", 2.0), "fp8": ("fp8", 1.0), "fp8_block": ("fp8", 1.0), "nvfp4": ("fp4", 4.5 / 8)}
BLOCK_FLOOR_MARGIN = 2.0
FP8_BLOCK = (128.0, 128.0 * 128.0)  # activation scale group (1 x 128), weight scale block (128 x 128)
# the GEMM collector (collector/vllm/collect_gemm.py, outside_loop_count) times a loop over six RowParallelLinear layers
# of their own weights on one input, the latency divided by six; fp8_block and nvfp4 time one layer (working_set).
# Each layer's output is dropped as the next runs, so the allocator (the CUDA graph's pool) hands all six the same
# buffer: the loop touches the input, six layers' weights and one output
GEMM_LAYER_COPIES = 6.0
GEMM_ONE_LAYER = ("fp8_block", "nvfp4")
_KV_BYTES = {"bfloat16": 2.0, "fp8": 1.0}


def is_aic(ops) -> bool:
    """Whether every op name is one this converter writes."""
    return set(ops) <= AIC_OPS


def source_text(gpus) -> str:
    return AIC_SOURCE.format(gpus="/".join(gpus) or "?")


def is_aic_table(path) -> bool:
    """A path to one of the AIConfigurator tables (by file name), or a directory holding them."""
    p = Path(path)
    if p.is_dir():
        return any((p / f"{t}.csv.gz").is_file() for t in AIC_TABLES) or any(
            (p / s).is_dir() for s in SYSTEMS)
    return any(p.name.startswith(t) for t in AIC_TABLES)


def _fastest(df: "pd.DataFrame", keys: list[str]) -> "pd.DataFrame":
    """One row per shape: the fastest kernel."""
    return df.sort_values("latency", kind="stable").drop_duplicates(keys).sort_values(keys, kind="stable")


def gemm_rows(df: "pd.DataFrame") -> dict:
    df = _block_kernel_time(_fastest(df[df["gemm_dtype"].isin(list(_GEMM_DTYPES))], ["gemm_dtype", "m", "n", "k"]))
    m, n, k = (df[c].to_numpy(np.float64) for c in ("m", "n", "k"))
    e = df["gemm_dtype"].map(lambda d: _GEMM_DTYPES[d][1]).to_numpy(np.float64)
    block = (df["gemm_dtype"] == "fp8_block").to_numpy()
    scales = np.where(block, (m * k / FP8_BLOCK[0] + k * n / FP8_BLOCK[1]) * 4.0, 0.0)  # fp32 scales
    weights, out = k * n * e + scales, m * n * 2.0  # one layer's weights (and scales), its bf16 output
    copies = np.where(df["gemm_dtype"].isin(GEMM_ONE_LAYER).to_numpy(), 1.0, GEMM_LAYER_COPIES)
    return dict(family=np.where(block, "gemm_fp8_block", "gemm"),
                op="gemm_" + df["gemm_dtype"].map({"bfloat16": "bf16"}).fillna(df["gemm_dtype"]),
                dtype=df["gemm_dtype"].map(lambda d: _GEMM_DTYPES[d][0]).to_numpy(), tp=1.0, m=m, k=k, n=n,
                flops=2 * m * k * n, bytes=m * k * e + weights + out, working_set=m * k * e + copies * weights + out,
                model=[f"n{a:g}_k{b:g}" for a, b in zip(n, k)], measured_s=df["latency"].to_numpy() * 1e-3)


def _block_kernel_time(df: "pd.DataFrame") -> "pd.DataFrame":
    """The rows without the fp8_block ones whose kernel time may hide under their kernel's floor (the smallest
    fp8_block time of the same kernel_source): kept are the shapes whose per-tensor fp8 kernel (the same work
    without the block scales) takes at least BLOCK_FLOOR_MARGIN x that floor."""
    import pandas as pd

    block = df["gemm_dtype"] == "fp8_block"
    floor = df["kernel_source"].map(df[block].groupby("kernel_source")["latency"].min())
    key = ["m", "n", "k"]
    per_tensor = df[df["gemm_dtype"] == "fp8"].set_index(key)["latency"]
    witness = per_tensor.reindex(pd.MultiIndex.from_frame(df[key])).to_numpy()
    keep = ~block.to_numpy() | (np.nan_to_num(witness) >= BLOCK_FLOOR_MARGIN * floor.fillna(np.inf).to_numpy())
    return df[keep]


def _heads(df: "pd.DataFrame"):
    return tuple(df[c].to_numpy(np.float64) for c in ("batch_size", "num_heads", "num_key_value_heads", "head_dim"))


def _group(df: "pd.DataFrame") -> list[str]:
    return [f"h{a}_kv{b}_d{c}" for a, b, c in zip(df["num_heads"], df["num_key_value_heads"], df["head_dim"])]


def _windowed(df: "pd.DataFrame") -> "pd.DataFrame":
    """The table with window_size (0 = full attention) even where the system's table has no such column."""
    return df if "window_size" in df else df.assign(window_size=0)


def context_rows(df: "pd.DataFrame") -> dict:
    """Prefill rows (isl > 1) plus the 1-token rows as decode rows of KV length 1 (vLLM runs a 1-token query with
    its decode kernel: kernel_source trtllmdecode on B200; attention_shapes.is_decode_attention agrees)."""
    import pandas as pd

    df = _windowed(df)
    keep = (df["window_size"] == 0) & (df["kv_cache_dtype"] == "bfloat16") & (df["head_dim"] != 512)
    one = df[keep & (df["isl"] == 1)].assign(isl=0, step=1)  # KV length isl + step = 1
    prefill = pd.DataFrame(_prefill_rows(df[keep & (df["isl"] > 1)]))
    if one.empty:
        return prefill.to_dict("series")
    return pd.concat([prefill, pd.DataFrame(generation_rows(one))], ignore_index=True).to_dict("series")


def _prefill_rows(df: "pd.DataFrame") -> dict:
    df = _fastest(df, ["batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim"])
    b, h, kvh, d = _heads(df)
    L = df["isl"].to_numpy(np.float64)
    elems = b * L * h * 2 * d  # (B, L, H, dqk + dv): Q in, O out
    return dict(family="context_attention", op="context_attention", dtype="bf16", tp=1.0, m=b * L, elems=elems,
                keys=(L + 1) / 2, head_dim=d, kv_bits=16.0, q_per_kv=h / kvh, flops=b * L * (L + 1) / 2 * 2 * h * 2 * d,
                bytes=elems * 2.0 + b * L * kvh * 2 * d * 2.0, model=_group(df),
                measured_s=df["latency"].to_numpy() * 1e-3)


def generation_rows(df: "pd.DataFrame") -> dict:
    df = _windowed(df)
    df = df[df["head_dim"] != 512]
    df = _fastest(df, ["batch_size", "isl", "step", "num_heads", "num_key_value_heads", "head_dim",
                       "window_size", "kv_cache_dtype"])
    b, h, kvh, d = _heads(df)
    kv = (df["isl"] + df["step"]).to_numpy(np.float64)
    w = df["window_size"].to_numpy(np.float64)
    kv = np.where(w > 0, np.minimum(kv, w), kv)
    elems = b * h * 2 * d  # (B, 1, H, dqk + dv)
    e_kv = df["kv_cache_dtype"].map(_KV_BYTES).to_numpy(np.float64)
    return dict(family="generation_attention", op="generation_attention", dtype="bf16", tp=1.0, m=b,
                elems=elems, keys=kv, head_dim=d, kv_bits=8.0 * e_kv, q_per_kv=h / kvh, window=w,
                kv_len=(df["isl"] + df["step"]).to_numpy(np.float64),
                flops=b * kv * 2 * h * 2 * d,
                bytes=elems * 2.0 + b * kv * kvh * 2 * d * e_kv,
                model=_group(df), measured_s=df["latency"].to_numpy() * 1e-3)


def allreduce_rows(df: "pd.DataFrame") -> dict:
    df = _fastest(df[df["backend"] == "vllm_graph"], ["num_gpus", "message_size"])
    n = df["num_gpus"].to_numpy(np.float64)
    return dict(family="all_reduce", op="custom_allreduce", dtype="bf16", tp=n,
                bytes=df["message_size"].to_numpy(np.float64) * 2.0, model=[f"n{int(x)}" for x in n],
                measured_s=df["latency"].to_numpy() * 1e-3)


_A2A_BACKENDS = ("deepep_ll", "deepep_ht")  # DeepEP low-latency and normal (high-throughput) kernels


def a2a_rows(df: "pd.DataFrame") -> dict:
    """MoE dispatch / combine rows: the fastest backend per (phase, shape, tokens); bytes = T * k * h * 2."""
    df = _fastest(df[(df["node_num"] == 1) & df["comm_backend"].isin(_A2A_BACKENDS)], ["phase", "hidden_size", "topk", "num_experts", "ep_size", "num_tokens"])
    t, h, k = (df[c].to_numpy(np.float64) for c in ("num_tokens", "hidden_size", "topk"))
    return dict(family="all_to_all", op="moe_a2a_" + df["phase"].astype(str), dtype="bf16",
                tp=df["ep_size"].to_numpy(np.float64), m=t, bytes=t * k * h * 2.0,
                model=[f"h{a}_k{b}_e{c}" for a, b, c in zip(df["hidden_size"], df["topk"], df["num_experts"])],
                measured_s=df["latency"].to_numpy() * 1e-6)  # this table's latency is in us (transmit_us)


# 4-bit fused-MoE kernels: moe_dtype -> (family, compute dtype: the peak its FLOPs run at, bits per stored weight
# element with its block scales). nvfp4: fp4 weights, one fp8 scale per 16, fp4 activations (w4a4, the moe_fp4
# family; vLLM's nvfp4 oracle on Blackwell: FlashInfer TRT-LLM, its monolithic kernel where it supports the config,
# else the modular one);
# w4a16_mxfp4: MXFP4 weights (one 8-bit scale per 32) dequantized to bf16, GPT-OSS (vLLM's gpt_oss_mxfp4 oracle:
# FlashInfer TRT-LLM mxfp4_bf16 on Blackwell, OAI Triton on Hopper, Marlin on Ada); int4_wo: int4 weights, a bf16
# scale per group of 128, bf16 compute: vLLM's Marlin MoE, what AWQ / GPTQ / compressed-tensors int4 checkpoints
# run on every GPU (the moe_int4 family: a kernel of its own, the op tells it by its weight dtype). 8-bit: _MOE_FP8.
_MOE_QUANT = {"nvfp4": ("moe_fp4", "fp4", 4.5), "w4a16_mxfp4": ("moe_quant", "bf16", 4.25),
              "int4_wo": ("moe_int4", "bf16", 4.125)}
# 4-bit rows left out: kernels vLLM does not run by default for the checkpoints the estimator reads.
# w4a8_mxfp4_mxfp8 (FlashInfer TRT-LLM, MXFP8 activations): GPT-OSS runs it only when VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8
# is set (its default on Blackwell is the bf16-activation kernel). kernel_source 'compressedtensorsw4a4mxfp4': the
# Marlin kernel of compressed-tensors MXFP4 checkpoints, which the estimator reads as the same format as GPT-OSS's
# (fp4, 32-element blocks) and prices with the GPT-OSS kernel's fit (OAI Triton on Hopper, TRT-LLM on Blackwell).
# 'nvfp4moe_flashinfer_cutlass': FlashInfer's CUTLASS nvfp4 kernel, after TRT-LLM in the oracle's order (measured for
# one shape only, 6144 x 3072 top-4 of 128, at ~2x the time the TRT-LLM kernels' fit gives it)
_MOE_QUANT_LEFT_OUT = ("compressedtensorsw4a4mxfp4", "nvfp4moe_flashinfer_cutlass")


# (hidden, inter, top-k, experts) groups whose rows are measured up to 1.35x (top-6) and 1.6x (top-22) faster than
# streaming the touched experts' weights at the GPU's peak HBM bandwidth, by the same factor on H100, H200 and B200
# (e.g. H100, 2688 x 1856, top-6 of 128, 48 tokens: all 128 experts, 3.8 GB, in 859 us = 4.5 TB/s against 3.35):
# the kernel cannot have run the shape the row names, so no model of that shape can match them. DeepSeek-V3's
# (7168 x 2048, top-8 of 256; fp8_block rows only): from 16 tokens on, H100 tp 1 streams 11.3 GB of fp8 experts
# in 1.97 ms (5.7 TB/s), as if half the experts were touched (the collector's balanced pattern through
# DeepSeek's group-limited gate, 4 of 8 groups, is our reading), while tp 8 runs 1.3-2.6x slower than the fit
_NOT_AS_NAMED = ((2048, 5120, 22, 512), (2688, 1856, 6, 128), (7168, 2048, 8, 256))


# 8-bit fused-MoE kernels (moe_fp8 family): fp8_block, the block-scaled fp8 experts of DeepSeek-V3 / Qwen3 FP8
# checkpoints (a 32-bit scale per 128 x 128 weight block: 8.002 bits; activations quantized to fp8 per 128-element
# group inside the block). FLOPs at the fp8 peak: the kernels run W8A8 (DeepGEMM / Triton / CUTLASS block-scaled
# fp8), as the estimator's expert ops of such checkpoints do (compute_dtype fp8). Left out: per-tensor fp8 (ModelOpt) experts, whose H100 / H200 kernel (FlashInfer CUTLASS) runs
# 2x slower than the bf16 Triton one at the median (0.18 of HBM bandwidth), unlike the fp8_block kernels (1.8x faster)
_MOE_FP8 = {"fp8_block": ("fp8", 8.0 + 32.0 / (128 * 128))}
# bits per stored expert weight of each fused-MoE family's rows (bf16: 16), what fit._expert_weights reads
MOE_WEIGHT_BITS = {"moe": 16.0, **{fam: bits for fam, _, bits in _MOE_QUANT.values()},
                   "moe_fp8": _MOE_FP8["fp8_block"][1]}


# bf16 fused-MoE rows left out: vLLM's unquantized oracle on Blackwell runs FlashInfer TRT-LLM's bf16 MoE and falls
# back to FlashInfer CUTLASS where that kernel does not take the config. The collector ran two shape groups on CUTLASS
# (h 2816 i 704 top-8 of 128, h 6144 i 3072 top-4 of 128: 648 rows per GPU, 1.3-2x the time the other groups' fit
# gives them, 55 us for one token at i / tp 96 where TRT-LLM groups take 21-29 us). Which configs fall back is not in
# the rows (not i / tp: 1856, 464 and 192 ran TRT-LLM), so the moe fit is TRT-LLM's; validate.py prices these rows
# with it (moe_rows(..., fallback=True))
_MOE_BF16_FALLBACK = "unquantizedfusedmoe_flashinfer_cutlass"


def moe_rows(df: "pd.DataFrame", fallback: bool = False) -> dict:
    """The bf16 fused-MoE rows (family moe, without the fallback kernel's: _MOE_BF16_FALLBACK), the 4-bit ones
    (moe_quant, moe_fp4 and moe_int4: _MOE_QUANT, without _MOE_QUANT_LEFT_OUT) and the 8-bit ones (moe_fp8:
    _MOE_FP8). fallback: the bf16 rows of the fallback kernel alone (family moe)."""
    import pandas as pd

    bf16 = df[df["moe_dtype"] == "bfloat16"]
    cutlass = bf16["kernel_source"].astype(str).str.contains(_MOE_BF16_FALLBACK)
    if fallback:
        return _moe_rows(bf16[cutlass], "moe", "bf16", 16.0, "fallback")
    parts = [_moe_rows(bf16[~cutlass], "moe", "bf16", 16.0)]
    for dt, (compute, bits) in _MOE_FP8.items():
        sub = df[df["moe_dtype"] == dt]
        if len(sub):
            parts.append(_moe_rows(sub, "moe_fp8", compute, bits, dt))
    default = ~df["kernel_source"].astype(str).str.contains("|".join(_MOE_QUANT_LEFT_OUT))
    for dt, (family, compute, bits) in _MOE_QUANT.items():
        sub = df[(df["moe_dtype"] == dt) & default]
        if len(sub):
            parts.append(_moe_rows(sub, family, compute, bits, dt))
    frames = [pd.DataFrame(p) for p in parts if len(p["measured_s"])] or [pd.DataFrame(parts[0])]  # none: no rows
    return pd.concat(frames, ignore_index=True).to_dict("series")


def _moe_rows(df: "pd.DataFrame", family: str, compute: str, bits: float, tag: str = "", dist: str = "") -> dict:
    # balanced routing; a system measured with skewed routing only (a100_sxm, vLLM 0.14) -> its mildest skew; dist:
    # the rows of that routing instead (benchmarks/validate_moe_skew.py)
    dist = dist or ("balanced" if (df["distribution"] == "balanced").any() else "power_law_1.01")
    named = df[["hidden_size", "inter_size", "topk", "num_experts"]].apply(tuple, axis=1)
    df = df[(df["distribution"] == dist) & ~named.isin(_NOT_AS_NAMED)]
    df = _fastest(df, ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"])
    t, h, i, k, e, tp, ep = (df[c].to_numpy(np.float64) for c in ("num_tokens", "hidden_size", "inter_size", "topk",
                                                                   "num_experts", "moe_tp_size", "moe_ep_size"))
    if dist.startswith("power_law"):  # the busiest EP rank's expected share under the collector's skew
        pairs, touched = power_law_routing(t, k, e, ep, float(dist.rsplit("_", 1)[1]))
    else:  # token-expert assignments this GPU computes, local experts that receive tokens
        pairs, touched = balanced_routing(t, k, e, ep)
    i_loc = i / tp
    walked = t * k * (2.0 * h + 3.0 * i_loc)  # every routed row the block passes over, K + N elements
    # weights at `bits` per element (block scales included), activations in and out bf16
    nbytes = touched * 3.0 * h * i_loc * bits / 8.0 + pairs * (2.0 * h + 3.0 * i_loc) * 2.0
    return dict(family=family, op="moe" + (f"_{tag}" if tag else ""), dtype=compute, tp=1.0, m=pairs / touched,
                k=h, n=i_loc, routed=t * k, experts=e / ep, ep=ep, kernels=2.0, walked=walked, token_elems=2.0 * t * h,
                flops=6.0 * pairs * h * i_loc, bytes=nbytes,
                model=_moe_groups(h, i, k, e, tp, ep, family), measured_s=df["latency"].to_numpy() * 1e-3)


def _moe_groups(h, i, k, e, tp, ep, family: str) -> list[str]:
    """The shape group of each row: (hidden, intermediate, top-k, experts); moe_int4 (one model shape measured,
    Kimi-K2's) also by its sharding (tp, ep: the kernel's own shape, i/tp and E/ep), so that held-out folds exist."""
    names = [f"h{a:g}_i{b:g}_k{c:g}_e{d:g}" for a, b, c, d in zip(h, i, k, e)]
    return [f"{n}_tp{a:g}_ep{b:g}" for n, a, b in zip(names, tp, ep)] if family == "moe_int4" else names


def balanced_experts(t: int, k: int, e: int) -> np.ndarray:
    """(t, k): the expert of each token's j-th slot under AIConfigurator's balanced routing (balanced_routing)."""
    s = -(-e // k)
    i = np.arange(t)[:, None]
    first = i if t >= s else (i * s) // t
    return (first + np.arange(k)[None, :] * s) % e


def balanced_routing(t, k, e, ep):
    """(assignments, touched experts) on the measured GPU (rank 0, experts [0, E/ep)) under AIConfigurator's
    balanced routing (collector helper balanced_logits): with stride s = ceil(E/k), token i takes experts
    (i + j*s) mod E when T >= s, else (floor(i*s/T) + j*s) mod E, j < k (the collector's float floor is this
    integer division: i*s/T is either exact or at least 1/T from an integer). Vectorized over the rows' shapes."""
    shapes = np.stack(np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (t, k, e, ep))), axis=1)
    loads: dict[tuple[int, int, int], np.ndarray] = {}  # (T, E, k) -> tokens per expert, shared by the ep sizes
    pairs, touched = np.zeros(len(shapes)), np.zeros(len(shapes))
    for j, (tt, kk, ee, pp) in enumerate(shapes.astype(np.int64)):
        if (tt, ee, kk) not in loads:
            loads[tt, ee, kk] = np.bincount(balanced_experts(tt, kk, ee).ravel(), minlength=ee)
        local = loads[tt, ee, kk][:ee // pp]
        pairs[j], touched[j] = local.sum(), np.count_nonzero(local)
    return pairs, np.maximum(touched, 1e-9)


def power_law_routing(t, k, e, ep, alpha: float, draws: int = 16, seed: int = 0):
    """Expected (assignments, touched experts) on the measured GPU under AIConfigurator's power-law routing
    (collector helper _generate_power_law_distribution): per-expert loads drawn from a power law (x in [1, 0.8 T]
    when T*k > E, else [0.01, 2]; density ~ x^-alpha), scaled to T*k and rounded (the remainder put on the
    largest loads), and the EP group of E/ep experts with the largest load placed on the measured rank.
    Averaged over `draws` draws of a fixed seed (deterministic); vectorized over the rows' shapes."""
    rng = np.random.default_rng(seed)
    shapes = np.stack(np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (t, k, e, ep))), axis=1)
    pairs, touched = np.zeros(len(shapes)), np.zeros(len(shapes))
    for j, (tt, kk, ee, pp) in enumerate(shapes):
        n_e, target = int(ee), int(round(tt * kk))
        if n_e % int(pp):  # experts not split evenly: the balanced share
            pairs[j], touched[j] = tt * kk / pp, min(ee / pp, tt * kk / pp)
            continue
        lo, hi = (1.0, tt * 0.8) if tt * kk > ee else (0.01, 2.0)
        a1 = 1.0 - alpha
        u = rng.random((draws, n_e))
        x = ((hi ** a1 - lo ** a1) * u + lo ** a1) ** (1.0 / a1)
        load = np.round(x / x.sum(axis=1, keepdims=True) * target)
        delta = target - load.sum(axis=1)  # the remainder, one token at a time on the largest (smallest) loads
        order = np.argsort(-load, axis=1, kind="stable")
        for d in range(draws):
            step, idx = (1.0, order[d]) if delta[d] > 0 else (-1.0, order[d][::-1])
            np.add.at(load[d], idx[np.arange(int(abs(delta[d]))) % n_e], step)
        groups = np.maximum(load, 0.0).reshape(draws, int(pp), n_e // int(pp))
        busiest = groups[np.arange(draws), groups.sum(axis=2).argmax(axis=1)]
        pairs[j], touched[j] = busiest.sum(axis=1).mean(), (busiest > 0).sum(axis=1).mean()
    return pairs, np.maximum(touched, 1e-9)


_CONVERTERS = {"moe_perf": moe_rows, "gemm_perf": gemm_rows, "context_attention_perf": context_rows,
               "generation_attention_perf": generation_rows, "custom_allreduce_perf": allreduce_rows,
               "moe_a2a_perf": a2a_rows}


def convert_table(path, gpu: str) -> "pd.DataFrame":
    """One AIConfigurator table (csv.gz) -> measured-timings rows (AIC_COLUMNS) for chip `gpu`."""
    import pandas as pd

    p = Path(path)
    name = next((t for t in AIC_TABLES if p.name.startswith(t)), None)
    if name is None:
        raise RooflineError(f"{path}: not an AIConfigurator table this converter reads ({', '.join(AIC_TABLES)})")
    try:
        cols = _CONVERTERS[name](pd.read_csv(p))
    except (OSError, KeyError, TypeError, ValueError, UnicodeDecodeError) as e:  # pandas' parser errors are ValueErrors
        raise RooflineError(f"{path}: not a readable {name} table ({type(e).__name__}: {str(e)[:120]})") from None
    out = pd.DataFrame(cols)
    out["gpu"] = gpu
    for c in AIC_COLUMNS:
        if c not in out:
            out[c] = 1.0 if c in ("kernels", "nodes") else (np.nan if c not in ("model", "op") else "")
    return out[list(AIC_COLUMNS)].reset_index(drop=True)


def convert_aic(src, tables=AIC_TABLES) -> "pd.DataFrame":
    """An aic-vllm directory (its <system>/ folders), one system folder, or one table -> measured rows;
    `gpu` is the chip name of the system (SYSTEMS)."""
    import pandas as pd

    p = Path(src)
    if p.is_file():  # a table outside a system folder: gpu unknown ('' = every row is the chip's)
        return convert_table(p, SYSTEMS.get(p.parent.name, ""))
    systems = [p] if any((p / f"{t}.csv.gz").is_file() for t in tables) else \
        [p / s for s in SYSTEMS if (p / s).is_dir()]
    if not systems:
        raise RooflineError(f"{src}: no AIConfigurator system folders ({', '.join(SYSTEMS)}) or tables")
    parts = [convert_table(d / f"{t}.csv.gz", SYSTEMS.get(d.name, ""))
             for d in systems for t in tables if (d / f"{t}.csv.gz").is_file()]
    return pd.concat(parts, ignore_index=True)
