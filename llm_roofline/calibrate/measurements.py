"""The measured-timings CSV: its schema, reading and checking it, and choosing the rows of one chip.

One row per measured kernel (MEASURED_COLUMNS). Converters turn each measurement source into this schema
(calibrate/vidur.py: the Vidur profiles); benchmarks/data/ ships a small sample of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ChipError, RooflineError
from ..files import write_text
from ..hardware import Chip, load_chip
from ..attention_shapes import KV8_BITS
from ..efficiency import ATTENTION_FAMILIES, COLLECTIVE_FAMILIES, FAMILIES, FP4_EXPERTS, FP8_COMPUTE, GEMM_FAMILIES
from ..units import dtype_bytes

if TYPE_CHECKING:
    import pandas as pd

# CSV `family` values -> model family (efficiency.FAMILIES)
CSV_FAMILIES = {
    "gemm": "gemm", "moe": "moe", "moe_quant": "moe_quant", "moe_fp4": "moe_fp4", "moe_fp8": "moe_fp8", "moe_int4": "moe_int4", "attention": "attention", "context_attention": "attention",
    "attention_decode": "attention_decode", "generation_attention": "attention_decode", "elementwise": "elementwise", "add": "elementwise",
    "residual": "elementwise", "activation": "activation", "act": "activation", "rope": "rope", "norm": "norm",
    "embedding": "embedding", "emb": "embedding", "all_reduce": "collective", "all_gather": "collective",
    "reduce_scatter": "collective", "all_to_all": "all_to_all", "p2p": "collective", "send_recv": "collective",
    "gemm_fp8_block": "gemm_fp8_block",
}

MEASURED_COLUMNS = {
    "family": "gemm | elementwise | activation | rope | norm | embedding | attention (prefill, causal) | "
              "attention_decode | all_reduce | all_gather | reduce_scatter | all_to_all | p2p "
              "(gemm rows with an 8-bit dtype fit the gemm_fp8 family, fp4 ones gemm_fp4; all_to_all rows the "
              "all_to_all family) | gemm_fp8_block (block-scaled fp8 weights)",
    "op": "op name (e.g. attn_pre_proj, mlp_act, all_reduce)",
    "model": "model the op came from (leave-one-model-out cross-validation); empty for collectives",
    "gpu": "optional: the GPU the row was measured on (e.g. a100, h100); `calibrate --chip` keeps the rows "
           "whose gpu names that chip",
    "dtype": "compute / element dtype (fp16, bf16, ...)",
    "tp": "tensor-parallel degree of the shapes; for collectives the number of GPUs taking part",
    "m": "GEMM rows per GPU (tokens in the batch); tokens for every other compute op",
    "k": "GEMM inner dimension per GPU (moe: the hidden size)",
    "n": "GEMM output columns per GPU (moe: the expert intermediate size per GPU, i / tp)",
    "elems": "elements an elementwise op touches (documentation; bytes is what counts); attention: the Q and O "
             "elements B*q*H*(dqk+dv) (the occupancy and the decode floor key off it)",
    "keys": "optional, attention only: mean keys per query (causal prefill of L tokens: (L+1)/2; decode: KV length)",
    "head_dim": "optional, attention only: (dqk + dv) / 2 (the head-dim factor of prefill)",
    "q_per_kv": "optional, attention only: query heads per K/V head (the GQA group factor of prefill)",
    "walked": "optional, moe only: elements (K + N per row, summed over the block's kernels) of the routed rows "
              "the fused expert kernels walk without computing them (expert parallelism, tokens not dispatched)",
    "routed": "optional, moe only: routed rows the fused block receives (tokens x top-k on this GPU's input); with "
              "`experts`, the rows per local expert a kernel sizes its M blocks to (vLLM's Marlin MoE)",
    "experts": "optional, moe only: experts resident on the GPU (E / ep)",
    "token_elems": "optional, moe only: hidden-vector elements (tokens x hidden, summed over the block's kernels: "
                   "2 x tokens x hidden for up and down) the fused block passes once per token whatever the top-k "
                   "(input gathered and quantized, outputs combined)",
    "ep": "optional, moe only: chips the routed experts are split over (moe_ep; above 1 the block runs the expert-"
          "parallel path, with a floor of its own)",
    "window": "optional, decode attention only: sliding-window length in tokens (0 or empty: full attention)",
    "kv_len": "optional, decode attention only: context length per sequence (past a window: kv_len > window)",
    "kv_bits": "optional, decode attention only: bits per cached K/V element (8 or fewer: the attention_decode_fp8 "
               "family)",
    "flops": "optional: FLOPs of the op (GEMM default 2*m*k*n)",
    "bytes": "HBM bytes moved (GEMM default (k*n + m*k + m*n) * dtype bytes); collectives: the buffer size",
    "kernels": "optional, default 1: kernel launches the measured time spans (overhead_s counts once each)",
    "working_set": "optional, default bytes: bytes the measurement's timed loop touches (a collector that times six "
                   "copies of a layer: six times their weights); within the chip's L2 ([onchip] bytes) a replay reads "
                   "L2, which the fit prices apart (memory_l2_extra) and an inference step does not",
    "nodes": "optional, default 1: nodes a collective spans; rows with nodes > 1 are not fitted (multi-node)",
    "measured_s": "measured kernel time in seconds (median; > 0 and at most 3600)",
}
REQUIRED_COLUMNS = ("family", "op", "dtype", "measured_s")
# a measured time above an hour is no kernel timing (1e308 s overflowed measured / predicted into a nan band)
MAX_MEASURED_S = 3600.0
CSV_ORDER = ("gpu", "model", "family", "op", "dtype", "tp", "m", "k", "n", "elems", "flops", "bytes", "kernels",
             "nodes", "measured_s")  # the column order converters write (attention sources add "keys")


def read_measurements(path) -> "pd.DataFrame":
    """Read a measured-timings CSV (MEASURED_COLUMNS) and check it (normalize)."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise RooflineError(f"measured CSV {path} " + ("is a directory" if p.is_dir() else
                                                      "exists and is not a regular file" if p.exists() else
                                                      "does not exist"))
    try:
        df = pd.read_csv(p, keep_default_na=True, dtype={"model": str, "gpu": str, "op": str, "family": str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise RooflineError(f"measured CSV {path}: cannot be read ({e})") from None
    return normalize(df, str(path))


def write_measurements(df: "pd.DataFrame", path) -> None:
    """Write measured rows (CSV_ORDER columns) as the CSV read_measurements reads back."""
    write_text(path, df.to_csv(index=False, float_format="%.10g"))


def normalize(df: "pd.DataFrame", where: str = "<frame>") -> "pd.DataFrame":
    """Fill optional columns, derive flops/bytes of GEMM rows, map families (column `fam`); raise on bad rows."""
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise RooflineError(f"{where}: missing column(s) {', '.join(missing)}; columns: {', '.join(MEASURED_COLUMNS)}")
    df = df.copy()
    for c in ("model", "gpu", "op"):
        df[c] = df[c].fillna("").astype(str) if c in df.columns else ""
    df["family"] = df["family"].astype(str).str.strip().str.lower()
    bad = sorted(set(df["family"]) - set(CSV_FAMILIES))
    if bad:
        raise RooflineError(f"{where}: unknown family {bad}; known: {', '.join(CSV_FAMILIES)}")
    df["fam"] = df["family"].map(CSV_FAMILIES)
    for c in ("tp", "m", "k", "n", "elems", "keys", "head_dim", "kv_bits", "q_per_kv", "walked", "token_elems",
              "routed", "experts", "ep", "window", "kv_len", "flops", "bytes", "working_set", "kernels", "nodes",
              "measured_s"):
        num = _numeric(df[c]) if c in df.columns else np.nan
        if c in df.columns and (text := df[c][num.isna() & df[c].notna() & (df[c].astype(str).str.strip() != "")]).size:
            raise RooflineError(f"{where}: column {c} must be numeric, got {str(text.iloc[0])[:30]!r}")
        df[c] = num
    df["kernels"] = df["kernels"].fillna(1.0)
    df["nodes"] = df["nodes"].fillna(1.0)
    df["tp"] = df["tp"].fillna(1.0)
    try:
        eb = df["dtype"].map(dtype_bytes)
    except RooflineError as e:
        raise RooflineError(f"{where}: {e}") from None
    narrow = (df["fam"] == "gemm") & df["dtype"].isin(list(FP8_COMPUTE))  # efficiency.family_of's families
    df.loc[narrow, "fam"] = df.loc[narrow, "dtype"].map(FP8_COMPUTE)
    fp4 = (df["fam"] == "moe_quant") & df["dtype"].isin(list(FP4_EXPERTS))  # fp4 experts computing in fp4
    df.loc[fp4, "fam"] = df.loc[fp4, "dtype"].map(FP4_EXPERTS)
    g = df["fam"].isin(GEMM_FAMILIES)
    if (g & df[["m", "k", "n"]].isna().any(axis=1)).any():
        raise RooflineError(f"{where}: gemm rows need m, k and n")
    df.loc[g & df["flops"].isna(), "flops"] = 2.0 * df["m"] * df["k"] * df["n"]
    df.loc[g & df["bytes"].isna(), "bytes"] = (df["k"] * df["n"] + df["m"] * df["k"] + df["m"] * df["n"]) * eb
    df.loc[~df["fam"].isin(COLLECTIVE_FAMILIES), "flops"] = df["flops"].fillna(0.0)
    if df["bytes"].isna().any():
        raise RooflineError(f"{where}: {int(df['bytes'].isna().sum())} row(s) without bytes")
    df.loc[(df["fam"] == "attention_decode") & (df["kv_bits"] > 0) & (df["kv_bits"] <= KV8_BITS), "fam"] = \
        "attention_decode_fp8"
    att = df["fam"].isin(ATTENTION_FAMILIES)
    if (df.loc[att, "flops"] <= 0).any():
        raise RooflineError(f"{where}: attention rows need flops")
    df["m"] = df["m"].fillna(0.0)  # tokens unknown: the asymptotic efficiencies
    df["elems"] = df["elems"].where(att, np.nan)
    shape = ["elems", "keys", "head_dim", "kv_bits", "q_per_kv", "walked", "token_elems", "routed", "experts", "ep",
             "window", "kv_len"]
    df[shape] = df[shape].fillna(0.0)  # unknown: those factors are 1
    df["working_set"] = df["working_set"].fillna(df["bytes"])
    sizes = shape + ["tp", "m", "k", "n", "flops", "bytes", "working_set", "kernels", "nodes"]
    bad = [c for c in sizes if not (np.isfinite(df[c].fillna(0.0)) & (df[c].fillna(0.0) >= 0)).all()]
    if bad:
        raise RooflineError(f"{where}: column(s) {', '.join(bad)} must be finite and >= 0")
    if (df["kernels"] <= 0).any():  # the overheads are counted per kernel: a time over no kernel prices none
        raise RooflineError(f"{where}: column kernels must be > 0 (kernel launches the measured time spans)")
    ok = np.isfinite(df["measured_s"]) & (df["measured_s"] > 0) & (df["measured_s"] <= MAX_MEASURED_S)
    if not ok.all():
        raise RooflineError(f"{where}: {int((~ok).sum())} row(s) with a missing or non-positive measured_s, or one "
                            f"above {MAX_MEASURED_S:g} s (a kernel timing, in seconds)")
    return df.reset_index(drop=True)


def _numeric(s):
    import pandas as pd

    return pd.to_numeric(s, errors="coerce").astype(np.float64)


def rows_for_chip(df: "pd.DataFrame", chip: Chip, gpu: str | None = None) -> "pd.DataFrame":
    """Rows measured on `chip`: those whose `gpu` is `gpu`, or else names the chip (an alias resolves to it).
    All rows when the CSV has no gpu column."""
    if gpu is not None:
        keep = df["gpu"].str.lower() == gpu.lower()
    elif (df["gpu"] == "").all():
        return df
    else:
        def names_chip(g: str) -> bool:
            try:
                return load_chip(g).name == chip.name
            except ChipError:
                return False

        hits = {g: names_chip(g) for g in df["gpu"].unique()}
        keep = df["gpu"].map(hits)
    out = df[keep].reset_index(drop=True)
    if out.empty:
        raise RooflineError(f"no rows for chip {chip.name} (gpu values: {', '.join(sorted(set(df['gpu'])))}); "
                            "pass --gpu to choose")
    return out


def rows_of_families(df: "pd.DataFrame", families) -> "pd.DataFrame":
    """The rows of the model families named in `families` (efficiency.FAMILIES; None: every row). A RooflineError
    for a name that is no family or a family without rows here."""
    if families is None:
        return df
    names = [f.strip() for f in ([families] if isinstance(families, str) else families)]
    unknown = [f for f in names if f not in FAMILIES]
    if unknown or not names:
        raise RooflineError(f"unknown families {unknown or '(none given)'}; families: {', '.join(FAMILIES)}")
    absent = [f for f in names if not (df["fam"] == f).any()]
    if absent:
        raise RooflineError(f"no rows of {', '.join(absent)} among these (families here: "
                            f"{', '.join(f for f in FAMILIES if (df['fam'] == f).any())})")
    return df[df["fam"].isin(names)].reset_index(drop=True)


def single_node(df: "pd.DataFrame") -> "pd.DataFrame":
    """The rows that are fitted: everything except collectives spanning more than one node."""
    return df[~df["fam"].isin(COLLECTIVE_FAMILIES) | (df["nodes"] <= 1)]
