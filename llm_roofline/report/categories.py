"""Op categories for the time-breakdown charts and tables, and the roll-up of an Estimate's per-op rows into
them (no matplotlib here: report.md uses the roll-up too)."""

from __future__ import annotations

CATEGORIES = ("attention", "projections", "MLP/experts", "LM head", "communication", "other")


def op_category(name: str, kind: str | None = None) -> str:
    """Map an op name (the graph's dotted names) to a time-breakdown category.

    attention: the attention core and the per-head work around it (rope, qk-norm, KV-cache write);
    projections: every attention projection (qkv, o, MLA's q/kv down- and up-projections);
    MLP/experts: every ffn.* op (dense MLP, router, routed and shared experts, their activation);
    LM head; communication: collectives (comm.*); other: embedding gather, norms, residual adds, and what is
    neither attention nor an MLP: recurrent mixers (mixer.*), Gemma's per-layer inputs, AltUp and LAuReL,
    hyper-connections.
    """
    if kind == "collective" or name.startswith("comm."):
        return "communication"
    if name == "lm_head":
        return "LM head"
    if name.startswith("ffn."):
        return "MLP/experts"
    if name.startswith("attn."):
        return "projections" if "proj" in name else "attention"
    return "other"


def short_name(name: str) -> str:
    """Chart label for an op: 'ffn.experts.up_gate' -> 'exp.up_gate', 'attn.core' -> 'attn', 'attn.o_proj' -> 'o_proj'."""
    if name == "attn.core":
        return "attn"
    for prefix, repl in (("ffn.experts.", "exp."), ("ffn.shared.", "shared."), ("ffn.", ""), ("attn.", ""),
                         ("comm.", "")):
        if name.startswith(prefix):
            return repl + name[len(prefix):]
    return name


def time_breakdown(est) -> dict[str, dict[str, float]]:
    """Wall time of each phase split into CATEGORIES, seconds: {'prefill': {...}, 'decode': {...}, 'request': {...}}.

    Category time = sum over its ops of t_s * count (one chip), scaled so that a phase's categories add
    up to the phase time (the scale is 1 unless pipeline stages stretch the prefill). decode is the mean
    step (TPOT); request = prefill + all decode steps (e2e)."""
    out: dict[str, dict[str, float]] = {}
    df = est.ops
    for phase, summary in (("prefill", est.prefill), ("decode", est.decode)):
        if summary is None:
            continue
        d = df[df.phase == phase]
        cats = {c: 0.0 for c in CATEGORIES}
        for r in d.itertuples():
            cats[op_category(r.name, r.kind)] += float(r.t_s * r.count)
        tot = sum(cats.values())
        scale = summary.t_s / tot if tot > 0 else 0.0
        out[phase] = {c: v * scale for c, v in cats.items()}
    if "decode" in out:
        steps = est.decode.steps
        out["request"] = {c: out["prefill"][c] + out["decode"][c] * steps for c in CATEGORIES}
    return out
