"""The attention side of a layer: projections (MHA / GQA / MLA), RoPE, the KV-cache write, the attention core
(and a mixed step's prompt chunk), DeepSeek sparse attention's indexer, DeepSeek-V4's shared-KV attention with its
compressed branch. Shapes: T = tokens this step on the chip, d = d_model, H/KV = heads per chip, hd = head dim."""

from __future__ import annotations

from ..model.spec import LayerGroup
from ..ops import Op, attention, causal_conv1d, causal_keys_per_query, elementwise, kv_write, mla_glue
from ..sharding import kv_core_elems_per_token_per_chip, kv_elems_per_token_per_chip, kv_heads_per_chip, split
from .context import Ctx

def attention_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    a, n, d, tp = g.attention, g.count, c.spec.d_model, c.tp
    heads = split(a.n_heads, tp, "attention heads")  # column-parallel: heads split over tp
    if a.kv_shared:
        return _shared_kv_attention_ops(c, g, heads)
    ops = c.before_column("attn", g.name, n)
    if a.kind == "mla":
        ops += _mla_projections(c, g, heads)
        rope_dim, kv_rope_heads = a.qk_rope_head_dim, 0 if a.kv_reused else 1  # a reused rope key: rotated before
    else:
        kvh = kv_heads_per_chip(a, tp)
        # (T, d) @ (d, H*hd + KV*hd + KV*vd) -> fused q, k, v (no k and v where the layer reuses an earlier layer's,
        # no v where V = K: Gemma-4 attention_k_eq_v)
        # Qwen3-Next: q_proj also yields the output gate; Inkling: r_proj the heads' relative states
        q_width = heads * (a.head_dim * (2 if a.output_gate else 1) + a.rel_dim)
        k_heads, v_heads = (kvh if a.k_proj_heads else 0), (kvh if a.v_proj_heads else 0)
        if a.q_lora_rank:  # Step-3's MFA: the low-rank query beside k and v
            ops += _low_rank_query(c, g, heads)
        else:
            ops.append(c.gemm("attn.qkv_proj", g.name, n, "attn", k=a.input_width or d,
                              n=q_width + k_heads * a.head_dim + v_heads * a.v_head_dim,
                              style="column", bias=a.qkv_bias))
        rope_dim, kv_rope_heads = a.head_dim, k_heads
        if a.kv_conv:
            ops.append(_kv_conv(c, g, kvh))
    if a.output_gate and a.gate_from_x:  # Hy4: gate_proj, (T, d) @ (d, H*vd) -> one gate logit per output element
        ops.append(c.gemm("attn.gate_proj", g.name, n, "attn", k=d, n=heads * a.v_head_dim, style="column"))
    if a.head_gate:  # Step-3.5, dots3: (T, d) @ (d, H) -> one gate logit per head
        ops.append(c.gemm("attn.g_proj", g.name, n, "attn", k=a.input_width or d, n=heads, style="column"))
    if a.qk_norm or a.bare_qk_norm:
        ops += _qk_norm_ops(c, g, heads, kv_rope_heads)
    if a.rope:  # rotate q (H heads) and k (KV heads) in place: ~3 FLOP/elem (two multiplies, one add)
        ops.append(c.pointwise("attn.rope", g.name, n, rows=c.T_attn, width=(heads + kv_rope_heads) * rope_dim,
                               flops_per_elem=3, reads=1, style="column"))
    if a.q_log_scale:  # Mistral-Large-4: q x (scale x log(position + 1) + bias) per head: 1 multiply an element
        w = 2 * heads * c.native_bytes  # a scale and a bias per head: stored as read, as q_norm's
        ops.append(c.pointwise("attn.q_scale", g.name, n, rows=c.T_attn, width=heads * a.head_dim, flops_per_elem=1,
                               reads=1, style="column", held_bytes=w))
    if kv_elems_per_token_per_chip(a, tp):  # a layer reusing an earlier layer's K and V writes none (but an index key)
        ops.append(kv_write("attn.kv_write", g.name, n, tokens=c.T_attn,
                            kv_elems_per_token=kv_elems_per_token_per_chip(a, tp),
                            act_bytes_per_elem=c.act_bytes, kv_bytes_per_elem=c.kv_bytes,
                            **c.placed("replicated" if a.kind == "mla" else "column")))
    if a.index_topk and a.index_n_heads:  # GLM-5 'shared' layers reuse the previous layer's top-k
        ops += _dsa_indexer_ops(c, g)
    if a.rel_dim:
        ops += _relative_bias_ops(c, g, heads)
    ops += _attention_cores(c, g, heads)
    if a.o_norm:  # Muse Spark: each head's output RMS-normed without weights, ~4 FLOP/elem over (T, H*vd)
        ops.append(c.pointwise("attn.o_norm", g.name, n, rows=c.T_attn, width=heads * a.v_head_dim, flops_per_elem=4,
                               reads=1, style="column"))
    if a.output_gate:  # o * sigmoid(gate) over (T, H*vd): sigmoid ~4 FLOP + 1 multiply
        ops.append(c.pointwise("attn.output_gate", g.name, n, rows=c.T_attn, width=heads * a.v_head_dim,
                               flops_per_elem=5, reads=2, style="column"))
    if a.head_gate:  # o * sigmoid(gate) over (T, H*vd), one gate per head: 1 multiply (the sigmoids are H per token)
        ops.append(c.pointwise("attn.head_gate", g.name, n, rows=c.T_attn, width=heads * a.v_head_dim,
                               flops_per_elem=1, reads=1, style="column"))
    # row-parallel: (T, H*vd) @ (H*vd, d) -> partial sums of (T, d)
    ops.append(c.gemm("attn.o_proj", g.name, n, "attn", k=heads * a.v_head_dim, n=d, style="row", bias=a.o_bias))
    return ops


