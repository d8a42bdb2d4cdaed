"""An Estimate's op table (est.ops): one row per op per phase, a pandas DataFrame built when it is first read, so
that an estimate that is never asked for it does not import pandas."""

from __future__ import annotations

import threading

import numpy as np

from .roofline import bound_of, intensity_of

OPS_COLUMNS = ["phase", "group", "name", "kind", "count", "flops", "bytes", "weight_bytes", "act_bytes", "kv_bytes",
               "comm_bytes", "intensity", "t_compute_s", "t_memory_s", "t_comm_s", "t_s", "bound", "formula"]


class OpTable:
    """The op table of an Estimate, built when it is first read (est.ops): one lock per table, so threads
    reading it at once get one DataFrame. Pickled or deep-copied as the DataFrame itself."""

    def __init__(self, r, gen_len):
        self._args, self._df, self._lock = (r, gen_len), None, threading.Lock()

    def frame(self):
        with self._lock:
            if self._df is None:
                self._df, self._args = ops_frame(*self._args), None
            return self._df

    def __reduce__(self):
        return _same, (self.frame(),)


def _same(x):
    return x


def ops_frame(r, gen_len):
    """One row per op per phase: per chip, per instance; decode rows are the mean step."""
    import pandas as pd

    rows = []
    phases = [("prefill", r.prefill, 1.0)] + ([("decode", r.decode, gen_len - 1.0)] if gen_len > 1 else [])
    for phase, pr, steps in phases:
        for op, row in zip(pr.ops, pr.per_op):
            w = {k: float(np.asarray(v)) / steps for k, v in row.work.items()}
            t = {k: float(getattr(row.times, k)) / steps for k in ("t_compute_s", "t_memory_s", "t_comm_s", "t_s")}
            nbytes = w["weight_bytes"] + w["act_bytes"] + w["kv_bytes"]
            rows.append(dict(phase=phase, group=op.group, name=op.name, kind=op.kind, count=op.count,
                             flops=w["flops"], bytes=nbytes, weight_bytes=w["weight_bytes"],
                             act_bytes=w["act_bytes"], kv_bytes=w["kv_bytes"], comm_bytes=w["comm_bytes"],
                             intensity=float(intensity_of(w["flops"], nbytes)),
                             **t, bound=str(bound_of(t["t_compute_s"], t["t_memory_s"], t["t_comm_s"])),
                             formula=op.formula))
    return pd.DataFrame(rows, columns=OPS_COLUMNS)
