"""A prompt chunk's causal attention alone, timed on a GPU: the attention part of gpu_decode_step.py's mixed steps,
so that a mixed step's measured time can be split into the chunk's attention and everything else. Maintainers run
it where they have a GPU (PyTorch with CUDA).

    python3 benchmarks/gpu_chunk_attention.py OUT.csv [--cases 512:512,2048:8192]

Each case C:CTX is a chunk of C query tokens at the end of a CTX-token prompt (Llama-3.1-8B's 32 query and 8 KV
heads of 128), causal with the diagonal at the bottom right; 32 layers, each with K, V of its own (past L2), in
one CUDA graph, median of 10 replays, through each kernel PyTorch has for it: `fa2` (FlashAttention-2 through aten,
gpu_decode_step._causal's kernel for C < CTX), `cudnn` (SDPA is_causal, C = CTX only: the prefill's kernel),
`bias_cudnn` and `bias_any` (SDPA with a lower-right CausalBias on cuDNN, or on whichever of cuDNN /
FlashAttention-2 / memory-efficient takes it). First each kernel is checked against a float32 reference with the
bottom-right mask (relative error printed; bf16 inputs land near 2e-3). A kernel that fails prints its error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gpu_decode_step as G  # noqa: E402

DEFAULT_CASES = ("512:512,512:4096,1024:1024,2048:2048,2048:8192,4096:4096,4096:16384,8192:8192,16384:16384")


def _kernels(torch) -> dict:
    """name -> f(q (C, HQ * D), k, v (CTX, HKV * D)) -> the chunk's attention output."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right

    def sdpa(backends, bias: bool):
        def f(q, k, v):
            c, ctx = len(q), len(k)
            qq, kk, vv = (t.view(1, len(t), -1, G.D).transpose(1, 2) for t in (q, k, v))
            mask = dict(attn_mask=causal_lower_right(c, ctx)) if bias else dict(is_causal=True)
            with sdpa_kernel(backends):
                out = torch.nn.functional.scaled_dot_product_attention(qq, kk, vv, enable_gqa=True, **mask)
            return out.transpose(1, 2).reshape(c, -1)
        return f

    fused = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    return {"fa2": lambda q, k, v: G._fa2(torch, q, k, v), "cudnn": sdpa([SDPBackend.CUDNN_ATTENTION], False),
            "bias_cudnn": sdpa([SDPBackend.CUDNN_ATTENTION], True), "bias_any": sdpa(fused, True)}


def _runs(name: str, c: int, ctx: int) -> bool:
    return name != "cudnn" or c == ctx  # is_causal is top-left in SDPA: right only without a prefix


def _check(torch, kernels: dict) -> None:
    """Each kernel against a float32 reference with the bottom-right causal mask, on fresh random inputs."""
    for c, ctx in ((5, 5), (7, 40), (300, 1000)):
        q = torch.randn(c, G.HQ * G.D, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(ctx, G.HKV * G.D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        heads = lambda t, h: t.float().view(len(t), h, G.D).transpose(0, 1)  # noqa: E731
        kf, vf = (heads(t, G.HKV).repeat_interleave(G.HQ // G.HKV, 0) for t in (k, v))
        s = heads(q, G.HQ) @ kf.transpose(1, 2) / G.D ** 0.5
        keep = torch.arange(ctx, device="cuda")[None, :] <= (ctx - c + torch.arange(c, device="cuda"))[:, None]
        ref = (s.masked_fill(~keep, float("-inf")).softmax(-1) @ vf).transpose(0, 1).reshape(c, -1)
        for name, f in kernels.items():
            if _runs(name, c, ctx):
                try:
                    err = ((f(q, k, v).float() - ref).norm() / ref.norm()).item()
                    print(f"check {name} C {c} CTX {ctx}: relative error {err:.2e}", flush=True)
                except Exception as e:  # noqa: BLE001 - report the kernel, keep the others
                    print(f"check {name} C {c} CTX {ctx}: failed {e!r}"[:300], flush=True)


def measure(out: Path, cases: list[tuple]) -> int:
    import pandas as pd

    from llm_roofline.files import write_text

    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        print("gpu_chunk_attention needs PyTorch with a CUDA GPU", file=sys.stderr)
        return 2
    write_text(out, "")  # an unwritable path fails in one line before any timing
    kernels, rows = _kernels(torch), []
    _check(torch, kernels)
    for c, ctx in cases:
        q = [torch.randn(c, G.HQ * G.D, device="cuda", dtype=torch.bfloat16) for _ in range(G.LAYERS)]
        kv = [[torch.randn(ctx, G.HKV * G.D, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
              for _ in range(G.LAYERS)]
        for name, f in kernels.items():
            if not _runs(name, c, ctx):
                continue
            try:
                t = G._graph_median_s(torch, lambda f=f, q=q, kv=kv: [f(q[i], *kv[i]) for i in range(G.LAYERS)], 10)
            except Exception as e:  # noqa: BLE001
                print(f"C {c} CTX {ctx} {name}: failed {e!r}"[:300], flush=True)
                continue
            rows.append(dict(gpu=torch.cuda.get_device_name(), chunk=c, chunk_ctx=ctx, kernel=name, layers=G.LAYERS,
                             measured_s=t))
            print(f"C {c:5d} CTX {ctx:5d} {name:10s}: {t * 1e3:8.3f} ms for {G.LAYERS} layers", flush=True)
            write_text(out, pd.DataFrame(rows).to_csv(index=False, float_format="%.6g"))
        del q, kv
        torch.cuda.empty_cache()
    return 0


def _cases(value: str) -> list[tuple]:
    """C:CTX,... -> [(C, CTX)], 1 <= C <= CTX <= 1,000,000."""
    try:
        out = [tuple(int(x) for x in part.split(":")) for part in value.split(",")]
    except ValueError:
        out = []
    if not out or any(len(t) != 2 or not 1 <= t[0] <= t[1] <= 1_000_000 for t in out):
        raise argparse.ArgumentTypeError(f"expected comma-separated C:CTX with 1 <= C <= CTX, got {value!r}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--cases", default=DEFAULT_CASES, type=_cases,
                    help="comma-separated C:CTX, 1 <= C <= CTX (default: %(default)s)")
    a = ap.parse_args(argv)
    from llm_roofline.errors import RooflineError

    try:
        return measure(a.out, a.cases)
    except RooflineError as e:
        print(f"gpu_chunk_attention: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