def _low_rank_query(c: Ctx, g: LayerGroup, heads: int) -> list[Op]:
    """Step-3's MFA (vLLM step3_text.py): qkv_proj (T, d) @ (d, r + KV*(hd + vd)) replicated on every chip (its one
    key / value head whole), an RMSNorm over the r query columns (inter_norm, replicated), then q_b_proj (wq) (T, r) @
    (r, H*hd) column-parallel over the heads."""
    a, n, r = g.attention, g.count, g.attention.q_lora_rank
    kv, w = a.k_proj_heads * a.head_dim + a.v_proj_heads * a.v_head_dim, r * c.native_bytes
    return [c.gemm("attn.qkv_proj", g.name, n, "attn", k=a.input_width or c.spec.d_model, n=r + kv,
                   style="replicated", bias=a.qkv_bias),
            c.pointwise("attn.q_norm", g.name, n, rows=c.T_attn, width=r, flops_per_elem=4, reads=1,
                        style="replicated", held_bytes=w, kind="norm"),
            c.gemm("attn.q_b_proj", g.name, n, "attn", k=r, n=heads * a.head_dim, style="column")]


def _kv_conv(c: Ctx, g: LayerGroup, kv_heads: int) -> Op:
    """Inkling's depthwise causal convs on k and on v (the chip's KV heads), their input added back: 2K + 1 FLOP per
    element; each sequence's window of the last K - 1 inputs read and written (a prompt chunk's sequences too)."""
    a, channels = g.attention, 2 * kv_heads * g.attention.head_dim
    seqs = c.state_seqs
    return causal_conv1d("attn.kv_conv", g.name, g.count, batch=seqs, q_len=c.T_attn / seqs, channels=channels,
                         kernel=a.kv_conv, act_bytes_per_elem=c.act_bytes, state_bytes_per_elem=c.kv_bytes,
                         weight_bytes=channels * a.kv_conv * c.native_bytes, **c.placed("column"))


def _relative_bias_ops(c: Ctx, g: LayerGroup, heads: int) -> list[Op]:
    """Inkling's relative position bias: each head's relative state (T x H rows of rel_dim, from qkv_proj) times the
    bank of profiles (rel_dim x rel_extent, whole on every chip, in the checkpoint dtype) -> a (T, H, rel_extent) table
    of biases by backward distance, written to memory and read by the attention core, which adds it to the scores
    (the SGLang / FA4 score_mod path)."""
    a, n = g.attention, g.count
    rows = c.T_attn * heads
    return [c.gemm("attn.rel_logits", g.name, n, "router", k=a.rel_dim, n=a.rel_extent, tokens=rows, style="column"),
            elementwise("attn.rel_bias", g.name, n, tokens=c.T_attn, elems=rows * a.rel_extent, flops_per_elem=1,
                        reads=1, writes=0, act_bytes_per_elem=c.act_bytes, **c.placed("column"))]


