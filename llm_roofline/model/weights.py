"""Checkpoint dtype and quantization_config: the storage format of each matrix family."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ..errors import ModelConfigError, RooflineError, shown
from ..units import DTYPE_BITS, WeightFormat, canonical_dtype, weight_format
from .key_names import BOUNDS
from .reader import ConfigReader, as_int
from .spec import ModelSpec, quant_gemm_label

_MAX_GROUP = BOUNDS["quant_group"]


def native_dtype(r: ConfigReader, config: dict) -> str:
    """Checkpoint dtype of the unquantized parts. float32 checkpoints are taken as served in bf16."""
    key, name = next(((k, c[k]) for c in (r.raw, config) for k in ("dtype", "torch_dtype") if c.get(k)), (None, None))
    if name is None:
        r.assume("No torch_dtype in the config: unquantized weights taken as bf16.")
        return "bf16"
    if not isinstance(name, str):
        raise ModelConfigError(f"{key} must be a string naming a dtype, got {type(name).__name__}")
    try:
        dtype = canonical_dtype(name)
    except RooflineError as e:
        raise ModelConfigError(f"{key} {name[:40]!r} is not a known dtype") from e
    if DTYPE_BITS[dtype] > 16:
        r.assume(f"Checkpoint stored in {name}; weights are taken as served in bf16, as serving engines cast "
                 "32-bit checkpoints to 16-bit (override with weight_dtype='fp32').")
        return "bf16"
    return dtype


def quantization(r: ConfigReader, config: dict) -> tuple[WeightFormat | None, tuple[str, ...]]:
    """(storage format of the quantized matrices, families it applies to) from quantization_config."""
    families = ModelSpec.__dataclass_fields__["quantized_families"].default
    q, method = _qconfig(r, config)
    if q is None:
        return None, families
    fmt = _quant_format(r, q, method)
    if fmt is None:
        return None, families
    if method == "mxfp4":  # transformers' Mxfp4 quantizer replaces the MoE experts only
        families = ("experts",)
    key = next((k for k in ("modules_to_not_convert", "ignored_layers", "ignore", "exclude_modules") if q.get(k)),
               None)
    skipped = q[key] if key else []
    if not isinstance(skipped, list):
        raise ModelConfigError(f"quantization_config.{key} must be a list of module names, got {shown(skipped)}")
    families = tuple(f for f in families if not any(_module_family(m) == f for m in skipped))
    listed = ", ".join(m[:60] if isinstance(m, str) else shown(m) for m in skipped[:10])
    listed += " ..." if len(skipped) > 10 else ""
    r.assume(f"Weights quantized per quantization_config ({method}): {fmt.label} on the "
             f"{', '.join(families) or 'no'} matrices; embeddings, LM head, router, norms and biases keep the "
             "checkpoint dtype" + (f" (not converted: {listed})" if skipped else "") + ".")
    return fmt, families


def activation_quant(r: ConfigReader, config: dict, fmt: WeightFormat | None) -> str | None:
    """The dtype the checkpoint quantizes its GEMMs' input activations to ('fp8' | 'int8' | 'fp4'; None: weight-only
    or no quantization_config), read beside the weight format `fmt` quantization() found, and kept where it is the
    weights' own dtype: quant_method fp8 / fbgemm_fp8 with an activation_scheme (static or dynamic), compressed-tensors
    input_activations {num_bits: 8 or 4, type: float | int}, ModelOpt quant_algo FP8* / W8A8* / NVFP4. vLLM runs such
    checkpoints W8A8 (W4A4 for NVFP4: the activations quantized per token, per 128-element group or per 16) where the
    chip has matrix units of that dtype."""
    q, method = _qconfig(r, config)
    if q is None or fmt is None:
        return None
    if method in ("fp8", "fbgemm_fp8"):
        scheme = q.get("activation_scheme", "dynamic" if method == "fbgemm_fp8" else None)
        if scheme is not None and (not isinstance(scheme, str) or scheme.lower() not in ("dynamic", "static")):
            raise ModelConfigError(f"quantization_config.activation_scheme must be 'dynamic' or 'static', got "
                                   f"{shown(scheme)}")
        act, what = ("fp8", f"activation_scheme {scheme}") if scheme else (None, "no activation_scheme")
    elif method == "compressed-tensors":
        act, what = _compressed_tensors_activations(q)
    elif method == "modelopt":
        act, what = _modelopt_activations(q)
    else:
        return None
    if act is not None and act != fmt.dtype:
        r.assume(f"Activations quantized to {act} ({what}) with {fmt.dtype} weights: not modelled as such; priced as "
                 "weight-only quantized GEMMs.")
        return None
    if act is None:
        r.assume(f"quantization_config ({method}, {what}): weight-only; the GEMMs dequantize into the compute dtype.")
        return None
    bits = DTYPE_BITS[act]
    r.assume(f"Checkpoint quantizes the activations to {act} ({method}, {what}): its quantized GEMMs compute in {act} "
             f"where the chip has it ({quant_gemm_label(act)}, as vLLM runs it: a per-token quantization pass, then "
             f"{'an' if bits == 8 else 'a'} {bits}-bit GEMM), else dequantize into the compute dtype; activations "
             "between ops and the KV cache keep their dtypes.")
    return act


def _qconfig(r: ConfigReader, config: dict) -> tuple[dict | None, str]:
    """(quantization_config, its quant_method lower-cased), or (None, '') when the config has none."""
    q = config.get("quantization_config") or r.raw.get("quantization_config")
    if not q:
        return None, ""
    q = _obj(q, "quantization_config")
    method = q.get("quant_method", "")
    if not isinstance(method, str):
        raise ModelConfigError(f"quantization_config.quant_method must be a string, got {type(method).__name__}")
    return q, method.lower()


def _compressed_tensors_activations(q: dict) -> tuple[str | None, str]:
    """(activation dtype, what was read) from the first config group's input_activations."""
    groups = list(_obj(q.get("config_groups") or {}, "quantization_config.config_groups").values())
    first = _obj(groups[0], "quantization_config.config_groups entry") if groups else {}
    acts = first.get("input_activations")
    if not acts:
        return None, "no input_activations"
    acts = _obj(acts, "quantization_config.config_groups.*.input_activations")
    bits, kind = acts.get("num_bits"), acts.get("type", "int")
    if not isinstance(bits, int) or isinstance(bits, bool):
        raise ModelConfigError(f"compressed-tensors input_activations.num_bits must be an integer, got {shown(bits)}")
    act = {("float", 8): "fp8", ("int", 8): "int8", ("float", 4): "fp4", ("int", 4): "int4"}.get((kind, bits))
    if act is None:  # float4 with float4 weights runs W4A4 (NVFP4); int4 activations are priced weight-only
        raise ModelConfigError(f"compressed-tensors input_activations {shown(kind)}{shown(bits)} are not "
                               "modelled; int and float of 4 or 8 bits are")
    return act, f"input_activations {kind}{bits}"


