"""Reader of dots3-note (model_type dots3_note, its text part dots3_note_text; transformers' modular_dots3_note.py).

Every layer: MLA (q_a / q_b from a q_lora_rank latent, kv_a / kv_b, o) with an RMSNorm over the shared rope key and a
sigmoid gate per head from x (g_proj: d -> heads) on the attention output, then a dense MLP (the first
first_k_dense_replace layers) or DeepSeek-V3's MoE (a sigmoid router with e_score_correction_bias, routed experts of
moe_intermediate_size, n_shared_experts shared ones of shared_experts_intermediate_size). layer_types gives each layer
one of three attentions: indexed_attention (DSA: GLM-5's lightning indexer, each query attends to its index_topk
keys), sliding_attention (MLA over the last sliding_window tokens, no indexer, a shape of its own: the hub config's
swa_* keys, transformers' per_layer_config) or full_attention (DSA turned off: use_dsa false). Released:
dots-studio/dots3-note-prev, 13 DSA + 33 sliding layers; its hub config keeps the text keys at the top level beside
vision_config and audio_config (towers not counted).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, UnsupportedArchitectureError
from .traits import Architecture
from .layers import dsa_indexer, ffn_spec, group_layers
from .reader import ConfigReader, as_int
from .spec import AttentionSpec, LayerGroup

DOTS3_TYPES = ("dots3_note", "dots3_note_text")
_TYPES = ("indexed_attention", "full_attention", "sliding_attention")
# one layer's attention shape: the keys per_layer_config may override (head_dim only names nope + rope there)
_SHAPE = ("num_attention_heads", "num_key_value_heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
          "qk_rope_head_dim", "v_head_dim")
# the hub config's swa_* keys and, when absent, Dots3NoteTextConfig's values for them (its __post_init__)
_SWA_DEFAULTS = {"num_attention_heads": 64, "num_key_value_heads": 64, "q_lora_rank": 1024, "kv_lora_rank": 1024,
                 "head_dim": 256, "qk_nope_head_dim": 192, "v_head_dim": 128}
_NEUTRAL = ("rms_norm_eps", "attention_dropout", "rope_parameters", "rope_theta", "partial_rotary_factor", "head_dim")


def dots3_groups(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> tuple[LayerGroup, ...]:
    """The layer groups: one per distinct (attention type and shape, dense or MoE), in order of first occurrence."""
    types = _layer_types(r, n_layers)
    shapes = _layer_shapes(r, types)
    moe = _moe_layers(r, n_layers)
    _check_gates(r)
    d_ff = 0 if all(moe) else r.dim("intermediate_size")
    attn, ffn, layers = {}, {}, []
    for t, shape, m in zip(types, shapes, moe, strict=True):
        key = (t, tuple(sorted(shape.items())))
        if key not in attn:
            attn[key] = _attention(r, t, shape)
        if m not in ffn:
            ffn[m] = _ffn(r, arch, d_model, m, d_ff)
        layers.append((attn[key], ffn[m]))
    _note(r, types, shapes)
    return group_layers(layers, False, arch.norms)


def _layer_types(r: ConfigReader, n_layers: int) -> list[str]:
    """layer_types, else transformers' schedule (full type on layers 0, 1 and every 4th from 5, sliding elsewhere;
    full everywhere when use_sliding_window is false); the full type is indexed_attention unless use_dsa is false.
    The hub config writes full_attention for its DSA layers: use_dsa (true unless per_layer_config is given) renames
    them."""
    given = r.get("per_layer_config") is not None
    use_dsa = r.typed("use_dsa", (bool,), "true or false", None if given else True)
    types = r.str_list("layer_types", n_layers, allowed=_TYPES)
    if types is None:
        sliding = r.boolean("use_sliding_window", default=True)
        full = "full_attention" if use_dsa is False else "indexed_attention"
        types = [full if not sliding or i < 2 or i % 4 == 1 else "sliding_attention" for i in range(n_layers)]
    if use_dsa is not None:
        old, new = ("full_attention", "indexed_attention") if use_dsa else ("indexed_attention", "full_attention")
        types = [new if t == old else t for t in types]
    return types


def _layer_shapes(r: ConfigReader, types: list[str]) -> list[dict]:
    """Each layer's attention shape (heads, LoRA ranks, head dims; a sliding layer's window): the config's, with
    per_layer_config's overrides, or (hub config) the swa_* shape on every sliding layer."""
    base = {k: r.dim(k) for k in _SHAPE if k != "num_key_value_heads"}
    base["num_key_value_heads"] = r.dim("num_key_value_heads", required=False) or base["num_attention_heads"]
    window = r.dim("sliding_window", "sliding_window_size") if "sliding_attention" in types else None
    per = r.typed("per_layer_config", (dict,), "an object of layer index -> attribute overrides")
    swa = _swa_shape(r) if per is None and "sliding_attention" in types else {}
    overrides = _overrides(per, len(types)) if per is not None else \
        {i: swa for i, t in enumerate(types) if t == "sliding_attention"}
    return [{**base, **({"sliding_window": window} if t == "sliding_attention" else {}), **overrides.get(i, {})}
            for i, t in enumerate(types)]


