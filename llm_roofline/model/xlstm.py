"""Reader of xLSTM-7B (model_type xlstm: transformers' configuration_xlstm.py and modeling_xlstm.py, NX-AI's
xLSTM-Large; the hub checkpoint NX-AI/xLSTM-7b).

Every block: RMSNorm -> mLSTM layer -> residual -> RMSNorm -> gated SiLU MLP -> residual; after the blocks an RMSNorm
(out_norm, built and applied whatever add_out_norm says) and an LM head whose logits are soft-capped
(output_logit_soft_cap x tanh(logits / cap)). No attention, no positions, no KV cache.

The mLSTM layer (xLSTMLayer), all from the normed x: q and k (d -> int(d x qk_dim_factor)), v and the output gate o
(d -> int(d x v_dim_factor)), an input and a forget gate per head (d -> num_heads each, always with a bias, soft-capped
at gate_soft_cap); each head keeps a matrix memory C (qk_head_dim x v_head_dim), a normalizer n (qk_head_dim) and the
running max m (1) of its exponential gating; the cell's output is normed by a LayerNorm per head (a weight over v_dim),
times sigmoid(o), then out_proj (v_dim -> d). weight_mode 'fused' packs the same matrices into qkv_opreact and
ifgate_preact. It is the lightning-attention shape (q, k, v and an output gate from x, no conv, a norm over the
heads' output, a matrix state per head) with keys narrower than values, two gates per head and two more state
vectors: MixerSpec kind mlstm. Prefill runs the chunkwise form (chunk_size tokens), decode one recurrent step.

The MLP (xLSTMFeedForward): proj_up_gate and proj_up (d -> round_up(d x ffn_proj_factor, ffn_round_up_to_multiple_of)),
proj_down.

NX-AI's config names the width embedding_dim and the depth num_blocks, transformers' hidden_size and
num_hidden_layers: either is read (both stated must agree). The checkpoint's config also keeps keys of NX-AI's training
code that transformers ignores (add_post_blocks_norm, mlstm_round_up_to_multiple_of, cell_norm_eps, ...); those that
would add weights transformers does not build (add_qk_norm, add_post_norm) are refused when set, as is use_bias (a bias
on the block norms but not on out_norm, which the spec cannot hold). The xlstm package's own block stacks (sLSTM
blocks, the first xLSTM's mLSTM blocks: slstm_at, mlstm_block, ...) are refused by refusals.py.
"""

from __future__ import annotations

from ..errors import ModelConfigError, shown
from .reader import ConfigReader, as_int, bound_of, require_divides
from .mixer import STATE_DTYPES
from .spec import AttentionSpec, FfnSpec, MixerSpec

# inference_state_dtype -> the state's dtype
# NX-AI's training options that would add weights transformers' xLSTM does not build, and use_bias, which it builds
# but the spec cannot hold (biased block norms beside an unbiased out_norm: every norm of a ModelSpec is counted alike)
_UNBUILT = {"add_qk_norm": "norms on q and k inside the mLSTM cell, which transformers' xLSTM does not build",
            "add_post_norm": "a norm after each block, which transformers' xLSTM does not build",
            "use_bias": "a bias on every projection and on the two block norms but none on out_norm (transformers "
                        "builds it; the spec counts every norm alike)"}
# read, or shaping nothing the graph prices: kernels, modes, epsilons, caps, training-only switches
_NEUTRAL = ("chunkwise_kernel", "sequence_kernel", "step_kernel", "mode", "return_last_states", "autocast_kernel_dtype",
            "max_inference_chunksize", "norm_reduction_force_float32", "gate_soft_cap", "output_logit_soft_cap", "eps",
            "norm_eps", "cell_norm_eps", "add_embedding_dropout", "add_forward_backend_padding",
            "igate_bias_init_range", "force_bos_token_insert", "mlstm_round_up_to_multiple_of", "add_post_blocks_norm",
            "embedding_dim", "num_blocks")


def xlstm_raw(raw: dict) -> dict:
    """The config with hidden_size and num_hidden_layers filled from NX-AI's embedding_dim and num_blocks (xLSTMModel
    embeds to embedding_dim and builds num_blocks blocks of hidden_size: where both names are stated they must
    agree)."""
    out = dict(raw)
    for ours, theirs in (("hidden_size", "embedding_dim"), ("num_hidden_layers", "num_blocks")):
        if raw.get(theirs) is None:
            continue
        value = as_int(raw[theirs], theirs, bound=bound_of(ours))
        if raw.get(ours) is None:
            out[ours] = value
        elif raw[ours] != value:
            raise ModelConfigError(f"{theirs} ({value}) differs from {ours} ({shown(raw[ours])}): xLSTM's "
                                   "embedding and its blocks would not fit together")
    return out