def _qk_norm_ops(c: Ctx, g: LayerGroup, heads: int, kv_heads: int) -> list[Op]:
    """RMSNorm of q and k: per head (head_dim weights each; none in Muse's bare norms), or over all heads' elements
    (MiniMax-M2), whose mean square spans the tp shards: one all-reduce of each token's two fp32 sums of squares (vLLM's
    MiniMaxText01RMSNormTP.forward_qk)."""
    a, n = g.attention, g.count
    width = (heads + kv_heads) * a.head_dim
    weights = (width if a.qk_norm_across_heads else a.qk_norm_weights()) * c.native_bytes  # the chip's, resident
    ops = [c.pointwise("attn.qk_norm", g.name, n, rows=c.T_attn, width=width, flops_per_elem=4, reads=1,
                       style="column", held_bytes=weights, kind="norm")]
    if a.qk_norm_across_heads and c.tp > 1:
        ops += c.collectives("all_reduce", "qk_norm", g.name, n, width=2, elem_bytes=4)
    return ops


def _mla_projections(c: Ctx, g: LayerGroup, heads: int) -> list[Op]:
    """DeepSeek MLA. The down-projections from d (q_a, kv_a) are replicated on every chip (as in vLLM);
    q_b and kv_b are column-parallel over heads. kv_b is materialized over the whole context for
    prefill ((b*kv, r) @ (r, H*(nope+v)) -> K_nope, V) and absorbed into the query and output for decode
    (the same weights applied to the T new tokens only); attn.mla_glue: the module's small kernels (ops.mla_glue)."""
    a, n, d, absorbed = g.attention, g.count, c.spec.d_model, c.phase.mla_absorbed
    ops, latent_out = [], a.kv_lora_rank + a.qk_rope_head_dim
    # a layer reusing an earlier layer's latent and rope key (Mistral-Large-4 kv_source_layers) projects none
    kv_a = 0 if a.kv_reused else latent_out
    if a.q_lora_rank:
        ops.append(c.gemm("attn.qkv_proj", g.name, n, "attn", k=d, n=a.q_lora_rank + kv_a, style="replicated"))
        # A.X-K2: from cat(normed, raw latent), the queries and an output gate of vd per head
        ops.append(c.gemm("attn.q_b_proj", g.name, n, "attn", k=a.q_b_inputs,
                          n=heads * (a.head_dim + a.q_b_gate_width), style="column"))
    else:
        ops.append(c.gemm("attn.q_proj", g.name, n, "attn", k=d, n=heads * a.head_dim, style="column"))
        if kv_a:
            ops.append(c.gemm("attn.qkv_proj", g.name, n, "attn", k=d, n=kv_a, style="replicated"))
    kv_b = dict(k=a.kv_lora_rank, n=heads * (a.qk_nope_head_dim + a.v_head_dim), style="column")
    chunk = absorbed and c.phase.has_chunk  # a mixed step: its prompt chunk materialized, as a prefill is
    ops.append(c.gemm("attn.kv_b_proj", g.name, n, "attn", **kv_b,
                      tokens=(c.b_attn * c.q if chunk else c.T_attn) if absorbed else c.b_attn * c.phase.kv_len,
                      formula_note=" (absorbed into q and o)" if absorbed else " (materialized over the context)"))
    if chunk:  # K, V of the chunk's whole context (prefix + chunk) from its cached latents
        ops.append(c.gemm("attn.kv_b_proj.chunk", g.name, n, "attn", **kv_b,
                          tokens=c.phase.chunk_kv_len * c.chunk_seqs,
                          formula_note=" (materialized over the chunk's context)"))
    ops.append(mla_glue("attn.mla_glue", g.name, n, tokens=c.T_attn, heads=heads, act_bytes_per_elem=c.act_bytes,
                        width=latent_out if absorbed else a.head_dim,
                        norm_bytes=a.latent_norm_weights() * c.native_bytes, **c.placed("column")))
    return ops


def _attention_cores(c: Ctx, g: LayerGroup, heads: int) -> list[Op]:
    """The phase's attention core, plus the prompt chunk's own core in a mixed (chunked-prefill) step (MLA: the chunk
    materialized, as a prefill; vLLM runs prompt tokens through its MLA prefill path, decodes absorbed)."""
    return [_attention_core(c, g, heads, "attn.core" + suffix, batch, q_len, kv_len, causal, own=not suffix)
            for suffix, batch, q_len, kv_len, causal in _core_parts(c)]


