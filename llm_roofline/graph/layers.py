"""The layers around attention (recurrent mixers, the FFN: dense MLP or routed experts with their dispatch, DeepSeek-V4
hyper-connections, hybrid and shared blocks), the model's head and tail, and build_ops over them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import ScenarioError, shown
from ..model.spec import FfnSpec, LayerGroup, ModelSpec
from ..ops import (Op, causal_conv1d, collective, embedding, expected_distinct_experts, gemm, recurrent_scan,
                   rows_per_expert)
from ..sharding import (Sharding, check_pipeline, collective_after, collective_before, expert_layout,
                        mixer_dims_per_chip, sequence_parallel_on, split, walked_rows)
from ..units import dtype_bytes
from .attention import attention_ops
from .context import ATTENTION_MODES, Ctx, Dtypes, Phase

def _hyper_layer_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """DeepSeek-V4 block over hc_mult residual streams (T, hc, d). Before attention and the MoE: the streams RMS-normed,
    projected to (2+hc) x hc mixing weights ((T, hc*d) @ (hc*d, (2+hc)*hc); Sinkhorn on (hc, hc) negligible), collapsed
    to (T, d); after: post * y + comb^T @ streams (2*hc + 2 FLOP per stream element) in place of the residual add.
    Hy4's iHC (hc_independent): 2 x hc mixing weights, no comb: post * y + streams (2 FLOP per stream element).
    GLM-5.3-Flash: the token mixer is attention or a recurrent mixer (KDA)."""
    n, width = g.count, g.hc_mult * c.spec.d_model
    expand_flops = 2 if g.hc_independent else 2 * g.hc_mult + 2
    base_w = g.hc_base_params * c.native_bytes  # each hyper-connection's base and scales, read where its mixing
    ops = []  # weights are formed
    for part in ("attn", "ffn"):
        ops += [c.pointwise(f"hc.{part}.norm", g.name, n, rows=c.T_attn, width=width, flops_per_elem=4, reads=1,
                            style="sequence", kind="norm"),
                c.gemm(f"hc.{part}.mix_proj", g.name, n, "hc", k=width, n=g.hc_mix_width,
                       style="replicated"),
                c.pointwise(f"hc.{part}.collapse", g.name, n, rows=c.T_attn, width=width, flops_per_elem=2, reads=1,
                            style="sequence", held_bytes=base_w),
                c.norm(f"norm.{part}", g.name, n)]
        if part == "attn":
            ops += (attention_ops(c, g) if g.attention.kind != "none" else []) + (
                _mixer_ops(c, g) if g.mixer else []) + c.after_row("attn", g.name, n)
        else:
            ops += _ffn_ops(c, g) + _ffn_out(c, g)
        ops.append(c.pointwise(f"hc.{part}.expand_mix", g.name, n, rows=c.T_attn, width=width,
                               flops_per_elem=expand_flops, reads=2, style="sequence"))
    return ops


# --------------------------------------------------------------------------------------------- mixers
SCAN_FLOPS_PER_STATE_ELEM = {
    "mamba1": 7,  # dA = exp(dt*A) (2); h = dA*h (1) + B*(dt*x) (2); y = C h (2)
    "mamba2": 5,  # S = exp(dt*A)*S (1) + dt*x B^T (2: multiply, add); y = S C (2)
    "gated_deltanet": 7,  # S k (2); S = a*S (1) + beta*(v - S k) k^T (2); o = S q (2)
    "kda": 7,  # the same with a decay per channel: S = diag(a)*S (1)
    "lightning": 5,  # S = lambda*S (1) + k^T v (2); o = q S (2)
    "mlstm": 5,  # C = f*C (1) + (i k) v^T (2); h = q C (2); its normalizer n and max m ride with C (state_per_head)
    # RG-LRU, per channel: sigmoid of the input and recurrence gates (4 each); log a = -8 r softplus(L) (2); a = exp
    # (1); a^2 = exp(2 log a) (2); sqrt(1 - a^2) (2); x * i * sqrt (2); h = a*h + x (2); the output is h itself
    "rglru": 19,
}
PARALLEL_SCANS = ("mamba1", "rglru")  # a parallel (or sequential) scan over the tokens, no chunks


def _mixer_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """A recurrent mixer (Mamba-1 / Mamba-2 / Gated DeltaNet / KDA / lightning / mLSTM / RG-LRU), heads column-parallel
    over tp: in_proj (z, conv channels, per-head gates), causal conv1d, (Mamba-1: x_proj, dt_proj; Kimi's KDA: the
    decay's and the output gate's low-rank second halves; the RG-LRU: its block-diagonal gates), the scan over a
    fixed-size state, the output gate (with an RMSNorm except Mamba-1, LFM2 and the RG-LRU; mLSTM's LayerNorm per
    head), row-parallel out_proj."""
    m, n, d = g.mixer, g.count, c.spec.d_model
    heads, conv, gates = mixer_dims_per_chip(m, c.tp)
    inner = heads * m.head_dim
    ops = c.before_column("mixer", g.name, n)
    # (T, d) @ (d, z + x,B,C (or q,k,v) + gates): one chip's heads (MixerSpec.z_width)
    ops.append(c.gemm("mixer.in_proj", g.name, n, "attn", k=d, n=m.z_width(inner) + conv + gates, style="column",
                      bias=m.proj_bias))
    if m.low_rank:  # KDA: (T, rank) @ (rank, the chip's channels), for the decay and for the output gate
        ops += [c.gemm(f"mixer.{x}_b_proj", g.name, n, "attn", k=m.low_rank, n=inner, style="column") for x in "fg"]
    seqs = c.state_seqs
    conv_w = (conv * m.conv_kernel + (conv if m.conv_bias else 0)) * c.native_bytes
    if m.conv_kernel:  # lightning attention has none
        ops.append(causal_conv1d("mixer.conv1d", g.name, n, batch=seqs, q_len=c.T_attn / seqs, channels=conv,
                                 kernel=m.conv_kernel, act_bytes_per_elem=c.act_bytes, state_bytes_per_elem=c.kv_bytes,
                                 weight_bytes=conv_w, **c.placed("column")))
    scan_in = conv + gates
    if m.kind == "rglru":  # each chip's blocks: (T, hd) @ (hd, 2 hd) per block, the input and recurrence gates
        ops.append(c.gemm("mixer.gate_proj", g.name, n, "attn", k=m.head_dim, n=2 * m.head_dim, n_matrices=heads,
                          n_stored=heads, style="column", bias=True))
        scan_in = conv + 2 * inner  # x and the two gates' pre-activations
    if m.kind == "mamba1":
        ops += _mamba1_projections(c, g, inner)
        scan_in = conv + inner + 2 * m.state_dim  # x, dt per channel, B and C
    if m.state_dim:  # LFM2's short conv carries no state beyond the conv window
        ops += _mixer_scans(c, g, heads, scan_in, inner)
    # output gate y * silu(z) (lightning: sigmoid; LFM2: C * conv(B * x); the RG-LRU: h * gelu(linear_y)), normed except
    # in Mamba-1, LFM2 and the RG-LRU; the chip's per-head A (dt_bias, D; the RG-LRU's recurrent parameter) and the norm
    # weights ride with it (mamba2's, lightning's and mLSTM's norm span the chip's channels; gated DeltaNet's and
    # Jamba's are replicated)
    norm_w = inner if m.kind in ("mamba2", "lightning", "mlstm") and m.rms_norm else m.norm_params()
    small_w = (m.per_head_params() * heads // m.n_heads + norm_w) * c.native_bytes
    ops.append(c.pointwise("mixer.gate_norm" if m.gate_normed else "mixer.gate", g.name, n, rows=c.T_attn,
                           width=inner, flops_per_elem=5, reads=2, style="column", held_bytes=small_w,
                           kind="norm" if m.gate_normed else "elementwise"))
    # row-parallel: (T, H*hd) @ (H*hd, d) -> partial sums of (T, d)
    ops.append(c.gemm("mixer.out_proj", g.name, n, "attn", k=inner, n=d, style="row", bias=m.proj_bias))
    return ops


def _mamba1_projections(c: Ctx, g: LayerGroup, inner: int) -> list[Op]:
    """Mamba-1: x_proj (T, inner) @ (inner, dt_rank + 2*ds) row-parallel over the chip's channels (partial sums
    all-reduced over tp), then dt_proj (T, dt_rank) @ (dt_rank, inner) back onto the chip's channels."""
    m, n = g.mixer, g.count
    out = m.dt_rank + 2 * m.state_dim
    ops = [c.gemm("mixer.x_proj", g.name, n, "attn", k=inner, n=out, style="row")]
    ops += c.collectives(collective_after("row", c.sh) if c.tp > 1 else None, "mixer_x_proj", g.name, n, width=out)
    ops.append(c.gemm("mixer.dt_proj", g.name, n, "attn", k=m.dt_rank, n=inner, style="column", bias=True))
    return ops


