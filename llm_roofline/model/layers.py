"""Per-layer readers: attention (GQA / MQA / MLA, windows) and feed-forward (dense / MoE), and grouping.

Per-layer structure is read as small per-layer keys (window, rope, MoE or dense, FFN width); identical keys share one
AttentionSpec / FfnSpec, built once. Every per-layer list is as long as num_hidden_layers, which the reader has
already bounded (key_names.BOUNDS).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .architectures import GEMMA4_TYPES
from .key_names import (ACTIVATION_KEYS, BOUNDS, GATED_ACTIVATIONS, HEADS_KEYS, KV_HEADS_KEYS, LAYER_TYPE_WINDOWS,
                        MLA_KEYS, N_EXPERTS_KEYS, SHARED_EXPERTS_KEYS, TOP_K_KEYS)
from .traits import Architecture
from .cohere import cohere2_moe_window_kinds
from .reader import ConfigReader, as_int, require_divides
from .spec import AttentionSpec, FfnSpec, LayerGroup


# ---------------------------------------------------------------------------- attention
def attention_spec(r: ConfigReader, arch: Architecture, d_model: int, window: int | None, rope: bool,
                   n_kv: int | None = None, indexer: bool = True) -> AttentionSpec:
    """One layer's attention; n_kv: this layer's own key/value heads (Nemotron-NAS blocks), else the config's;
    indexer: whether a DSA layer runs its own indexer (GLM-5 'shared' layers reuse the previous layer's top-k)."""
    n_heads = r.dim(*HEADS_KEYS)
    common = dict(sliding_window=window, qkv_bias=r.flag(arch.qkv_bias), o_bias=r.flag(arch.o_bias),
                  rope=rope, qk_norm=r.flag(arch.qk_norm), sinks=arch.sinks,
                  qk_norm_across_heads=arch.qk_norm_across_heads, output_gate=arch.output_gate,
                  head_gate=r.flag(arch.head_gate))
    mla = r.boolean("use_mla", default=True)  # false: DeepSeek-VL2-Tiny / DeepSeek-OCR's decoder, plain MHA
    if not mla:
        r.used.update(MLA_KEYS)  # stated as null / 0 beside use_mla false
        r.assume("use_mla is false: DeepSeek-V2's multi-head attention without the latent (q, k, v, o of "
                 "hidden_size / num_attention_heads per head, as vLLM's DeepseekAttention); the MLA keys are not read.")
    elif r.stated("kv_lora_rank"):
        return mla_attention(r, n_heads, common, indexer)
    n_kv = n_kv or _kv_heads(r, n_heads)
    require_divides(n_heads, "num_attention_heads", n_kv, "the number of key/value heads")
    head_dim = _head_dim(r, d_model, n_heads)
    # MiMo-V2: values narrower than keys
    v_head_dim = r.dim("v_head_dim") if mla and r.stated("v_head_dim") else head_dim
    return AttentionSpec(heads_kind(n_heads, n_kv), n_heads, n_kv, head_dim, v_head_dim, **common)


def heads_kind(n_heads: int, n_kv: int) -> str:
    return "mqa" if n_kv == 1 and n_heads > 1 else "mha" if n_kv == n_heads else "gqa"


def mla_attention(r: ConfigReader, n_heads: int, common: dict, indexer: bool = True) -> AttentionSpec:
    """DeepSeek-V2/V3 multi-head latent attention: one compressed KV latent + one shared rope key per token."""
    nope, rope = r.dim("qk_nope_head_dim"), r.dim("qk_rope_head_dim")
    q_rank = r.dim("q_lora_rank", required=False)  # null (V2-Lite): a plain q_proj
    if q_rank is None:
        r.assume("q_lora_rank is null: queries use a plain q_proj (no low-rank compression).")
    # DeepSeek's attention_bias puts a bias on q_a_proj / kv_a_proj / o_proj; the spec models o_proj's only.
    if r.flag("attention_bias"):
        raise ModelConfigError("attention_bias=true with MLA (kv_lora_rank) is not modelled")
    return AttentionSpec("mla", n_heads, n_heads, nope + rope, _v_head_dim(r, n_heads), q_lora_rank=q_rank,
                         kv_lora_rank=r.dim("kv_lora_rank"), qk_nope_head_dim=nope, qk_rope_head_dim=rope,
                         **{**common, "qkv_bias": False, "o_bias": False}, **dsa_indexer(r, indexer))


def _v_head_dim(r: ConfigReader, n_heads: int) -> int:
    """MLA's value head width; MiniCPM3's hub config leaves it out: hidden_size / heads (its modeling code's)."""
    if r.model_type != "minicpm3" or r.stated("v_head_dim"):
        return r.dim("v_head_dim")
    d_model = r.dim("hidden_size")
    require_divides(d_model, "hidden_size", n_heads, "num_attention_heads", " (MiniCPM3: v_head_dim = hidden / heads)")
    width = d_model // n_heads
    return r.dim("v_head_dim", fallback=(width, f"hidden_size / num_attention_heads = {width}, MiniCPM3's"))


_DSA_TYPES = ("deepseek_v32", "glm_moe_dsa", "dots3_note", "dots3_note_text", "axk2", "hy_v4", "hy_v4_vl_text",
              "mistral_large4_text")
_MIMO_TYPES = ("mimo_v2_flash", "mimo_v2")


def dsa_indexer(r: ConfigReader, indexer: bool = True) -> dict:
    """DeepSeek sparse attention (V3.2, GLM-5, dots3, A.X-K2, Hy4): the lightning indexer's top-k and dims, when the
    config (its model_type: scope.py refuses index keys elsewhere) has them or its type always runs one; a layer
    without its own indexer keeps the top-k only (no indexer weights, no index-key cache)."""
    if r.stated("index_topk") is None and r.model_type not in _DSA_TYPES:
        return {}
    if not indexer:
        return dict(index_topk=r.dim("index_topk"))
    r.assume("DSA: the indexer's key cache (index_head_dim per token) is counted in the KV-cache dtype (DeepSeek "
             "stores it in fp8 with a scale); the indexer (projections, scores, top-k) runs whole on every tp chip of "
             "an attention group, as vLLM and SGLang replicate it (attention_dp splits the sequences instead), in "
             "the compute dtype (DeepSeek's kernel uses fp8); its scores over every key are written to and read "
             "back from HBM for the top-k selection; prefill reads "
             "min(context, index_topk) cached entries per sequence (a lower bound: each query picks its own).")
    return dict(index_topk=r.dim("index_topk"), index_n_heads=r.dim("index_n_heads"),
                index_head_dim=r.dim("index_head_dim"))


def _kv_heads(r: ConfigReader, n_heads: int) -> int:
    """Key/value heads: GQA key, or Falcon / GPT-BigCode multi_query (one KV head), else = heads (MHA)."""
    if r.boolean("new_decoder_architecture"):  # Falcon-40B/180B: grouped KV heads in num_kv_heads
        return r.dim("num_kv_heads")
    multi_query = r.typed("multi_query", (bool,), "true or false")
    if multi_query is not None:  # Falcon-7B, GPT-BigCode: a single KV head when true, else one per query head
        if "multi_query" not in r.raw:
            r.assume(f"multi_query absent from the config: {r.default_label} {multi_query}.")
        return 1 if multi_query else n_heads
    return r.dim(*KV_HEADS_KEYS, fallback=(n_heads, f"= num_attention_heads ({n_heads}), i.e. multi-head attention"))


def _head_dim(r: ConfigReader, d_model: int, n_heads: int) -> int:
    """head_dim from the file (Qwen3, Gemma: not hidden/heads); else the class default; else hidden/heads."""
    if r.stated("head_dim"):
        return r.dim("head_dim")
    default = r.defaults.get("head_dim") if "head_dim" not in r.raw else None
    derived = d_model // n_heads
    if default is not None and (default != derived or d_model % n_heads):
        r.assume(f"head_dim absent from the config: {r.default_label} {default} (not hidden_size/heads).")
        return as_int(default, "head_dim")
    require_divides(d_model, "hidden_size", n_heads, "num_attention_heads", " and the config gives no head_dim")
    r.assume(f"head_dim absent from the config: hidden_size/num_attention_heads = {derived}.")
    return derived


def layer_indexers(r: ConfigReader, n_layers: int) -> list[bool]:
    """Whether each DSA layer runs its own indexer: GLM-5's indexer_types ('full' / 'shared'), else
    index_topk_pattern (F / S letters), else every index_topk_freq-th layer from index_skip_topk_offset
    (configuration_glm_moe_dsa.py); every layer elsewhere."""
    if r.get("model_type") != "glm_moe_dsa":
        return [True] * n_layers
    return indexer_schedule(r, n_layers)


def indexer_schedule(r: ConfigReader, n_layers: int) -> list[bool]:
    """GLM-5's schedule of indexer layers (Mistral-Large-4's too): indexer_type_list, each entry 'full' or 'shared',
    the first 'full'."""
    types = indexer_type_list(r, n_layers)
    bad = next((t for t in types if t not in ("full", "shared")), None)
    if bad is not None or types[0] != "full":
        raise ModelConfigError("indexer_types must be 'full' or 'shared' per layer, the first 'full' (a shared layer "
                               f"reuses the previous full layer's top-k), got {shown(bad or types[0])}")
    if "shared" in types:
        r.assume(f"DSA: {types.count('shared')} of {n_layers} layers reuse the previous indexer layer's top-k "
                 "(indexer_types 'shared'): no indexer weights, compute or index-key cache there.")
    return [t == "full" for t in types]


def indexer_type_list(r: ConfigReader, n_layers: int) -> list:
    """The per-layer indexer modes GLM-5's config classes derive (GlmMoeDsaConfig, Glm5NextTextConfig): indexer_types,
    else index_topk_pattern (F / S letters), else 'full' on every index_topk_freq-th layer from
    index_skip_topk_offset, 'shared' elsewhere; the entries of a stated list are not checked here."""
    types = r.str_list("indexer_types", n_layers)
    pattern = r.get("index_topk_pattern")
    if types is None and isinstance(pattern, str):
        if len(pattern) != n_layers or set(pattern) - {"F", "S"}:
            raise ModelConfigError(f"index_topk_pattern must be {n_layers} letters F or S, got {pattern[:80]!r}")
        types = ["full" if c == "F" else "shared" for c in pattern]
    elif types is None and pattern is not None:
        types = r.str_list("index_topk_pattern", n_layers)
    elif types is None:
        freq = r.count("index_topk_freq", default=1, allow_zero=False)
        offset = r.count("index_skip_topk_offset", default=2)
        types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n_layers)]
    return types


