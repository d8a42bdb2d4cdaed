"""Readers of the recurrent and hybrid models: Mamba / Falcon-Mamba (Mamba-1), Mamba-2, Nemotron-H and Nemotron-3
(Mamba-2, attention, MLP or MoE blocks), Bamba (Mamba-2 or attention, then an MLP), Granite-4.0 hybrid (the same, then
MoE + shared MLP), Jamba (Mamba-1 or attention, then MLP or MoE), Qwen3-Next (Gated DeltaNet + gated attention, MoE),
OLMo Hybrid (Gated DeltaNet + Olmo-3 attention, MLP), Lara-Mini (Gated DeltaNet + windowed / NoPE attention, MoE),
Kimi-Linear (KDA + MLA, MoE), Ling-3.0 (KDA + gated MLA, MoE; read by bailing.py), GLM-5.3-Flash (KDA + NoPE MLA
with a pooled DSA indexer, mHC, MoE; read by glm5_next.py), MiniMax-Text-01 (lightning attention + softmax attention,
MoE), LFM2 and LFM2-MoE (short convolutions + attention, then an MLP or MoE), LFM3 (short convolutions + gated full or
windowed attention, sandwich norms), Falcon-H1 (attention and Mamba-2 in parallel in every block, then an MLP),
xLSTM-7B (mLSTM blocks, then an MLP; read by xlstm.py), RecurrentGemma (the RG-LRU + local MQA, then an MLP; read by
recurrent_gemma.py).

Each layer is an (AttentionSpec, MixerSpec | None, FfnSpec) triple; a block without attention holds
AttentionSpec.none(), one without MLP FfnSpec.none(). Identical triples share one LayerGroup. Key names and their
defaults come from the transformers configuration classes (configuration_<type>.py), copied into ARCHITECTURES.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .traits import Architecture
from .bailing import bailing_hybrid_layers
from .glm5_next import GLM5_NEXT_TYPES, glm5_next_hc, glm5_next_layers
from .layers import attention_spec, ffn_spec, moe_layers
from .reader import ConfigReader, as_int, require_divides
from .recurrent_gemma import recurrent_gemma_layers
from .mixer import STATE_DTYPES
from .spec import AttentionSpec, FfnSpec, LayerGroup, MixerSpec
from .xlstm import xlstm_layers

HYBRID_TYPES = ("mamba", "falcon_mamba", "mamba2", "nemotron_h", "bamba", "jamba", "qwen3_next", "qwen3_5_text",
                "qwen3_5_moe_text", "kimi_linear", "bailing_hybrid", "olmo_hybrid", "lara_mini", "minimax", "lfm2",
                "lfm2_moe", "lfm3", "falcon_h1", "granitemoehybrid", "xlstm", "recurrent_gemma") + GLM5_NEXT_TYPES
# Nemotron-H's block letters (hybrid_override_pattern) and the list names of newer configs (layers_block_type)
_NEMOTRON_LETTERS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
_NEMOTRON_NAMES = {"mamba": "mamba", "linear_attention": "mamba", "attention": "attention",
                   "full_attention": "attention", "mlp": "mlp", "moe": "moe"}
Layer = tuple[AttentionSpec, "MixerSpec | None", FfnSpec]


def hybrid_groups(r: ConfigReader, arch: Architecture, model_type: str, d_model: int,
                  n_layers: int) -> tuple[LayerGroup, ...]:
    """The LayerGroups of a recurrent / hybrid model, in order of first occurrence."""
    readers = {"mamba": _mamba1_layers, "falcon_mamba": _mamba1_layers, "mamba2": _mamba2_layers,
               "nemotron_h": _nemotron_h_layers, "bamba": _bamba_layers, "jamba": _jamba_layers,
               "qwen3_next": _qwen3_next_layers, "qwen3_5_text": _qwen3_next_layers,
               "qwen3_5_moe_text": _qwen3_next_layers, "kimi_linear": _kimi_linear_layers, "minimax": _minimax_layers,
               "olmo_hybrid": _olmo_hybrid_layers, "lara_mini": _lara_mini_layers, "lfm2": _lfm2_layers,
               "lfm2_moe": _lfm2_layers, "lfm3": _lfm3_layers, "falcon_h1": _falcon_h1_layers,
               "granitemoehybrid": _granite_layers,
               # Ling-3.0 (bailing.py): KDA's state in float32 as Kimi's, unless the config states its dtype
               "bailing_hybrid": lambda r, *a: bailing_hybrid_layers(r, *a, _state_dtype(r) or "fp32"),
               "xlstm": lambda r, arch, d, n: xlstm_layers(r, d, n),  # xLSTM-7B's mLSTM blocks (xlstm.py)
               # RecurrentGemma (recurrent_gemma.py): the RG-LRU's state in float32, as the reference keeps it
               "recurrent_gemma": lambda r, *a: recurrent_gemma_layers(r, *a, _state_dtype(r) or "fp32"),
               # GLM-5.3-Flash (glm5_next.py): KDA's state in float32 as Kimi's, unless the config states its dtype
               **dict.fromkeys(GLM5_NEXT_TYPES, lambda r, *a: glm5_next_layers(r, *a, _state_dtype(r) or "fp32"))}
    layers = readers[model_type](r, arch, d_model, n_layers)
    _note_state_dtype(r, [m for _, m, _ in layers if m is not None])
    # LFM3 use_sandwich_norm: post_operator_norm and post_ffn_norm beside operator_norm and ffn_norm
    sandwich = model_type == "lfm3" and r.boolean("use_sandwich_norm")
    groups = _group(layers, 4 if sandwich else arch.norms)
    return glm5_next_hc(r, groups) if model_type in GLM5_NEXT_TYPES else groups  # mHC around every layer


def _group(layers: list[Layer], norms: int) -> tuple[LayerGroup, ...]:
    counts: dict[Layer, int] = {}
    for key in layers:
        counts[key] = counts.get(key, 0) + 1
    groups = []
    for (attn, mixer, ffn), n in counts.items():
        parts = ([mixer.kind] if mixer else []) + (["attention"] if attn.kind != "none" else []) + \
                ([ffn.kind] if ffn.kind != "none" else [])
        name = ".".join(parts)
        taken = sum(1 for g in groups if g.name.split("-")[0] == name)
        groups.append(LayerGroup(name if not taken else f"{name}-{taken + 1}", n, attn, ffn, norms=norms, mixer=mixer))
    return tuple(groups)


def _note_state_dtype(r: ConfigReader, mixers: list[MixerSpec]) -> None:
    if not mixers or mixers[0].kind == "mlstm":  # xlstm.py states xLSTM's own
        return
    stored = mixers[0].state_dtype
    given = _state_dtype(r)
    why = ("the config's mamba_ssm_cache_dtype / mamba_ssm_dtype" if given else "transformers and Google's reference "
           "keep the RG-LRU's state in float32; vLLM does not serve RecurrentGemma" if mixers[0].kind == "rglru" else
           "vLLM keeps KDA's recurrent state in float32 whatever the cache dtype: "
           "MambaStateDtypeCalculator.kda_state_dtype")
    r.assume("Recurrent state per sequence: the SSM / delta-rule state (heads x head_dim x state_dim) in "
             + (f"{stored} ({why})" if stored else "the KV-cache dtype (vLLM's default "
                "'auto'; the config states no state dtype)")
             + ", the conv1d window ((conv_kernel - 1) x conv channels) in the KV-cache dtype; it does not grow with "
               "the context.")
    r.assume("Mixer prefill FLOPs: Mamba-2, Gated DeltaNet, KDA and lightning attention use the chunked algorithm "
             "(SSD / chunked delta rule / lightning blocks): per token and head a state update and read-out plus "
             "causal attention-like work inside chunks of chunk_size tokens; Mamba-1 a parallel scan (the recurrent "
             "term only). Decode is one state update per token. The conv1d, gates and norms are elementwise. The "
             "scan is priced with the attention fit (FlashAttention's kernels; no scan kernel was in the calibration "
             "tables) and carries a borrowed family's band: flash-linear-attention's Gated DeltaNet and KDA kernels "
             "timed on an H100 took 1.7-14x that price per layer.")


def _state_dtype(r: ConfigReader) -> str | None:
    value = r.get("mamba_ssm_cache_dtype", "mamba_ssm_dtype")
    if value is None or value == "auto":
        return None
    if not isinstance(value, str) or value not in STATE_DTYPES:
        raise ModelConfigError(f"mamba_ssm_cache_dtype must be one of {', '.join(STATE_DTYPES)} or auto, got "
                               f"{shown(value)}")
    return STATE_DTYPES[value]


# ---------------------------------------------------------------------------- Mamba-1
def _mamba1_mixer(r: ConfigReader, d_model: int, prefix: str, dt_bc_norms: bool) -> MixerSpec:
    """MambaMixer / JambaMambaMixer: inner = expand * hidden channels, each with a state of state_size; time_step_rank
    'auto' = ceil(hidden / 16). Keys: state_size, conv_kernel, expand, time_step_rank, use_conv_bias, use_bias (Mamba);
    mamba_d_state, mamba_d_conv, mamba_expand, mamba_dt_rank, mamba_conv_bias, mamba_proj_bias (Jamba)."""
    names = (("state_size", "conv_kernel", "expand", "time_step_rank", "use_conv_bias", "use_bias") if not prefix else
             ("mamba_d_state", "mamba_d_conv", "mamba_expand", "mamba_dt_rank", "mamba_conv_bias", "mamba_proj_bias"))
    state, kernel, expand_key, rank_key, conv_bias, proj_bias = names
    inner = r.count(expand_key, default=2, allow_zero=False) * d_model
    stated = r.dim("intermediate_size", required=False) if not prefix else None
    if stated is not None and stated != inner:  # tiiuae/falcon-mamba-7b: expand 16, intermediate_size 8192
        r.assume(f"intermediate_size ({stated}) disagrees with {expand_key} x hidden_size ({inner}): the stated "
                 "width is used, the one the checkpoint's tensors have (as transformers does).")
        inner = stated
    rank = r.get(rank_key, default="auto")
    if rank == "auto":
        rank = -(-d_model // 16)
        r.assume(f"{rank_key} 'auto': ceil(hidden_size / 16) = {rank}.")
    return MixerSpec("mamba1", inner, 1, r.dim(state), 0, r.dim(kernel), conv_bias=r.flag(conv_bias),
                     proj_bias=r.flag(proj_bias), chunk_size=1, state_dtype=_state_dtype(r),
                     dt_rank=as_int(rank, rank_key), dt_bc_norms=dt_bc_norms)


def _mamba1_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """MambaForCausalLM / FalconMambaForCausalLM: every block is norm -> Mamba-1 mixer -> residual (no MLP);
    Falcon-Mamba's RMSNorms on B, C and dt have no weights."""
    mixer = _mamba1_mixer(r, d_model, "", dt_bc_norms=False)
    r.used.update(("mixer_rms_eps", "use_mambapy", "use_associative_scan"))
    return [(AttentionSpec.none(), mixer, FfnSpec.none())] * n_layers


