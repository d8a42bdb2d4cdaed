"""ModelSpec: what the estimator knows of a transformer, independent of Hugging Face key names.

Identical layers share one LayerGroup (DeepSeek's dense then MoE layers, Gemma-2's sliding and full
layers). Every weight matrix of a block is listed once, by `weight_matrices()` (Matrix: matrix.py); parameter
counts, weight bytes and the operator graph all read that one list. A recurrent mixer's spec: mixer.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..units import DTYPE_BITS, WeightFormat, canonical_dtype, weight_format
from .matrix import Matrix, check_kind
from .mixer import MixerSpec

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla", "none")  # none: a block without softmax attention (a mixer or MLP block)
FFN_KINDS = ("dense", "moe", "none")  # none: a block without MLP (Mamba blocks, Nemotron-H mixer blocks)


@dataclass(frozen=True)
class CompressorSpec:
    """DeepSeek-V4's compressed KV branch, beside its sliding window: kv_proj and gate_proj from x, every `rate`
    tokens pooled into one cached entry of head_dim (softmax of the gates + a learned position bias over the window,
    RMSNorm, RoPE). overlap (CSA): two series per token (projections 2 x head_dim wide), each entry pooling 2 x rate
    tokens at a stride of rate. index_topk (CSA): a lightning indexer with its own overlapping compressor (entries of
    index_head_dim) scores the compressed entries with index_n_heads heads (q from the query latent, per-head weights
    from x) and each query attends to its top index_topk of them; 0 (HCA): to every compressed entry."""

    rate: int
    overlap: bool = False
    index_topk: int = 0
    index_n_heads: int = 0
    index_head_dim: int = 0

    @property
    def series(self) -> int:
        """Compressed series per token: 2 with overlapping windows (CSA), else 1."""
        return 2 if self.overlap else 1

    def weight_matrices(self, d_model: int, head_dim: int, q_rank: int) -> list[Matrix]:
        # kv_proj and gate_proj fused: (d) -> kv and gate of every series; the indexer's (always two series) with its
        # weights_proj (d -> index heads), and its q_b_proj from the query latent
        mats = [Matrix("attn.compressor.kv_gate", d_model, 2 * self.series * head_dim)]
        if self.index_topk:
            mats += [Matrix("attn.indexer.kv_gate", d_model, 4 * self.index_head_dim + self.index_n_heads),
                     Matrix("attn.indexer.q_proj", q_rank, self.index_n_heads * self.index_head_dim)]
        return mats

    def extra_params(self, head_dim: int) -> int:
        """position_bias (rate x series x head_dim) and the kv_norm weight (head_dim), and the indexer's."""
        p = self.rate * self.series * head_dim + head_dim
        if self.index_topk:
            p += self.rate * 2 * self.index_head_dim + self.index_head_dim
        return p

    def cached_elements_per_token(self, head_dim: int) -> float:
        """Compressed cache per token of context: one head_dim entry (+ one index key) every `rate` tokens."""
        return (head_dim + (self.index_head_dim if self.index_topk else 0)) / self.rate


