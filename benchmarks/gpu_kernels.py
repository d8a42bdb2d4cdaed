"""Fused memory-bound kernels in Triton, the shape of vLLM's own CUDA ones (one read of each input, one write of
each output): RMSNorm, SiLU-and-mul, rotary embedding (NeoX halves, in place on q and k), and the activations' fp8
quantization (static per-tensor, dynamic per-token). Imported by `gpu_check.py measure --parts memory,fp8_quant`
alone (Triton and a GPU there); TRITON_INTERPRET=1 runs them on the CPU."""

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
def _rotate(base, c, s, heads, half, H_BLOCK: tl.constexpr, BLOCK: tl.constexpr):
    """Rotate the `heads` heads at `base` (heads x 2 * half, contiguous) in place, NeoX style, by cos c / sin s."""
    h = tl.arange(0, H_BLOCK)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    mask = (h < heads) & (cols < half)
    offs = h * 2 * half + cols
    a = tl.load(base + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(base + offs + half, mask=mask, other=0.0).to(tl.float32)
    tl.store(base + offs, (a * c - b * s).to(base.dtype.element_ty), mask=mask)
    tl.store(base + offs + half, (b * c + a * s).to(base.dtype.element_ty), mask=mask)


@triton.jit
def _rope(q_ptr, k_ptr, pos_ptr, cos_ptr, sin_ptr, q_heads, k_heads, half, q_stride, k_stride, QH: tl.constexpr,
          KH: tl.constexpr, BLOCK: tl.constexpr):
    """One token's q (q_heads x 2 * half) and k (k_heads x 2 * half) rotated in place in one program (as vLLM's
    rotary kernel does a token's heads in one block): cos and sin read once per token. q_stride, k_stride: elements
    from one token's heads to the next's (views into a fused qkv output)."""
    token = tl.program_id(0)
    cols = tl.arange(0, BLOCK)[None, :]
    p = tl.load(pos_ptr + token)
    c = tl.load(cos_ptr + p * half + cols, mask=cols < half, other=0.0).to(tl.float32)
    s = tl.load(sin_ptr + p * half + cols, mask=cols < half, other=0.0).to(tl.float32)
    _rotate(q_ptr + token * q_stride, c, s, q_heads, half, QH, BLOCK)
    _rotate(k_ptr + token * k_stride, c, s, k_heads, half, KH, BLOCK)


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
    """q (tokens, H, hd), k (tokens, KV, hd) rotated in place in one launch (each token's heads contiguous; tokens
    may be strided, as views into a fused qkv output); cos, sin (max_pos, hd / 2) float32; pos (tokens,)."""
    half = q.shape[2] // 2
    heads_block = [max(2, triton.next_power_of_2(x.shape[1])) for x in (q, k)]  # masked past the heads
    _rope[(q.shape[0],)](q, k, pos, cos, sin, q.shape[1], k.shape[1], half, q.stride(0), k.stride(0),
                         QH=heads_block[0], KH=heads_block[1], BLOCK=triton.next_power_of_2(half))
    return q, k


@triton.jit
def _fp8_quant_static(x_ptr, y_ptr, inv_scale_ptr, n, BLOCK: tl.constexpr):
    """y = clamp(x / scale) in fp8 e4m3 with one scale for the tensor (vLLM's static activation scheme)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) * tl.load(inv_scale_ptr)
    tl.store(y_ptr + offs, tl.clamp(x, -448.0, 448.0).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _fp8_quant_token(x_ptr, y_ptr, s_ptr, k, BLOCK: tl.constexpr):
    """One row per program: its absolute maximum, then the row over amax / 448 in fp8 e4m3 (vLLM's dynamic per-token
    scheme); the scale stored as float32. Two passes over the row (the second mostly from L2)."""
    row = tl.program_id(0)
    amax = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, k, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * k + cols, mask=cols < k, other=0.0).to(tl.float32)
        amax = tl.maximum(amax, tl.abs(x))
    scale = tl.maximum(tl.max(amax, axis=0), 1e-12) / 448.0
    tl.store(s_ptr + row, scale)
    for start in range(0, k, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * k + cols, mask=cols < k, other=0.0).to(tl.float32) / scale
        tl.store(y_ptr + row * k + cols, tl.clamp(x, -448.0, 448.0).to(y_ptr.dtype.element_ty), mask=cols < k)


def fp8_quant_static(x, inv_scale, block: int = 4096):
    """x (m, k) bf16 -> fp8 e4m3 with one float32 scale (inv_scale: a 1-element tensor, 1 / scale)."""
    import torch

    y = torch.empty(x.shape, device=x.device, dtype=torch.float8_e4m3fn)
    _fp8_quant_static[(triton.cdiv(x.numel(), block),)](x, y, inv_scale, x.numel(), BLOCK=block)
    return y


def fp8_quant_token(x, block: int = 1024):
    """x (m, k) bf16 -> (fp8 e4m3 (m, k), float32 scales (m, 1)), one scale per row."""
    import torch

    y = torch.empty(x.shape, device=x.device, dtype=torch.float8_e4m3fn)
    s = torch.empty((x.shape[0], 1), device=x.device, dtype=torch.float32)
    _fp8_quant_token[(x.shape[0],)](x, y, s, x.shape[1], BLOCK=block)
    return y, s