def _mixer_scans(c: Ctx, g: LayerGroup, heads: int, in_elems: int, out_elems: int) -> list[Op]:
    """The step's scan, plus the prompt chunk's own in a mixed (chunked-prefill) step."""
    m = g.mixer
    state_bytes = dtype_bytes(m.state_dtype) if m.state_dtype else c.kv_bytes
    parts = [("mixer.scan", c.b_attn, c.q)]
    if c.phase.has_chunk:
        parts.append(("mixer.scan.chunk", c.chunk_seqs, c.phase.chunk_tokens))
    extra = m.state_per_head - m.head_dim * m.state_dim  # mLSTM's normalizer and max beside its matrix
    return [recurrent_scan(name, g.name, g.count, batch=batch, q_len=q_len, n_heads=heads, head_dim=m.head_dim,
                           state_dim=m.state_dim, flops_per_state_elem=SCAN_FLOPS_PER_STATE_ELEM[m.kind],
                           chunk_tokens=0 if m.kind in PARALLEL_SCANS else m.chunk_size,
                           state_bytes_per_elem=state_bytes, act_in_elems_per_token=in_elems,
                           act_out_elems_per_token=out_elems, act_bytes_per_elem=c.act_bytes,
                           compute_dtype=c.compute_dtype, extra_state_per_head=extra,
                           **c.placed("column"))
            for name, batch, q_len in parts]