def xlstm_layers(r: ConfigReader, d_model: int, n_layers: int) -> list[tuple[AttentionSpec, MixerSpec, FfnSpec]]:
    """(no attention, the mLSTM mixer, the gated MLP) for each of the n_layers blocks."""
    for key, what in _UNBUILT.items():
        r.switch(key, False, f"{what}: cannot be represented yet")
    heads = r.dim("num_heads")
    qk, v = (_mlstm_width(r, d_model, key, heads) for key in ("qk_dim_factor", "v_dim_factor"))
    stated = r.get("head_dim")  # NX-AI's config: the value head width
    if stated is not None and stated != v // heads:
        raise ModelConfigError(f"head_dim ({shown(stated)}) must be the value head width v_dim / num_heads "
                               f"({v // heads})")
    mode = r.typed("weight_mode", (str,), "'single' or 'fused'", "single")
    if mode not in ("single", "fused"):
        raise ModelConfigError(f"weight_mode must be 'single' or 'fused', got {shown(mode)}")
    dtype = r.typed("inference_state_dtype", (str,), f"one of {', '.join(STATE_DTYPES)}", "float32")
    if dtype not in STATE_DTYPES:
        raise ModelConfigError(f"inference_state_dtype must be one of {', '.join(STATE_DTYPES)}, "
                               f"got {shown(dtype)}")
    mixer = MixerSpec("mlstm", heads, v // heads, qk // heads, heads, 0, chunk_size=r.dim("chunk_size"),
                      state_dtype=STATE_DTYPES[dtype])
    mlp = FfnSpec("dense", _d_ff(r, d_model), True, "silu", False)
    _note(r, mixer, dtype)
    return [(AttentionSpec.none(), mixer, mlp)] * n_layers


def _factor(r: ConfigReader, key: str) -> float:
    value = r.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 64:  # NaN fails it too
        raise ModelConfigError(f"{key} must be a number in (0, 64], got {shown(value)}")
    return value


def _round_up(x: float, multiple: int) -> int:
    """configuration_xlstm.round_up_to_next_multiple_of, as written there."""
    return int(((x + multiple - 1) // multiple) * multiple)


def _mlstm_width(r: ConfigReader, d_model: int, key: str, heads: int) -> int:
    """q / k (qk_dim_factor) or v / output-gate (v_dim_factor) channels: xLSTMLayer's int(hidden x factor), split
    into num_heads heads. xLSTMConfig's qk_dim / v_dim (its cache's) round the same up to 64: where they differ, the
    layer's (the checkpoint's tensors) are read, and the mismatch noted."""
    x = d_model * _factor(r, key)
    name = f"hidden_size x {key}"
    width = as_int(int(x), name)
    require_divides(width, name, heads, "num_heads")
    if width != _round_up(x, 64):
        r.assume(f"{name} ({x:g}) is not a multiple of 64: xLSTMLayer builds {width} channels (read), xLSTMConfig's "
                 f"cache {_round_up(x, 64)}, so transformers' cached generation fails on this config.")
    return width


def _d_ff(r: ConfigReader, d_model: int) -> int:
    """xLSTMFeedForward's up_proj_dim: hidden x ffn_proj_factor rounded up to ffn_round_up_to_multiple_of."""
    multiple = r.count("ffn_round_up_to_multiple_of", allow_zero=False)
    return as_int(_round_up(d_model * _factor(r, "ffn_proj_factor"), multiple),
                  "the MLP width (hidden_size x ffn_proj_factor, rounded up)")


def _note(r: ConfigReader, m: MixerSpec, dtype: str) -> None:
    r.used.update(_NEUTRAL)
    per_layer = m.n_heads * m.state_per_head
    r.assume(f"xLSTM: each sequence keeps, in every layer, each head's matrix memory C ({m.state_dim} x {m.head_dim}), "
             f"normalizer n ({m.state_dim}) and max m (1): {per_layer:,} elements in {dtype} (inference_state_dtype, "
             "the dtype the mLSTM kernels keep it in; an out-of-tree vLLM plugin for xLSTM keeps it in float32 "
             "too); no KV cache, no conv window; it does not grow with the context.")
    r.assume(f"xLSTM prefill FLOPs: the chunkwise mLSTM (chunks of {m.chunk_size} tokens): per token and head a state "
             "update and read-out plus causal attention-like work inside its chunk; decode is one recurrent step per "
             "token. The gates' soft caps and exponential gating, the per-head LayerNorm and the logits' soft cap are "
             "elementwise, not priced; the scan is priced with the attention fit under a borrowed family's band (no "
             "mLSTM kernel was timed).")
    if r.boolean("tie_word_embeddings"):
        r.assume("tie_word_embeddings true: counted as one matrix, as the checkpoint stores it (transformers 5.24's "
                 "xLSTMForCausalLM declares no tied weights and builds a separate lm_head).")
    if r.get("add_out_norm") is False:
        r.assume("add_out_norm false: transformers' xLSTMModel builds and applies out_norm whatever it says; counted.")
    r.used.add("add_out_norm")