def _jamba_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """JambaDecoderLayer: norm -> (attention without RoPE | Mamba-1 with dt/B/C norms) -> residual -> norm -> MLP or
    MoE (every expert_layer_period-th layer from expert_layer_offset) -> residual."""
    a_period, a_offset = r.count("attn_layer_period", 8, False), r.count("attn_layer_offset", 4)
    e_period, e_offset = r.count("expert_layer_period", 2, False), r.count("expert_layer_offset", 1)
    attn = attention_spec(r, arch, d_model, None, rope=False)
    mixer = _mamba1_mixer(r, d_model, "mamba_", dt_bc_norms=True)
    n_experts = r.dim("num_experts", required=False) or 1
    ffns = {moe: ffn_spec(r, arch, d_model, moe, 0 if moe else r.dim("intermediate_size")) for moe in (False, True)
            if moe is False or n_experts > 1}
    out = []
    for i in range(n_layers):
        ffn = ffns[n_experts > 1 and i % e_period == e_offset]
        out.append((attn, None, ffn) if i % a_period == a_offset else (AttentionSpec.none(), mixer, ffn))
    r.used.update(("use_mambapy", "use_associative_scan", "use_mamba_kernels"))
    return out


# ---------------------------------------------------------------------------- Mamba-2 (pure SSM)
def _mamba2_mixer(r: ConfigReader, d_model: int, keys: dict) -> MixerSpec:
    """A Mamba-2 mixer from the config's key names for heads, head_dim, state, groups, conv kernel, biases, chunk."""
    heads = r.dim(*keys["heads"])
    head_dim = keys["head_dim"] if isinstance(keys["head_dim"], int) else r.dim(*keys["head_dim"])
    groups = r.dim(*keys["groups"])
    if heads % groups:
        raise ModelConfigError(f"{keys['heads'][0]} ({heads}) must be a multiple of {keys['groups'][0]} ({groups})")
    return MixerSpec("mamba2", heads, head_dim, r.dim(*keys["state"]), groups, r.dim(*keys["conv"]),
                     conv_bias=r.flag(keys["conv_bias"]), proj_bias=r.flag(keys["proj_bias"]),
                     chunk_size=r.dim(*keys["chunk"]), state_dtype=_state_dtype(r))