# --------------------------------------------------------------------------------------------- FFN
def _ffn_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    f, n, d = g.ffn, g.count, c.spec.d_model
    if f.kind == "dense":
        return _ffn_in(c, g, dense=True) + _mlp(c, g.name, n, "ffn", f, f.d_ff, "ffn")
    ops = list(c.kept(_moe_router, g))  # a copy: the router and the shared experts are the same for every ep
    local_experts, d_slice = expert_layout(f.n_experts, f.d_expert, c.sh)
    ep, skew = c.sh.moe_ep, c.sh.routing_skew
    k = f.expert_top_k  # experts with weights per token (zero-computation experts cost nothing)
    touched = expected_distinct_experts(f.n_experts, k, c.T) / ep  # experts read on this chip
    assign = k / ep * skew  # expert assignments per token on the busiest chip (skew 1: balanced)
    up, w = 2 if f.gated else 1, f.latent or d  # the experts' input and output width (Muse Spark: the latent's)
    walked = walked_rows(c.sh, c.T * k, c.T * assign)  # routed rows; their tokens: walked / k
    experts = dict(style="expert", n_matrices=assign, matrices_read=touched, n_stored=local_experts, bias=f.bias,
                   rows_per_matrix=rows_per_expert(c.T * k * skew, touched * ep), walked_rows=walked,
                   token_elems=walked / k * w, expert_width=d_slice, expert_chips=ep,
                   expert_block_elems=(up + 1) * w * d_slice)
    ops += _latent_in(c, g) if f.latent else []
    ops.append(c.gemm("ffn.experts.up_gate" if f.gated else "ffn.experts.up", g.name, n, "experts", k=w,
                      n=up * d_slice, **experts))
    # no expert activation op: the fused-MoE block's fits price that pass (walked_rows); or GEMM1's epilogue runs it
    ops.append(c.gemm("ffn.experts.down", g.name, n, "experts", k=d_slice, n=w, **experts))
    ops += _latent_out(c, g, c.T * assign) if f.latent else []
    return ops + (c.kept(_shared_experts, g) if f.d_shared else [])


def _moe_router(c: Ctx, g: LayerGroup) -> list[Op]:
    """What brings the tokens to a routed-expert FFN, and the router: (T_attn, d) @ (d, E) on each attention group's
    own tokens. Latent experts take every token of the stage on every chip, as a dense MLP (their latent_in is one)."""
    f = g.ffn
    # the bias covers the scored experts alone (Inkling's shared-expert sink columns have none)
    router = c.gemm("ffn.router", g.name, g.count, "router", k=c.spec.d_model, n=f.router_width + f.router_sink,
                    style="replicated", bias=f.router_bias, bias_cols=f.router_width)
    return _ffn_in(c, g, dense=bool(f.latent)) + [_with_scalars(c, router, int(f.global_scale))]


def _with_scalars(c: Ctx, op: Op, count: int) -> Op:
    """op reading and holding `count` more native-dtype parameters beside its matrix (Inkling's global scale on the
    router's weights or a dense MLP's output)."""
    w = count * c.native_bytes
    return replace(op, weight_bytes=op.weight_bytes + w, stored_bytes=op.stored_bytes + w) if count else op


def _latent_in(c: Ctx, g: LayerGroup) -> list[Op]:
    """Muse Spark's latent experts, before them: latent_in (T, d) @ (d, L) column-parallel over the FFN's chips, its
    (T, L) columns all-gathered (the RMSNorm and the experts read whole rows), that RMSNorm (L weights) on every
    chip."""
    n, width, chips = g.count, g.ffn.latent, c.sh.ffn_chips
    ops = [c.gemm("ffn.latent_in", g.name, n, "ffn", k=c.spec.d_model, n=split(width, chips, "moe_hidden_size"),
                  style="ffn_column")]
    if chips > 1:
        ops += c.collectives("all_gather", "latent_in", g.name, n, tokens=c.T, width=width, chips=chips, instances=1)
    w = width * c.native_bytes
    return ops + [c.pointwise("norm.latent_in", g.name, n, rows=c.T, width=width, flops_per_elem=4, reads=1,
                              style="replicated", held_bytes=w, kind="norm")]


def _latent_out(c: Ctx, g: LayerGroup, rows) -> list[Op]:
    """Muse Spark's latent experts, after them: each expert's output row RMS-normed (L weights, the experts' one),
    its partial rows first all-reduced over the moe_tp chips slicing the expert (the norm reads whole rows); each
    chip's sums over its experts reduce-scattered over the moe_ep groups into its L / ffn_chips columns; latent_out
    (T, L / chips) @ (L / chips, d) row-parallel, partial sums of (T, d) as a dense MLP's down projection.
    rows: the expert rows of the busiest chip."""
    n, width, sh = g.count, g.ffn.latent, c.sh
    ops = c.collectives("all_reduce", "expert_out", g.name, n, tokens=rows, width=width, chips=sh.moe_tp,
                        instances=sh.moe_ep) if sh.moe_tp > 1 else []
    w = width * c.native_bytes
    ops.append(c.pointwise("norm.expert_out", g.name, n, rows=rows, width=width, flops_per_elem=4, reads=1,
                           style="expert", held_bytes=w, kind="norm"))
    if sh.moe_ep > 1:
        ops += c.collectives("reduce_scatter", "latent_out", g.name, n, tokens=c.T, width=width, chips=sh.moe_ep,
                             instances=sh.moe_tp)
    return ops + [c.gemm("ffn.latent_out", g.name, n, "ffn", k=split(width, sh.ffn_chips, "moe_hidden_size"),
                         n=c.spec.d_model, style="ffn_row")]