def _modelopt_activations(q: dict) -> tuple[str | None, str]:
    """(activation dtype, what was read) from ModelOpt's quant_algo (flat, or under 'quantization')."""
    inner = q.get("quantization")
    algo = _obj(inner, "quantization_config.quantization").get("quant_algo") if inner is not None \
        else q.get("quant_algo")
    if algo is None:
        return None, "no quant_algo"
    if not isinstance(algo, str):
        raise ModelConfigError(f"ModelOpt quant_algo must be a string, got {type(algo).__name__}")
    algo = algo.upper()
    act = "fp8" if algo.startswith("FP8") else "int8" if algo.startswith("W8A8") else "fp4" if algo == "NVFP4" else None
    return act, f"quant_algo {algo[:40]}"


def expert_formats(r: ConfigReader) -> tuple[tuple[str, WeightFormat], ...]:
    """The routed experts' own storage format when the config names one beside quantization_config
    (DeepSeek-V4: `expert_dtype: fp4`, the experts in MXFP4-style blocks while the rest is fp8)."""
    name = r.get("expert_dtype")
    if name is None:
        return ()
    if not isinstance(name, str):
        raise ModelConfigError(f"expert_dtype must be a string naming a dtype, got {type(name).__name__}")
    try:
        fmt = weight_format(canonical_dtype(name))
    except RooflineError as e:
        raise ModelConfigError(f"expert_dtype {name[:40]!r} is not a known dtype") from e
    r.assume(f"Routed experts stored as {fmt.label} (expert_dtype {name!r}); the other quantized matrices per "
             "quantization_config.")
    return (("experts", fmt),)


def _obj(value: Any, key: str) -> dict:
    if not isinstance(value, dict):
        raise ModelConfigError(f"{key} must be a JSON object, got {type(value).__name__}")
    return value


