"""Converter for the Vidur kernel profiles (microsoft/vidur, MIT): their CSV files -> the measured-timings
schema (calibrate/measurements.py).

Vidur (arXiv 2405.05465) profiles the Sarathi-Serve layers in fp16 with the PyTorch profiler (CUDA kernel
time, milliseconds; this converter uses the medians): `data/profiling/compute/<gpu>/<org>/<model>/mlp.csv`
(one row per num_tokens and tensor-parallel degree) and `data/profiling/network/<gpu>_<system>/all_reduce.csv`
(NCCL). The shipped a100-80gb and h100-sxm fits come from commit 7d47513 (2024-11-19);
benchmarks/CALIBRATION.md documents the maintainer refit, benchmarks/data/ a sample of the converted rows.
Convert with `llm-roofline calibrate --convert-vidur VIDUR_DIR OUT.csv`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import RooflineError
from .measurements import CSV_FAMILIES, CSV_ORDER

if TYPE_CHECKING:
    import pandas as pd

SKU_NOTES = {
    "a100": "SKU uncertain: the Vidur a100 profile is an A100 80GB, SXM (DGX A100) or PCIe, not stated",
    "h100": "SKU uncertain: the Vidur h100 profile is an H100 80GB, SXM (DGX H100) or NVL, not stated",
}
VIDUR_OPS = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj", "input_layernorm",
             "post_attention_layernorm", "mlp_act", "attn_rope", "add", "emb", "all_reduce", "send_recv"}
VIDUR_SOURCE = "Vidur (microsoft/vidur 7d47513, 2024-11-19) {gpus} fp16 kernel medians"


def is_vidur(ops) -> bool:
    """Whether every op name is one the Vidur profiles use (then VIDUR_SOURCE describes the rows)."""
    return set(ops) <= VIDUR_OPS


def source_text(gpus) -> str:
    """The fitted_on source of Vidur rows measured on `gpus`."""
    return VIDUR_SOURCE.format(gpus="/".join(gpus) or "?")


def sku_note(gpus) -> str:
    """What is uncertain about the GPUs Vidur profiled ('' for none of `gpus`)."""
    return "; ".join(SKU_NOTES[g] for g in gpus if g in SKU_NOTES)


def _vidur_frame(df: "pd.DataFrame", gpu: str, model: str) -> "pd.DataFrame":
    """The rows of one Vidur mlp.csv -> measured-CSV rows (fp16 throughout). Byte accounting (element bytes e = 2):

    GEMMs (cuBLAS, x[M,k] @ W[k,n]): flops 2Mkn, bytes (k*n + M*k + M*n) * e (bias, n*e, ignored: < 0.05 %)
      attn_pre_proj  k = d,      n = (h + 2 kv) hd / tp      fused QKV, column parallel
      attn_post_proj k = d / tp, n = d                       row parallel (all-reduce not included)
      mlp_up_proj    k = d,      n = 2F / tp (gated) or F/tp  fused gate+up
      mlp_down_proj  k = F / tp, n = d
    norm  (input_layernorm, post_attention_layernorm): read x[M,d], write y, weight d (LayerNorm 2d):
          (2 M d + d) * e; norms are replicated (not split by tp). The parallel-block model (phi-2: no
          post-attention norm) uses LayerNorm.
    activation (mlp_act): SiLU-and-mul reads [M, 2F/tp], writes [M, F/tp]: 3 M F/tp * e; GELU 2 M F/tp * e.
    rope (attn_rope): in place on q and k: read + write M (h + kv)/tp * hd elements, plus the cos/sin cache
          row (hd elements) and the int64 position of each token: (2 M (h+kv)/tp hd + M hd) * e + 8 M.
          Vidur rotates the whole head (rotary_dim = head_dim), phi-2 included.
    elementwise (add, residual): x + y -> z over [M, d]: 3 M d * e. The parallel-block model adds three
          tensors with two kernels: 6 M d * e over kernels = 2.
    embedding (emb): gather M rows of d (Vidur draws every token id from this GPU's vocabulary shard, so
          all M rows are read here), write [M, d], read M int64 ids: 2 M d * e + 8 M.
    Shapes: M = num_tokens, tp = num_tensor_parallel_workers, d = n_embd, F = n_expanded_embd, h = n_head,
    kv = n_kv_head, hd = d / h (Vidur's head size).
    """
    import pandas as pd

    e = 2.0
    m = df["num_tokens"].to_numpy(np.float64)
    tp = df["num_tensor_parallel_workers"].to_numpy(np.float64)
    d, f, h, kv = (df[c].to_numpy(np.float64) for c in ("n_embd", "n_expanded_embd", "n_head", "n_kv_head"))
    hd = d / h
    gated = df["use_gated_mlp"].astype(str).str.strip().str.lower().isin(["true", "1", "1.0"]).to_numpy()
    parallel_block = "time_stats.post_attention_layernorm.median" not in df.columns
    up = np.where(gated, 2.0, 1.0) * f / tp
    nan = np.full(len(df), np.nan)
    frames = []

    def add(op, fam, k, n, elems, flops, nbytes, kernels=1.0):
        col = f"time_stats.{op}.median"
        if col not in df.columns:
            return
        frames.append(pd.DataFrame(dict(gpu=gpu, model=model, family=fam, op=op, dtype="fp16", tp=tp, m=m, k=k, n=n,
                                        elems=elems, flops=flops, bytes=nbytes, kernels=kernels, nodes=1,
                                        measured_s=pd.to_numeric(df[col], errors="coerce").to_numpy() * 1e-3)))

    for op, k, n in (("attn_pre_proj", d, (h + 2 * kv) * hd / tp), ("attn_post_proj", d / tp, d),
                     ("mlp_up_proj", d, up), ("mlp_down_proj", f / tp, d)):
        add(op, "gemm", k, n, nan, 2 * m * k * n, (k * n + m * k + m * n) * e)
    norm_w = (2.0 if parallel_block else 1.0) * d
    for op in ("input_layernorm", "post_attention_layernorm"):
        add(op, "norm", nan, nan, m * d, 4 * m * d, (2 * m * d + norm_w) * e)
    add("mlp_act", "activation", nan, nan, m * f / tp, np.where(gated, 5.0, 4.0) * m * f / tp,
        np.where(gated, 3.0, 2.0) * m * f / tp * e)
    qk = m * (h + kv) / tp * hd
    add("attn_rope", "rope", nan, nan, qk, 3 * qk, (2 * qk + m * hd) * e + 8 * m)
    add("add", "elementwise", nan, nan, m * d, (2.0 if parallel_block else 1.0) * m * d,
        (6.0 if parallel_block else 3.0) * m * d * e, 2.0 if parallel_block else 1.0)
    add("emb", "embedding", nan, nan, m * d, 0.0 * m, 2 * m * d * e + 8 * m)
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out[np.isfinite(out["measured_s"])]


def _network_frame(df: "pd.DataFrame", gpu: str, kind: str) -> "pd.DataFrame":
    """The rows of one Vidur network/<gpu>_<system>/<kind>.csv -> measured-CSV rows: tp = the GPUs in the
    collective, bytes = the fp16 buffer (Vidur's `size`, 2 * elements), nodes = ceil(GPUs / devices_per_node)."""
    import pandas as pd

    df = df.drop_duplicates(["num_workers", "devices_per_node", "size"], keep="first")
    n = df["num_workers"].to_numpy(np.int64)
    size = df["size"].to_numpy(np.float64)
    nan = np.full(len(df), np.nan)
    return pd.DataFrame(dict(
        gpu=gpu, model="", family=kind, op=kind, dtype="fp16", tp=n, m=nan, k=nan, n=nan, elems=size / 2,
        flops=nan, bytes=size, kernels=1, nodes=np.maximum(1, -(-n // df["devices_per_node"].to_numpy(np.int64))),
        measured_s=pd.to_numeric(df[f"time_stats.{kind}.median"], errors="coerce").to_numpy() * 1e-3))


def convert_vidur(src) -> "pd.DataFrame":
    """Vidur profiling data (compute/<gpu>/.../<model>/mlp.csv, network/<gpu>_<system>/<collective>.csv)
    -> the measured-timings CSV frame (CSV_ORDER columns). Duplicate grid points: the first row wins."""
    import pandas as pd

    src = Path(src)
    frames = []
    compute = src / "compute"
    for f in sorted(compute.rglob("mlp.csv")) if compute.is_dir() else []:
        rel = f.relative_to(compute).parts
        gpu, model = rel[0], f.parent.name
        df = pd.read_csv(f).drop_duplicates(["num_tokens", "num_tensor_parallel_workers"], keep="first")
        frames.append(_vidur_frame(df, gpu, model))
    network = src / "network"
    for f in sorted(network.rglob("*.csv")) if network.is_dir() else []:
        df = pd.read_csv(f)
        if f"time_stats.{f.stem}.median" in df.columns and f.stem in CSV_FAMILIES:
            frames.append(_network_frame(df, f.parent.name.split("_")[0], f.stem))
    frames = [f for f in frames if len(f)]
    if not frames:
        raise RooflineError(f"no Vidur profiles under {src} (expected compute/<gpu>/.../mlp.csv or network/*/*.csv)")
    out = pd.concat(frames, ignore_index=True)
    for c in ("nodes", "kernels", "tp"):
        out[c] = out[c].fillna(1).astype(int)
    return out[list(CSV_ORDER)]