@dataclass(frozen=True)
class AttentionSpec:
    kind: str  # mha | gqa | mqa | mla
    n_heads: int
    n_kv_heads: int
    head_dim: int  # query/key head dim (MLA: qk_nope_head_dim + qk_rope_head_dim)
    v_head_dim: int
    sliding_window: int | None = None  # None: full attention
    qkv_bias: bool = False
    o_bias: bool = False
    rope: bool = True  # rotary embedding applied to q and k
    qk_norm: bool = False  # per-head RMSNorm on q and k (Qwen3, Gemma-3)
    qk_norm_across_heads: bool = False  # one RMSNorm over all q heads' elements, one over k's (MiniMax-M2)
    sinks: bool = False  # learned per-head attention sink logits (gpt-oss)
    # MLA (DeepSeek-V2/V3); on GQA / MQA, Step-3's MFA: a low-rank query (q_lora_rank columns of qkv_proj beside k and
    # v, an RMSNorm over them, q_b_proj widening them to the heads)
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    # Qwen3-Next gated attention: q_proj also produces a sigmoid gate of H*hd on the output; MLA: q_b_proj produces it,
    # H x v_head_dim (A.X-K2), or with gate_from_x its own gate_proj (d -> H x v_head_dim) from x (Hy4)
    output_gate: bool = False
    gate_from_x: bool = False
    # q_latent_twice: q_b_proj (A.X-K2's q_gate_proj) reads the q latent taken twice, normed and raw: 2 x q_lora_rank
    q_latent_twice: bool = False
    head_gate: bool = False  # Step-3.5, dots3: g_proj (d -> H) from x, a sigmoid gate per head on the attention output
    rope_key_norm: bool = False  # dots3 (MLA): an RMSNorm over the shared rope key (qk_rope_head_dim weights)
    value_is_key: bool = False  # Gemma-4 attention_k_eq_v: no v_proj, the values are the keys (V = K)
    # DeepSeek sparse attention (DSA, V3.2): a lightning indexer scores every key with index_n_heads small heads of
    # index_head_dim and keeps the index_topk best per query; it caches one index_head_dim key per token.
    index_topk: int | None = None
    index_n_heads: int = 0
    index_head_dim: int = 0
    # MiniMax-M3's block indexer (0: DSA's): no head weights; each index head max-pools its scores over blocks of
    # index_block_size keys and keeps its own index_topk blocks (one selection per KV group)
    index_block_size: int = 0
    # Mistral-Large-4: the indexer's q_proj reads x through a LayerNorm (weight + bias) of this width (hidden_size;
    # 0: none), and q_log_scale scales the queries (the indexer's too) per head by scale x log(position + 1) + bias
    index_q_norm: int = 0
    q_log_scale: bool = False
    # GLM-5.3-Flash's IndexPool (0: DSA's per-token index keys): the indexer's keys are pooled every index_kpool tokens
    # (a softmax over a gate per channel, pool_gate: d -> index_head_dim, plus a learned bias per pool position) into
    # one cached entry it scores; the index_topk / index_kpool best pools give index_topk keys, plus with index_tail
    # the at most index_kpool - 1 tokens of the last, incomplete pool
    index_kpool: int = 0
    index_tail: bool = False
    # DeepSeek-V4: one cached head_dim vector per token is both key and value (kv_proj from x; queries from a q_lora_rank
    # latent); a grouped output projection (o_groups groups of heads -> o_lora_rank each, then o_b -> d); a compressed
    # KV branch beside the sliding window (None: sliding window only)
    kv_shared: bool = False
    o_groups: int = 0
    o_lora_rank: int = 0
    compressor: CompressorSpec | None = None
    input_width: int = 0  # width of q/k/v's input when it is not d_model (Zamba: hidden state + embeddings, 2 x d)
    # Gemma-4 num_kv_shared_layers: the layer attends over the K and V an earlier layer of its kind cached (no k/v
    # projections or norms of its own, nothing cached; the attention core reads that cache as its own); MLA
    # (Mistral-Large-4 kv_source_layers): the latent and rope key an earlier layer cached (no kv_a_proj or latent
    # norm; kv_b_proj its own), only the index key of its own indexer cached
    kv_reused: bool = False
    # Inkling: a relative position bias from each query's own state, in place of RoPE: r_proj (d -> H x rel_dim) in
    # qkv_proj, a bank of rel_dim x rel_extent profiles mixing each head's state into one bias per backward distance
    # below rel_extent; kv_conv: a depthwise causal conv of that many taps on k and on v after their projections (its
    # input added back), the last kv_conv - 1 inputs kept per sequence: kv_conv_channels = 2 x n_kv_heads x head_dim
    rel_dim: int = 0
    rel_extent: int = 0
    kv_conv: int = 0
    # Muse: RMSNorms without weights, on q and k per head (bare_qk_norm) and on each head's output before the output
    # gate (o_norm: Muse Spark); no parameters, their elementwise passes priced
    bare_qk_norm: bool = False
    o_norm: bool = False

    def __post_init__(self):
        check_kind("AttentionSpec", self.kind, ATTENTION_KINDS)

    @staticmethod
    def none() -> "AttentionSpec":
        """A block without softmax attention: zero heads, nothing cached, no weights."""
        return AttentionSpec("none", 0, 0, 0, 0, rope=False)

    @property
    def index_keys(self) -> int | None:
        """Keys one query attends to on a top-k layer: index_topk tokens (DSA; IndexPool's index_tail: + the incomplete
        pool's index_kpool - 1 at most) or blocks of index_block_size."""
        if not self.index_topk:
            return None
        tail = self.index_kpool - 1 if self.index_tail and self.index_kpool else 0
        return self.index_topk * (self.index_block_size or 1) + tail

    @property
    def token_index_elems(self) -> int:
        """Index-key elements cached per token: index_head_dim (DSA), none with IndexPool (one entry per pool)."""
        return 0 if self.index_kpool else self.index_head_dim

    @property
    def q_b_gate_width(self) -> int:
        """MLA q_b_proj's output gate columns per head: v_head_dim where the gate rides in it (A.X-K2), else 0."""
        return self.v_head_dim if self.output_gate and not self.gate_from_x else 0

    @property
    def q_b_inputs(self) -> int:
        """MLA q_b_proj's input width: the q latent (q_lora_rank), or twice it (A.X-K2: cat(normed, raw latent))."""
        return (self.q_lora_rank or 0) * (2 if self.q_latent_twice else 1)

    @property
    def group_size(self) -> int:
        """G = query heads per KV head (GQA intensity of decode attention); MLA shares one latent: G = heads."""
        return self.n_heads // self.n_kv_heads

    def kv_elements_per_token(self) -> int:
        """Cached elements per token per layer: K and V of every KV head, or MLA's latent + rope key (+ the index
        key of a layer with its own indexer, unless IndexPool pools it: compressed_elements_per_token; a layer reusing
        an earlier layer's cache: that index key only)."""
        if self.kv_reused:
            return self.token_index_elems
        if self.kind == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim + self.token_index_elems
        return self.n_kv_heads * self.kv_elements_per_head + self.token_index_elems

    @property
    def kv_elements_per_head(self) -> int:
        """Cached elements per token of one KV head: its key and value (the key alone where K is V: kv_shared)."""
        return self.head_dim + (0 if self.kv_shared else self.v_head_dim)

    def compressed_elements_per_token(self) -> float:
        """Cache per token of context not capped by a window: DeepSeek-V4's compressed entries, IndexPool's pooled
        index keys (index_head_dim per index_kpool tokens); 0 without either."""
        pooled = self.index_head_dim / self.index_kpool if self.index_kpool else 0.0
        return (self.compressor.cached_elements_per_token(self.head_dim) if self.compressor else 0.0) + pooled

    def weight_matrices(self, d_model: int) -> list[Matrix]:
        h, hd, vd = self.n_heads, self.head_dim, self.v_head_dim
        if self.kind == "none":
            return []
        if self.kind == "mla":
            mats = []
            if self.q_lora_rank:
                mats += [Matrix("attn.q_a_proj", d_model, self.q_lora_rank),
                         Matrix("attn.q_b_proj", self.q_b_inputs, h * (hd + self.q_b_gate_width))]
            else:
                mats += [Matrix("attn.q_proj", d_model, h * hd)]
            if not self.kv_reused:
                mats.append(Matrix("attn.kv_a_proj", d_model, self.kv_lora_rank + self.qk_rope_head_dim))
            mats += [Matrix("attn.kv_b_proj", self.kv_lora_rank, h * (self.qk_nope_head_dim + vd)),
                     Matrix("attn.o_proj", h * vd, d_model, self.o_bias)]
            gate = [Matrix("attn.gate_proj", d_model, h * vd)] if self.output_gate and self.gate_from_x else []
            return mats + gate + self.head_gate_matrices(d_model) + self.indexer_matrices(d_model)
        if self.kv_shared:
            return self._shared_kv_matrices(d_model)
        q_width = h * hd * (2 if self.output_gate else 1) + h * self.rel_dim  # the output gate, r_proj ride in q_proj
        q_b = [Matrix("attn.q_b_proj", self.q_lora_rank, h * hd)] if self.q_lora_rank else []  # MFA's wq
        qkv = Matrix("attn.qkv_proj", self.input_width or d_model,
                     (self.q_lora_rank or q_width) + self.k_proj_heads * hd + self.v_proj_heads * vd, self.qkv_bias)
        return [qkv] + q_b + self.head_gate_matrices(d_model) + \
            [Matrix("attn.o_proj", h * vd, d_model, self.o_bias)] + self.indexer_matrices(d_model)

    def head_gate_matrices(self, d_model: int) -> list[Matrix]:
        """g_proj: one gate logit per head from the layer's input (Step-3.5, dots3)."""
        return [Matrix("attn.g_proj", self.input_width or d_model, self.n_heads)] if self.head_gate else []

    def _shared_kv_matrices(self, d: int) -> list[Matrix]:
        """DeepSeek-V4: q_a (d -> r_q), q_b (r_q -> H*hd), kv (d -> hd), o_a (o_groups blocks of H*hd/g -> o_lora),
        o_b (g*o_lora -> d), and the compressor's."""
        h, hd, g, r = self.n_heads, self.head_dim, self.o_groups, self.q_lora_rank
        mats = [Matrix("attn.q_a_proj", d, r), Matrix("attn.q_b_proj", r, h * hd), Matrix("attn.kv_proj", d, hd),
                Matrix("attn.o_a_proj", h * hd // g, self.o_lora_rank, count=g),
                Matrix("attn.o_b_proj", g * self.o_lora_rank, d)]
        return mats + (self.compressor.weight_matrices(d, hd, r) if self.compressor else [])

    @property
    def kv_conv_channels(self) -> int:
        return 2 * self.n_kv_heads * self.head_dim if self.kv_conv else 0

    @property
    def k_proj_heads(self) -> int:
        """Key heads k_proj computes: none where the layer reuses an earlier layer's cache (kv_reused)."""
        return 0 if self.kv_reused else self.n_kv_heads

    @property
    def v_proj_heads(self) -> int:
        """Value heads v_proj computes: none when the values are the keys (Gemma-4 attention_k_eq_v) or come from an
        earlier layer's cache (kv_reused)."""
        return 0 if self.value_is_key or self.kv_reused else self.n_kv_heads

    def indexer_matrices(self, d_model: int) -> list[Matrix]:
        """DSA lightning indexer: q from the query latent (q_lora_rank, else x), one shared key and per-head weights
        from x (MiniMax-M3's block indexer has no weights)."""
        if not self.index_topk or not self.index_n_heads:
            return []
        mats = [Matrix("attn.indexer.q_proj", self.q_lora_rank or d_model, self.index_n_heads * self.index_head_dim),
                Matrix("attn.indexer.k_proj", d_model, self.index_head_dim)]
        if self.index_kpool:  # IndexPool's gate per key channel (index_kpool_compress_gate)
            mats.append(Matrix("attn.indexer.pool_gate", d_model, self.index_head_dim))
        return mats + ([] if self.index_block_size else [Matrix("attn.indexer.weights_proj", d_model,
                                                                self.index_n_heads)])

    def qk_norm_weights(self) -> int:
        """The q and k norms' weights: head_dim each (per-head norms), or one per element of all heads (MiniMax-M2)."""
        if not self.qk_norm:
            return 0
        if self.qk_norm_across_heads:
            return (self.n_heads + self.n_kv_heads) * self.head_dim
        return (1 if self.kv_reused else 2) * self.head_dim  # a layer reusing K and V has no k_norm

    def latent_norm_weights(self) -> int:
        """MLA's latent norms: q_a's (q_lora_rank), kv_a's (kv_lora_rank; none where the layer reuses an earlier layer's
        latent) and the rope key's where it has one; 0 for other attention."""
        if self.kind != "mla":
            return 0
        return (self.q_lora_rank or 0) + (0 if self.kv_reused else self.kv_lora_rank) + \
            (self.qk_rope_head_dim if self.rope_key_norm else 0)

    def extra_params(self) -> int:
        """Parameters outside the matrices: q/k norms, MLA latent (and rope-key) norms, MFA's low-rank query norm,
        attention sinks, the DSA key LayerNorm, Inkling's relative-bias bank and k / v conv taps."""
        p = self.qk_norm_weights() + self.rel_dim * self.rel_extent + self.kv_conv * self.kv_conv_channels
        p += self.latent_norm_weights()
        if self.sinks:
            p += self.n_heads
        if self.index_topk:
            p += 2 * self.index_head_dim  # the indexer's k_norm: LayerNorm weight + bias (MiniMax-M3: q and k RMSNorms)
            p += self.index_kpool * self.index_head_dim  # IndexPool's position bias (index_kpool_compress_ape)
        if self.index_n_heads:  # Mistral-Large-4: the indexer's q LayerNorm (weight + bias)
            p += 2 * self.index_q_norm
        if self.q_log_scale:  # a scale and a bias per head, the indexer's heads too
            p += 2 * (self.n_heads + self.index_n_heads)
        if self.kv_shared:  # q_a_norm, kv_norm
            p += self.q_lora_rank + self.head_dim
        elif self.kind != "mla":  # MFA's inter_norm over the low-rank query
            p += self.q_lora_rank or 0
        if self.compressor:
            p += self.compressor.extra_params(self.head_dim)
        return p


@dataclass(frozen=True)
class FfnSpec:
    kind: str  # dense | moe
    d_ff: int  # dense intermediate size (0 for a pure-MoE layer)
    gated: bool  # SwiGLU / GeGLU: up and gate matrices (3 matrices in all) vs up + down (2)
    activation: str  # descriptive (reports, notes); gating is decided by the reader, not from this string
    bias: bool = False
    down_bias: bool = False  # a bias on the down projection only (TeleChat2's down_proj; its gate / up have none)
    n_experts: int = 0
    top_k: int = 0
    d_expert: int = 0  # intermediate size of one routed expert
    d_shared: int = 0  # total intermediate size of the always-on shared expert(s)
    shared_gate: bool = False  # Qwen2-MoE: sigmoid gate Linear(d_model, 1) on the shared expert
    router_bias: bool = False
    activation_sparsity: float = 0.0  # Gemma-3n: the gate's activations above a Gaussian quantile kept (a top-k pass)
    zero_experts: int = 0  # LongCat: identity experts the router scores beside the n_experts (no weights, no work)
    # Inkling shared_expert_sink: the router also scores the shared experts (router_sink columns, no bias), whose
    # weights join the softmax over the chosen experts; global_scale: one learned scalar on the dense MLP's output or
    # on the router's weights
    router_sink: int = 0
    global_scale: bool = False
    # Muse Spark moe_hidden_size: the routed experts run at this width (0: d_model), between latent_in (d -> latent)
    # with an RMSNorm after it and latent_out (latent -> d); each expert's output RMS-normed (latent weights, shared by
    # the experts) before the router's weight scales it
    latent: int = 0

    def __post_init__(self):
        check_kind("FfnSpec", self.kind, FFN_KINDS)

    def extra_params(self) -> int:  # Inkling's global scale; the latent experts' two RMSNorms
        return (int(self.global_scale) + 2 * self.latent) if self.kind != "none" else 0

    @property
    def router_width(self) -> int:
        """Experts the router scores: the routed ones and the zero-computation ones."""
        return self.n_experts + self.zero_experts

    @property
    def expert_top_k(self) -> float:
        """Routed experts with weights one token runs, on average: top_k, or with zero-computation experts top_k of
        the router's experts under uniform routing, top_k x n_experts / router_width (LongCat: 12 x 512 / 768 = 8)."""
        if not self.zero_experts:
            return self.top_k
        k = self.top_k * self.n_experts / self.router_width
        return int(k) if k.is_integer() else k

    @staticmethod
    def none() -> "FfnSpec":
        """A block without MLP."""
        return FfnSpec("none", 0, False, "")

    def weight_matrices(self, d_model: int) -> list[Matrix]:
        up = 2 if self.gated else 1
        if self.kind == "none":
            return []
        if self.kind == "dense":
            return [Matrix("ffn.up_gate" if self.gated else "ffn.up", d_model, up * self.d_ff, self.bias, "ffn"),
                    Matrix("ffn.down", self.d_ff, d_model, self.bias or self.down_bias, "ffn")]
        mats = [Matrix("ffn.router", d_model, self.router_width, self.router_bias, "router")]
        if self.router_sink:
            mats.append(Matrix("ffn.router.sink", d_model, self.router_sink, False, "router"))
        w = self.latent or d_model
        mats += [Matrix("ffn.experts.up_gate" if self.gated else "ffn.experts.up", w, up * self.d_expert,
                        self.bias, "experts", self.n_experts),
                 Matrix("ffn.experts.down", self.d_expert, w, self.bias, "experts", self.n_experts)]
        if self.latent:
            mats[-2:-2] = [Matrix("ffn.latent_in", d_model, w, False, "ffn")]
            mats.append(Matrix("ffn.latent_out", w, d_model, False, "ffn"))
        if self.d_shared:
            mats += [Matrix("ffn.shared.up_gate" if self.gated else "ffn.shared.up", d_model, up * self.d_shared,
                            False, "shared"),
                     Matrix("ffn.shared.down", self.d_shared, d_model, False, "shared")]
            if self.shared_gate:
                mats.append(Matrix("ffn.shared.gate", d_model, 1, False, "router"))
        return mats

    def active_matrices(self, d_model: int) -> list[Matrix]:
        """The matrices one token passes through: top-k of the routed experts (expert_top_k: those with weights)."""
        out = []
        for m in self.weight_matrices(d_model):
            out.append(Matrix(m.name, m.k, m.n, m.bias, m.family, self.expert_top_k) if m.family == "experts" else m)
        return out


@dataclass(frozen=True)
class LayerGroup:
    name: str
    count: int
    attention: AttentionSpec  # AttentionSpec.none() in a mixer-only or MLP-only block
    ffn: FfnSpec  # kind 'none' in a block without MLP
    parallel_block: bool = False  # attention and MLP read the same input (GPT-J, Falcon, Phi-2)
    norms: int = 2  # norm layers per block (Gemma-2/3: 4, parallel blocks: 1 or 2)
    mixer: MixerSpec | None = None  # a recurrent mixer (SSM / linear attention) in place of attention
    hc_mult: int = 0  # DeepSeek-V4 hyper-connections: hc_mult residual streams, mixed before and after each sub-block
    hc_independent: bool = False  # Hy4's iHC: pre and post weights only (2 x hc_mult a token), no comb (hc x hc)
    # A shared block (Zamba2): its weights are stored shared_copies times and run at each of the count layers (0: one
    # copy per layer); per_layer: the matrices each of those layers holds on its own (Zamba2: LoRA adapters, a
    # projection; Gemma-4's per-layer-input gate and projection, ModelSpec.per_layer_input)
    shared_copies: int = 0
    per_layer: tuple[Matrix, ...] = ()
    # A looped stack (Ouro's total_ut_steps): the group's layers run `loops` times in turn, each run with a KV cache of
    # its own: count = the layers stored x loops (the runs), the weights stored count / loops times (0: not looped)
    loops: int = 0
    # A.X-K2: that many of the block's RMSNorms (the one before attention; the one before the MoE) gate their output
    # through a low-rank sigmoid gate, y * sigmoid(fc2(silu(fc1(y)))) (fc1: d -> r, fc2: r -> d, in per_layer)
    gated_norms: int = 0
    # Inkling: a depthwise causal conv of that many taps on the attention's output and one on the MLP's (d_model
    # channels each, their input added back), the last out_conv - 1 inputs of each kept per sequence
    out_conv: int = 0
    # Muse Spark: the two residual adds gated by a learned d-vector each (alpha x residual + beta x output, alpha and
    # beta from it); weightless_norms: norms of the block without a weight (its post-attention norm, norm.attn_out)
    residual_gates: bool = False
    weightless_norms: int = 0

    def out_conv_params(self, d_model: int) -> int:  # the taps of Inkling's two output convs
        return 2 * self.out_conv * d_model

    def block_vector_params(self, norm_params: int, d_model: int) -> int:
        """The block's norm weights (norm_params each, weightless norms none) and its residual gates' vectors."""
        return (self.norms - self.weightless_norms) * norm_params + (2 * d_model if self.residual_gates else 0)

    @property
    def copies(self) -> int:
        """Copies of the block's weights the checkpoint stores: one per layer, those of a shared block, or one per
        layer of a looped stack (count / loops)."""
        return self.shared_copies or (self.count // self.loops if self.loops else self.count)

    def per_layer_params(self) -> int:
        return sum(m.params for m in self.per_layer)

    @property
    def is_plain(self) -> bool:
        """Softmax attention then an MLP: the classic transformer block."""
        return self.mixer is None and self.attention.kind != "none" and self.ffn.kind != "none"

    def mixing_matrices(self, d_model: int) -> list[Matrix]:
        return (self.attention.weight_matrices(d_model) + (self.mixer.weight_matrices(d_model) if self.mixer else [])
                + self.hyper_matrices(d_model))

    @property
    def hc_mix_width(self) -> int:
        """Mixing weights a hyper-connection projects per token: pre, post (hc each) and comb (hc x hc; not in iHC)."""
        return (2 if self.hc_independent else 2 + self.hc_mult) * self.hc_mult

    @property
    def hc_base_params(self) -> int:
        """One hyper-connection's base (one per mixing weight) and scales (3; iHC: 2, pre and post); 0 without."""
        return self.hc_mix_width + (2 if self.hc_independent else 3) if self.hc_mult else 0

    def mixing_extra_params(self) -> int:  # two hyper-connections a layer: before the mixer and before the FFN
        mixer = self.mixer.extra_params() if self.mixer else 0
        return self.attention.extra_params() + mixer + 2 * self.hc_base_params

    def hyper_matrices(self, d_model: int) -> list[Matrix]:
        """The two hyper-connections' mixing projections (before attention and before the FFN): the hc streams
        flattened (hc*d) -> pre (hc), post (hc) and comb (hc x hc; not in Hy4's iHC) weights."""
        hc = self.hc_mult
        return [Matrix(f"hc.{part}.mix_proj", hc * d_model, self.hc_mix_width, family="hc")
                for part in ("attn", "ffn")] if hc else []

# activation dtypes a checkpoint may quantize its GEMM inputs to (activation_quant): W8A8, and W4A4 for NVFP4
QUANT_ACT_DTYPES = ("fp8", "int8", "fp4")


@dataclass(frozen=True)
class ModelSpec:
    name: str
    d_model: int
    vocab_size: int
    layer_groups: tuple[LayerGroup, ...]
    tie_embeddings: bool = False
    max_context: int | None = None
    norm: str = "rmsnorm"  # rmsnorm (weight) | layernorm (weight + bias)
    learned_positions: int = 0  # rows of a learned absolute position embedding (GPT-2, OPT), else 0
    lm_head_bias: bool = False  # GPT-J, Phi-2: the LM head has a bias of vocab_size
    weight_dtype: str = "bf16"  # native dtype of the checkpoint (unquantized parts)
    quantization: WeightFormat | None = None  # from quantization_config
    quantized_families: tuple[str, ...] = ("attn", "ffn", "experts", "shared")
    family_formats: tuple[tuple[str, WeightFormat], ...] = ()  # a family's own storage format (DeepSeek-V4 experts)
    model_type: str = ""
    source: str = ""
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    head_params: int = 0  # parameters outside the blocks and embeddings (DeepSeek-V4's final hyper-connection head)
    activation_quant: str | None = None  # 'fp8' | 'int8' | 'fp4': the quantized GEMMs' inputs too (W8A8, W4A4)
    # Gemma-4 E2B / E4B per-layer embeddings (PLE): each token gathers a row of n_layers x per_layer_input from a
    # per_layer_vocab table, adds the hidden state projected to that width (d -> n_layers x per_layer_input, RMS-normed
    # over each layer's slice: per_layer_input weights); each layer gates its slice back into its residual stream
    # (its gate and projection in LayerGroup.per_layer)
    per_layer_input: int = 0
    per_layer_vocab: int = 0
    # Gemma-3n AltUp: the hidden state kept as altup_streams copies (the embedding projected into the others by
    # altup_streams - 1 (d, d) matrices, projected back and averaged after the last layer); one runs through each layer,
    # the others are predicted before it and corrected after it (LayerGroup.per_layer: the router and coefficients).
    # LAuReL: a (d -> laurel_rank -> d) residual beside each layer's attention.
    altup_streams: int = 0
    laurel_rank: int = 0
    embed_norm: bool = False  # Inkling: an RMSNorm on the token embeddings (d weights)
    embed_extra_rows: int = 0  # Molmo2 additional_vocab_size: embedding rows beyond the LM head's vocab_size

    # ------------------------------------------------------------------ structure
    @property
    def n_layers(self) -> int:
        """Decoder layers; a shared block (Zamba2) runs inside the layers it serves, not as layers of its own."""
        return sum(g.count for g in self.layer_groups if not g.shared_copies)

    @property
    def is_moe(self) -> bool:
        return any(g.ffn.kind == "moe" for g in self.layer_groups)

    @property
    def attention_kind(self) -> str:
        """Token-mixing kinds of the layers: softmax attention (mha, gqa, mqa, mla, with +dsa or MiniMax-M3's +msa)
        and mixers."""
        kinds = {g.attention.kind + ("+msa" if g.attention.index_block_size else "+dsa" if g.attention.index_topk
                                     else "") for g in self.layer_groups if g.attention.kind != "none"}
        kinds |= {g.mixer.kind for g in self.layer_groups if g.mixer}
        return "/".join(sorted(kinds))

    def context_breakpoints(self) -> list[int]:
        """Context lengths where an op's cost stops growing linearly: sliding windows and top-k keys (decode sums are
        exact between them)."""
        return sorted({w for g in self.layer_groups for w in (g.attention.sliding_window, g.attention.index_keys,
                                                              _compressed_topk_tokens(g.attention)) if w})

    def norm_params(self) -> int:
        return self.d_model * (2 if self.norm == "layernorm" else 1)

    def embedding_matrices(self) -> list[Matrix]:
        """Token embedding (a gather table) and the LM head (a GEMM); one shared table when tied. With per-layer
        embeddings also their table and the model projection to them, with AltUp its projections into and out of the
        streams (kept in the checkpoint dtype, as the tables)."""
        mats = [Matrix("embed", self.vocab_size + self.embed_extra_rows, self.d_model, family="embed")]
        if not self.tie_embeddings:
            mats.append(Matrix("lm_head", self.d_model, self.vocab_size, self.lm_head_bias, family="lm_head"))
        if self.per_layer_input:
            width = self.n_layers * self.per_layer_input
            mats += [Matrix("embed.per_layer", self.per_layer_vocab, width, family="embed"),
                     Matrix("per_layer.model_proj", self.d_model, width, family="embed")]
        if self.altup_streams:
            mats += [Matrix(f"altup.{way}", self.d_model, self.d_model, family="embed", count=self.altup_streams - 1)
                     for way in ("projections", "unembed_projections")]
        return mats

    def layer_params(self, group: LayerGroup, active: bool = False) -> int:
        ffn_mats = group.ffn.active_matrices(self.d_model) if active else group.ffn.weight_matrices(self.d_model)
        mats = group.mixing_matrices(self.d_model) + ffn_mats
        return (sum(m.params for m in mats) + group.mixing_extra_params()
                + group.block_vector_params(self.norm_params(), self.d_model)
                + group.out_conv_params(self.d_model) + group.ffn.extra_params())

    def _params(self, active: bool) -> int:
        body = sum(g.copies * self.layer_params(g, active) + g.count * g.per_layer_params() for g in self.layer_groups)
        emb = sum(m.params for m in self.embedding_matrices())
        ple_norm = self.per_layer_input  # per_layer_projection_norm
        norms = self.norm_params() * (2 if self.embed_norm else 1)  # the final norm (and the embedding's)
        return body + emb + norms + self.learned_positions * self.d_model + self.head_params + ple_norm

    @property
    def params_total(self) -> int:
        """Every parameter of the checkpoint (all experts), embeddings included."""
        return self._params(active=False)

    @property
    def params_active(self) -> int:
        """Parameters one token touches: top-k routed experts instead of all; = params_total when dense."""
        return self._params(active=True)

    def weight_format_for(self, family: str, override: str | None = None) -> WeightFormat:
        """Storage format of one family of matrices.

        An override (the user's --weight-dtype) applies to the transformer blocks' matrices; embeddings,
        LM head and router stay in the checkpoint's native dtype, as quantization toolkits leave them.
        """
        if family in ("embed", "lm_head", "router", "hc"):
            return weight_format(self.weight_dtype)
        if override is not None:
            return weight_format(canonical_dtype(override))
        own = dict(self.family_formats).get(family)
        if own is not None:
            return own
        if self.quantization is not None and family in self.quantized_families:
            return self.quantization
        return weight_format(self.weight_dtype)

    def compute_dtype_for(self, family: str, dt: Any) -> str:
        """The dtype a GEMM of matrix `family` computes in, under dt (graph.Dtypes: weight override, compute dtype,
        the chip's 8- and 4-bit matrix dtypes quant_compute): the checkpoint's activation quantization (W8A8: fp8 /
        int8; W4A4: fp4) for the matrices its quantization_config quantizes, when the weights are the checkpoint's own
        and the chip has that dtype; else dt.compute (quantized weights then dequantize into it). LM head, router,
        embeddings, modules_to_not_convert and families with a format of their own (expert_dtype) keep dt.compute."""
        act = self.activation_quant
        if (act is None or dt.weight is not None or act not in dt.quant_compute
                or family not in self.quantized_families or family in dict(self.family_formats)):
            return dt.compute
        return act

    def gemm_compute_dtype(self, dt: Any) -> str:
        """The dtype the quantized matrices' GEMMs compute in (the checkpoint's W8A8 dtype where it runs), else
        dt.compute: what a scenario reports beside its compute dtype."""
        return self.compute_dtype_for(self.quantized_families[0], dt) if self.quantized_families else dt.compute

    def weight_label(self, dt: Any) -> str:
        """weight_storage_label, with ', W8A8: fp8 GEMMs' where the quantized matrices compute in the checkpoint's
        activation dtype."""
        act = self.gemm_compute_dtype(dt)
        quantized = f", {quant_gemm_label(act)}: {act} GEMMs" if act != dt.compute else ""
        return self.weight_storage_label(dt) + quantized

    def weight_storage_label(self, dt: Any) -> str:
        """How the weights are stored: 'bf16', 'int4 (g128, 16-bit scales, 4-bit zeros)', 'bf16; experts fp4 (g32,
        8-bit scales)' for partial quantization."""
        if dt.weight or self.quantization is None or {"attn", "ffn"} <= set(self.quantized_families):
            return self.weight_format_for("ffn", dt.weight).label
        return f"{self.weight_dtype}; {', '.join(self.quantized_families)} {self.quantization.label}"

    def w8a8_fallback_note(self, dt: Any, chip_name: str) -> str | None:
        """The assumption line of a W8A8 checkpoint on a chip without its activation dtype's matrix units."""
        act = self.activation_quant
        if act is None or dt.weight is not None or act in dt.quant_compute:
            return None
        return (f"{chip_name} has no {act} matrix units: the checkpoint's {quant_gemm_label(act)} GEMMs run "
                f"weight-only ({act} weights dequantized to {dt.compute}, as vLLM's Marlin fallback), priced as "
                "dequantizing GEMMs.")


def quant_gemm_label(act: str) -> str:
    """'W8A8' / 'W4A4': the quantized GEMMs' weight and activation bits."""
    return f"W{DTYPE_BITS[act]}A{DTYPE_BITS[act]}"


def _compressed_topk_tokens(a: AttentionSpec) -> int | None:
    """Context where a CSA query's top-k stops growing: index_topk entries x rate tokens each."""
    return a.compressor.index_topk * a.compressor.rate if a.compressor and a.compressor.index_topk else None
