"""Operators: the Op record and ONE pure formula per op family.

Conventions: FLOP = 2 x multiply-add, so an (m x k) @ (k x n) product is 2*m*k*n FLOPs (stated here,
once). Every count is a float64 array broadcast over the scenario grid. Bytes are HBM traffic of one
chip for one instance of the op (one layer): weights read, activations read + written, KV cache read
+ written. An op's `count` is how many instances one forward pass runs (layers in its group).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import itemgetter
from typing import Callable

import numpy as np

from .units import f64, short_number

ZERO = np.float64(0.0)


@dataclass(frozen=True, init=False)
class Op:
    name: str  # stable dotted name: 'attn.qkv_proj', 'ffn.down', 'comm.all_reduce.attn', ...
    group: str  # layer group ('dense', 'moe', 'sliding', ...) or 'model' for embed / lm_head
    kind: str  # gemm | attention | elementwise | norm | embedding | collective
    count: float  # instances per forward pass
    flops: np.ndarray
    weight_bytes: np.ndarray = ZERO
    act_bytes: np.ndarray = ZERO
    kv_bytes: np.ndarray = ZERO
    comm_bytes: np.ndarray = ZERO  # collectives: the logical buffer of one chip (V in the book's formulas)
    collective: str = ""  # all_reduce | all_gather | reduce_scatter | all_to_all | p2p
    group_chips: int = 1  # chips taking part in the collective
    tokens: np.ndarray = ZERO  # rows the op processes (GEMM M): efficiency models key off it
    style: str = "replicated"  # shard style (sharding.SHARD_STYLES): how the tp chips split this op
    shards: float = 1  # chips that split this op's work (sharding.shard_count of the style)
    stored_bytes: float = 0.0  # weight bytes this op keeps resident on one chip (all experts), for memory
    compute_dtype: str = "bf16"  # 'vector' for work outside the matrix units
    # kernel shape features the calibrated efficiency model keys off (efficiency.py); 0 = unknown
    gemm_n: float = 0.0  # GEMM: output columns of one kernel (n per chip): tile padding in N, tiles per wave
    gemm_k: float = 0.0  # GEMM: inner dimension of one kernel (k per chip)
    walked_rows: float | np.ndarray = 0.0  # expert GEMM: routed rows its fused block passes over outside the GEMMs
    token_elems: float | np.ndarray = 0.0  # expert GEMM: hidden-vector elements its fused block passes once per token,
    #   whatever the top-k (tokens x d_model: the up GEMM's input gathered and quantized, the down's outputs combined)
    weight_bits: float = 0.0  # GEMM: bits per stored weight element (weight-only quantization)
    head_dim: float = 0.0  # attention: (dqk + dv) / 2
    kv_bits: float = 0.0  # attention: bits per cached K/V element (8: an fp8 / int8 KV cache)
    q_per_kv: float = 0.0  # attention: query heads per K/V head (the GQA group; 1 for MHA)
    weight_block: float = 0.0  # GEMM: weight elements sharing one scale in a block-scaled 8-bit format (DeepSeek
    #   128x128 fp8: 16384), 0 = per-tensor / per-channel scales (efficiency.block_scaled: the gemm_fp8_block fit)
    window: float = 0.0  # attention: sliding-window length in tokens (0: full attention; DSA's top-k is not one)
    seqs: float | np.ndarray = 0.0  # attention: sequences B of the batch (tokens = B * q); 0: unknown
    kv_len: float | np.ndarray = 0.0  # attention: context length of each sequence (cached + new tokens); 0: unknown
    weight_dtype: str = ""  # GEMM: element dtype of the stored weights ('int4', 'fp4', ...; '': unknown): int4 experts
    #   run vLLM's Marlin MoE kernel, fp4 ones other kernels (efficiency.family_of: moe_int4 | moe_quant | moe_fp4)
    expert_width: float = 0.0  # expert GEMM: the expert's intermediate size per chip (i / tp: the up projection's
    #   N per matrix of a gated pair, the down projection's K); 0: not an expert GEMM
    local_experts: float = 0.0  # expert GEMM: experts resident on the chip (the fused block sorts its routed rows
    #   into blocks per local expert); 0: not an expert GEMM
    expert_chips: float = 0.0  # expert GEMM: chips the routed experts are split over (moe_ep; > 1: the fused block
    #   runs the expert-parallel path); 0: not an expert GEMM
    expert_block_bytes: float = 0.0  # expert GEMM: one expert's weight bytes in its whole fused block (gate, up,
    #   down: what a kernel walking its rows in token tiles streams per tile, expert_kernels); 0: not an expert GEMM
    # the arithmetic with its numbers (--explain), or a function that writes it: formatted when read (op.formula)
    text: "str | Callable[[], str]" = field(default="", repr=False, compare=False)

    def __init__(self, name, group, kind, count, flops, weight_bytes=ZERO, act_bytes=ZERO, kv_bytes=ZERO,
                 comm_bytes=ZERO, collective="", group_chips=1, tokens=ZERO, style="replicated", shards=1,
                 stored_bytes=0.0, compute_dtype="bf16", gemm_n=0.0, gemm_k=0.0, walked_rows=0.0, token_elems=0.0,
                 weight_bits=0.0, head_dim=0.0, kv_bits=0.0, q_per_kv=0.0, weight_block=0.0, window=0.0, seqs=0.0,
                 kv_len=0.0, weight_dtype="", expert_width=0.0, local_experts=0.0, expert_chips=0.0,
                 expert_block_bytes=0.0, text=""):
        """The fields in their order, with their defaults (tests/test_graph.py checks both against the dataclass's),
        set at once: the generated __init__ of a frozen dataclass sets them one by one (graphs build many ops)."""
        self.__dict__.update(
            name=name, group=group, kind=kind, count=count, flops=flops, weight_bytes=weight_bytes,
            act_bytes=act_bytes, kv_bytes=kv_bytes, comm_bytes=comm_bytes, collective=collective,
            group_chips=group_chips, tokens=tokens, style=style, shards=shards, stored_bytes=stored_bytes,
            compute_dtype=compute_dtype, gemm_n=gemm_n, gemm_k=gemm_k, walked_rows=walked_rows, token_elems=token_elems,
            weight_bits=weight_bits, head_dim=head_dim, kv_bits=kv_bits, q_per_kv=q_per_kv, weight_block=weight_block,
            window=window, seqs=seqs, kv_len=kv_len, weight_dtype=weight_dtype, expert_width=expert_width,
            local_experts=local_experts, expert_chips=expert_chips, expert_block_bytes=expert_block_bytes, text=text)

    @property
    def formula(self) -> str:
        return self.text if isinstance(self.text, str) else self.text()

    def __getstate__(self):  # pickled and copied with its formula written out (a function may not pickle), its fields
        return {**{k: v for k, v in self.__dict__.items() if k != "_value_key"}, "text": self.formula}  # alone

    def value_key(self) -> tuple:
        """Every field a score reads (all but count, text and group: the layer group only places the op) as a dict
        key, arrays by shape and bytes: two ops of the same key score the same on any chip (phases.phase_t_s_chips
        reuses one's times for the other: a dense layer's attention and a MoE layer's are one). Kept on the op once
        made (an op is not changed once built)."""
        key = self.__dict__.get("_value_key")
        if key is None:
            key = self.__dict__["_value_key"] = tuple((v.shape, v.tobytes()) if type(v) is np.ndarray else v
                                                      for v in _scored_fields(self.__dict__))
        return key

    @property
    def hbm_bytes(self) -> np.ndarray:
        """Weights + activations + KV cache (scalar zeros skipped: one pass fewer over the grid)."""
        total = self.act_bytes
        for part in (self.weight_bytes, self.kv_bytes):
            if getattr(part, "ndim", 0) or part:
                total = total + part
        return total


_scored_fields = itemgetter(*(f.name for f in fields(Op) if f.name not in ("count", "text", "group")))  # value_key's


def gemm(name, group, count, *, tokens, k, n, bits_per_weight, act_bytes_per_elem, n_matrices=1.0,
         bias=False, matrices_read=None, n_stored=1.0, rows_per_matrix=None, compute_dtype="bf16", formula_note="",
         style="replicated", shards=1, walked_rows=0.0, token_elems=0.0, weight_block=0.0, weight_dtype="",
         expert_width=0.0, expert_chips=1.0, expert_block_elems=0.0, bias_cols=None) -> Op:
    """y[T, n] = x[T, k] @ W[k, n] (+ b), for n_matrices weight matrices (MoE: top-k experts' work).

    FLOPs = 2*T*k*n per matrix. Weights read: matrices_read (default n_matrices) * k*n*bits/8, + bias.
    Activations: x read once per matrix group, y written: (T*k + T*n) * act bytes per matrix.
    n_stored: matrices resident on the chip (MoE: its experts; tied LM head: 0, the embedding holds it).
    rows_per_matrix: the GEMM M one kernel sees (MoE: tokens per touched expert; default T).
    walked_rows: routed rows a fused expert block passes over outside its grouped GEMMs (sort, activation, top-k
    sum; with expert parallelism over tokens not dispatched also the rows of experts held on other chips, zero-
    filled: sharding.walked_rows): efficiency.py prices them in calibrated mode; no FLOPs, no bytes counted here.
    token_elems: the hidden-vector elements that block passes once per token (Op.token_elems), priced the same way.
    weight_block: weights per scale of a block-scaled 8-bit format (Op.weight_block; 0: none).
    weight_dtype: element dtype of the stored weights (Op.weight_dtype; '': unknown).
    expert_width: an expert GEMM's intermediate size per chip (Op.expert_width; 0: not an expert GEMM, then
    Op.local_experts and Op.expert_chips are 0 too, else n_stored and expert_chips, the moe_ep).
    expert_block_elems: weight elements of one expert's whole fused block (gate, up, down), stored at
    bits_per_weight: Op.expert_block_bytes. bias_cols: the output columns the bias covers (default all n).
    """
    t = f64(tokens)
    m_read = n_matrices if matrices_read is None else matrices_read
    flops = t * (2.0 * k * n * n_matrices)  # scalars first: one pass over the grid
    bias_bytes = (n if bias_cols is None else bias_cols) * act_bytes_per_elem if bias else 0.0
    weight_bytes = m_read * (k * n * bits_per_weight / 8 + bias_bytes)
    act = t * ((k + n) * act_bytes_per_elem * n_matrices)
    formula = lambda: f"2*T*k*n*{n_matrices:g} with T={short_number(t)}, k={k:g}, n={n:g}{formula_note}"  # noqa: E731
    stored = n_stored * (k * n * bits_per_weight / 8 + bias_bytes)
    rows = t if rows_per_matrix is None else f64(rows_per_matrix)
    return Op(name, group, "gemm", count, flops, f64(weight_bytes), act,
              tokens=rows, compute_dtype=compute_dtype, text=formula, stored_bytes=float(stored), style=style,
              shards=shards, gemm_n=float(n), gemm_k=float(k), weight_bits=float(bits_per_weight),
              walked_rows=walked_rows, token_elems=token_elems, weight_block=float(weight_block),
              weight_dtype=weight_dtype, expert_width=float(expert_width),
              local_experts=float(n_stored) if expert_width else 0.0,
              expert_chips=float(expert_chips) if expert_width else 0.0,
              expert_block_bytes=float(expert_block_elems) * bits_per_weight / 8 if expert_width else 0.0)


def causal_keys_per_query(q_len, kv_len):
    """Keys a causal query sees on average when q_len new tokens end a kv_len context: causal_pairs / q_len in closed
    form, kv - (q - 1) / 2, finite where a step holds no new token (q 0: an empty prompt chunk, no rows to score)."""
    return f64(kv_len) - (f64(q_len) - 1) / 2


def causal_pairs(q_len, kv_len, window=None):
    """Query-key pairs a causal (optionally sliding-window) attention computes per head per sequence.

    The q_len new tokens sit at the end of a kv_len context (kv_len - q_len cached tokens before them):
    query i (0-based) sees min(kv_len - q_len + i + 1, window) keys. Summed in closed form.
    Without a window: q*(kv - q) + q*(q + 1)/2. Decode (q = 1): min(kv, window).
    """
    q = f64(q_len)
    kv = f64(kv_len)
    prefix = kv - q
    full = q * prefix + q * (q + 1) / 2
    if window is None:
        return full
    w = float(window)
    # positions p = prefix+1 .. prefix+q see min(p, w) keys: sum over p of min(p, w)
    def s_min(p):  # sum_{x=1..p} min(x, w)
        below = np.minimum(p, w)
        return below * (below + 1) / 2 + np.maximum(p - w, 0) * w
    return s_min(prefix + q) - s_min(prefix)


def attention(name, group, count, *, batch, q_len, kv_len, n_heads, n_kv_heads, qk_dim, v_dim,
              kv_elems_per_token, kv_bytes_per_elem, act_bytes_per_elem, causal=True, window=None,
              fused=True, score_bytes_per_elem=2.0, compute_dtype="bf16", style="column", shards=1,
              window_label="window", compress_rate=1, sink_bytes=0.0) -> Op:
    """Attention core (scores, softmax, AV) of one layer, per chip.

    FLOPs = 2*B*H*pairs*(qk_dim + v_dim), pairs = query-key pairs actually computed (causal: the
    unmasked part; sliding window: at most `window` keys per query). The KV cache is read once:
    B * min(kv_len, window) tokens * kv_elems_per_token, and the q_len new tokens are written.
    Fused (FlashAttention): Q read and O written once, scores never reach HBM. Unfused: the full
    B*H*q*kv_eff score matrix is materialized and all of it computed: written by QK^T, read by the
    softmax, written back, read by AV (4 round trips). DSA passes its index_topk as the window (each query
    attends to that many selected keys) and window_label "top-k" to name it in the formula. compress_rate
    (DeepSeek-V4's compressed branch): each cached entry pools that many tokens, so a query meets pairs / rate entries
    and reads kv_eff / rate of them (window and kv_len stay in tokens). sink_bytes: the heads' attention sinks, read
    and held (gpt-oss, MiMo-V2: one per head).
    """
    b = f64(batch)
    q = f64(q_len)
    kv = f64(kv_len)
    kv_eff = (kv if window is None else np.minimum(kv, float(window))) / compress_rate
    if fused:
        pairs = (causal_pairs(q, kv, window) / compress_rate) if causal else q * kv_eff
    else:
        pairs = q * kv_eff
    flops = b * pairs * (2.0 * n_heads * (qk_dim + v_dim))
    kv_bytes = b * kv_eff * kv_elems_per_token * kv_bytes_per_elem  # (B, kv_eff, KV, hd+vd): read once
    act = b * q * n_heads * (qk_dim + v_dim) * act_bytes_per_elem  # Q in, O out
    if not fused:
        act = act + 4.0 * b * n_heads * q * kv_eff * score_bytes_per_elem
    mode = "causal" if causal else "full"
    formula = lambda: (  # noqa: E731 (written when read)
        f"2*B*H*pairs*(dqk+dv) with B={short_number(b)}, H={n_heads:g}, pairs={short_number(pairs)} ({mode}"
        f"{', ' + window_label + ' ' + str(window) if window else ''}"
        f"{', 1 entry per ' + str(compress_rate) + ' tokens' if compress_rate != 1 else ''}), dqk={qk_dim:g}, "
        f"dv={v_dim:g}; KV read {short_number(kv_eff)} {'entries' if compress_rate != 1 else 'tokens'} x "
        f"{kv_elems_per_token:g} elems")
    return Op(name, group, "attention", count, flops, f64(sink_bytes), act, kv_bytes, tokens=b * q,
              compute_dtype=compute_dtype, text=formula, style=style, shards=shards, stored_bytes=sink_bytes,
              head_dim=(qk_dim + v_dim) / 2.0, kv_bits=8.0 * kv_bytes_per_elem,
              q_per_kv=n_heads / n_kv_heads if n_kv_heads > 0 else 0.0,
              window=float(window) if window and window_label == "window" else 0.0, seqs=b, kv_len=kv)


def recurrent_scan(name, group, count, *, batch, q_len, n_heads, head_dim, state_dim, flops_per_state_elem,
                   chunk_tokens, state_bytes_per_elem, act_in_elems_per_token, act_out_elems_per_token,
                   act_bytes_per_elem, compute_dtype="bf16", style="column", shards=1, extra_state_per_head=0) -> Op:
    """A linear-attention / SSM core (Mamba-2 SSD, Gated DeltaNet) of one layer, per chip.

    Each of the n_heads heads keeps a (head_dim x state_dim) state S per sequence. Recurrent term, every token:
    flops_per_state_elem FLOPs per state element (decay, rank-1 update, read-out). Prefill (q_len > 1) runs the
    chunked algorithm: within chunks of L = chunk_tokens tokens, each query also meets the earlier tokens of its
    chunk like causal attention, 2*(head_dim + state_dim) FLOPs per pair, pairs = q*(Lq + 1)/2 with Lq = min(q, L)
    (L = 0: Mamba-1's parallel scan, no such term).
    FLOPs = B*H*(q*c*hd*ds + [q > 1]*q*(Lq + 1)/2 * 2*(hd + ds)). The state is read and written once per step
    (B*H*hd*ds elements each way): decode is memory-bound on it; it does not depend on the context length.
    extra_state_per_head: state elements beside the matrix (mLSTM's normalizer and max), updated and read alike.
    """
    b = f64(batch)
    q = f64(q_len)
    state_elems = n_heads * (head_dim * state_dim + extra_state_per_head)
    lq = np.minimum(q, float(chunk_tokens))
    intra_pairs = np.where(q > 1, q * (lq + 1) / 2, 0.0) if chunk_tokens else 0.0  # 0: a parallel scan, no chunks
    flops = b * (q * (flops_per_state_elem * state_elems) + intra_pairs * (2.0 * n_heads * (head_dim + state_dim)))
    state_bytes = b * (2.0 * state_elems * state_bytes_per_elem)  # (B, H, hd, ds): read + written
    act = b * q * (act_in_elems_per_token + act_out_elems_per_token) * act_bytes_per_elem
    formula = lambda: (  # noqa: E731 (written when read)
        f"B*H*(q*{flops_per_state_elem:g}*hd*ds + [q>1]*q*(min(q,L)+1)/2*2*(hd+ds)) with B={short_number(b)}, "
        f"q={short_number(q)}, H={n_heads:g}, hd={head_dim:g}, ds={state_dim:g}, L={chunk_tokens:g}; state "
        f"{state_elems:g} elems/seq read + written")
    return Op(name, group, "attention", count, flops, ZERO, act, state_bytes, tokens=b * q,
              compute_dtype=compute_dtype, text=formula, style=style, shards=shards)


def causal_conv1d(name, group, count, *, batch, q_len, channels, kernel, act_bytes_per_elem, state_bytes_per_elem,
                  weight_bytes, style="column", shards=1) -> Op:
    """Depthwise causal conv1d of `kernel` taps over (B*q, channels), + SiLU: 2*kernel + 1 FLOP per element.

    Reads x and writes y; the rolling window of the last kernel - 1 inputs per channel (the conv state) is read and
    written once per step: B*(kernel - 1)*channels elements each way."""
    b = f64(batch)
    t = b * f64(q_len)
    elems = t * channels
    state_bytes = b * (2.0 * (kernel - 1) * channels * state_bytes_per_elem)
    return Op(name, group, "elementwise", count, elems * (2.0 * kernel + 1), f64(weight_bytes),
              elems * (2 * act_bytes_per_elem), state_bytes, tokens=t, compute_dtype="vector", style=style,
              shards=shards, stored_bytes=float(weight_bytes),
              text=lambda: (f"(2*K+1) FLOP/elem over T={short_number(t)} x {channels:g} channels, K={kernel:g}; "
                            f"conv state {(kernel - 1) * channels:g} elems/seq read + written"))


def kv_write(name, group, count, *, tokens, kv_elems_per_token, act_bytes_per_elem, kv_bytes_per_elem,
             style="column", shards=1) -> Op:
    """Append the new tokens' K and V to the cache: read (T, KV*(hd+vd)) activations, write the cache."""
    t = f64(tokens)
    elems = t * kv_elems_per_token
    return Op(name, group, "elementwise", count, elems * 0.0, ZERO, elems * act_bytes_per_elem,
              elems * kv_bytes_per_elem, tokens=t, compute_dtype="vector", style=style, shards=shards,
              text=lambda: f"copy T={short_number(t)} x {kv_elems_per_token:g} elems into the KV cache")


def elementwise(name, group, count, *, tokens, elems, flops_per_elem, reads, writes, act_bytes_per_elem,
                weight_bytes=0.0, stored_bytes=0.0, kind="elementwise", style="replicated", shards=1) -> Op:
    """A pointwise op over `elems` elements: `reads` input and `writes` output tensors of that size.

    Norms read x and write y (plus the d-element weight); SwiGLU reads up and gate, writes one;
    residual add reads two, writes one. Always far below any chip's critical intensity.
    """
    e = f64(elems)
    flops = flops_per_elem * e
    act = e * ((reads + writes) * act_bytes_per_elem)
    formula = lambda: (  # noqa: E731 (written when read)
        f"{flops_per_elem:g} FLOP/elem over {short_number(e)} elems, {reads:g} reads + {writes:g} writes")
    return Op(name, group, kind, count, flops, f64(weight_bytes), act,
              tokens=f64(tokens), compute_dtype="vector", text=formula,
              stored_bytes=stored_bytes, style=style, shards=shards)


def mla_glue(name, group, count, *, tokens, heads, width, act_bytes_per_elem, style="column", shards=1,
             norm_bytes=0.0) -> Op:
    """The small kernels of an MLA attention module outside its GEMMs, rope and attention kernel (vLLM: the q_a /
    kv_a latent norms, splitting kv_a's output into the latent and k_pe, concatenating each head's query (absorbed:
    latent query and q_pe, `width` = kv_lora_rank + rope; materialized: q_nope and q_pe, `width` = head_dim), the
    cache write's reshape, the split-KV combine). Its bytes: one read and one write of that query over
    tokens x heads query-head rows (its `tokens`) and the latent norms' weights (norm_bytes, held on every chip);
    efficiency.py's mla_glue family adds a floor per layer and per query-head row."""
    rows = f64(tokens) * heads
    return elementwise(name, group, count, tokens=rows, elems=rows * width, flops_per_elem=0, reads=1, writes=1,
                       act_bytes_per_elem=act_bytes_per_elem, style=style, shards=shards, weight_bytes=norm_bytes,
                       stored_bytes=norm_bytes)


def embedding(name, group, *, tokens, d_model, table_rows, weight_bytes_per_elem, act_bytes_per_elem, lookups=1,
              vocab_split=1, style="vocab_in", shards=1) -> Op:
    """Token embedding lookup: a gather of T rows (`lookups` tables: token, learned position) of a
    (table_rows, d) table (not a GEMM): no FLOPs. Vocab-parallel: each chip holds and reads 1/vocab_split."""
    t = f64(tokens)
    return Op(name, group, "embedding", 1, t * 0.0, t * d_model * weight_bytes_per_elem * lookups / vocab_split,
              t * d_model * act_bytes_per_elem, tokens=t, compute_dtype="vector", style=style, shards=shards,
              stored_bytes=table_rows * d_model * weight_bytes_per_elem / vocab_split,
              text=lambda: f"gather T={short_number(t)} rows of {d_model:g} elems")


def collective(name, group, count, *, kind, buffer_bytes, chips, tokens=ZERO, shards=1) -> Op:
    """A collective over `chips` chips on a buffer of buffer_bytes per chip (its cost: sharding.py), run as `shards`
    parallel instances (one per attention group)."""
    v = f64(buffer_bytes)
    return Op(name, group, "collective", count, v * 0.0, comm_bytes=v, collective=kind, group_chips=chips,
              tokens=f64(tokens), shards=shards, text=lambda: f"{kind} of {short_number(v)} B over {chips} chips")


def expected_distinct_experts(n_experts, top_k, tokens):
    """Experts touched at least once when `tokens` tokens each pick top_k of n_experts uniformly:
    E * (1 - (1 - k/E)^T). One token: k; many tokens: all E."""
    t = f64(tokens)
    return n_experts * (1.0 - (1.0 - top_k / n_experts) ** t)


def rows_per_expert(routed, touched):
    """Rows each touched expert's GEMM sees: routed rows / experts touched; 0 where no token is routed (no expert
    touched: an empty step), not 0/0."""
    r, t = f64(routed), f64(touched)
    return f64(np.where(t > 0, r / np.where(t > 0, t, 1.0), 0.0))