def _mamba2_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """Mamba2ForCausalLM: every block is norm -> Mamba-2 mixer -> residual (no MLP)."""
    mixer = _mamba2_mixer(r, d_model, dict(heads=("num_heads",), head_dim=("head_dim",), state=("state_size",),
                                           groups=("n_groups",), conv=("conv_kernel",), conv_bias="use_conv_bias",
                                           proj_bias="use_bias", chunk=("chunk_size",)))
    expand = r.count("expand", default=2, allow_zero=False)
    if mixer.inner_dim != expand * d_model:  # Mamba2Mixer: intermediate_size = expand * hidden = heads * head_dim
        raise ModelConfigError(f"num_heads x head_dim ({mixer.inner_dim}) must equal expand x hidden_size "
                               f"({expand * d_model})")
    return [(AttentionSpec.none(), mixer, FfnSpec.none())] * n_layers


# ---------------------------------------------------------------------------- Nemotron-H
def _nemotron_kinds(r: ConfigReader, n_layers: int) -> list[str]:
    pattern = r.typed("hybrid_override_pattern", (str,), "a string of M, *, - and E")
    if pattern is not None:
        if len(pattern) != n_layers or any(ch not in _NEMOTRON_LETTERS for ch in pattern):
            raise ModelConfigError(f"hybrid_override_pattern must be {n_layers} letters of M, *, - or E "
                                   f"(one per num_hidden_layers), got {pattern[:80]!r}")
        return [_NEMOTRON_LETTERS[ch] for ch in pattern]
    names = r.str_list("layers_block_type", n_layers)
    if names is None:
        raise ModelConfigError("nemotron_h config has neither hybrid_override_pattern nor layers_block_type")
    bad = next((n for n in names if n not in _NEMOTRON_NAMES), None)
    if bad is not None:
        raise ModelConfigError(f"layers_block_type entry {bad[:40]!r} is not one of {', '.join(_NEMOTRON_NAMES)}")
    return [_NEMOTRON_NAMES[n] for n in names]