# ---------------------------------------------------------------------------- MiMo-V2
def mimo_attention(r: ConfigReader, spec: AttentionSpec) -> AttentionSpec:
    """A MiMo-V2-Flash sliding-window layer. The hub's config states its shape in swa_num_attention_heads,
    swa_num_key_value_heads, swa_head_dim, swa_v_head_dim and add_swa_attention_sink_bias; transformers' own
    (modeling_mimo_v2_flash.py) doubles num_key_value_heads there and adds attention sinks."""
    if r.stated("swa_num_key_value_heads") is None:
        n_kv = 2 * spec.n_kv_heads
        return replace(spec, kind=heads_kind(spec.n_heads, n_kv), n_kv_heads=n_kv, sinks=True)
    heads = r.dim("swa_num_attention_heads", required=False) or spec.n_heads
    n_kv = r.dim("swa_num_key_value_heads")
    require_divides(heads, "swa_num_attention_heads", n_kv, "swa_num_key_value_heads")
    head_dim = r.dim("swa_head_dim", required=False) or spec.head_dim
    return replace(spec, kind=heads_kind(heads, n_kv), n_heads=heads, n_kv_heads=n_kv, head_dim=head_dim,
                   v_head_dim=r.dim("swa_v_head_dim", required=False) or head_dim,
                   sinks=r.boolean("add_swa_attention_sink_bias"))