def _attention_core(c: Ctx, g: LayerGroup, heads: int, name, batch, q_len, kv_len, causal, own: bool) -> Op:
    """One attention core; own: the layer's own (not a prompt chunk's): it holds the sinks, and MLA runs it absorbed
    where the phase decodes so."""
    a = g.attention
    window = a.index_keys or a.sliding_window  # DSA: each query attends to its index_topk selected keys (MiniMax-M3:
    # its index_topk blocks of index_block_size keys, chosen per KV group)
    common = dict(batch=batch, q_len=q_len, kv_len=kv_len, causal=causal, window=window,
                  window_label="top-k" if a.index_topk else "window",
                  fused=c.fused, act_bytes_per_elem=c.act_bytes, compute_dtype=c.compute_dtype, **c.placed("column"))
    if a.sinks and own:  # one sink per head, held once per layer (a prompt chunk's core reads them too)
        common["sink_bytes"] = heads * c.native_bytes
    if a.kind != "mla":
        return attention(name, g.name, g.count, n_heads=heads, n_kv_heads=kv_heads_per_chip(a, c.tp),
                         qk_dim=a.head_dim, v_dim=a.v_head_dim,
                         kv_elems_per_token=kv_core_elems_per_token_per_chip(a, c.tp),
                         kv_bytes_per_elem=c.kv_bytes, **common)
    if own and c.phase.mla_absorbed:  # scores against the latent (r + rope), values from it (r); KV = latent cache
        return attention(name, g.name, g.count, n_heads=heads, n_kv_heads=1,
                         qk_dim=a.kv_lora_rank + a.qk_rope_head_dim, v_dim=a.kv_lora_rank,
                         kv_elems_per_token=a.kv_lora_rank + a.qk_rope_head_dim, kv_bytes_per_elem=c.kv_bytes,
                         **common)
    # materialized K, V per head, written by kv_b_proj in the activation dtype
    return attention(name, g.name, g.count, n_heads=heads, n_kv_heads=heads, qk_dim=a.head_dim,
                     v_dim=a.v_head_dim, kv_elems_per_token=heads * (a.head_dim + a.v_head_dim),
                     kv_bytes_per_elem=c.act_bytes, **common)


def _dsa_indexer_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """DeepSeek sparse attention's lightning indexer (replicated on every tp chip): q from the query latent
    ((T, r_q) @ (r_q, Hi*di); MiniMax-M3: from x), one shared key and per-head weights from x ((T, d) @ (d, di + Hi);
    MiniMax-M3: no weights); scores of every query against every cached index key (Hi heads of di, no values),
    written out and read back by the top-k selection of index_topk keys per query (MiniMax-M3: each head's scores
    max-pooled over blocks of index_block_size keys in the scoring kernel, Hi block scores per block written out,
    each head's top index_topk blocks kept). IndexPool (GLM-5.3-Flash): a gate per key channel beside the key (d -> di
    more), the keys pooled every index_kpool tokens (a softmax over the pool's gates and position bias, a weighted sum:
    ~6 FLOP per key element, key and gate read), one entry cached per pool; the scores and the top-k run over the
    pools (index_topk / index_kpool of them kept)."""
    a, n, d = g.attention, g.count, c.spec.d_model
    ih, idim, block, pool = a.index_n_heads, a.index_head_dim, a.index_block_size, a.index_kpool or 1
    ops = []
    if a.index_q_norm:  # Mistral-Large-4: a LayerNorm over x before the q projection, ~4 FLOP an element
        w = 2 * a.index_q_norm * c.native_bytes
        ops.append(c.pointwise("attn.indexer.q_norm", g.name, n, rows=c.T_attn, width=a.index_q_norm, flops_per_elem=4,
                               reads=1, style="replicated", held_bytes=w, kind="norm"))
    ops += [c.gemm("attn.indexer.q_proj", g.name, n, "attn", k=a.q_lora_rank or d, n=ih * idim, style="replicated"),
            c.gemm("attn.indexer.k_proj", g.name, n, "attn", k=d, n=idim * (2 if a.index_kpool else 1)
                   + (0 if block else ih), style="replicated")]
    if a.q_log_scale:  # the index queries scaled per head by scale x log(position + 1) + bias
        w = 2 * ih * c.native_bytes
        ops.append(c.pointwise("attn.indexer.q_scale", g.name, n, rows=c.T_attn, width=ih * idim, flops_per_elem=1,
                               reads=1, style="replicated", held_bytes=w))
    # the key's LayerNorm (weight and bias; MiniMax-M3: RMSNorms of q and k), 2 x di weights on every chip
    w = 2 * idim * c.native_bytes
    ops.append(c.pointwise("attn.indexer.k_norm", g.name, n, rows=c.T_attn, width=idim, flops_per_elem=4, reads=1,
                           style="replicated", held_bytes=w, kind="norm"))
    if a.index_kpool:  # each pool's position bias (index_kpool x di)
        w = a.index_kpool * idim * c.native_bytes
        ops += [c.pointwise("attn.indexer.pool", g.name, n, rows=c.T_attn, width=idim, flops_per_elem=6, reads=2,
                            style="replicated", held_bytes=w),
                kv_write("attn.indexer.kv_write", g.name, n, tokens=c.T_attn / pool, kv_elems_per_token=idim,
                         act_bytes_per_elem=c.act_bytes, kv_bytes_per_elem=c.kv_bytes, **c.placed("replicated"))]
    for suffix, batch, q_len, kv_len, causal in _core_parts(c):
        ops.append(attention(f"attn.indexer.score{suffix}", g.name, n, batch=batch, q_len=q_len, kv_len=kv_len,
                             n_heads=ih, n_kv_heads=1, qk_dim=idim, v_dim=0, kv_elems_per_token=idim,
                             kv_bytes_per_elem=c.kv_bytes, act_bytes_per_elem=c.act_bytes, causal=causal,
                             fused=True, compute_dtype=c.compute_dtype, compress_rate=pool, **c.placed("replicated")))
        keys_per_query = causal_keys_per_query(q_len, kv_len) if causal else kv_len  # (B*q, keys) scores
        scores = ih * keys_per_query / block if block else keys_per_query / pool  # MiniMax-M3: (B*q, Hi, blocks)
        ops.append(c.pointwise(f"attn.indexer.topk{suffix}", g.name, n, rows=batch * q_len, width=scores,
                               flops_per_elem=1, reads=1, style="replicated"))
    return ops


