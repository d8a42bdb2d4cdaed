"""Fused memory-bound kernels in Triton, the shape of vLLM's own CUDA ones (one read of each input, one write of
each output): RMSNorm, SiLU-and-mul, rotary embedding (NeoX halves, in place on q and k). Imported by
`gpu_check.py measure --parts memory` alone (Triton and a GPU there); TRITON_INTERPRET=1 runs them on the CPU."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _rms_norm(x_ptr, w_ptr, y_ptr, d, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < d
    x = tl.load(x_ptr + row * d + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / d + eps)
    tl.store(y_ptr + row * d + cols, (x * inv * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _silu_and_mul(x_ptr, y_ptr, f, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < f
    gate = tl.load(x_ptr + row * 2 * f + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * 2 * f + f + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * f + cols, (gate / (1.0 + tl.exp(-gate)) * up).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rope(x_ptr, pos_ptr, cos_ptr, sin_ptr, heads, half, BLOCK: tl.constexpr):
    """x: (tokens, heads, 2 * half) rotated in place, NeoX style (first half with second half)."""
    token = tl.program_id(0)
    head = tl.program_id(1)
    cols = tl.arange(0, BLOCK)
    mask = cols < half
    p = tl.load(pos_ptr + token)
    c = tl.load(cos_ptr + p * half + cols, mask=mask, other=0.0).to(tl.float32)
    s = tl.load(sin_ptr + p * half + cols, mask=mask, other=0.0).to(tl.float32)
    base = x_ptr + (token * heads + head) * 2 * half
    a = tl.load(base + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(base + half + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(base + cols, (a * c - b * s).to(x_ptr.dtype.element_ty), mask=mask)
    tl.store(base + half + cols, (b * c + a * s).to(x_ptr.dtype.element_ty), mask=mask)


def rms_norm(x, w, eps: float = 1e-6):
    y = x.new_empty(x.shape)
    _rms_norm[(x.shape[0],)](x, w, y, x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


def silu_and_mul(x, block: int = 1024):
    f = x.shape[1] // 2
    y = x.new_empty((x.shape[0], f))
    _silu_and_mul[(x.shape[0], triton.cdiv(f, block))](x, y, f, BLOCK=block)
    return y


def rope(q, k, pos, cos, sin):
    """q (tokens, H, hd), k (tokens, KV, hd) rotated in place; cos, sin (max_pos, hd / 2) float32; pos (tokens,)."""
    half = q.shape[2] // 2
    for x in (q, k):
        _rope[(x.shape[0], x.shape[1])](x, pos, cos, sin, x.shape[1], half, BLOCK=triton.next_power_of_2(half))
    return q, k
