"""Writing a fit into a chip TOML: the `[efficiency]` / `[efficiency.<family>]` tables (efficiency.py reads them).

`write_chip_toml(src, result, note, dest)` rewrites only those tables and keeps every other byte of the chip
file. `calibrate --write` never writes inside the installed package: it writes a copy of the chip file into
the user chip directory (`user_chips_dir`). Maintainers refit the shipped chip files with
benchmarks/refit_chips.py (benchmarks/CALIBRATION.md).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from ..chip_fits import fits_from_table
from ..efficiency import FAMILIES
from ..files import ensure_dir, write_text
from .fit import FitResult, shown_params

MARKER = "# ---- calibrated kernel efficiency (written by `llm-roofline calibrate --write`)"
_HEADER = re.compile(r"^\s*\[\s*efficiency\s*(\.[^\]]*)?\]")
_ANY_HEADER = re.compile(r"^\s*\[")


def toml_block(result: FitResult, chip_note: str) -> str:
    """The `[efficiency]` tables of a fit, as TOML text."""
    lines = [MARKER,
             "# t = max(flops / (peak * compute), bytes / (hbm * memory)) + overhead, T = the op's tokens:",
             "#   compute = compute_max * f(T, compute_tokens_half) * ..., f(x, h) = x / (x + h),",
             "#   memory = memory_max * T / hypot(T, memory_tokens_half); gemm, gemm_fp8(_block): also f(N, compute_cols_half)",
             "#     * f(T * N * max(1, K / compute_k_split), compute_outs_half) (split-K; no K term when compute_k_split is 0),",
             "#     overhead + overhead_per_output_elem_s * T * N (+ overhead_per_token_s * T: fp8 activation quantization);",
             "#   moe: T = rows per touched expert, also f(I, compute_width_half) (I = i / tp), overhead +",
             "#     overhead_per_walked_elem_s * walked-row elements + overhead_per_token_elem_s * tokens x hidden;",
             "#   moe_quant: the same for expert GEMMs with fp4 weights (MXFP4 / NVFP4 + block scales) computing in bf16,",
             "#     overhead + overhead_ep_s where the experts are split over chips (moe_ep > 1); moe_fp4: the same computing",
             "#     in fp4 (W4A4 NVFP4), FLOPs at the fp4 peak;",
             "#   moe_int4: the same for expert GEMMs with int4 weights (AWQ / GPTQ: vLLM's Marlin MoE kernel);",
             "#   moe_fp8: the same for expert GEMMs with 8-bit weights (block-scaled fp8), FLOPs at the fp8 peak,",
             "#     + overhead_per_depth_s * K per GEMM (its serial walk of K);",
             "#   attention (prefill): f(L, compute_keys_half) * f(X, compute_elems_half) * f(D, compute_dim_half)",
             "#     * f(G, compute_group_half): L keys per query, X Q+O elements, D head_dim, G query heads per KV head;",
             "#     overhead + overhead_per_head_tile_s * B*H*ceil(q/128) + overhead_per_group_tile_s * B*n_kv*ceil(q*G/128);",
             "#   attention_decode(_fp8: 8-bit KV): overhead = overhead_s + overhead_per_kv_row_byte_s * (KV bytes of one",
             "#     context position over the batch) + overhead_per_kv_stream_s * B*n_kv (+ overhead_per_windowed_head_s",
             "#     * B*(H - n_kv) with a sliding window) (+ overhead_split_s past one KV block, + overhead_regroup_s",
             "#     where B, n_kv >= 2: FlashAttention-2's combine and GQA copies, G > 1), compute = compute_max *",
             "#     f(L, compute_keys_half) * f(G, compute_group_half) (compute_q_tile_rule 1: * G / P and f(P,",
             "#     ...), P the rows of FlashInfer's CTA tile 16 / 64 / 128, + overhead_wide_tile_s * (D / 128)^2 at",
             "#     G > 16),",
             "#     memory = memory_max * S / hypot(S, memory_streams_half), S = B*n_kv KV streams (MHA, G = 1,",
             "#     and a 16-bit KV cache past its window: memory_unsplit_half when set, FlashAttention-2 walks",
             "#     such a stream's keys in one CTA); _fp8 past a sliding window of W keys: memory * W / (W +",
             "#     memory_window_half), overhead + overhead_window_s",
             "#     (whole KV blocks: the window straddles one more);",
             "#   gemm_fp8: GEMMs computing in fp8/int8 (compute_tile_rule 1, Ada: the kernel's tiles in waves over the",
             "#     SMs replace the T and N factors, + overhead_per_wave_s per wave + overhead_per_tall_output_s * T * N",
             "#     with 256-row tiles: gemm_tiles.py);",
             "#   collectives: hops * (latency_s + comm_step_s + comm_step_per_doubling_s * log2 n) + link_bytes /",
             "#     (link_bytes_per_s * comm_max; comm_switch_max for bytes the NVLink switch reduces) + overhead_s;",
             "#   all_to_all (MoE dispatch / combine, DeepEP): the same terms, one step, overhead_s its fixed floor,",
             "#     + overhead_per_token_s * the tokens a chip sends.",
             "# err_p10 / err_p90: measured / predicted percentiles (est.uncertainty). All fractions <= 1, overheads >= 0:",
             "# never faster than the ideal roofline. See llm_roofline/efficiency.py.",
             "[efficiency]",
             f"fitted_on = {_toml_str(chip_note)}"]
    for fam in FAMILIES:
        if fam not in result.fits:
            continue
        p = result.fits[fam]
        lines += ["", f"[efficiency.{fam}]"]
        lines += [f"{k} = {_toml_float(v)}" for k, v in shown_params(fam, p).items()]
        lines.append(f"fitted_on = {_toml_str(p.fitted_on)}")
    return "\n".join(lines) + "\n"


def _toml_float(v: float) -> str:
    s = f"{v:.4g}"
    return s if any(c in s for c in ".en") else s + ".0"


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def replace_efficiency_block(text: str, block: str) -> str:
    """`text` with its [efficiency] / [efficiency.*] tables (and the MARKER comment lines heading them)
    replaced by `block`, or `block` appended when there are none. Every other byte stays as it was."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if _HEADER.match(ln)), None)
    if start is None:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return text + sep + block
    head = start
    j = start - 1
    while j >= 0 and lines[j].startswith("#"):  # our marker comment right above the first header
        if lines[j].startswith(MARKER):
            head = j
            break
        j -= 1
    end = start + 1
    while end < len(lines) and not (_ANY_HEADER.match(lines[end]) and not _HEADER.match(lines[end])):
        end += 1
    if end < len(lines):  # blank and comment lines just above the next table belong to it
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1
    tail = lines[end:]
    return "".join(lines[:head]) + block + ("\n" if tail else "") + "".join(tail)


def write_chip_toml(path, result: FitResult, chip_note: str, dest=None) -> str:
    """Write the chip file at `path` with its efficiency tables replaced by the fit's to `dest` (default:
    `path` itself, in place); returns the new text, checked to parse before anything is written."""
    p = Path(path)
    new = replace_efficiency_block(p.read_text(), toml_block(result, chip_note))
    data = tomllib.loads(new)
    fits_from_table(data.get("efficiency", {}), f"{p}: ")  # validates
    out = Path(dest) if dest is not None else p
    ensure_dir(out.parent)
    write_text(out, new)
    return new