# ----------------------------------------------------------------------------------- DeepSeek-V4
def _shared_kv_attention_ops(c: Ctx, g: LayerGroup, heads: int) -> list[Op]:
    """DeepSeek-V4: q_a (d -> r_q) and kv (d -> hd) replicated, q_b column-parallel; one cached hd vector per token is
    key and value (replicated); queries attend to the last sliding_window tokens and the compressed entries (HCA: all,
    CSA: the indexer's top-k); grouped o_a (o_groups blocks -> o_lora_rank) column-parallel, o_b row-parallel."""
    a, n, d, hd = g.attention, g.count, c.spec.d_model, g.attention.head_dim
    groups = split(a.o_groups, c.tp, "output-projection groups (o_groups)")
    ops = c.before_column("attn", g.name, n)
    ops.append(c.gemm("attn.qkv_proj", g.name, n, "attn", k=d, n=a.q_lora_rank + hd, style="replicated"))
    ops.append(c.gemm("attn.q_b_proj", g.name, n, "attn", k=a.q_lora_rank, n=heads * hd, style="column"))
    # RMSNorm of q per head (no weights) and of kv (hd weights; with them the query latent's q_a_norm, q_lora_rank);
    # RoPE on the rope slice of q, kv and (inverse) of the output
    w = (a.q_lora_rank + hd) * c.native_bytes
    ops.append(c.pointwise("attn.qk_norm", g.name, n, rows=c.T_attn, width=(heads + 1) * hd, flops_per_elem=4, reads=1,
                           style="column", kind="norm", held_bytes=w))
    ops.append(c.pointwise("attn.rope", g.name, n, rows=c.T_attn, width=(2 * heads + 1) * a.qk_rope_head_dim,
                           flops_per_elem=3, reads=1, style="column"))
    ops.append(kv_write("attn.kv_write", g.name, n, tokens=c.T_attn, kv_elems_per_token=hd,
                        act_bytes_per_elem=c.act_bytes,
                        kv_bytes_per_elem=c.kv_bytes, **c.placed("replicated")))
    if a.compressor:
        ops += _compressor_ops(c, g)
    ops += _attention_cores(c, g, heads)  # the sliding window over the uncompressed tokens
    if a.compressor:
        ops += _compressed_cores(c, g, heads)
    # block-diagonal: (T, g_chip, H*hd/g) @ (g_chip, H*hd/g, r_o) -> (T, g_chip*r_o); then (T, g_chip*r_o) @ (., d)
    ops.append(c.gemm("attn.o_a_proj", g.name, n, "attn", k=a.n_heads * hd // a.o_groups, n=a.o_lora_rank,
                      n_matrices=groups, n_stored=groups, style="column"))
    ops.append(c.gemm("attn.o_b_proj", g.name, n, "attn", k=groups * a.o_lora_rank, n=d, style="row"))
    return ops