def mimo_full_attention(r: ConfigReader, spec: AttentionSpec) -> AttentionSpec:
    """A MiMo-V2-Flash full-attention layer: sinks only where the hub's config says add_full_attention_sink_bias."""
    return replace(spec, sinks=r.boolean("add_full_attention_sink_bias"))


# ---------------------------------------------------------------------------- Step-3.5
def step3p5_attention(r: ConfigReader, spec: AttentionSpec) -> AttentionSpec:
    """A Step-3.5 sliding-window layer: num_sliding_attention_heads query heads (the hub's attention_other_setting
    num_attention_heads), the config's key/value heads and head_dim (Step3p7TextConfig reads only the head count
    there: other sliding-layer shapes are refused)."""
    heads = r.dim("num_sliding_attention_heads", required=False)
    other = r.typed("attention_other_setting", (dict,), "an object", {})
    if heads is None and other.get("num_attention_heads") is not None:
        heads = as_int(other["num_attention_heads"], "attention_other_setting.num_attention_heads",
                       bound=BOUNDS["heads"])
    for key, own in (("num_attention_groups", spec.n_kv_heads), ("num_key_value_heads", spec.n_kv_heads),
                     ("head_dim", spec.head_dim)):
        if other.get(key) is not None and (type(other[key]) is not int or other[key] != own):
            raise UnsupportedArchitectureError(f"attention_other_setting.{key} ({shown(other[key])}) differs from "
                                               f"the config's ({own}) (model_type=step3p5): sliding layers with their "
                                               "own key/value heads or head_dim are not read")
    heads = heads or spec.n_heads
    require_divides(heads, "the sliding layers' attention heads", spec.n_kv_heads, "the number of key/value heads")
    return replace(spec, kind=heads_kind(heads, spec.n_kv_heads), n_heads=heads)


_STEP3P5_MOE = (range(3, BOUNDS["layers"] + 1), "Step3p7TextConfig's default, the first 3 layers dense and the others MoE")