def _shared_experts(c: Ctx, g: LayerGroup) -> list[Op]:
    """The always-active shared experts of a routed-expert FFN: a dense MLP over the stage's chips (Qwen2-MoE's
    shared_expert_gate: its sigmoid gate, (T, d) @ (d, 1) on every chip, scales their output)."""
    gate = [c.gemm("ffn.shared.gate", g.name, g.count, "router", k=c.spec.d_model, n=1, style="replicated")] \
        if g.ffn.shared_gate else []
    return gate + _mlp(c, g.name, g.count, "ffn.shared", g.ffn, g.ffn.d_shared, "shared")


def _mlp(c: Ctx, group, n, prefix, f: FfnSpec, d_ff: int, family: str) -> list[Op]:
    """Dense MLP over every token of the stage, column-parallel up (+gate), row-parallel down, over the
    tp x attention_dp chips of the stage. Gated: three (d, F) matrices."""
    d, f_chip = c.spec.d_model, split(d_ff, c.sh.ffn_chips, f"{prefix} intermediate size")
    up, bias = 2 if f.gated else 1, f.bias and family == "ffn"
    # Gemma-3n's activation sparsity: the gate's mean and deviation per row, then relu(x - cutoff) (vLLM's
    # GeluAndMulSparse): a pass more over the gate (T, F)
    sparse = [c.pointwise(f"{prefix}.act_sparsity", group, n, rows=c.T, width=f_chip, flops_per_elem=5, reads=2,
                          style="ffn_column")] if f.activation_sparsity and family == "ffn" else []
    return [
        # (T, d) @ (d, 2F) -> up and gate, fused
        c.gemm(f"{prefix}.up_gate" if f.gated else f"{prefix}.up", group, n, family, k=d, n=up * f_chip,
               style="ffn_column", bias=bias), *sparse,
        _activation(c, f"{prefix}.act", group, n, c.T, f_chip, f.gated, "ffn_column"),
        # (T, F) @ (F, d) -> partial sums of (T, d)
        _with_scalars(c, c.gemm(f"{prefix}.down", group, n, family, k=f_chip, n=d, style="ffn_row",
                                bias=bias or f.down_bias and family == "ffn"), int(f.global_scale and family == "ffn")),
    ]


def _activation(c: Ctx, name, group, n, rows, width, gated, style) -> Op:
    """act(up) * gate for gated MLPs (reads 2, writes 1, ~5 FLOP/elem), act(up) otherwise (~4); (rows, width)."""
    return c.pointwise(name, group, n, rows=rows, width=width, flops_per_elem=5 if gated else 4,
                       reads=2 if gated else 1, style=style)


def _ffn_in(c: Ctx, g: LayerGroup, dense: bool) -> list[Op]:
    """What brings the tokens to the FFN. One attention group (attention_dp = 1): the sequence-parallel
    all-gather, if any. Several: a dense MLP, and routed experts under moe_dispatch "allgather", need every token
    of the stage on every chip (all-gather of (T, d) across the attention groups, one per tp rank); under
    "all_to_all" routed experts get theirs by the dispatch all-to-all (_ffn_out). A parallel block's FFN reads the
    attention's (gathered) input within its group; under attention_dp it needs the other groups' tokens as well."""
    if g.parallel_block and c.adp == 1:
        return []
    if c.adp == 1:
        return c.before_column("ffn", g.name, g.count)
    if not dense and c.sh.experts_dispatched:
        return []
    return c.collectives("all_gather", "ffn_in", g.name, g.count, tokens=c.T, chips=c.adp, instances=c.tp)


def _ffn_out(c: Ctx, g: LayerGroup) -> list[Op]:
    """What returns the FFN's output to the residual stream of each attention group."""
    f, n = g.ffn, g.count
    routed = f.kind == "moe" and not f.latent  # latent experts return partial sums of (T, d), as a dense MLP
    if c.adp == 1:
        if routed and c.sh.moe_ep > 1 and collective_before("column", c.sh):
            # expert parallelism with sequence-parallel tokens: all-to-all dispatch of each token's k copies to
            # the chips that hold its experts, and the combine back ((T/tp * k, d) per chip)
            return _dispatch_combine(c, g, c.T / c.tp)
        # every chip already holds all T tokens: dispatch is local, the combine is the ordinary all-reduce
        return c.after_row("ffn", g.name, n)
    if routed and c.sh.experts_dispatched:  # each chip sends its share of its group's tokens,
        #   T_attn / tp
        ops = _dispatch_combine(c, g, c.T_attn / c.tp)
    elif routed:  # each chip's experts' partial sums of all (T, d) rows, scattered back to the groups (one
        #   reduce-scatter per tp rank), then summed over the group's tp chips, which hold different experts
        return (c.collectives("reduce_scatter", "ffn_out", g.name, n, tokens=c.T, chips=c.adp, instances=c.tp)
                + c.after_row("ffn", g.name, n))
    else:  # partial sums of (T, d) over all chips of the stage, scattered back by rows
        ops = c.collectives("reduce_scatter", "ffn_out", g.name, n, tokens=c.T, chips=c.sh.ffn_chips, instances=1)
    if c.tp > 1:  # the tp chips of a group each hold 1/tp of its rows: gather them back
        ops += c.collectives("all_gather", "ffn_rows", g.name, n)
    return ops