def _compressor_ops(c: Ctx, g: LayerGroup) -> list[Op]:
    """The compressed branch (replicated, like the KV head): kv and gate of every token (CSA: two series, plus the
    indexer's and its head weights), buffered (one write, one read) and pooled per `rate` tokens (~6 FLOP per element),
    one hd entry (+ index key) cached per `rate` tokens; CSA's indexer scores every entry and keeps the top-k."""
    a, n, d, cp = g.attention, g.count, c.spec.d_model, g.attention.compressor
    hd, ih, idim = a.head_dim, cp.index_n_heads, cp.index_head_dim
    proj = 2 * cp.series * hd + (4 * idim + ih if cp.index_topk else 0)
    w = cp.extra_params(hd) * c.native_bytes  # the pools' position bias and the kv (and index key) norms
    ops = [c.gemm("attn.compressor.kv_gate", g.name, n, "attn", k=d, n=proj, style="replicated"),
           c.pointwise("attn.compressor.pool", g.name, n, rows=c.T_attn, width=proj // 2, flops_per_elem=6, reads=2,
                       style="replicated", held_bytes=w),
           kv_write("attn.compressor.kv_write", g.name, n, tokens=c.T_attn / cp.rate,
                    kv_elems_per_token=hd + (idim if cp.index_topk else 0), act_bytes_per_elem=c.act_bytes,
                    kv_bytes_per_elem=c.kv_bytes, **c.placed("replicated"))]
    if not cp.index_topk:
        return ops
    ops.append(c.gemm("attn.indexer.q_proj", g.name, n, "attn", k=a.q_lora_rank, n=ih * idim, style="replicated"))
    for suffix, batch, q_len, kv_len, causal in _core_parts(c):
        ops.append(attention(f"attn.indexer.score{suffix}", g.name, n, batch=batch, q_len=q_len, kv_len=kv_len,
                             n_heads=ih, n_kv_heads=1, qk_dim=idim, v_dim=0, kv_elems_per_token=idim,
                             kv_bytes_per_elem=c.kv_bytes, act_bytes_per_elem=c.act_bytes, causal=causal, fused=True,
                             compute_dtype=c.compute_dtype, compress_rate=cp.rate, **c.placed("replicated")))
        entries_per_query = (causal_keys_per_query(q_len, kv_len) if causal else kv_len) / cp.rate
        ops.append(c.pointwise(f"attn.indexer.topk{suffix}", g.name, n, rows=batch * q_len, width=entries_per_query,
                               flops_per_elem=1, reads=1, style="replicated"))
    return ops


def _core_parts(c: Ctx) -> list[tuple]:
    """(suffix, sequences, new tokens, context, causal) of the phase's attention, and of a mixed step's prompt chunk."""
    parts = [("", c.b_attn, c.q, c.phase.kv_len, c.phase.causal)]
    if c.phase.has_chunk:  # one request's chunk (spread over the sequence groups): causal over its prefix + itself
        parts.append((".chunk", c.chunk_seqs, c.phase.chunk_tokens, c.phase.chunk_kv_len, True))
    return parts


def _compressed_cores(c: Ctx, g: LayerGroup, heads: int) -> list[Op]:
    """The chip's heads over the compressed entries (one hd key = value each): a query at position p sees p / rate of
    them (HCA), at most index_topk (CSA: a window of index_topk x rate tokens)."""
    a, cp = g.attention, g.attention.compressor
    window = cp.index_topk * cp.rate or None
    return [attention(f"attn.core.compressed{suffix}", g.name, g.count, batch=batch, q_len=q_len, kv_len=kv_len,
                      n_heads=heads, n_kv_heads=1, qk_dim=a.head_dim, v_dim=a.head_dim, kv_elems_per_token=a.head_dim,
                      kv_bytes_per_elem=c.kv_bytes, act_bytes_per_elem=c.act_bytes, causal=causal, window=window,
                      window_label="top-k x rate", fused=c.fused, compute_dtype=c.compute_dtype,
                      compress_rate=cp.rate, **c.placed("column"))
            for suffix, batch, q_len, kv_len, causal in _core_parts(c)]