def step3p5_moe_layers(r: ConfigReader, n_layers: int, absent: tuple[range, str] = _STEP3P5_MOE) -> list[bool]:
    """Step-3.5's MoE layers (Step-3's too): mlp_layer_types ('sparse'), else moe_layers_enum (the hub's MoE layer
    indices, '3,4,...' or a list; indices of its MTP layers, from num_hidden_layers on, left out), else the config
    class's default (absent: its layers and the sentence naming them; Step3p7TextConfig: every layer from the fourth)."""
    types = r.str_list("mlp_layer_types", n_layers, trailing=r.count("num_nextn_predict_layers"))
    if types is not None:
        return [t == "sparse" for t in types]
    enum = r.get("moe_layers_enum")
    if enum is None:
        r.assume(f"moe_layers_enum absent from the config: {absent[1]}.")
        return [i in absent[0] for i in range(n_layers)]
    what = "comma-separated layer indices ('3,4,5') or a list of them"
    if isinstance(enum, str):
        items = [x.strip() for x in enum[:1_000_000].split(",") if x.strip()]
        if not all(x.isascii() and x.isdigit() for x in items):
            raise ModelConfigError(f"moe_layers_enum must be {what}, got {enum[:40]!r}")
        enum = [int(x) if len(x) < 4000 else BOUNDS["layers"] + 1 for x in items]  # int() refuses longer
    elif not isinstance(enum, list):
        raise ModelConfigError(f"moe_layers_enum must be {what}, got {shown(enum)}")
    moe = {as_int(v, f"moe_layers_enum[{i}]", allow_zero=True, bound=BOUNDS["layers"])
           for i, v in enumerate(enum[: BOUNDS["layers"] + 1])}
    return [i in moe for i in range(n_layers)]


def mtp_entries(r: ConfigReader, arch: Architecture) -> int:
    """Trailing MTP entries a per-layer list may carry (Step-3.5's hub config: num_nextn_predict_layers)."""
    return r.count("num_nextn_predict_layers") if arch.mtp_lists else 0


# ---------------------------------------------------------------------------- windows and positions
def layer_windows(r: ConfigReader, arch: Architecture, n_layers: int) -> list[int | None]:
    """Attention window of each layer (None: full attention), from layer_types or the model's window pattern."""
    kinds = _layer_window_kinds(r, arch, n_layers)
    window = r.dim("sliding_window", "window_size", *(("sliding_window_size",) if r.get("model_type") in _MIMO_TYPES
                                                      else ()), required=False) if "window" in kinds else None
    if "window" in kinds and window is None:
        raise ModelConfigError("layers use sliding-window attention but sliding_window is not set")
    chunk = r.dim("attention_chunk_size", required=False) if "chunk" in kinds else None
    if "chunk" in kinds and chunk is None:
        raise ModelConfigError("layers use chunked attention but attention_chunk_size is not set")
    if chunk is not None:
        r.assume(f"Chunked attention (attention_chunk_size {chunk}, {kinds.count('chunk')} of {n_layers} layers) is "
                 f"modelled as a sliding window of {chunk}: a chunk sees between 1 and {chunk} keys, the window up "
                 "to its size, so attention FLOPs and KV reads are an upper bound; the KV cap is the same.")
    by_kind = {None: None, "window": window, "chunk": chunk}
    return [by_kind[k] for k in kinds]


_WINDOW_PATTERN_KEYS = ("sliding_window_pattern", "_sliding_window_pattern", "global_attn_every_n_layers")