def _dispatch_combine(c: Ctx, g: LayerGroup, tokens_per_chip) -> list[Op]:
    """All-to-all dispatch of each token's top-k copies to the moe_ep chips holding its experts, and the
    combine back; each chip sends (tokens_per_chip * k, d), the busiest receives routing_skew times the mean.
    Experts sliced over moe_tp > 1 chips also need their rows gathered before and reduced after."""
    f, n = g.ffn, g.count
    rows = tokens_per_chip * f.expert_top_k * c.sh.routing_skew
    ops = [collective(f"comm.all_to_all.{what}", g.name, n, kind="all_to_all",
                      buffer_bytes=rows * c.spec.d_model * c.act_bytes, chips=c.sh.moe_ep, tokens=tokens_per_chip)
           for what in ("dispatch", "combine")]
    if c.sh.moe_tp > 1 and c.adp > 1:
        slice_rows = c.T * f.expert_top_k * c.sh.routing_skew / c.sh.moe_ep  # rows one expert group computes
        gather = c.collectives("all_gather", "experts_in", g.name, n, tokens=slice_rows, chips=c.sh.moe_tp,
                               instances=c.sh.moe_ep)
        scatter = c.collectives("reduce_scatter", "experts_out", g.name, n, tokens=slice_rows, chips=c.sh.moe_tp,
                                instances=c.sh.moe_ep)
        ops = ops[:1] + gather + scatter + ops[1:]
    return ops


# ------------------------------------------------------------------------------------------- layer
def _block_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """A block of a recurrent / hybrid model: a token mixer (recurrent mixer, attention, or both in parallel) and / or
    an MLP, each behind its own norm and residual (Mamba-2 and Nemotron-H blocks hold one of them, Qwen3-Next both,
    Falcon-H1 attention + mixer in parallel, then the MLP); with 4 norms (LFM3's sandwich) each output is normed too,
    as in _attention_half and _ffn_half."""
    n, ops, has_attention = g.count, [], g.attention.kind != "none"
    if g.mixer is not None or has_attention:
        ops.append(c.norm("norm.attn", g.name, n))
        # Falcon-H1: attention and the mixer read the same normed input; their outputs are summed (one all-reduce)
        ops += (attention_ops(c, g) if has_attention else []) + (_mixer_ops(c, g) if g.mixer is not None else [])
        ops += [c.norm("norm.attn_out", g.name, n)] if g.norms >= 4 else []
        ops += c.after_row("attn", g.name, n)
        ops.append(c.residual(g.name, n, reads=3 if has_attention and g.mixer is not None else 2))
    if g.ffn.kind != "none":
        ops.append(c.norm("norm.ffn", g.name, n))
        ops += _ffn_ops(c, g) + ([c.norm("norm.ffn_out", g.name, n)] if g.norms >= 4 else [])
        ops += _ffn_out(c, g) + [c.residual(g.name, n)]
    return ops


def _shared_block_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """A Zamba2 shared transformer block, run at each of its g.count layers: the hidden state concatenated with the
    embeddings (T, 2d), RMSNorm, attention from 2d (o_proj back to d), RMSNorm, gated MLP; then that layer's own
    matrices (LoRA adapters added to q/k/v or gate_up, and the linear projection), its output added to the input of
    the layer's Mamba block. Every run reads the block's weights; the checkpoint stores g.shared_copies of them, so each
    run's ops carry that share of the stored bytes (memory.py sums op.stored_bytes x count)."""
    n, w = g.count, g.attention.input_width
    norm_w = w * c.native_bytes
    ops = [c.pointwise(name, g.name, n, rows=c.T_attn, width=w, flops_per_elem=f, reads=1, style="sequence", **kw)
           for name, f, kw in (("shared.concat", 0, {}), ("norm.attn", 4, dict(held_bytes=norm_w,
                                                                               kind="norm")))]
    ops += attention_ops(c, g) + c.after_row("attn", g.name, n) + [c.norm("norm.ffn", g.name, n)]
    ops = [replace(op, stored_bytes=op.stored_bytes * g.shared_copies / n) for op in ops + _ffn_ops(c, g)]
    ops += [c.gemm(m.name, g.name, n, m.family, k=m.k, n=m.n, n_matrices=m.count, n_stored=m.count, style="replicated")
            for m in g.per_layer]
    return ops + _ffn_out(c, g) + [c.residual(g.name, n)]


def _layer_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """A layer group's ops; a looped stack's (Ouro) runs each read the layer's weights, the checkpoint storing one copy
    per loops runs, so each run's ops carry that share of the stored bytes (memory.py sums op.stored_bytes x count)."""
    ops = _group_ops(c, g)
    return [replace(op, stored_bytes=op.stored_bytes / g.loops) for op in ops] if g.loops else ops