def _swa_shape(r: ConfigReader) -> dict:
    """The sliding layers' shape from the hub config's swa_* keys; qk_rope_head_dim absent: swa_head_dim minus
    swa_qk_nope_head_dim (Dots3NoteTextConfig)."""
    r.used.update(f"swa_{k}" for k in (*_SWA_DEFAULTS, "qk_rope_head_dim"))
    rope = r.raw.get("swa_qk_rope_head_dim")
    absent = {k: v for k, v in _SWA_DEFAULTS.items() if r.raw.get(f"swa_{k}") is None and
              (k != "head_dim" or rope is None)}
    shape = {k: as_int(r.raw[f"swa_{k}"] if r.raw.get(f"swa_{k}") is not None else v, f"swa_{k}")
             for k, v in _SWA_DEFAULTS.items()}
    head_dim = shape.pop("head_dim")
    if rope is None and head_dim <= shape["qk_nope_head_dim"]:
        raise ModelConfigError(f"swa_head_dim ({head_dim}) must exceed swa_qk_nope_head_dim "
                               f"({shape['qk_nope_head_dim']}): the sliding layers' rope dim is their difference")
    shape["qk_rope_head_dim"] = head_dim - shape["qk_nope_head_dim"] if rope is None else \
        as_int(rope, "swa_qk_rope_head_dim")
    if absent:
        r.assume(f"{', '.join(f'swa_{k}' for k in absent)} absent from the config: Dots3NoteTextConfig's "
                 f"sliding-layer values {', '.join(map(str, absent.values()))}.")
    return shape


def _overrides(per: dict, n_layers: int) -> dict[int, dict]:
    """per_layer_config: layer index ('02' or 2) -> the attention-shape keys (and sliding_window) it overrides; any
    other per-layer key is refused by name."""
    out: dict[int, dict] = {}
    for key, entry in list(per.items())[: n_layers + 1]:
        digits = isinstance(key, str) and key.isascii() and key.isdigit() and len(key) < 8
        i = as_int(int(key) if digits else key, "per_layer_config key (a layer index)", allow_zero=True,
                   bound=n_layers - 1)
        if not isinstance(entry, dict):
            raise ModelConfigError(f"per_layer_config[{i}] must be an object of attribute overrides")
        for k, v in entry.items():
            if k in _NEUTRAL:
                continue
            if k not in _SHAPE + ("sliding_window",):
                raise UnsupportedArchitectureError(f"per_layer_config[{i}].{str(k)[:40]} (model_type=dots3_note): only "
                                                   "the attention's shape and window are read per layer")
            out.setdefault(i, {})[k] = as_int(v, f"per_layer_config[{i}].{k}")
    return out