def _layer_window_kinds(r: ConfigReader, arch: Architecture, n_layers: int) -> list[str | None]:
    hybrid = r.int_list("hybrid_layer_pattern", n_layers) if r.get("model_type") in _MIMO_TYPES else None
    if hybrid is not None:  # MiMo-V2 hub config: 1 = sliding-window layer, 0 = full attention
        return ["window" if v else None for v in hybrid]
    types = r.str_list("layer_types", n_layers, trailing=mtp_entries(r, arch))
    if types is not None:  # the pattern keys beside it are what it was derived from (EXAONE's "LLLG")
        r.used.update(_WINDOW_PATTERN_KEYS + (("sliding_window",) if arch.windows_from_types else ()))
        unknown = sorted({t for t in types if t not in LAYER_TYPE_WINDOWS})
        if unknown:
            raise ModelConfigError(f"unknown attention kind(s) in layer_types: {', '.join(map(repr, unknown))}; "
                                   f"known: {', '.join(LAYER_TYPE_WINDOWS)}")
        return [LAYER_TYPE_WINDOWS[t] for t in types]
    if r.get("model_type") == "cohere2_moe":  # Cohere2MoeConfig: a prefix run and the rest, each with its pattern
        return cohere2_moe_window_kinds(r, n_layers)
    if arch.windows_from_types:  # Step3p7TextConfig, Laguna, Mellum: every layer full attention without layer_types
        r.used.add("sliding_window")
        return [None] * n_layers
    if r.get("attention_types") is not None:  # GPT-Neo: [[["global", "local"], 6]] -> global, local, ... 12 layers
        return _gpt_neo_kinds(r, n_layers)
    if arch.chunked_attention:  # Llama-4: the RoPE layers (no_rope_layers[i] = 1) use chunked attention
        if r.get("attention_chunk_size") is None:
            return [None] * n_layers
        return ["chunk" if rope else None for rope in _llama4_rope_layers(r, n_layers)]
    if arch.window_from_layer:  # dots1: from max_window_layers on, when a window is set
        first = r.count("max_window_layers")
        return ["window" if r.get("sliding_window") and i >= first else None for i in range(n_layers)]
    if r.get("use_sliding_window") is False:  # Qwen2/Qwen3: a sliding_window value that is switched off
        r.used.update(("sliding_window", "max_window_layers"))
        return [None] * n_layers
    if arch.nope_full_layers and r.get("sliding_window") is None:  # Exaone4Config: no window, no pattern
        r.used.update(_WINDOW_PATTERN_KEYS)
        return [None] * n_layers
    key = next((k for k in _WINDOW_PATTERN_KEYS if r.get(k) is not None), None)
    pattern = r.get(key) if key else None
    if isinstance(pattern, str) and key == "sliding_window_pattern":  # EXAONE: "LLLG"
        return _letter_pattern(pattern, n_layers)
    # AFMoE's key, EXAONE's and PLaMo-3's are never 0 (their config classes divide by it) nor true (Gemma-3's legacy 2)
    strict = key == "global_attn_every_n_layers" or key == "sliding_window_pattern" and (
        arch.nope_full_layers or r.get("model_type") == "plamo3")
    if pattern or strict:  # Gemma-3, AFMoE, EXAONE: every p-th layer global
        p = 2 if pattern is True and not strict else as_int(pattern, key, bound=n_layers + 1)
        return [None if (i + 1) % p == 0 else "window" for i in range(n_layers)]
    if r.get("model_type") == "gemma2":  # Gemma-2 without layer_types: even layers local, odd global
        return ["window" if i % 2 == 0 else None for i in range(n_layers)]
    if r.boolean("use_sliding_window"):  # Qwen2: layers from max_window_layers on use the window
        first = r.count("max_window_layers")
        return ["window" if i >= first else None for i in range(n_layers)]
    window = r.get("sliding_window")
    return ["window" if window else None] * n_layers  # Mistral-7B-v0.1, Phi-3: one window on every layer when set


def _letter_pattern(pattern: str, n_layers: int) -> list[str | None]:
    """EXAONE's sliding_window_pattern as letters: L (sliding) or G (global) from layer 0, repeated; the last layer
    global whatever its letter (Exaone4Config's docstring)."""
    if not pattern or len(pattern) > n_layers or set(pattern) - {"L", "G"}:
        raise ModelConfigError(f"sliding_window_pattern must be a count or letters L (sliding) and G (global), at "
                               f"most one per layer, got {pattern[:40]!r}")
    kinds: list[str | None] = ["window" if pattern[i % len(pattern)] == "L" else None for i in range(n_layers)]
    return kinds[:-1] + [None]


def _gpt_neo_kinds(r: ConfigReader, n_layers: int) -> list[str | None]:
    """GPT-Neo attention_types: [[pattern, repeats], ...]; 'local' layers attend within window_size tokens."""
    spec = r.typed("attention_types", (list,), "a list of [pattern, repeats] pairs")
    kinds: list[str | None] = []
    for item in spec:
        ok = isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)
        if not ok or any(t not in ("global", "local") for t in item[0]):
            raise ModelConfigError("attention_types must be a list of [[\"global\" | \"local\", ...], repeats] pairs")
        repeats = as_int(item[1], "attention_types repeats", bound=n_layers)
        if len(kinds) + len(item[0]) * repeats > n_layers:
            break  # reported below, before any list longer than the layers is built
        kinds += ["window" if t == "local" else None for t in item[0]] * repeats
    if len(kinds) != n_layers:
        raise ModelConfigError(f"attention_types must describe one layer each ({n_layers}), got {len(kinds)}")
    r.used.add("window_size")
    return kinds