def _group_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """A layer group's ops, each part kept for the shardings that read the same of it (Ctx.kept): a plain layer in
    two halves, so that of a routed-expert layer only the FFN half is built again for another expert sharding."""
    experts = g.ffn.kind == "moe"
    if g.shared_copies:
        return c.kept(_shared_block_ops, g, experts)
    if g.hc_mult:
        return c.kept(_hyper_layer_ops, g, experts)
    if not g.is_plain:
        return c.kept(_block_ops, g, experts)
    if g.parallel_block:
        return c.kept(_parallel_block_ops, g, experts)
    extras = (c.kept(_altup_laurel_ops, g) if c.spec.altup_streams else []) + (
        c.kept(_per_layer_input_ops, g) if c.spec.per_layer_input else []) + (
        c.kept(_gated_norm_ops, g) if g.gated_norms else [])
    return c.kept(_attention_half, g) + c.kept(_ffn_half, g, experts) + extras


def _gated_norm_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """A.X-K2's gated RMSNorms (g.gated_norms of the block's norms, whose RMSNorm itself is norm.attn / norm.ffn): the
    normed y (T, d) @ (d, r), SiLU over (T, r), @ (r, d), then y * sigmoid(gate) over (T, d) (~4 FLOP for the sigmoid,
    1 multiply); the small matrices replicated on every tp chip, as the norms are."""
    n, k, d = g.count, g.gated_norms, c.spec.d_model
    fc1, fc2 = (next(m for m in g.per_layer if m.name == f"norm_gate.{x}") for x in ("fc1", "fc2"))
    ops = [c.gemm(m.name, g.name, n, m.family, k=m.k, n=m.n, n_matrices=m.count, n_stored=m.count, style="replicated")
           for m in (fc1, fc2)]
    return ops[:1] + [_activation(c, "norm_gate.act", g.name, n, c.T_attn, k * fc1.n, False, "replicated")] + \
        ops[1:] + [c.pointwise("norm_gate.apply", g.name, n, rows=c.T_attn, width=k * d, flops_per_elem=5, reads=2,
                               style="sequence")]


def _per_layer_input_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """Gemma-4's and -3n's per-layer input, after the FFN: (T, d) @ (d, p) gate, gelu(gate) * the layer's slice of the
    per-layer inputs (T, p), (T, p) @ (p, d) projection, RMSNorm, added to the residual stream (Gemma-3n: to its n - 1
    predicted AltUp streams); replicated on every tp chip (vLLM's ReplicatedLinear)."""
    n, d, p, streams = g.count, c.spec.d_model, c.spec.per_layer_input, c.spec.altup_streams
    add = (c.pointwise("per_layer.add_streams", g.name, n, rows=c.T_attn, width=(streams - 1) * d, flops_per_elem=1,
                       reads=2, style="sequence") if streams else c.residual(g.name, n))
    return [c.gemm("per_layer.gate", g.name, n, "ffn", k=d, n=p, style="replicated"),
            _activation(c, "per_layer.act", g.name, n, c.T_attn, p, True, "replicated"),
            c.gemm("per_layer.proj", g.name, n, "ffn", k=p, n=d, style="replicated"),
            c.norm("norm.per_layer", g.name, n), add]


def _altup_laurel_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """Gemma-3n's AltUp around a layer over its n streams (T, n, d), and LAuReL beside its attention; replicated on
    every tp chip. Predict: the active stream RMS-normed, routed ((T, d) @ (d, n), tanh), coefficients (T, n) @
    (n, n^2), every stream a mix of all n (2n + 1 FLOP per element). LAuReL: (T, d) @ (d, r) @ (r, d), RMSNorm, added
    with the attention's output. Correct: routed again from the layer's output, coefficients (T, n) @ (n, n), each
    stream plus its coefficient times the innovation (3 FLOP per element), the active stream scaled
    (correct_output_scale)."""
    n, d, s, r = g.count, c.spec.d_model, c.spec.altup_streams, c.spec.laurel_rank
    scale_w = d * c.native_bytes
    streams = dict(rows=c.T_attn, width=s * d, style="sequence")
    return [c.norm("altup.router_norm", g.name, n),
            c.gemm("altup.router", g.name, n, "ffn", k=d, n=s, style="replicated"),
            c.gemm("altup.prediction_coefs", g.name, n, "ffn", k=s, n=s * s, style="replicated"),
            c.pointwise("altup.predict", g.name, n, flops_per_elem=2 * s + 1, reads=1, **streams),
            c.gemm("laurel.left", g.name, n, "ffn", k=d, n=r, style="replicated"),
            c.gemm("laurel.right", g.name, n, "ffn", k=r, n=d, style="replicated"),
            c.norm("norm.laurel", g.name, n),
            c.pointwise("laurel.add", g.name, n, rows=c.T_attn, width=d, flops_per_elem=2, reads=2, style="sequence"),
            c.gemm("altup.router.correct", g.name, n, "ffn", k=d, n=s, style="replicated", n_stored=0.0),
            c.gemm("altup.correction_coefs", g.name, n, "ffn", k=s, n=s, style="replicated"),
            c.pointwise("altup.correct", g.name, n, flops_per_elem=3, reads=2, **streams),
            c.pointwise("altup.scale", g.name, n, rows=c.T_attn, width=d, flops_per_elem=1, reads=1, style="sequence",
                        held_bytes=scale_w)]