def _group_of(value: Any, key: str) -> int | None:
    """A group / block size: an integer, or a list of block dims whose product is the group (e.g. [128, 128])."""
    if value in (None, -1, 0, [], False):
        return None
    if isinstance(value, list):
        dims = [as_int(v, f"{key}[{i}]", bound=_MAX_GROUP) for i, v in enumerate(value[:8])]
        if len(value) > 8 or math.prod(dims) > _MAX_GROUP:
            raise ModelConfigError(f"{key} must be up to 8 block dims whose product is at most {_MAX_GROUP:,}")
        return math.prod(dims)
    return as_int(value, key, bound=_MAX_GROUP)


def _quant_format(r: ConfigReader, q: dict, method: str) -> WeightFormat | None:
    if method in ("gptq", "awq"):
        bits = q.get("bits", q.get("w_bit"))
        group = _group_of(q.get("group_size", q.get("q_group_size")), "quantization_config.group_size")
        if isinstance(bits, bool) or bits not in (4, 8):
            raise ModelConfigError(f"quantization_config bits={shown(bits)} ({method}) is not modelled; "
                                   "4 or 8 are")
        return weight_format(f"int{bits}", group)
    if method in ("fp8", "fbgemm_fp8"):
        # DeepSeek-V3: one fp32 scale per 128x128 block
        return weight_format("fp8", _group_of(q.get("weight_block_size"), "quantization_config.weight_block_size"))
    if method == "mxfp4":
        return weight_format("fp4")
    if method == "compressed-tensors":
        return _compressed_tensors_format(r, q)
    if method == "modelopt":
        return _modelopt_format(r, q)
    r.assume(f"quant_method {method[:40]!r} is not modelled: weights taken in the checkpoint's dtype "
             "(override with weight_dtype).")
    return None


def _compressed_tensors_format(r: ConfigReader, q: dict) -> WeightFormat | None:
    groups = list(_obj(q.get("config_groups") or {}, "quantization_config.config_groups").values())
    first = _obj(groups[0], "quantization_config.config_groups entry") if groups else {}
    weights = first.get("weights")
    if not weights:
        r.assume("compressed-tensors config without weight settings: weights taken in the checkpoint's dtype.")
        return None
    weights = _obj(weights, "quantization_config.config_groups.*.weights")
    bits, kind = weights.get("num_bits"), weights.get("type", "int")
    key = (kind, bits) if isinstance(kind, str) and isinstance(bits, int) and not isinstance(bits, bool) else None
    dtype = {("float", 8): "fp8", ("int", 8): "int8", ("int", 4): "int4", ("float", 4): "fp4"}.get(key)
    if dtype is None:
        raise ModelConfigError(f"compressed-tensors weights {shown(kind)}{shown(bits)} are not modelled; "
                               "int4, int8, float4 and float8 are")
    block = weights.get("block_structure")
    where = "quantization_config.config_groups.*.weights"
    group = _group_of(block, f"{where}.block_structure") if block else \
        _group_of(weights.get("group_size"), f"{where}.group_size")
    fmt = weight_format(dtype, group)
    # symmetric int4 stores no zero points (Kimi-K2.5: weight_packed, weight_scale, weight_shape per matrix)
    return replace(fmt, zero_bits=0) if weights.get("symmetric") is True else fmt


def _modelopt_format(r: ConfigReader, q: dict) -> WeightFormat | None:
    """ModelOpt (NVIDIA TensorRT Model Optimizer) checkpoints: quant_algo FP8* (fp8 weights, per-tensor or
    per-channel scales), W8A8* (int8 SmoothQuant) and NVFP4 (fp4 weights in groups of group_size, 16, each with an
    fp8 scale: 4.5 bits); other algorithms are not modelled."""
    act, what = _modelopt_activations(q)
    if act is None:
        r.assume(f"ModelOpt {what} is not modelled: weights taken in the checkpoint's dtype (override with "
                 "weight_dtype).")
        return None
    if act == "fp4":
        inner = q.get("quantization") if isinstance(q.get("quantization"), dict) else q
        # NVFP4's group is 16 by definition (an absent, 0 or -1 group_size: that)
        return weight_format("fp4", _group_of(inner.get("group_size"), "quantization_config.group_size") or 16)
    return weight_format(act)


def _module_family(module: Any) -> str | None:
    """Which quantization family a module path of modules_to_not_convert / ignore names."""
    m = str(module)[:200].lower()
    for needle, fam in (("lm_head", "lm_head"), ("embed", "embed"), ("shared_expert", "shared"),
                        ("router", "router"), ("mlp.gate", "router"), ("experts", "experts"),
                        ("attn", "attn"), ("attention", "attn"), ("mlp", "ffn")):
        if needle in m:
            return fam
    return None
