"""Checkpoint dtype and quantization_config: the storage format of each matrix family."""

from __future__ import annotations

import math

from ..errors import ModelConfigError, RooflineError
from ..units import DTYPE_BITS, WeightFormat, canonical_dtype, weight_format
from .reader import ConfigReader, as_int
from .spec import ModelSpec


def native_dtype(r: ConfigReader, config: dict) -> str:
    """Checkpoint dtype of the unquantized parts. float32 checkpoints are taken as served in bf16."""
    name = next((c[k] for c in (r.raw, config) for k in ("dtype", "torch_dtype") if c.get(k)), None)
    if name is None:
        r.assume("No torch_dtype in the config: unquantized weights taken as bf16.")
        return "bf16"
    try:
        dtype = canonical_dtype(name)
    except RooflineError as e:
        raise ModelConfigError(f"torch_dtype {name!r} is not a known dtype") from e
    if DTYPE_BITS[dtype] > 16:
        r.assume(f"Checkpoint stored in {name}; weights are taken as served in bf16, as serving engines cast "
                 "32-bit checkpoints to 16-bit (override with weight_dtype='fp32').")
        return "bf16"
    return dtype


def quantization(r: ConfigReader, config: dict) -> tuple[WeightFormat | None, tuple[str, ...]]:
    """(storage format of the quantized matrices, families it applies to) from quantization_config."""
    families = ModelSpec.__dataclass_fields__["quantized_families"].default
    q = config.get("quantization_config") or r.raw.get("quantization_config")
    if not q:
        return None, families
    method = str(q.get("quant_method", "")).lower()
    fmt = _quant_format(r, q, method)
    if fmt is None:
        return None, families
    if method == "mxfp4":  # transformers' Mxfp4 quantizer replaces the MoE experts only
        families = ("experts",)
    skipped = q.get("modules_to_not_convert") or q.get("ignored_layers") or q.get("ignore") or []
    families = tuple(f for f in families if not any(_module_family(m) == f for m in skipped))
    r.assume(f"Weights quantized per quantization_config ({method}): {fmt.label} on the "
             f"{', '.join(families) or 'no'} matrices; embeddings, LM head, router, norms and biases keep the "
             "checkpoint dtype" + (f" (not converted: {', '.join(map(str, skipped))})" if skipped else "") + ".")
    return fmt, families


def _quant_format(r: ConfigReader, q: dict, method: str) -> WeightFormat | None:
    if method in ("gptq", "awq"):
        bits = q.get("bits", q.get("w_bit"))
        group = q.get("group_size", q.get("q_group_size"))
        group = None if group in (None, -1, 0) else as_int(group, "group_size")
        if bits not in (4, 8):
            raise ModelConfigError(f"quantization_config bits={bits!r} ({method}) is not modelled; 4 or 8 are")
        return weight_format(f"int{bits}", group)
    if method in ("fp8", "fbgemm_fp8"):
        block = q.get("weight_block_size")
        if block:  # DeepSeek-V3: one fp32 scale per 128x128 block
            return weight_format("fp8", math.prod(as_int(b, "weight_block_size") for b in block))
        return weight_format("fp8")
    if method == "mxfp4":
        return weight_format("fp4")
    if method == "compressed-tensors":
        return _compressed_tensors_format(r, q)
    r.assume(f"quant_method {method!r} is not modelled: weights taken in the checkpoint's dtype "
             "(override with weight_dtype).")
    return None


def _compressed_tensors_format(r: ConfigReader, q: dict) -> WeightFormat | None:
    groups = list((q.get("config_groups") or {}).values())
    weights = groups[0].get("weights") if groups and isinstance(groups[0], dict) else None
    if not weights:
        r.assume("compressed-tensors config without weight settings: weights taken in the checkpoint's dtype.")
        return None
    bits, kind = weights.get("num_bits"), weights.get("type", "int")
    dtype = {("float", 8): "fp8", ("int", 8): "int8", ("int", 4): "int4", ("float", 4): "fp4"}.get((kind, bits))
    if dtype is None:
        raise ModelConfigError(f"compressed-tensors weights {kind}{bits} are not modelled")
    block = weights.get("block_structure")
    group = math.prod(block) if block else weights.get("group_size")
    return weight_format(dtype, group)


def _module_family(module: str) -> str | None:
    """Which quantization family a module path of modules_to_not_convert / ignore names."""
    m = str(module).lower()
    for needle, arch in (("lm_head", "lm_head"), ("embed", "embed"), ("shared_expert", "shared"),
                        ("router", "router"), ("mlp.gate", "router"), ("experts", "experts"),
                        ("attn", "attn"), ("attention", "attn"), ("mlp", "ffn")):
        if needle in m:
            return arch
    return None