def _parallel_block_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """x + attn(norm(x)) + mlp(norm'(x)): one residual add, one all-reduce of the sum."""
    n = g.count
    ffn = ([c.norm("norm.ffn", g.name, n)] if g.norms >= 2 else []) + _ffn_ops(c, g)
    return [c.norm("norm.attn", g.name, n)] + attention_ops(c, g) + ffn + _ffn_out(c, g) + [
        c.residual(g.name, n, reads=3)]


def _attention_half(c: Ctx, g: LayerGroup) -> list[Op]:
    """norm, attention, (norm,) the row-parallel output's collective, (Inkling's output conv,) residual add."""
    n = g.count
    ops = [c.norm("norm.attn", g.name, n)] + attention_ops(c, g)
    if g.norms >= 4:  # Muse Spark's has no weight
        ops.append(c.norm("norm.attn_out", g.name, n, weighted=not g.weightless_norms))
    return ops + c.after_row("attn", g.name, n) + _out_conv(c, g, "attn") + [_residual(c, g)]


def _residual(c: Ctx, g: LayerGroup) -> Op:
    """The residual add; Muse Spark's gated one, alpha x residual + beta x output with alpha and beta per channel from
    a learned d-vector (2 multiplies and an add per element; the vector read)."""
    if not g.residual_gates:
        return c.residual(g.name, g.count)
    w = c.spec.d_model * c.native_bytes
    return c.pointwise("residual.gated", g.name, g.count, rows=c.T_attn, width=c.spec.d_model, flops_per_elem=3,
                       reads=2, style="sequence", held_bytes=w)


def _ffn_half(c: Ctx, g: LayerGroup) -> list[Op]:
    """norm, the FFN (what brings its tokens, the MLP or the experts, what returns them), (norm, Inkling's output
    conv,) residual add."""
    n = g.count
    ops = [c.norm("norm.ffn", g.name, n)] + _ffn_ops(c, g)
    if g.norms == 3 and g.ffn.d_shared:  # Arctic: the residual MLP's own RMSNorm (residual_layernorm)
        ops.append(c.norm("norm.shared", g.name, n))
    if g.norms >= 4:
        ops.append(c.norm("norm.ffn_out", g.name, n))
    return ops + _ffn_out(c, g) + _out_conv(c, g, "ffn") + [_residual(c, g)]


def _out_conv(c: Ctx, g: LayerGroup, part: str) -> list[Op]:
    """Inkling's depthwise causal conv on a sub-block's output (d channels, its input added back), where the residual
    stream lies (each chip its rows: all of its group's, a 1/tp share of the sequences under sequence parallelism); each
    sequence's window of the last K - 1 rows read and written."""
    if not g.out_conv:
        return []
    d, split_rows = c.spec.d_model, c.tp if sequence_parallel_on(c.sh) else 1
    seqs = c.state_seqs / split_rows
    return [causal_conv1d(f"{part}.out_conv", g.name, g.count, batch=seqs, q_len=c.T_attn / split_rows / seqs,
                          channels=d, kernel=g.out_conv, act_bytes_per_elem=c.act_bytes,
                          state_bytes_per_elem=c.kv_bytes, weight_bytes=d * g.out_conv * c.native_bytes,
                          **c.placed("sequence"))]


def _model_ops_head(c: Ctx) -> list[Op]:
    """Embedding gather (vocab-parallel over each attention group's tp chips: each chip reads its share of the
    rows, then an all-reduce)."""
    spec = c.spec
    ops = _gather(c, "embed", spec.d_model, spec.vocab_size + spec.embed_extra_rows + spec.learned_positions,
                  2 if spec.learned_positions else 1)
    ops += [c.norm("norm.embed", "model", 1)] if spec.embed_norm else []  # Inkling's embedding RMSNorm
    return ops + (_per_layer_inputs(c) if spec.per_layer_input else []) + _altup_streams(c, "projections")


def _gather(c: Ctx, name: str, width: int, table_rows: int, lookups: int = 1) -> list[Op]:
    """A table's rows gathered per token (T_attn, width), vocab-parallel over each attention group's tp chips (each
    reads its share of the rows), then the all-reduce that completes them."""
    op = embedding(name, "model", tokens=c.T_attn, d_model=width, table_rows=table_rows,
                   weight_bytes_per_elem=dtype_bytes(c.spec.weight_format_for("embed", c.dt.weight).dtype),
                   act_bytes_per_elem=c.act_bytes, lookups=lookups, vocab_split=c.tp, **c.placed("vocab_in"))
    return [op] + c.collectives(collective_after("vocab_in", c.sh), name.replace(".", "_"), "model", 1,
                                width=width)


def _altup_streams(c: Ctx, way: str) -> list[Op]:
    """Gemma-3n's AltUp streams: into them after the embedding (the token projected by n - 1 (d, d) matrices, each
    rescaled to the token's magnitude) or out of them before the final norm (projected back, rescaled, averaged);
    replicated on every tp chip."""
    s, d = c.spec.altup_streams, c.spec.d_model
    if not s:
        return []
    into = way == "projections"
    return [c.gemm(f"altup.{way}", "model", 1, "embed", k=d, n=d, n_matrices=s - 1, n_stored=s - 1,
                   style="replicated"),
            c.pointwise("altup.magnitude" if into else "altup.mean", "model", 1, rows=c.T_attn,
                        width=(s - 1 if into else s) * d, flops_per_elem=4, reads=1, style="sequence")]


