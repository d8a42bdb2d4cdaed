"""Kernels timed on a GPU by a framework the fits never saw (PyTorch: cuBLAS GEMMs, SDPA attention), against the
shipped fits: an out-of-framework check of the calibrated model. Maintainers run it where they have a GPU.

    python3 benchmarks/gpu_check.py measure OUT.csv [--parts gemm,attention]   # on the GPU (PyTorch with CUDA)
    python3 benchmarks/gpu_check.py compare OUT.csv [--chip h100-sxm]   # anywhere: ideal / calibrated error

`measure` writes rows in the measured-timings schema (calibrate/measurements.py), so `llm-roofline calibrate`
reads them too. Each kernel is timed as the median of 5 replays of a CUDA graph of a few dozen launches; inputs
rotate over enough copies to overflow L2 (the weights and KV of a real step come from HBM). Families:

    gemm            F.linear (cuBLAS, bf16) and torch._scaled_mm (cuBLASLt, fp8 e4m3 per-tensor scales, bf16 out)
                    on LLM projection shapes (n, k) at M = 1 ... 8192 tokens
    weight_only     tinygemm int4 (torch._weight_int4pack_mm, group 128) and int8 (torch._weight_int8pack_mm)
                    weight-only GEMMs, bf16 activations, same shapes: written to OUT_weight_only.csv, beside OUT
                    (the measured-timings schema has no weight width; `compare` prices that file as `estimate`
                    prices a weight-only GEMM)
    attention       causal SDPA prefill of B sequences of L tokens, GQA (flash = FlashAttention-2; cudnn)
    attention_decode  SDPA of a 1-token query over an L-token bf16 KV cache (flash; cudnn; efficient)
    elementwise     a bf16 residual add x + y
    moe             a bf16 MoE block: routed rows gathered, two grouped GEMMs (torch._grouped_mm) with SiLU-and-mul,
                    weighted sum per token; balanced routing as the collector's
    fp8_quant       an fp8 linear split: the activations' fp8 quantization (Triton, static per-tensor and dynamic
                    per-token), cuBLASLt's fp8 GEMM alone (per-tensor, rowwise scales) and the two together, on
                    the shapes vLLM's fp8 tables hold too: written to OUT_fp8_quant.csv, beside OUT
    memory          RMSNorm, SiLU-and-mul and NeoX rotary as fused Triton kernels (gpu_kernels.py), embedding gather;
                    written to OUT as the other parts (the Vidur schema of the memory-bound families)

The kernels differ from vLLM's, whose tables the fits saw: cuBLAS bf16 is what vLLM runs for unquantized
linears (the same library); its fp8 linears run CUTLASS, its attention FlashAttention-3 on Hopper, which is
faster than PyTorch's FlashAttention-2: a calibrated estimate faster than SDPA prefill is expected there. The rows
are never fitted (the fits use only the measured tables named in CALIBRATION.md); `compare` prints the error per
family, op and size bucket. benchmarks/data/gpu_check_<gpu>.csv (and _weight_only.csv, _moe.csv, _memory.csv,
_fp8_quant.csv) hold the rows measured so far.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (n, k) per GPU: Llama-3.1-8B tp1 (qkv, o, gate_up, down, lm_head), Llama-3.1-70B tp8 (qkv, o, gate_up, down),
# Qwen2.5-7B tp1 (qkv, gate_up, down)
GEMM_SHAPES = ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (128256, 4096),
               (1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584),
               (4608, 3584), (37888, 3584), (3584, 18944))
GEMM_TOKENS = (1, 8, 32, 128, 512, 2048, 8192)
# (query heads, KV heads, head_dim) per GPU: Llama-3.1-8B, 70B tp8, 70B tp1, Qwen2.5-7B, gpt-oss (d 64),
# Llama-2-7B (MHA), Gemma-2-9B tp2 (d 256)
HEADS = ((32, 8, 128), (8, 1, 128), (64, 8, 128), (28, 4, 128), (64, 8, 64), (32, 32, 128), (8, 4, 256))
PREFILL = ((1, 256), (1, 1024), (1, 4096), (1, 16384), (4, 1024))  # (sequences, tokens each)
DECODE = ((1, 512), (1, 4096), (1, 32768), (16, 512), (16, 4096), (16, 32768), (64, 4096), (64, 32768))
ADD_ELEMS = (2**16, 2**20, 2**24, 2**27)
# MoE blocks (hidden h, expert intermediate i per GPU, top-k, experts E): Mixtral-8x7B, Qwen3-30B-A3B, Qwen3-235B-A22B,
# gpt-oss-120b, DeepSeek-V3 at tp 8 (i = 2048 / 8)
MOE_SHAPES = ((4096, 14336, 2, 8), (2048, 768, 8, 128), (4096, 1536, 8, 128), (2880, 2880, 4, 128),
              (7168, 256, 8, 256))
MOE_TOKENS = (1, 8, 64, 256, 1024, 4096, 16384)
# memory-bound kernels (name, hidden d, MLP width F per GPU, query heads H, KV heads, head_dim) per GPU:
# Llama-3.1-8B tp 1, Llama-3.1-70B tp 8
MEMORY_SHAPES = (("llama8b_tp1", 4096, 14336, 32, 8, 128), ("llama70b_tp8", 8192, 3584, 8, 1, 128))
MEMORY_TOKENS = (1, 16, 128, 1024, 4096, 16384)
KV_CAP_BYTES = 16e9  # decode points whose KV cache is larger are skipped
GPU_CHIPS = {"H100": "h100-sxm", "H200": "h200", "B200": "b200", "GB200": "gb200", "A100": "a100-80gb",
             "L40S": "l40s"}


# ============================================================================ measuring (needs torch + CUDA)
def _timer(torch, l2_bytes: int):
    """time_s(make_inputs, run, read_bytes): median seconds of one `run(*inputs)` over CUDA-graph replays, inputs
    rotated over enough copies that they do not stay in L2."""

    def time_s(make, run, read_bytes: float) -> float:
        copies = max(1, min(32, math.ceil(3 * l2_bytes / max(read_bytes, 1.0))))
        sets = [make() for _ in range(copies)]
        for s in sets:
            run(*s)  # warm-up: kernel selection, workspaces
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for s in sets:
            run(*s)
        end.record()
        torch.cuda.synchronize()
        per_call = start.elapsed_time(end) / 1e3 / copies
        reps = max(1, min(64, round(4e-3 / max(per_call * copies, 1e-7))))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for s in sets:
                run(*s)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(reps):
                for s in sets:
                    run(*s)
        graph.replay()
        times = []
        for _ in range(5):
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3 / (reps * copies))
        del graph, sets
        return sorted(times)[2]

    return time_s


def _gemm_rows(torch, time_s, gpu: str, log) -> list[dict]:
    F = torch.nn.functional
    rows = []
    one = torch.ones((), device="cuda", dtype=torch.float32)
    for n, k in GEMM_SHAPES:
        for m in GEMM_TOKENS:
            for dtype, e in (("bf16", 2.0), ("fp8", 1.0)):
                def make(m=m, n=n, k=k, dtype=dtype):
                    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05
                    if dtype == "fp8":
                        return x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
                    return x, w

                if dtype == "bf16":
                    def run(x, w):
                        return F.linear(x, w)
                else:
                    def run(x, w):
                        return torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                rows.append(_row(log, dict(gpu=gpu, model=f"n{n}_k{k}", family="gemm", op=f"torch_gemm_{dtype}",
                                           dtype=dtype, tp=1, m=m, k=k, n=n, flops=2.0 * m * k * n,
                                           bytes=(m * k + k * n) * e + m * n * 2.0),
                                 lambda: time_s(make, run, (m * k + k * n) * e)))
    return rows


# the (n, k) of GEMM_SHAPES that vLLM's H100 / H200 fp8 tables also hold at GEMM_TOKENS (35 points each)
FP8_QUANT_SHAPES = ((4096, 4096), (6144, 4096), (7168, 8192), (8192, 1024), (8192, 3584))


def _fp8_quant_rows(torch, time_s, gpu: str, log) -> list[dict]:
    """An fp8 linear layer's two parts, apart and together: the activations' quantization (Triton: vLLM's static
    per-tensor scheme, one scale; its dynamic per-token scheme, a row's amax first) and cuBLASLt's fp8 GEMM
    (torch._scaled_mm: per-tensor scales; rowwise scales for per-token activations), on FP8_QUANT_SHAPES at
    GEMM_TOKENS. vLLM's fp8 table times its whole linear layer (the collector's static scheme: a quantization kernel,
    then CUTLASS's GEMM); these rows split that time. Written beside OUT (beside_path)."""
    try:
        import gpu_kernels as K  # Triton
        _check_fp8_quant(torch, K, log)
    except Exception as e:  # no Triton, or a kernel that fails to build or is wrong: the part is skipped whole
        log(f"  skipped the fp8_quant part: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")
        return []
    f8, bf16 = torch.float8_e4m3fn, torch.bfloat16
    one = torch.ones((), device="cuda", dtype=torch.float32)

    def tensor_mm(xq, w):  # per-tensor scales
        return torch._scaled_mm(xq, w.t(), scale_a=one, scale_b=one, out_dtype=bf16)

    def row_mm(xq, xs, w, ws):  # a scale per activation row and per weight column
        return torch._scaled_mm(xq, w.t(), scale_a=xs, scale_b=ws, out_dtype=bf16)

    cases = (  # (op, family, run(x, xq, xs, w, ws)): x bf16, xq / xs its fp8 rows and scales made before timing
        ("triton_fp8_quant_static", "elementwise", lambda x, xq, xs, w, ws: K.fp8_quant_static(x, one)),
        ("triton_fp8_quant_token", "elementwise", lambda x, xq, xs, w, ws: K.fp8_quant_token(x)),
        ("torch_gemm_fp8", "gemm", lambda x, xq, xs, w, ws: tensor_mm(xq, w)),
        ("torch_gemm_fp8_rowwise", "gemm", lambda x, xq, xs, w, ws: row_mm(xq, xs, w, ws)),
        ("torch_gemm_fp8_static_quant", "gemm", lambda x, xq, xs, w, ws: tensor_mm(K.fp8_quant_static(x, one), w)),
        ("torch_gemm_fp8_token_quant", "gemm", lambda x, xq, xs, w, ws: row_mm(*K.fp8_quant_token(x), w, ws)))
    rows = []
    for n, k in FP8_QUANT_SHAPES:
        for m in GEMM_TOKENS:
            def make(m=m, n=n, k=k):
                x = torch.randn(m, k, device="cuda", dtype=bf16)
                xq, xs = K.fp8_quant_token(x)
                w = (torch.randn(n, k, device="cuda", dtype=bf16) * 0.05).to(f8)
                return x, xq, xs, w, torch.full((1, n), 0.05, device="cuda", dtype=torch.float32)

            for op, family, run in cases:
                sizes = (dict(k=k, n=n, flops=2.0 * m * k * n, bytes=m * k * 2.0 + k * n + m * n * 2.0)
                         if family == "gemm" else dict(k=k, bytes=m * k * 3.0))
                rows.append(_row(log, dict(gpu=gpu, model=f"n{n}_k{k}", family=family, op=op, dtype="fp8", tp=1, m=m,
                                           elems=m * k, **sizes),
                                 lambda run=run, m=m, n=n, k=k: time_s(make, run, m * k * 2.0 + k * n)))
    return rows


def _check_fp8_quant(torch, K, log) -> None:
    """Both quantization kernels against PyTorch on fresh inputs (dequantized relative error of fp8 e4m3 ~2 %; a
    wrong kernel raises, and the part is skipped)."""
    x = torch.randn(37, 3000, device="cuda", dtype=torch.bfloat16) * 3
    inv = torch.full((), 1 / 0.05, device="cuda", dtype=torch.float32)
    ref = (x.float() * inv).clamp(-448, 448)
    got = K.fp8_quant_static(x, inv).float()
    err_static = float((got - ref).norm() / ref.norm())
    y, s = K.fp8_quant_token(x)
    ref_s = x.float().abs().amax(dim=1, keepdim=True) / 448
    err_scale = float(((s - ref_s).abs() / ref_s).max())
    err_token = float((y.float() * s - x.float()).norm() / x.float().norm())
    log(f"  fp8 quantization vs PyTorch: static {err_static:.2e}, per-token scales {err_scale:.2e}, values "
        f"{err_token:.2e}")
    if not (err_static < 0.05 and err_scale < 1e-5 and err_token < 0.05):
        raise ValueError(f"the fp8 quantization kernels are wrong (static {err_static:.2e}, scales {err_scale:.2e}, "
                         f"values {err_token:.2e})")


def _weight_only_rows(torch, time_s, gpu: str, log) -> list[dict]:
    """Weight-only quantized GEMMs, bf16 activations: tinygemm int4 (torch._weight_int4pack_mm: 4-bit weights, a bf16
    scale and zero per 128 weights along K: 4.25 bits) and int8 (torch._weight_int8pack_mm, a bf16 scale per column).
    A kernel this PyTorch lacks on CUDA is skipped (logged)."""
    rows = []
    for n, k in GEMM_SHAPES:
        for m in GEMM_TOKENS:
            def make4(m=m, n=n, k=k):
                q = torch.randint(0, 16, (n, k), device="cuda", dtype=torch.int32)
                packed = torch._convert_weight_to_int4pack((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8), 8)
                scales = torch.rand(k // 128, n, 2, device="cuda", dtype=torch.bfloat16) * 0.01
                return torch.randn(m, k, device="cuda", dtype=torch.bfloat16), packed, scales

            def make8(m=m, n=n, k=k):
                w = torch.randint(-128, 128, (n, k), device="cuda", dtype=torch.int8)
                scales = torch.rand(n, device="cuda", dtype=torch.bfloat16) * 0.01
                return torch.randn(m, k, device="cuda", dtype=torch.bfloat16), w, scales

            for name, bits, make, run in (
                    ("w4a16", 4.25, make4, lambda x, w, s: torch._weight_int4pack_mm(x, w, 128, s)),
                    ("w8a16", 8.0 + 16.0 / k, make8, lambda x, w, s: torch._weight_int8pack_mm(x, w, s))):
                weight_bytes = k * n * bits / 8
                rows.append(_row(log, dict(gpu=gpu, model=f"n{n}_k{k}", family="gemm", op=f"torch_gemm_{name}",
                                           dtype="bf16", tp=1, m=m, k=k, n=n, flops=2.0 * m * k * n,
                                           weight_bits=bits, bytes=weight_bytes + (m * k + m * n) * 2.0),
                                 lambda: time_s(make, run, weight_bytes + m * k * 2.0)))
    return rows


def _attention_rows(torch, time_s, gpu: str, log, names=("flash",)) -> list[dict]:
    """SDPA rows of the backends `names` (flash first: a backend whose graph capture fails runs later)."""
    F = torch.nn.functional
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    rows = []
    for h, kvh, d in HEADS:
        group = f"h{h}_kv{kvh}_d{d}"
        for b, L in PREFILL:
            elems = b * L * h * 2 * d
            kv_bytes = b * L * kvh * 2 * d * 2.0
            for name in [x for x in names if x != "efficient"]:
                def make(b=b, L=L):  # (B, L, heads, d) storage as a serving engine lays tokens out, viewed (B, heads, L, d)
                    return tuple(torch.randn(b, L, x, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
                                 for x in (h, kvh, kvh))

                def run(q, k_, v, name=name):
                    with sdpa_kernel(backends[name]):
                        return F.scaled_dot_product_attention(q, k_, v, is_causal=True, enable_gqa=kvh != h)
                rows.append(_row(log, dict(gpu=gpu, model=group, family="attention", op=f"sdpa_{name}_prefill",
                                           dtype="bf16", tp=1, m=b * L, elems=elems, keys=(L + 1) / 2, head_dim=d,
                                           kv_bits=16, q_per_kv=h / kvh, flops=b * L * (L + 1) / 2 * 2 * h * 2 * d,
                                           bytes=elems * 2.0 + kv_bytes),
                                 lambda: time_s(make, run, elems * 2.0 + kv_bytes)))
        for b, L in DECODE:
            kv_bytes = b * L * kvh * 2 * d * 2.0
            if kv_bytes > KV_CAP_BYTES:
                continue
            elems = b * h * 2 * d
            for name in names:
                def make_decode(b=b, L=L):
                    q = torch.randn(b, 1, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
                    return (q, *(torch.randn(b, L, kvh, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
                                 for _ in range(2)))

                def run_decode(q, k_, v, name=name):
                    with sdpa_kernel(backends[name]):
                        return F.scaled_dot_product_attention(q, k_, v, enable_gqa=kvh != h)
                rows.append(_row(log, dict(gpu=gpu, model=group, family="attention_decode", op=f"sdpa_{name}_decode",
                                           dtype="bf16", tp=1, m=b, elems=elems, keys=L, head_dim=d, kv_bits=16,
                                           q_per_kv=h / kvh, window=0, kv_len=L, flops=b * L * 2 * h * 2 * d,
                                           bytes=elems * 2.0 + kv_bytes),
                                 lambda: time_s(make_decode, run_decode, kv_bytes)))
    return rows


def _moe_rows(torch, time_s, gpu: str, log) -> list[dict]:
    """A bf16 MoE block in PyTorch: the routed rows gathered in expert order, two grouped GEMMs
    (torch._grouped_mm, CUTLASS on Hopper) with SiLU-and-mul between, the outputs weighted and summed per token.
    vLLM's own bf16 block on Hopper is a Triton fused-MoE kernel; the fits saw that one alone. Balanced routing as
    the collector's (aic_vllm.balanced_experts), so the rows carry the same pairs, touched experts and byte counts as
    aic_vllm.moe_rows gives its own."""
    import numpy as np

    from llm_roofline.calibrate.aic_vllm import balanced_experts

    F = torch.nn.functional
    rows = []
    for h, i, k, e in MOE_SHAPES:
        for t in MOE_TOKENS:
            experts = balanced_experts(t, k, e)
            load = np.bincount(experts.ravel(), minlength=e)
            pairs, touched = float(t * k), float(np.count_nonzero(load))
            order = np.argsort(experts.ravel(), kind="stable")

            def make(t=t, h=h, i=i, e=e, order=order, load=load):
                x = torch.randn(t, h, device="cuda", dtype=torch.bfloat16)
                # (E, N, K) storage viewed (E, K, N): each expert's weight K-major, as a linear layer holds it
                w1 = (torch.randn(e, 2 * i, h, device="cuda", dtype=torch.bfloat16) * 0.02).transpose(1, 2)
                w2 = (torch.randn(e, h, i, device="cuda", dtype=torch.bfloat16) * 0.02).transpose(1, 2)
                token_of = torch.as_tensor(order // k, device="cuda")
                offs = torch.as_tensor(np.cumsum(load), device="cuda", dtype=torch.int32)
                gate = torch.rand(len(order), 1, device="cuda", dtype=torch.bfloat16)
                return x, w1, w2, token_of, offs, gate

            def run(x, w1, w2, token_of, offs, gate, i=i):
                g = torch._grouped_mm(x.index_select(0, token_of), w1, offs=offs)  # (pairs, 2i)
                y = torch._grouped_mm(F.silu(g[:, :i]) * g[:, i:], w2, offs=offs)  # (pairs, h)
                return torch.zeros_like(x).index_add_(0, token_of, y * gate)

            weight_bytes = touched * 3.0 * h * i * 2.0
            rows.append(_row(log, dict(gpu=gpu, model=f"h{h}_i{i}_k{k}_e{e}", family="moe", op="torch_grouped_mm_moe",
                                       dtype="bf16", tp=1, m=pairs / touched, k=h, n=i, routed=pairs, experts=e, ep=1,
                                       kernels=2, walked=pairs * (2.0 * h + 3.0 * i), token_elems=2.0 * t * h,
                                       flops=6.0 * pairs * h * i,
                                       bytes=weight_bytes + pairs * (2.0 * h + 3.0 * i) * 2.0),
                             lambda: _check_moe(torch, make, run, log, every=t == 8) or
                             time_s(make, run, weight_bytes + t * h * 2.0)))
    return rows


def _check_moe(torch, make, run, log, every: bool) -> None:
    """Where `every`: the grouped block against a per-expert loop in float32 on fresh inputs (relative Frobenius error
    logged; bf16 operands land near 1e-2 at most; 8 tokens leave experts empty where E > 8k): a wrong layout of the
    grouped GEMM's operands stops the run here, not silently."""
    if not every:
        return None
    F = torch.nn.functional
    x, w1, w2, token_of, offs, gate = make()
    got = run(x, w1, w2, token_of, offs, gate).float()
    a = x.float().index_select(0, token_of)
    ref_rows, start = [], 0
    for j, end in enumerate(offs.tolist()):
        g = a[start:end] @ w1[j].float()
        half = g.shape[1] // 2
        ref_rows.append((F.silu(g[:, :half]) * g[:, half:]) @ w2[j].float())
        start = end
    ref = torch.zeros_like(got).index_add_(0, token_of, torch.cat(ref_rows) * gate.float())
    err = float((got - ref).norm() / ref.norm())
    log(f"  moe block vs per-expert float32 loop: relative error {err:.2e}")
    if not err < 2e-2:
        raise SystemExit(f"gpu_check: the grouped MoE block is wrong (relative error {err:.2e}); no rows written")


def _add_rows(torch, time_s, gpu: str, log) -> list[dict]:
    rows = []
    for n in ADD_ELEMS:
        def make(n=n):
            return tuple(torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(2))

        rows.append(_row(log, dict(gpu=gpu, model="", family="elementwise", op="torch_add", dtype="bf16", tp=1,
                                   m=n / 4096, elems=n, bytes=3.0 * n * 2), lambda: time_s(make, torch.add, 4.0 * n)))
    return rows


def _memory_rows(torch, time_s, gpu: str, log) -> list[dict]:
    """Memory-bound families with fused Triton kernels of vLLM's shape (gpu_kernels.py: RMSNorm, SiLU-and-mul,
    NeoX rotary in place) plus PyTorch's embedding gather, on MEMORY_SHAPES at MEMORY_TOKENS, counted as
    calibrate/vidur.py counts its rows (bf16: e = 2): norm (2 M d + d) e, activation 3 M F e, rope (2 qk + M hd) e
    + 8 M with qk = M (H + KV) hd (one launch rotates a token's q and k heads), embedding 2 M d e + 8 M. Each
    kernel is checked against a float32 PyTorch reference on fresh inputs first (a wrong kernel stops the run)."""
    try:
        import gpu_kernels as K  # Triton
    except ImportError as e:
        log(f"  skipped the memory part: {e}")
        return []
    F = torch.nn.functional
    dev, bf16 = "cuda", torch.bfloat16
    _check_memory_kernels(torch, K, log)
    rows = []
    for name, d, f, h, kv, hd in MEMORY_SHAPES:
        table = torch.randn(128256, d, device=dev, dtype=bf16)  # one vocabulary table (0.5-2 GB): its rows are
        #   gathered at random, so none stays in L2
        for m in MEMORY_TOKENS:
            base = dict(gpu=gpu, model=name, dtype="bf16", tp=1, m=m)
            cos_sin = lambda: tuple(torch.rand(8192, hd // 2, device=dev) for _ in range(2))  # noqa: E731
            qk = m * (h + kv) * hd
            cases = (
                ("norm", "triton_rms_norm", m * d, 4.0 * m * d, (2.0 * m * d + d) * 2, 1,
                 lambda m=m, d=d: (torch.randn(m, d, device=dev, dtype=bf16), torch.rand(d, device=dev, dtype=bf16)),
                 K.rms_norm, m * d * 2.0),
                ("activation", "triton_silu_and_mul", m * f, 5.0 * m * f, 3.0 * m * f * 2, 1,
                 lambda m=m, f=f: (torch.randn(m, 2 * f, device=dev, dtype=bf16),), K.silu_and_mul, 2.0 * m * f * 2),
                ("rope", "triton_rope_neox", qk, 3.0 * qk, (2.0 * qk + m * hd) * 2 + 8.0 * m, 1,
                 lambda m=m, h=h, kv=kv, hd=hd: (torch.randn(m, h, hd, device=dev, dtype=bf16),
                                                 torch.randn(m, kv, hd, device=dev, dtype=bf16),
                                                 torch.randint(0, 8192, (m,), device=dev), *cos_sin()),
                 K.rope, qk * 2.0),
                ("embedding", "torch_embedding", m * d, 0.0, 2.0 * m * d * 2 + 8.0 * m, 1,
                 lambda m=m, table=table: (torch.randint(0, 128256, (m,), device=dev), table), F.embedding,
                 m * d * 2.0),
            )
            for family, op, elems, flops, nbytes, kernels, make, run, read in cases:
                rows.append(_row(log, dict(base, family=family, op=op, elems=elems, flops=flops, bytes=nbytes,
                                           kernels=kernels),
                                 lambda make=make, run=run, read=read: time_s(make, run, read)))
    return rows


def _check_memory_kernels(torch, K, log) -> None:
    """Each Triton kernel against float32 PyTorch on fresh inputs (relative error logged; bf16 outputs land near
    4e-3): a wrong kernel stops the run here."""
    F = torch.nn.functional
    dev = "cuda"
    x = torch.randn(37, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.rand(4096, device=dev, dtype=torch.bfloat16)
    xf = x.float()
    checks = [("rms_norm", K.rms_norm(x, w), xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float())]
    g = torch.randn(37, 2 * 3584, device=dev, dtype=torch.bfloat16)
    checks.append(("silu_and_mul", K.silu_and_mul(g), F.silu(g[:, :3584].float()) * g[:, 3584:].float()))
    q, k = (torch.randn(37, n, 128, device=dev, dtype=torch.bfloat16) for n in (32, 8))
    pos = torch.randint(0, 8192, (37,), device=dev)
    cos, sin = (torch.rand(8192, 64, device=dev) for _ in range(2))

    def ref(t):
        c, s = cos[pos][:, None, :], sin[pos][:, None, :]
        a, b = t.float()[..., :64], t.float()[..., 64:]
        return torch.cat([a * c - b * s, b * c + a * s], dim=-1)

    want_q, want_k = ref(q), ref(k)
    K.rope(q, k, pos, cos, sin)
    checks += [("rope q", q, want_q), ("rope k", k, want_k)]
    for name, got, want in checks:
        err = float((got.float() - want).norm() / want.norm())
        log(f"  {name} vs float32 PyTorch: relative error {err:.2e}")
        if not err < 1e-2:
            raise SystemExit(f"gpu_check: the Triton {name} kernel is wrong (relative error {err:.2e}); "
                             "no rows written")


def _row(log, row: dict, timed) -> dict | None:
    """The row with measured_s, or None (logged) where the kernel refuses the shape."""
    try:
        row["measured_s"] = timed()
    except (RuntimeError, ValueError, TypeError, AttributeError) as e:  # a backend that does not take the shape,
        #   OOM, or a kernel this PyTorch lacks
        log(f"  skipped {row['op']} {row.get('model')} m={row.get('m')} keys={row.get('keys')}: "
            f"{str(e).splitlines()[0][:120]}")
        return None
    return row


PARTS = {"add": _add_rows, "gemm": _gemm_rows, "weight_only": _weight_only_rows, "attention": _attention_rows,
         "moe": _moe_rows, "memory": _memory_rows, "fp8_quant": _fp8_quant_rows,
         "attention_other": functools.partial(_attention_rows, names=("cudnn", "efficient"))}  # flash first: a
#   backend whose graph capture fails runs later


BESIDE = ("weight_only", "fp8_quant")  # parts whose rows the measured-timings schema cannot carry (beside_path)


def beside_path(out: Path, part: str) -> Path:
    """Where `measure` writes a part's rows: OUT, or beside it for the BESIDE parts (the measured-timings schema has
    no weight width, nor a family for a quantization pass or a GEMM with one: `llm-roofline calibrate` would fit
    them as bf16 GEMMs and elementwise kernels)."""
    return out.with_name(f"{out.stem}_{part}{out.suffix}") if part in BESIDE else out


def measure(out: Path, parts=None) -> int:
    import pandas as pd

    from llm_roofline.files import write_text
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        print("measure needs PyTorch with a CUDA GPU (none here: run it on a GPU machine, then `compare` anywhere)",
              file=sys.stderr)
        return 2
    parts = list(PARTS) if parts is None else list(dict.fromkeys(parts))
    for path in dict.fromkeys(beside_path(out, name) for name in parts):
        write_text(path, "")  # an unwritable path fails here, in one line, not after the kernels are timed
    props = torch.cuda.get_device_properties(0)
    gpu = next((c for key, c in GPU_CHIPS.items() if key in props.name), props.name)
    print(f"{props.name} -> {gpu}; torch {torch.__version__}, {props.multi_processor_count} SMs, "
          f"L2 {props.L2_cache_size / 2**20:.0f} MiB", flush=True)
    torch.manual_seed(0)
    time_s = _timer(torch, props.L2_cache_size)
    t0 = time.time()

    def log(msg):
        print(f"[{time.time() - t0:6.1f} s] {msg}", flush=True)

    rows = {beside_path(out, name): [] for name in parts}
    for name in parts:  # in the order asked
        part = PARTS[name]
        log(f"{name} ...")
        path = beside_path(out, name)
        rows[path] += [r for r in part(torch, time_s, gpu, log) if r is not None]
        write_text(path, pd.DataFrame(rows[path]).to_csv(index=False, float_format="%.10g"))  # what is done so
        #   far survives a timeout
        torch.cuda.empty_cache()
    for path, done in rows.items():
        if done:
            log(f"{len(done)} rows -> {path}")
    return 0


# ============================================================================ comparing (no GPU)
def _weight_only_s(df, chip, model):
    """Seconds of weight-only GEMM rows (m, k, n, weight_bits; bf16 activations) as `estimate` prices them: one
    ops.gemm each, scored ideal (model None) or at the calibrated model's efficiency."""
    import numpy as np
    import pandas as pd

    from llm_roofline import ops
    from llm_roofline.errors import RooflineError
    from llm_roofline.roofline import efficiency_of, score_op

    widths = pd.to_numeric(df["weight_bits"], errors="coerce")
    if not (widths > 0).all() or not (widths < 16).all():  # nan and text fail both
        raise RooflineError("weight_bits must be a number of bits per stored weight in (0, 16) on every row")
    out = []
    for m, k, n, bits in zip(df["m"], df["k"], df["n"], widths):
        op = ops.gemm("gemm", "gpu_check", 1, tokens=m, k=k, n=n, bits_per_weight=bits, act_bytes_per_elem=2.0)
        out.append(float(score_op(op, chip, efficiency_of(op, chip, model)).t_s))
    return np.array(out)


def compare(path: Path, chip_name: str | None) -> int:
    import numpy as np
    import pandas as pd

    from llm_roofline.calibrate import fit as fitting
    from llm_roofline.calibrate.measurements import read_measurements
    from llm_roofline.chip_fits import calibrated_model
    from llm_roofline.errors import RooflineError
    from llm_roofline.hardware import load_chip

    df = read_measurements(path)
    gpus = sorted(set(df["gpu"]) - {""})
    if df.empty or not (chip_name or len(gpus) == 1):
        raise RooflineError(f"{path}: no rows" if df.empty else f"{path}: the rows name GPUs {gpus or 'none'}; "
                            "pass --chip for the chip file to price them with")
    chip = load_chip(chip_name or gpus[0])
    model = calibrated_model(chip)
    meas = df["measured_s"].to_numpy()
    if "weight_bits" in df.columns:  # weight-only rows: priced as the estimator prices such a GEMM (dequant.py)
        pred = {"ideal": _weight_only_s(df, chip, None), "calibrated": _weight_only_s(df, chip, model)}
    else:
        pred = {"ideal": fitting.predict(df, chip), "calibrated": fitting.predict(df, chip, model)}
    err = {k: fitting.abs_pct_errors(v, meas) for k, v in pred.items()}
    ratio = pred["calibrated"] / meas
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from validate import bucket

    df["bucket"] = bucket(df)
    out = []
    for keys, sel in df.groupby(["fam", "op", "bucket"], sort=False).groups.items():
        i = df.index.get_indexer(sel)
        out.append(dict(family=keys[0], op=keys[1], bucket=keys[2], n=len(i),
                        **{f"{k} med %": np.median(e[i]) for k, e in err.items()},
                        **{f"{k} p90 %": np.percentile(e[i], 90) for k, e in err.items()},
                        calibrated_over_measured_median=np.median(ratio[i])))
    from tabulate import tabulate

    print(f"{path}: {len(df)} rows, predicted with {chip.name}'s shipped fits ({model.label})")
    print(tabulate(pd.DataFrame(out), headers="keys", showindex=False, floatfmt=".2f"))
    return 0


def _parts(value: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = sorted(set(names) - set(PARTS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown part(s) {', '.join(unknown) or '(none given)'}; "
                                         f"choose from {', '.join(PARTS)}")
    return names


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="time the kernels on this machine's GPU (PyTorch with CUDA)")
    m.add_argument("out", type=Path)
    m.add_argument("--parts", default=",".join(PARTS), type=_parts,
                   help=f"comma-separated kernels to time, of {', '.join(PARTS)} (default: all; weight_only rows go "
                        "to OUT_weight_only.csv, fp8_quant to OUT_fp8_quant.csv)")
    c = sub.add_parser("compare", help="error of the ideal and calibrated estimates of a measured CSV")
    c.add_argument("csv", type=Path)
    c.add_argument("--chip", default=None, help="chip file to predict with (default: the rows' gpu column)")
    a = ap.parse_args(argv)
    from llm_roofline.errors import RooflineError

    try:
        return measure(a.out, a.parts) if a.cmd == "measure" else compare(a.csv, a.chip)
    except RooflineError as e:  # a missing or malformed CSV, an unknown chip: one line
        print(f"gpu_check: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