def _llama4_rope_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """Llama-4, SmolLM3: no_rope_layers[i] = 1 when layer i uses RoPE (Llama-4: and chunked attention), else NoPE."""
    flags = r.int_list("no_rope_layers")
    if flags:
        if len(flags) < n_layers:
            raise ModelConfigError(f"no_rope_layers must list at least one entry per layer ({n_layers}), "
                                   f"got {len(flags)}")
        return [bool(f) for f in flags[:n_layers]]
    interval = r.count("no_rope_layer_interval", default=4, allow_zero=False)
    return [(i + 1) % interval != 0 for i in range(n_layers)]


def layer_ropes(r: ConfigReader, arch: Architecture, n_layers: int, windows: list | None = None) -> list[bool]:
    """Whether each layer applies RoPE: not with ALiBi or learned positions; Llama-4's NoPE layers neither, nor
    EXAONE's full-attention layers when the config sets a window (their windows: `windows`)."""
    if not arch.rope or r.boolean("alibi") or r.typed("attn_config", (dict,), "an object", {}).get("alibi"):
        return [False] * n_layers
    if arch.nope_full_layers and windows is not None and r.get("sliding_window") is not None:
        return [w is not None for w in windows]
    if arch.chunked_attention or arch.nope_layers:
        return _llama4_rope_layers(r, n_layers)
    return [True] * n_layers


# ---------------------------------------------------------------------------- which layers are MoE
def moe_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """Which layers route to experts, by whichever rule the config states; every layer when it only has experts."""
    n_experts = r.dim(*N_EXPERTS_KEYS, required=False)
    if n_experts is None or n_experts == 1 and r.stated(*TOP_K_KEYS) is None:
        return [False] * n_layers
    types = r.str_list("mlp_layer_types", n_layers, allowed=("dense", "sparse"))
    if types is not None:  # first_k_dense_replace beside it is what it was derived from (EXAONE-MoE's config class)
        r.used.add("first_k_dense_replace")
        return [t == "sparse" for t in types]
    explicit = r.int_list("moe_layers")  # Llama-4: indices of the MoE layers (overrides interleave_moe_layer_step)
    if explicit is not None:
        r.used.add("interleave_moe_layer_step")
        moe = set(explicit)
        return [i in moe for i in range(n_layers)]
    freq = r.get("moe_layer_freq")
    if isinstance(freq, list):  # MiniMax-M3, MiMo-V2-Flash: a 0/1 flag per layer
        return [bool(f) for f in r.int_list("moe_layer_freq", n_layers)]
    rule = _moe_rule(r, n_layers)
    return [rule(i) for i in range(n_layers)]


def _moe_rule(r: ConfigReader, n_layers: int):
    """A predicate on the layer index combining the index rules of DeepSeek, Qwen-MoE, Llama-4 and ERNIE-4.5."""
    first_dense = max(r.count("first_k_dense_replace"), r.count("num_dense_layers"))  # DeepSeek; LFM2-MoE, AFMoE
    freq = r.count("moe_layer_freq", default=1, allow_zero=False)
    step = r.count("decoder_sparse_step", default=1, allow_zero=False)  # Qwen-MoE
    interleave = r.count("interleave_moe_layer_step", default=1, allow_zero=False)  # Llama-4
    start = r.count("moe_layer_start_index", default=0)  # ERNIE-4.5
    end = r.get("moe_layer_end_index", default=-1)
    end = n_layers - 1 if end == -1 else as_int(end, "moe_layer_end_index", allow_zero=True)
    interval = r.count("moe_layer_interval", default=1, allow_zero=False)
    dense_only = set(r.int_list("mlp_only_layers", default=[]) or [])
    return (lambda i: i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and (i + 1) % interleave == 0
            and start <= i <= end and (i + 1) % interval == 0 and i not in dense_only)


# ---------------------------------------------------------------------------- feed-forward
def activation(r: ConfigReader) -> str:
    value = r.get(*ACTIVATION_KEYS, default="silu")
    if not isinstance(value, str):
        raise ModelConfigError(f"hidden_act must be a string naming the activation, got {type(value).__name__}")
    return value


def ffn_spec(r: ConfigReader, arch: Architecture, d_model: int, moe: bool, d_ff: int) -> FfnSpec:
    act = activation(r)
    gated = _gated(r, arch, act)
    bias = r.flag(arch.mlp_bias)
    if not moe:
        return FfnSpec("dense", d_ff, gated, act, bias, down_bias=arch.down_bias)
    n_experts = r.dim(*N_EXPERTS_KEYS)
    top_k = r.dim(*TOP_K_KEYS)
    if top_k > n_experts:
        raise ModelConfigError(f"num_experts_per_tok ({top_k}) exceeds the number of experts ({n_experts})")
    d_expert = r.dim(*arch.expert_keys)
    return FfnSpec("moe", 0, gated, act, bias, n_experts=n_experts, top_k=top_k, d_expert=d_expert,
                   d_shared=_shared_width(r, arch, d_expert), shared_gate=_has_qwen_shared(r) and arch.shared_gate,
                   router_bias=r.flag(arch.router_bias))


