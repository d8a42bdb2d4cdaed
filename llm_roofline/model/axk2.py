"""Reader of A.X-K2 (model_type axk2: SK Telecom; transformers' modular_axk2.py), on DeepSeek-V3.2's layers.

Every layer: DeepSeek-V3.2's MLA with its DSA lightning indexer, but no q_b_proj: q_gate_proj (2 x q_lora_rank ->
heads x (qk_nope + qk_rope + v_head_dim)) reads the q latent taken twice, normed and raw (cat(q_a_layernorm(c), c)),
and yields the queries and a sigmoid gate of heads x v_head_dim on the attention output before o_proj (AttentionSpec
output_gate with q_latent_twice); the indexer reads the normed latent, as V3.2's. Its RMSNorm before attention, and
the one before each MoE (not before a dense MLP), is gated: y * sigmoid(fc2(silu(fc1(y)))), fc1: d -> gated_norm_rank,
fc2: back to d (LayerGroup.per_layer, gated_norms). Then a dense MLP of intermediate_size (mlp_layer_types 'dense',
else the first first_k_dense_replace layers, transformers' default 1) or DeepSeek-V3's MoE (a sigmoid router with
e_score_correction_bias, grouped over n_group when set; n_shared_experts shared experts of moe_intermediate_size).
The checkpoint's q_gate_proj is block-diagonal (the query rows read the normed half, the gate rows the raw half; a
public GGUF converter splits it losslessly): it is counted and priced whole, as transformers and SKT's vLLM fork
store and run it.

Fixture provenance (tests/fixtures/configs/axk2_light_default.json): no verbatim config.json of skt/A.X-K2 was found
in the public sources searched (a range-download script for skt/A.X-K2 shows only hidden 7168, vocab 163,840 and 61
blocks), so the fixture is transformers' own default config, AXK2Config() (its docstring checkpoint skt/A.X-K2; its
comments call the defaults A.X-K2-Light's), written out with to_dict().
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError
from .reader import ConfigReader
from .matrix import Matrix
from .spec import AttentionSpec, FfnSpec, LayerGroup

_INDEXED = "indexed_attention"


def axk2_layers(r: ConfigReader, layers: list[tuple[AttentionSpec, FfnSpec]]) -> list[tuple[AttentionSpec, FfnSpec]]:
    """Each layer's MLA with q_gate_proj: queries and an output gate of heads x v_head_dim from 2 x q_lora_rank."""
    if r.dim("q_lora_rank", required=False) is None:
        raise ModelConfigError("q_lora_rank must be a positive integer for model_type axk2 (q_gate_proj reads the "
                               "query latent twice: 2 x q_lora_rank inputs)")
    r.str_list("layer_types", len(layers), allowed=(_INDEXED,))  # every layer runs DSA
    spec = {}
    out = []
    for a, f in layers:
        if a.kind != "mla":
            raise ModelConfigError("model_type axk2 needs MLA (kv_lora_rank, q_lora_rank)")
        if a not in spec:
            spec[a] = replace(a, output_gate=True, q_latent_twice=True)
        out.append((spec[a], f))
    r.assume("A.X-K2: q_gate_proj (block-diagonal in the checkpoint) is counted and run whole; the output gate "
             "(sigmoid, one multiply) is priced over heads x v_head_dim per token.")
    r.used.update(("n_group", "topk_group", "head_dim"))
    return out


def axk2_norm_gates(r: ConfigReader, groups: tuple[LayerGroup, ...], d_model: int) -> tuple[LayerGroup, ...]:
    """The gated RMSNorms: before attention on every layer, before the FFN on MoE layers (fc1: d -> gated_norm_rank,
    fc2: gated_norm_rank -> d each, replicated)."""
    rank = r.dim("gated_norm_rank")
    out = []
    for g in groups:
        k = 2 if g.ffn.kind == "moe" else 1
        mats = (Matrix("norm_gate.fc1", d_model, rank, family="router", count=k),
                Matrix("norm_gate.fc2", rank, d_model, family="router", count=k))
        out.append(replace(g, per_layer=mats, gated_norms=k))
    which = "the pre-attention and pre-MoE RMSNorms are" if any(g.gated_norms == 2 for g in out) else \
        "the pre-attention RMSNorm is"
    r.assume(f"A.X-K2: {which} gated through a rank-{rank} bottleneck (d -> {rank} -> d, SiLU, sigmoid): replicated "
             "on every tp chip, in the checkpoint's native dtype as the router is.")
    return tuple(out)