def _nemotron_h_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """NemotronHBlock: norm -> one of (Mamba-2 mixer | attention without RoPE | relu² MLP) -> residual."""
    kinds = _nemotron_kinds(r, n_layers)
    none_a, none_f = AttentionSpec.none(), FfnSpec.none()
    by_kind: dict[str, Layer] = {}
    if "mamba" in kinds:
        by_kind["mamba"] = (none_a, _mamba2_mixer(r, d_model, dict(
            heads=("mamba_num_heads",), head_dim=("mamba_head_dim",), state=("ssm_state_size",),
            groups=("n_groups", "mamba_n_groups"), conv=("conv_kernel", "mamba_d_conv"), conv_bias="use_conv_bias",
            proj_bias="mamba_proj_bias", chunk=("chunk_size", "mamba_chunk_size"))), none_f)
    if "attention" in kinds:
        by_kind["attention"] = (attention_spec(r, arch, d_model, None, rope=False), None, none_f)
    if "mlp" in kinds:
        act = r.get("mlp_hidden_act", default="relu2")
        by_kind["mlp"] = (none_a, None, FfnSpec("dense", r.dim("intermediate_size"), False, str(act),
                                                r.flag(arch.mlp_bias)))
    if "moe" in kinds:
        by_kind["moe"] = (none_a, None, _nemotron_h_moe(r, d_model))
    r.used.update(("mamba_hidden_act", "expand", "mamba_expand"))  # expand: heads x head_dim says it
    return [by_kind[k] for k in kinds]


def _nemotron_h_moe(r: ConfigReader, d_model: int) -> FfnSpec:
    """NemotronHMoE ('E' blocks, Nemotron-3): n_routed_experts relu² experts (up, down) of moe_intermediate_size, a
    relu² shared MLP of moe_shared_expert_intermediate_size, a DeepSeek-style router (e_score_correction_bias)."""
    if r.get("moe_latent_size") is not None:
        raise UnsupportedArchitectureError("moe_latent_size is set (model_type='nemotron_h'): experts working in a "
                                           "latent space (fc1/fc2_latent_proj around them) are not modelled")
    n_experts, top_k = r.dim("n_routed_experts"), r.dim("num_experts_per_tok")
    if top_k > n_experts:
        raise ModelConfigError(f"num_experts_per_tok ({top_k}) exceeds n_routed_experts ({n_experts})")
    r.used.update(("n_shared_experts", "moe_shared_expert_overlap"))  # one shared MLP of its own width
    act = str(r.get("mlp_hidden_act", default="relu2"))
    return FfnSpec("moe", 0, False, act, False, n_experts=n_experts, top_k=top_k,
                   d_expert=r.dim("moe_intermediate_size"),
                   d_shared=r.dim("moe_shared_expert_intermediate_size", required=False) or 0, router_bias=True)


# ---------------------------------------------------------------------------- Bamba
def _bamba_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """BambaDecoderLayer: norm -> (Mamba-2 | attention at attn_layer_indices) -> residual -> norm -> gated MLP."""
    attn_at = set(r.int_list("attn_layer_indices", default=[]) or [])
    mixer = _bamba_mixer(r, d_model)
    mlp = ffn_spec(r, arch, d_model, False, r.dim("intermediate_size"))
    attn = attention_spec(r, arch, d_model, None, rope=True) if attn_at else None
    return [(attn, None, mlp) if i in attn_at else (AttentionSpec.none(), mixer, mlp) for i in range(n_layers)]


def _bamba_mixer(r: ConfigReader, d_model: int) -> MixerSpec:
    """The Mamba-2 mixer of Bamba and Granite-4.0 (mamba_* keys; mamba_d_head 'auto' = expand x hidden / heads)."""
    heads = r.dim("mamba_n_heads")
    head_dim = r.get("mamba_d_head", default="auto")
    if head_dim == "auto":  # BambaConfig: mamba_expand * hidden_size / mamba_n_heads
        inner = r.count("mamba_expand", default=2, allow_zero=False) * d_model
        require_divides(inner, "mamba_expand x hidden_size", heads, "mamba_n_heads")
        head_dim = inner // heads
        r.assume(f"mamba_d_head 'auto': mamba_expand x hidden_size / mamba_n_heads = {head_dim}.")
    return _mamba2_mixer(r, d_model, dict(heads=("mamba_n_heads",), head_dim=as_int(head_dim, "mamba_d_head"),
                                          state=("mamba_d_state",), groups=("mamba_n_groups",), conv=("mamba_d_conv",),
                                          conv_bias="mamba_conv_bias", proj_bias="mamba_proj_bias",
                                          chunk=("mamba_chunk_size",)))


# ---------------------------------------------------------------------------- Qwen3-Next
def _linear_or_full(r: ConfigReader, n_layers: int) -> list[bool] | None:
    """layer_types of linear_attention / full_attention entries as softmax-attention flags; None when absent."""
    types = r.str_list("layer_types", n_layers, allowed=("linear_attention", "full_attention"))
    if types is None:
        return None
    return [t == "full_attention" for t in types]


def _qwen3_next_full(r: ConfigReader, n_layers: int) -> list[bool]:
    """Which layers use (gated) softmax attention: layer_types, else every full_attention_interval-th layer."""
    flags = _linear_or_full(r, n_layers)
    if flags is not None:
        return flags
    interval = r.count("full_attention_interval", default=4, allow_zero=False)
    return [(i + 1) % interval == 0 for i in range(n_layers)]


def _gated_deltanet(r: ConfigReader) -> MixerSpec:
    """Qwen3NextGatedDeltaNet: in_proj_qkvz, in_proj_ba, conv1d without bias over q, k, v, per-head norm, out_proj.
    Qwen3.5's, Lara-Mini's and Qwen4-Exp's split in_proj into qkv, z, b, a: the same widths."""
    return _deltanet_spec(r, r.dim("linear_num_value_heads"), r.dim("linear_num_key_heads"),
                          r.dim("linear_value_head_dim"), r.dim("linear_key_head_dim"))


