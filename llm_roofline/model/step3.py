"""Step-3 (stepfun-ai/step3: model_type step3_vl around a step3_text tower; remote code, vLLM step3_text.py).

Step3TextAttention is Multi-matrix Factorization Attention (MFA): qkv_proj (d -> share_q_dim + 2 x head_dim) holds a
low-rank query beside one key and one value head, inter_norm (an RMSNorm over the share_q_dim columns) and wq
(share_q_dim -> heads x head_dim) widen the query to the heads, o_proj (heads x head_dim -> d). Step3TextDecoderLayer
builds one key / value head whatever num_attention_groups says (vLLM refuses another count), a dense MLP of
intermediate_size on the layers moe_layers_enum leaves out, else experts of moe_intermediate_size (a router without
bias) beside one shared expert of share_expert_dim.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import UnsupportedArchitectureError
from .key_names import KV_HEADS_KEYS
from .layers import heads_kind, step3p5_moe_layers
from .reader import ConfigReader
from .spec import AttentionSpec, FfnSpec

# Step3TextConfig's moe_layers_enum default: layers 4 to 59 of its 61
_DEFAULT_MOE = (range(4, 60), "Step3TextConfig's default, layers 4 to 59 MoE (the others dense)")


def step3_moe_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """The MoE layers: moe_layers_enum (comma-separated indices), else Step3TextConfig's default."""
    return step3p5_moe_layers(r, n_layers, _DEFAULT_MOE)


def step3_layers(r: ConfigReader, layers: list[tuple[AttentionSpec, FfnSpec]]) -> list:
    """Each layer's attention as MFA: one key / value head, a low-rank query of share_q_dim."""
    key = r.stated(*KV_HEADS_KEYS)
    if key and r.dim(key) != 1:
        raise UnsupportedArchitectureError(f"{key}={r.dim(key)} (model_type={r.model_type}): Step3TextAttention "
                                           "builds one key / value head (vLLM's step3_text.py refuses another count)")
    r.dim("head_dim")  # Step3TextAttention takes it as is: null is no head_dim (not hidden_size / heads)
    q_rank = r.dim("share_q_dim")
    r.assume(f"Step-3 MFA: the query is a {q_rank}-wide projection beside the key and value (qkv_proj, replicated on "
             "every chip as vLLM's ReplicatedLinear), RMS-normed, then widened to the heads by wq (q_b_proj).")
    return [(replace(a, kind=heads_kind(a.n_heads, 1), n_kv_heads=1, q_lora_rank=q_rank), f) for a, f in layers]