def _per_layer_inputs(c: Ctx) -> list[Op]:
    """Gemma-4 E2B / E4B's per-layer inputs, width L*p: each token's row of the per-layer table (vocab-parallel as the
    embedding, then its all-reduce), the embedded token projected to that width ((T, d) @ (d, L*p), replicated),
    RMS-normed per p-slice (p weights), the two summed and scaled."""
    spec = c.spec
    width, norm_w = spec.n_layers * spec.per_layer_input, spec.per_layer_input * c.native_bytes
    return _gather(c, "embed.per_layer", width, spec.per_layer_vocab) + [
        c.gemm("per_layer.model_proj", "model", 1, "embed", k=spec.d_model, n=width, style="replicated"),
        c.pointwise("norm.per_layer_proj", "model", 1, rows=c.T_attn, width=width, flops_per_elem=4, reads=1,
                    style="sequence", held_bytes=norm_w, kind="norm"),
        c.pointwise("per_layer.combine", "model", 1, rows=c.T_attn, width=width, flops_per_elem=2, reads=2,
                    style="sequence")]


def _model_ops_tail(c: Ctx) -> list[Op]:
    spec, tp, final = c.spec, c.tp, c.norm("norm.final", "model", 1)
    # the model's parameters outside its blocks and embeddings (ModelSpec.head_params: DeepSeek-V4's and Hy4's final
    # hyper-connection head, JAIS's ALiBi slopes, Mistral Large 4's rotary alpha, Ouro's exit gate) held beside it
    final = replace(final, stored_bytes=final.stored_bytes + spec.head_params * c.native_bytes)
    ops = _altup_streams(c, "unembed_projections") + [final]
    t_lm = c.b_attn if c.phase.lm_head_last_only else c.b_attn * c.q  # logits of the last position only in prefill
    if c.phase.has_chunk:  # the chunk's last position (its logit counts when the chunk ends the prompt)
        t_lm = t_lm + np.where(c.phase.chunk_tokens > 0, c.chunk_seqs, 0.0)
    fmt_family = "embed" if spec.tie_embeddings else "lm_head"
    # vocab-parallel columns (the vocabulary is not padded here)
    ops.append(gemm("lm_head", "model", 1, tokens=t_lm, k=spec.d_model, n=spec.vocab_size / tp,
                    bits_per_weight=spec.weight_format_for(fmt_family, c.dt.weight).bits_per_weight(spec.d_model),
                    act_bytes_per_elem=c.act_bytes, compute_dtype=c.compute_dtype,
                    n_stored=0.0 if spec.tie_embeddings else 1.0, bias=spec.lm_head_bias, **c.placed("vocab_out"),
                    formula_note=" (last position only)" if c.phase.lm_head_last_only else ""))
    return ops + c.collectives(collective_after("vocab_out", c.sh), "lm_head", "model", 1, tokens=t_lm,
                               width=spec.vocab_size)


def handoff_ops(spec: ModelSpec, phase: Phase, sharding: Sharding, dtypes: Dtypes | None = None,
                attention: str = "fused") -> list[Op]:
    """The activations handed from pipeline stage to stage: (T_attn, d) per group, pp - 1 hops (none at pp = 1). A
    stage's ops are those of pp = 1 at the micro-batch batch / pp (no prompt chunk): build_ops = those + these."""
    check_pipeline(spec, sharding.pp)  # layers over pipeline stages (unevenly where they do not divide)
    if sharding.pp == 1:
        return []
    c = Ctx(spec, phase, sharding, dtypes or Dtypes(), attention)
    return c.collectives("p2p", "stage", "model", c.sh.pp - 1, chips=c.sh.chips_per_replica)


def build_ops(spec: ModelSpec, phase: Phase, sharding: Sharding | None = None, dtypes: Dtypes | None = None,
              attention: str = "fused", parts: dict | None = None) -> list[Op]:
    """Every operator of one forward step of `phase`, per chip and per instance (one layer). parts: a dict the caller
    keeps over several builds of ONE model, phase (the same values), dtypes and attention mode whose shardings
    differ: each part of the graph is built there once for the shardings it reads the same of (Ctx.kept; the
    static planner's shardings of one tp that differ in ep share all but their expert halves)."""
    sh, dt = sharding or Sharding(), dtypes or Dtypes()
    if attention not in ATTENTION_MODES:
        raise ScenarioError(f"attention must be one of {', '.join(ATTENTION_MODES)}, got {attention!r}")
    if parts is not None and not isinstance(parts, dict):
        raise ScenarioError(f"parts must be a dict the caller keeps (or None), got {shown(parts)}")
    hand = handoff_ops(spec, phase, sh, dt, attention)  # pp checked before the stage is built
    c = Ctx(spec, phase, sh, dt, attention, parts)
    ops = list(c.kept(_model_ops_head))  # a copy: kept lists are shared
    for g in spec.layer_groups:
        ops += _layer_ops(c, g)
    return ops + c.kept(_model_ops_tail) + hand