def layer_d_ffs(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> list[int]:
    """Dense intermediate size of each layer: one value, or a per-layer list (Gemma-3n style); 4·hidden where
    the architecture defines it so (GPT-2, GPT-J, BLOOM, Falcon), MPT's expansion_ratio·hidden, or Nemotron-NAS
    block_configs' ffn_mult."""
    blocks = _blocks(r, n_layers)
    if blocks is not None:  # a block without FFN (no_op) has width 0 (layer_noops says so)
        return [0 if _no_op(b, "ffn", i) else _ffn_mult_to_intermediate_size(_ffn_mult(b, i), d_model)
                for i, b in enumerate(blocks)]
    key = r.stated(*arch.ffn_keys) if arch.ffn_keys else None
    if key is not None and isinstance(r.raw[key], list):
        return r.int_list(key, n_layers)
    ratio = r.get("expansion_ratio")
    if key is None and ratio is not None:
        return [as_int(ratio, "expansion_ratio", bound=BOUNDS["ffn_ratio"]) * d_model] * n_layers
    fallback = None
    mult = arch.ffn_mult or (4 if not arch.ffn_keys else None)
    if mult:
        fallback = (mult * d_model, f"{mult}·hidden_size = {mult * d_model}, the architecture's definition")
    if not arch.ffn_keys:
        r.assume(f"MLP width: {fallback[1]}.")
        return [fallback[0]] * n_layers
    return [r.dim(*arch.ffn_keys, fallback=fallback, required=False) or 0] * n_layers


# ---------------------------------------------------------------------------- Nemotron-NAS (deci) blocks
def _blocks(r: ConfigReader, n_layers: int) -> list[dict] | None:
    """block_configs, one object per layer (scope.py has refused blocks without attention or FFN)."""
    blocks = r.typed("block_configs", (list,), "a list of objects, one per layer")
    if blocks is None:
        return None
    if len(blocks) != n_layers or not all(isinstance(b, dict) for b in blocks):
        raise ModelConfigError(f"block_configs must list one object per layer ({n_layers})")
    return blocks


def _block_part(block: dict, part: str, i: int) -> dict:
    sub = block.get(part)
    if not isinstance(sub, dict):
        raise ModelConfigError(f"block_configs[{i}].{part} must be an object")
    return sub


def _no_op(block: dict, part: str, i: int) -> bool:
    value = _block_part(block, part, i).get("no_op", False)
    if not isinstance(value, bool):
        raise ModelConfigError(f"block_configs[{i}].{part}.no_op must be true or false, got {shown(value)}")
    return value


def layer_noops(r: ConfigReader, n_layers: int) -> list[tuple[bool, bool]]:
    """(attention left out, FFN left out) per layer: Nemotron-NAS block_configs no_op (DeciLM builds neither the
    part nor its norm there), else (False, False)."""
    blocks = _blocks(r, n_layers)
    if blocks is None:
        return [(False, False)] * n_layers
    out = [(_no_op(b, "attention", i), _no_op(b, "ffn", i)) for i, b in enumerate(blocks)]
    empty = sum(1 for a, f in out if a and f)
    if empty:
        r.assume(f"block_configs: {empty} of {n_layers} blocks have neither attention nor FFN (both no_op): they pass "
                 "the hidden state through unchanged and are left out (no weights, no work).")
    return out


def _ffn_mult(block: dict, i: int) -> float:
    mult = _block_part(block, "ffn", i).get("ffn_mult")
    if isinstance(mult, bool) or not isinstance(mult, (int, float)) or not 0 < mult <= BOUNDS["ffn_ratio"]:
        raise ModelConfigError(f"block_configs[{i}].ffn.ffn_mult must be a number in (0, {BOUNDS['ffn_ratio']}], "
                               f"got {shown(mult)}")
    return mult


def _ffn_mult_to_intermediate_size(ffn_mult: float, d_model: int) -> int:
    """DeciLM (modeling_decilm.py, as in vLLM / SGLang / TensorRT-LLM): int(2·ffn_mult·d/3) rounded up to 256."""
    size = int(2 * ffn_mult * d_model / 3)
    return size if size % 256 == 0 else size + 256 - size % 256


def layer_kv_heads(r: ConfigReader, n_layers: int) -> list[int | None]:
    """Each layer's key/value heads where the config gives them per layer (block_configs n_heads_in_group)."""
    blocks = _blocks(r, n_layers)
    if blocks is None:
        return [None] * n_layers
    n_heads = r.dim(*HEADS_KEYS)
    out = []
    for i, b in enumerate(blocks):
        if _no_op(b, "attention", i):
            out.append(None)
            continue
        group = as_int(_block_part(b, "attention", i).get("n_heads_in_group"),
                       f"block_configs[{i}].attention.n_heads_in_group", bound=n_heads)
        require_divides(n_heads, "num_attention_heads", group, f"block_configs[{i}].attention.n_heads_in_group")
        out.append(n_heads // group)
    return out


def _has_qwen_shared(r: ConfigReader) -> bool:
    return bool(r.get("shared_expert_intermediate_size", default=0))


def _shared_width(r: ConfigReader, arch: Architecture, d_expert: int) -> int:
    """Total intermediate size of the always-on shared expert(s)."""
    if arch.shared_keys:  # Step-3.5: one shared expert of share_expert_dim (or its twin), always built
        widths = {k: r.dim(k) for k in arch.shared_keys if r.stated(k)} or {"": r.dim(*arch.shared_keys)}
        if len(set(widths.values())) > 1:
            raise ModelConfigError(f"{' and '.join(widths)} differ ({', '.join(map(str, widths.values()))}): one "
                                   "shared expert width is read")
        return next(iter(widths.values()))
    if _has_qwen_shared(r):  # Qwen2-MoE: one shared expert of this size, behind a sigmoid gate
        return r.dim("shared_expert_intermediate_size")
    key = r.stated(*SHARED_EXPERTS_KEYS)
    if key is not None:  # DeepSeek, ERNIE: n experts of moe_intermediate_size, fused into one MLP
        return as_int(r.raw[key], key, allow_zero=True) * d_expert
    default = next((r.defaults[k] for k in SHARED_EXPERTS_KEYS if k in r.defaults), None)
    if default:
        r.assume(f"{SHARED_EXPERTS_KEYS[0]} absent from the config: {r.default_label} {default}.")
        return default * d_expert
    return arch.fixed_shared_experts * d_expert  # Llama-4: one shared expert of intermediate_size


def _gated(r: ConfigReader, arch: Architecture, act: str) -> bool:
    """Gated (up + gate matrices) per the architecture table; an unknown model_type decides from the activation."""
    if arch.gated is not None:
        return arch.gated
    gated = act.lower() in GATED_ACTIVATIONS
    r.assume(f"MLP taken as {'gated (3 matrices)' if gated else 'plain (2 matrices)'} from activation "
             f"{act!r}; the activation alone does not say whether the MLP is gated.")
    return gated


# ---------------------------------------------------------------------------- blocks and grouping
def parallel_block(r: ConfigReader, arch: Architecture) -> bool:
    return r.flag(arch.parallel)


def norms_per_block(r: ConfigReader, arch: Architecture, model_type: str) -> int:
    if model_type in GEMMA4_TYPES and r.boolean("enable_moe_block"):
        return 7  # + post_feedforward_layernorm_1/_2 and pre_feedforward_layernorm_2 around the experts
    if model_type == "falcon" and r.flag(arch.parallel):
        # Falcon-7B: one input_layernorm; new_decoder_architecture: ln_attn + ln_mlp (num_ln_in_parallel_attn)
        if r.boolean("new_decoder_architecture"):
            return r.count("num_ln_in_parallel_attn", default=2, allow_zero=False) if \
                r.get("num_ln_in_parallel_attn") is not None else 2
        return 1
    return arch.norms


def group_layers(layers: list[tuple[AttentionSpec, FfnSpec]], parallel: bool, norms: int) -> tuple[LayerGroup, ...]:
    """One LayerGroup per distinct (attention, ffn), in order of first occurrence, with its layer count."""
    counts: dict[tuple[AttentionSpec, FfnSpec], int] = {}
    for key in layers:
        counts[key] = counts.get(key, 0) + 1
    any_window = any(a.sliding_window for a, _ in counts)
    any_moe = any(f.kind == "moe" for _, f in counts)
    seen: dict[str, int] = {}
    groups = []
    for (attn, ffn), n in counts.items():
        parts = (["sliding" if attn.sliding_window else "full"] if any_window else []) + \
                ([ffn.kind] if any_moe or not any_window else []) + (["kv-reused"] if attn.kv_reused else []) + \
                (["sparse-act"] if ffn.activation_sparsity else [])
        base = "attention" if ffn.kind == "none" else "mlp" if attn.kind == "none" else ".".join(parts)
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base}-{seen[base]}"  # e.g. two different windows
        # a block without attention or FFN (Nemotron-NAS no_op) has no norm in front of it either
        own_norms = norms - (attn.kind == "none") - (ffn.kind == "none")
        groups.append(LayerGroup(name, n, attn, ffn, parallel, own_norms))
    return tuple(groups)
