"""Rendering rows as text tables (tabulate), CSV or JSON. Numbers right-aligned, three significant digits."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Iterable, Sequence

from ..units import json_ready

FORMATS = ("table", "json", "csv", "markdown")


def render(rows: Sequence[dict[str, Any]], fmt: str, display: Iterable[tuple[str, str, Any]] | None = None) -> str:
    """rows: raw SI values (for json/csv). display: (header, key, formatter) triples for table/markdown."""
    if fmt == "json":
        return json.dumps(json_ready(list(rows)), indent=2, default=str)
    if fmt == "csv":
        if not rows:
            return ""
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue().rstrip("\n")
    import tabulate as tb

    display = list(display or [(k, k, None) for k in (rows[0] if rows else {})])
    body = [[(f(r[k]) if f else r[k]) for _, k, f in display] for r in rows]
    headers = [h for h, _, _ in display]
    padding, tb.MIN_PADDING = tb.MIN_PADDING, 0 if fmt == "table" else tb.MIN_PADDING  # columns as wide as
    try:  # their widest cell (tabulate pads headers by 2 by default): terminal tables stay within 100 columns
        return tb.tabulate(body, headers=headers, tablefmt="pipe" if fmt == "markdown" else "simple",
                           disable_numparse=True, colalign=_align(body, len(headers)))
    finally:
        tb.MIN_PADDING = padding


def _align(body, n):
    """Right-align columns whose cells look numeric."""
    aligns = []
    for j in range(n):
        cells = [str(row[j]) for row in body]
        numeric = bool(cells) and all(_looks_numeric(c) for c in cells)
        aligns.append("right" if numeric else "left")
    return aligns


def _looks_numeric(cell: str) -> bool:
    head = cell.strip().split(" ")[0].replace(",", "").replace("%", "").replace("×", "")
    if head in ("—", "inf", "∞"):
        return True
    try:
        float(head)
        return True
    except ValueError:
        return False