def _deltanet_spec(r: ConfigReader, v_heads: int, k_heads: int, v_dim: int, k_dim: int) -> MixerSpec:
    """A gated_deltanet mixer: v_heads value heads of v_dim, k_heads query / key heads of k_dim (the state width)."""
    if v_heads % k_heads:
        raise ModelConfigError(f"linear_num_value_heads ({v_heads}) must be a multiple of linear_num_key_heads "
                               f"({k_heads})")
    r.assume("Gated DeltaNet prefill is taken in chunks of 64 tokens (the chunked delta-rule kernels' size).")
    return MixerSpec("gated_deltanet", v_heads, v_dim, k_dim, k_heads, r.dim("linear_conv_kernel_dim"), chunk_size=64,
                     state_dtype=_state_dtype(r))


def _qwen3_next_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """Qwen3NextDecoderLayer (and Qwen3.5's text decoder layer): norm -> (Gated DeltaNet | gated attention) -> residual -> norm -> MoE / MLP -> residual.
    The gated attention's q_proj also yields a sigmoid output gate (H x head_dim), with per-head q/k norms."""
    full = _qwen3_next_full(r, n_layers)
    moe = moe_layers(r, n_layers)
    gate = r.boolean("attn_output_gate", default=True)  # Qwen3.5 states it; Qwen3-Next always gates
    attn = replace(attention_spec(r, arch, d_model, None, rope=True), output_gate=gate) if any(full) else None
    mixer = _gated_deltanet(r) if not all(full) else None
    ffns = {m: ffn_spec(r, arch, d_model, m, 0 if m else r.dim("intermediate_size")) for m in set(moe)}
    mtp = r.count("mtp_num_hidden_layers")
    if mtp:
        r.assume(f"mtp_num_hidden_layers={mtp}: the multi-token-prediction layers are not part of plain inference and "
                 "are not counted.")
    r.used.update(("partial_rotary_factor", "mtp_use_dedicated_embeddings"))
    return [(attn, None, ffns[m]) if f else (AttentionSpec.none(), mixer, ffns[m]) for f, m in zip(full, moe)]


# ---------------------------------------------------------------------------- OLMo Hybrid
def _olmo_hybrid_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """OlmoHybrid (modular_olmo_hybrid.py): Gated DeltaNet layers, pre-norm, and Olmo-3 attention layers, post-norm
    (after attention, after the MLP), with q/k RMSNorms over all heads' elements; a dense gated MLP in every layer.
    The GDN's q, k, v, g (output gate), a, b are separate matrices of Qwen3-Next's widths, its conv one tap set per
    q, k, v channel as Qwen3-Next's (the checkpoint's q_conv1d, k_conv1d, v_conv1d); beta doubled
    (linear_allow_neg_eigval) is elementwise."""
    full = _linear_or_full(r, n_layers)
    if full is None:  # OlmoHybridConfig: every fourth layer full attention, and at least the last
        full = [i % 4 == 3 for i in range(n_layers)]
        full[-1] = full[-1] or not any(full)
    if all(full) or not any(full):
        raise ModelConfigError("olmo_hybrid layer_types must hold linear_attention and full_attention layers both "
                               "(OlmoHybridConfig refuses a config without either)")
    attn = attention_spec(r, arch, d_model, None, rope=_olmo_rope(r))
    mixer = _olmo_deltanet(r, d_model, attn.n_heads)
    mlp = ffn_spec(r, arch, d_model, False, r.dim("intermediate_size"))
    r.used.update(("linear_allow_neg_eigval", "linear_a_log_min", "linear_a_log_max", "linear_dt_min",
                   "linear_dt_max", "linear_dt_init_floor"))  # elementwise / initialisation only
    return [(attn, None, mlp) if f else (AttentionSpec.none(), mixer, mlp) for f in full]


def _olmo_deltanet(r: ConfigReader, d_model: int, heads: int) -> MixerSpec:
    """OlmoHybridConfig derives absent widths: num_attention_heads key and value heads, key head dim
    int(0.75 x hidden / key heads), value head dim twice that."""
    k_heads = r.dim("linear_num_key_heads", fallback=(heads, f"= num_attention_heads ({heads}), as OlmoHybridConfig"))
    v_heads = r.dim("linear_num_value_heads", fallback=(heads, f"= num_attention_heads ({heads}), as OlmoHybridConfig"))
    k_dim = r.dim("linear_key_head_dim", fallback=(3 * d_model // (4 * k_heads), "int(0.75 x hidden_size / "
                                                   "linear_num_key_heads), as OlmoHybridConfig"))
    if not k_dim:
        raise ModelConfigError(f"linear_key_head_dim: 0.75 x hidden_size ({d_model}) / linear_num_key_heads "
                               f"({k_heads}) is below 1; the config must state it")
    v_dim = r.dim("linear_value_head_dim", fallback=(2 * k_dim, "2 x linear_key_head_dim, as OlmoHybridConfig"))
    return _deltanet_spec(r, v_heads, k_heads, v_dim, k_dim)


def _olmo_rope(r: ConfigReader) -> bool:
    """RoPE on the attention layers, unless the config states rope_theta null (top level or in rope_parameters):
    then transformers and vLLM build no rotary embedding (NoPE); absent, OlmoHybridConfig's default theta."""
    params = r.typed("rope_parameters", (dict,), "an object or null")
    nope = "rope_theta" in r.raw and r.raw["rope_theta"] is None or \
        params is not None and "rope_theta" in params and params["rope_theta"] is None
    if nope:
        r.assume("OLMo Hybrid: rope_theta is null: the attention layers use no positional encoding (NoPE).")
    return not nope