def _attention(r: ConfigReader, layer_type: str, s: dict) -> AttentionSpec:
    heads, nope, rope = s["num_attention_heads"], s["qk_nope_head_dim"], s["qk_rope_head_dim"]
    if s["num_key_value_heads"] != heads:
        raise ModelConfigError(f"num_key_value_heads ({s['num_key_value_heads']}) must equal num_attention_heads "
                               f"({heads}) on a dots3 {layer_type} layer (MLA: one latent for every head)")
    if r.flag("attention_bias"):
        raise ModelConfigError("attention_bias=true with MLA (kv_lora_rank) is not modelled")
    return AttentionSpec("mla", heads, heads, nope + rope, s["v_head_dim"], sliding_window=s.get("sliding_window"),
                         q_lora_rank=s["q_lora_rank"], kv_lora_rank=s["kv_lora_rank"], qk_nope_head_dim=nope,
                         qk_rope_head_dim=rope, head_gate=True,
                         rope_key_norm=r.boolean("k_rope_only_layernorm", default=True),
                         **(dsa_indexer(r) if layer_type == "indexed_attention" else {}))


def _check_gates(r: ConfigReader) -> None:
    """attention_gate_type (vLLM's key): 'headwise' (g_proj, one gate per head) is what transformers builds."""
    for key in ("attention_gate_type", "swa_attention_gate_type"):
        r.switch(key, "headwise", "only the 'headwise' gate (g_proj, one sigmoid per head) is read")


def _moe_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """mlp_layer_types ('sparse' / 'dense'); else MoE from first_k_dense_replace on, where moe_layer_freq (a step, or
    a 0/1 flag per layer) says so (Dots3NoteTextConfig)."""
    types = r.str_list("mlp_layer_types", n_layers, allowed=("dense", "sparse"))
    if types is not None:
        r.used.update(("first_k_dense_replace", "moe_layer_freq"))
        return [t == "sparse" for t in types]
    first = r.count("first_k_dense_replace", default=1)
    if isinstance(r.get("moe_layer_freq"), list):
        return [i >= first and bool(f) for i, f in enumerate(r.int_list("moe_layer_freq", n_layers))]
    step = r.count("moe_layer_freq", default=1, allow_zero=False)
    return [i >= first and i % step == 0 for i in range(n_layers)]


def _ffn(r: ConfigReader, arch: Architecture, d_model: int, moe: bool, d_ff: int):
    """The dense MLP, or the MoE with n_shared_experts shared experts of shared_experts_intermediate_size (its hub
    name moe_shared_expert_intermediate_size), fused into one MLP."""
    f = ffn_spec(r, arch, d_model, moe, d_ff)
    if not moe:
        return f
    shared = r.count("n_shared_experts", default=1, allow_zero=False)
    return replace(f, d_shared=shared * r.dim("shared_experts_intermediate_size",
                                              "moe_shared_expert_intermediate_size"))


def _note(r: ConfigReader, types: list[str], shapes: list[dict]) -> None:
    sliding = [s for t, s in zip(types, shapes) if t == "sliding_attention"]
    if sliding:
        s = sliding[0]
        r.assume(f"dots3: {len(sliding)} of {len(types)} layers (sliding_attention) attend over the last "
                 f"{s['sliding_window']} tokens with an MLA shape of their own ({s['num_attention_heads']} heads, "
                 f"kv_lora_rank {s['kv_lora_rank']}, qk_nope_head_dim {s['qk_nope_head_dim']}) and no indexer; "
                 f"{types.count('indexed_attention')} run DSA, {types.count('full_attention')} full MLA.")
    r.assume("dots3: the rope-key RMSNorm and the rescaled q / kv latents (apply_mla_qkv_lora_rescale) run in MLA's "
             "small kernels (attn.mla_glue); g_proj (d -> heads) is split over tp with the heads.")
    r.used.update(("apply_mla_qkv_lora_rescale", "qk_layernorm", "moe_gating_fp32", "mtp_use_moe", "head_dim",
                   "swa_rope_theta", "swa_attention_gate_type", "use_sliding_window", "scoring_func"))