# ---------------------------------------------------------------------------- Lara-Mini
_LARA_PATTERN = ("linear_attention", "sliding_attention", "linear_attention", "full_attention", "sliding_attention")


def _lara_mini_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """LaraMiniDecoderLayer (modular_lara_mini.py): norm -> (Qwen3.5's Gated DeltaNet | Qwen3 attention with q/k norms
    per head: over sliding_window tokens with RoPE on 'sliding_attention' layers, over all without RoPE on
    'full_attention' ones) -> residual -> norm -> MoE of num_experts experts and a shared expert of
    shared_expert_intermediate_size, added without a gate (the architecture's shared_gate is off) -> residual."""
    types = r.str_list("layer_types", n_layers, allowed=_LARA_PATTERN)
    if types is None:
        types = [_LARA_PATTERN[i % len(_LARA_PATTERN)] for i in range(n_layers)]
        r.assume("layer_types absent from the config: LaraMiniConfig's released pattern (linear, sliding, linear, "
                 "full, sliding attention) repeated.")
    kinds = set(types)
    attn = {t: attention_spec(r, arch, d_model, r.dim("sliding_window") if t == "sliding_attention" else None,
                              rope=t == "sliding_attention") for t in sorted(kinds - {"linear_attention"})}
    mixer = _gated_deltanet(r) if "linear_attention" in kinds else None
    moe = ffn_spec(r, arch, d_model, True, 0)
    return [(AttentionSpec.none(), mixer, moe) if t == "linear_attention" else (attn[t], None, moe) for t in types]


# ---------------------------------------------------------------------------- Kimi-Linear
# Kimi-K3's text tower (model_type kimi_linear too) changes these shapes: refused rather than misread
_KIMI_UNMODELLED = {"mla_use_output_gate": "an output gate on the MLA layers",
                    "routed_expert_hidden_size": "latent MoE experts", "attn_res_block_size": "attention residuals"}


def _kimi_linear_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """KimiLinearDecoderLayer: norm -> (KDA | MLA without RoPE: mla_use_nope) -> residual -> norm -> MLP (the first
    first_k_dense_replace layers) or MoE with shared experts -> residual. The checkpoint's config nests KDA's shape and
    its 1-based layer lists in linear_attn_config; transformers' flattens them (linear_*, layer_types)."""
    lin = r.typed("linear_attn_config", (dict,), "an object", {})
    unmodelled = [(k, why) for k, why in _KIMI_UNMODELLED.items() if r.get(k)]
    if lin.get("use_full_rank_gate"):
        unmodelled.append(("linear_attn_config.use_full_rank_gate", "a full-rank KDA decay gate"))
    if unmodelled:
        key, what = unmodelled[0]
        raise UnsupportedArchitectureError(f"{key} is set (Kimi-K3 style): {what} cannot be represented yet")
    full = _linear_or_full(r, n_layers)
    if full is None:
        full = _kimi_full_layers(lin, n_layers)
    moe = moe_layers(r, n_layers)
    attn = attention_spec(r, arch, d_model, None, rope=not r.boolean("mla_use_nope")) if any(full) else None
    heads, head_dim, kernel = (as_int(lin[k], f"linear_attn_config.{k}", bound=b) if lin.get(k) is not None else
                               r.dim(flat) for k, flat, b in (("num_heads", "linear_num_heads", 65_536),
                                                              ("head_dim", "linear_head_dim", 1 << 20),
                                                              ("short_conv_kernel_size", "linear_conv_kernel_dim", 64)))
    r.assume("KDA prefill is taken in chunks of 64 tokens (the chunked kernels' size).")
    mixer = MixerSpec("kda", heads, head_dim, head_dim, heads, kernel, chunk_size=64,  # vLLM: a float32 state
                      state_dtype=_state_dtype(r) or "fp32")  # whatever the cache dtype (_note_state_dtype)
    ffns = {m: ffn_spec(r, arch, d_model, m, 0 if m else r.dim("intermediate_size")) for m in set(moe)}
    return [(attn, None, ffns[m]) if f else (AttentionSpec.none(), mixer, ffns[m]) for f, m in zip(full, moe)]


def _kimi_full_layers(lin: dict, n_layers: int) -> list[bool]:
    """The MLA layers from linear_attn_config's 1-based full_attn_layers (kda_layers, where given, must be the
    rest); without them transformers' default: every fourth layer from the fifth (0-based i % 4 == 0, i > 0)."""
    listed = lin.get("full_attn_layers")
    if listed is None:
        return [i > 0 and i % 4 == 0 for i in range(n_layers)]
    lists = {}
    for key in ("full_attn_layers", "kda_layers"):
        value = lin.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= n_layers
                                              for v in value) or len(set(value)) != len(value):
            raise ModelConfigError(f"linear_attn_config.{key} must list distinct layer numbers from 1 to {n_layers}")
        lists[key] = set(value)
    kda = lists.get("kda_layers")
    if kda is not None and (kda & lists["full_attn_layers"] or len(kda | lists["full_attn_layers"]) != n_layers):
        raise ModelConfigError("linear_attn_config.kda_layers and full_attn_layers must split the layers between them")
    return [i + 1 in lists["full_attn_layers"] for i in range(n_layers)]


# ---------------------------------------------------------------------------- MiniMax-Text-01
def _minimax_full(r: ConfigReader, n_layers: int) -> list[bool]:
    """Softmax-attention layers: layer_types (HF) or attn_type_list (MiniMax's own config: 1 = softmax)."""
    full = _linear_or_full(r, n_layers)
    if full is not None:
        return full
    flags = r.int_list("attn_type_list", n_layers)
    if flags is None:
        raise ModelConfigError("minimax config has neither layer_types nor attn_type_list")
    return [bool(f) for f in flags]


def _minimax_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """MiniMaxDecoderLayer: norm -> (lightning attention | softmax GQA) -> residual -> norm -> MoE -> residual.
    Lightning: qkv_proj (3 H hd) and output_gate (H hd) from x, RMSNorm over H hd, out_proj; no conv."""
    full = _minimax_full(r, n_layers)
    attn = attention_spec(r, arch, d_model, None, rope=True)
    heads, head_dim = attn.n_heads, attn.head_dim
    mixer = MixerSpec("lightning", heads, head_dim, head_dim, heads, 0, chunk_size=r.dim("block_size"),
                      state_dtype=_state_dtype(r))
    moe = ffn_spec(r, arch, d_model, True, 0)
    r.assume("MiniMax: the residual scaling factors (*_alpha_factor, *_beta_factor; the hub's layernorm_*_alpha / "
             "_beta, postnorm) are scalars and a norm placement, not modelled.")
    r.used.update(("full_attn_alpha_factor", "full_attn_beta_factor", "linear_attn_alpha_factor",
                   "linear_attn_beta_factor", "mlp_alpha_factor", "mlp_beta_factor", "rotary_dim", "postnorm"))
    if r.count("shared_intermediate_size"):  # the hub code's optional shared expert (shared_moe_mode)
        raise UnsupportedArchitectureError("shared_intermediate_size > 0 (model_type=minimax): MiniMax's remote code "
                                           "adds a shared expert transformers' MiniMax does not build; not read")
    r.used.add("shared_moe_mode")
    return [(attn, None, moe) if f else (AttentionSpec.none(), mixer, moe) for f in full]


# ---------------------------------------------------------------------------- LFM2
def _lfm2_d_ff(r: ConfigReader) -> int:
    """Lfm2MLP's width: intermediate_size (block_ff_dim), with block_auto_adjust_ff_dim int(2/3 x) times
    block_ffn_dim_multiplier, rounded up to block_multiple_of."""
    d_ff = r.dim("intermediate_size", "block_ff_dim")
    if not r.boolean("block_auto_adjust_ff_dim", default=True):
        return d_ff
    d_ff = int(2 * d_ff / 3)
    mult = r.get("block_ffn_dim_multiplier", default=1.0)
    if mult is None:
        return d_ff
    if not isinstance(mult, (int, float)) or isinstance(mult, bool) or not 0 < mult <= 64:
        raise ModelConfigError(f"block_ffn_dim_multiplier must be a number in (0, 64], got {shown(mult)}")
    step = r.count("block_multiple_of", default=256, allow_zero=False)
    d_ff = int(mult * d_ff)
    return step * ((d_ff + step - 1) // step)


def _lfm2_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """Lfm2DecoderLayer: norm -> (short conv | attention with q/k norms) -> residual -> norm -> gated MLP -> residual.
    Short conv: in_proj (d -> B, C, x), depthwise conv1d of conv_L_cache taps over B*x, C * conv, out_proj; the
    projections carry a bias when conv_bias is set."""
    types = r.str_list("layer_types", n_layers, allowed=("conv", "full_attention"))
    if types is None:
        full_at = set(r.int_list("full_attn_idxs", default=list(range(n_layers))) or [])
        types = ["full_attention" if i in full_at else "conv" for i in range(n_layers)]
    mixer = _short_conv(r, d_model)
    attn = attention_spec(r, arch, d_model, None, rope=True) if "full_attention" in types else None
    ffns = _lfm2_ffns(r, arch, d_model, n_layers)
    return [(attn, None, f) if t == "full_attention" else (AttentionSpec.none(), mixer, f) for t, f in zip(types, ffns)]


def _short_conv(r: ConfigReader, d_model: int) -> MixerSpec:
    """Lfm2ShortConv (LFM3's too): in_proj d -> 3d (B, C, x), a depthwise conv of conv_L_cache taps over d channels,
    out_proj; conv_bias puts a bias on all three."""
    bias = r.boolean("conv_bias")
    return MixerSpec("short_conv", d_model, 1, 0, 0, r.dim("conv_L_cache"), conv_bias=bias, proj_bias=bias,
                     state_dtype=None)


def _lfm2_ffns(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[FfnSpec]:
    """LFM2: one gated MLP everywhere. LFM2-MoE (Lfm2MoeDecoderLayer): the first num_dense_layers layers a gated MLP
    of intermediate_size (used as is), the others num_experts gated experts of moe_intermediate_size."""
    if r.get("model_type") != "lfm2_moe":
        return [FfnSpec("dense", _lfm2_d_ff(r), True, "silu")] * n_layers
    n_dense = r.count("num_dense_layers", default=2)
    dense = ffn_spec(r, arch, d_model, False, r.dim("intermediate_size"))
    moe = ffn_spec(r, arch, d_model, True, 0)
    return [dense if i < n_dense else moe for i in range(n_layers)]


# ---------------------------------------------------------------------------- LFM3
_LFM3_TYPES = ("conv", "sliding_attention", "full_attention")


def _lfm3_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """Lfm3DecoderLayer (modular_lfm3.py): norm -> (LFM2's short conv | Qwen3 attention with q/k norms per head and
    a sigmoid gate per head from x (g_proj: d -> heads, use_attention_gate), over sliding_window tokens on
    'sliding_attention' layers, over all on 'full_attention' ones) -> norm -> residual -> norm -> gated MLP of
    intermediate_size (used as is: LFM2's block_* width rules are gone) -> norm -> residual. The two norms after the
    operator and the MLP are use_sandwich_norm's (hybrid_groups counts them)."""
    types = r.str_list("layer_types", n_layers, allowed=_LFM3_TYPES)
    if types is None:  # Lfm3Config.__post_init__
        types = ["full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0 else "conv"
                 for i in range(n_layers)]
        r.assume("layer_types absent from the config: Lfm3Config's pattern (layer 2 and every fourth after it full "
                 "attention, layer 4 and every fourth after it sliding-window attention, the rest short conv).")
    attn = {t: attention_spec(r, arch, d_model, r.dim("sliding_window") if t == "sliding_attention" else None,
                              rope=True) for t in _LFM3_TYPES[1:] if t in types}
    mixer = _short_conv(r, d_model) if "conv" in types else None
    mlp = ffn_spec(r, arch, d_model, False, r.dim("intermediate_size"))
    if "full_attention" in types:
        r.assume("LFM3: the full-attention layers rotate part of each head (rope_parameters' partial_rotary_factor, "
                 "0.5 in LFM3-1.7B): RoPE's elementwise pass is counted over whole heads (a small upper bound).")
    return [(AttentionSpec.none(), mixer, mlp) if t == "conv" else (attn[t], None, mlp) for t in types]


# ---------------------------------------------------------------------------- Granite-4.0 hybrid
def _granite_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """GraniteMoeHybridDecoderLayer: norm -> (Mamba-2 | attention, RoPE only with position_embedding_type 'rope')
    -> residual -> norm -> MoE (num_local_experts gated experts of intermediate_size) + shared gated MLP of
    shared_intermediate_size (without experts: that MLP alone) -> residual. The muP multipliers are scalars."""
    types = (r.str_list("layer_types", n_layers, allowed=("mamba", "linear_attention", "attention", "full_attention"))
             or ["mamba"] * n_layers)
    mixer = _bamba_mixer(r, d_model)
    rope = r.get("position_embedding_type") == "rope"
    attn = attention_spec(r, arch, d_model, None, rope=rope)
    shared = r.dim("shared_intermediate_size")
    n_experts = r.count("num_local_experts", default=8)
    if n_experts:
        ffn = replace(ffn_spec(r, arch, d_model, True, 0), d_shared=shared)
    else:
        ffn = ffn_spec(r, arch, d_model, False, shared)
    r.assume("Granite: the muP multipliers (embedding, attention, residual, logits) are scalars, not modelled.")
    r.used.update(("embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"))
    return [(attn, None, ffn) if t in ("attention", "full_attention") else (AttentionSpec.none(), mixer, ffn)
            for t in types]


# ---------------------------------------------------------------------------- Falcon-H1
def _falcon_h1_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[Layer]:
    """FalconH1DecoderLayer: norm -> attention and Mamba-2 in parallel (outputs summed) -> residual -> norm -> gated
    MLP -> residual. The SSM width is mamba_d_ssm (else mamba_expand x hidden); the gated RMSNorm only with
    mamba_rms_norm; the muP multipliers are scalars."""
    heads = r.dim("mamba_n_heads")
    d_ssm = r.dim("mamba_d_ssm", required=False) or r.count("mamba_expand", default=2, allow_zero=False) * d_model
    head_dim = r.get("mamba_d_head", default="auto")
    if head_dim == "auto":
        require_divides(d_ssm, "mamba_d_ssm", heads, "mamba_n_heads")
        head_dim = d_ssm // heads
    head_dim = as_int(head_dim, "mamba_d_head")
    if heads * head_dim != d_ssm:
        raise ModelConfigError(f"mamba_n_heads x mamba_d_head ({heads * head_dim}) must equal mamba_d_ssm ({d_ssm})")
    if r.boolean("projectors_bias") != r.boolean("mamba_proj_bias"):
        raise UnsupportedArchitectureError("projectors_bias differs from mamba_proj_bias (model_type='falcon_h1'): "
                                           "a bias on out_proj only is not modelled")
    mixer = replace(_mamba2_mixer(r, d_model, dict(heads=("mamba_n_heads",), head_dim=head_dim, state=("mamba_d_state",),
                                                   groups=("mamba_n_groups",), conv=("mamba_d_conv",),
                                                   conv_bias="mamba_conv_bias", proj_bias="mamba_proj_bias",
                                                   chunk=("mamba_chunk_size",))),
                    rms_norm=r.boolean("mamba_rms_norm"))
    attn = attention_spec(r, arch, d_model, None, rope=True)
    mlp = ffn_spec(r, arch, d_model, False, r.dim("intermediate_size"))
    r.assume("Falcon-H1: the muP multipliers (embedding, attention, SSM, MLP, LM head) are scalars, not modelled.")
    r.used.update(("mamba_norm_before_gate", "mamba_expand"))
    return [(attn, mixer, mlp)] * n_layers
