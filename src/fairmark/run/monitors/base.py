"""What a monitor sample is, independent of the OS it came from, and how samples become a series.

A `Snapshot` holds cumulative counters (context switches, CPU ticks per state, disk bytes …) and gauges
(run queue, free memory) read at one instant. Rates need two snapshots, so a series is built from consecutive
pairs: a trial's own (taken at its start and end, with the sampler's between them) or, for a short trial, the
claimed parts of the sampler's intervals (run/monitors/sampler.py): either way every trial has totals.

A quantity the OS does not provide (FreeBSD has no iowait or steal tick) is absent, never zero: a report
must not show a made-up number.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CPU_STATES = ("user", "system", "iowait", "idle", "steal")
SCHEMA = 1


@dataclass(frozen=True)
class Snapshot:
    t_s: float  # monotonic clock, seconds
    cpu: Mapping[str, Mapping[str, float]]  # "total", "cpu0", … → state → ticks (cumulative)
    counters: Mapping[str, float] = field(default_factory=dict)  # cumulative: ctxt, forks, disk_read_bytes …
    gauges: Mapping[str, float] = field(default_factory=dict)  # instantaneous: runq, mem_free_kib …


def _cpu_pct(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    deltas = {}
    for k, v in b.items():
        d = v - a.get(k, 0.0)
        deltas[k] = 0.0 if d < 0.0 else d  # max(d, 0.0), without a call per state
    total = sum(deltas.values())
    if total <= 0:
        return {k: 0.0 for k in deltas}
    return {k: 100.0 * v / total for k, v in deltas.items()}


def _rates(a: Snapshot, b: Snapshot, dt: float) -> dict[str, float]:
    out = {}
    before = a.counters
    for name, value in b.counters.items():
        if name in before:
            delta = value - before[name]
            delta = 0.0 if delta < 0.0 else delta  # counters reset only on reboot
            rate = delta / dt if dt > 0 else 0.0
            if name.endswith("_us"):  # stall microseconds per second → percent of the time stalled
                out[name[:-3] + "_pct"] = rate / 1e4
            else:
                out[name] = rate
    return out


def _r(x: float) -> float:
    """Four significant digits: a monitor series is a picture, and 3000 trials of it must fit in a report.
    Zero and small whole numbers (most counters of a short trial) are already so: formatted, they come back
    the same, at a tenth of the cost."""
    if not x or (-10000.0 < x < 10000.0 and float(x).is_integer()):
        return float(x)
    return float(f"{x:.4g}")


def _columns(rows: Sequence[Mapping[str, float]]) -> dict[str, list[float | None]]:
    if len(rows) == 1:  # a trial shorter than the interval (most): one row, every key in it
        return {k: [_r(v)] for k, v in sorted(rows[0].items())}
    keys = sorted({k for row in rows for k in row})
    return {k: [_r(row[k]) if k in row else None for row in rows] for k in keys}


def build_series(snapshots: Sequence[Snapshot], *, os_name: str, interval_s: float) -> dict[str, Any]:
    """A trial's snapshots → the JSON artifact: per-interval columns plus whole-trial totals."""
    if len(snapshots) < 2:
        raise ValueError("a monitor series needs at least two snapshots (trial start and end)")
    t0 = snapshots[0].t_s
    pairs = list(itertools.pairwise(snapshots))
    cpu_rows = [_cpu_pct(a.cpu["total"], b.cpu["total"]) for a, b in pairs]
    per_cpu = {
        name: _columns([_cpu_pct(a.cpu.get(name, {}), b.cpu[name]) for a, b in pairs])
        for name in snapshots[-1].cpu
        if name != "total"
    }
    rate_rows = [_rates(a, b, b.t_s - a.t_s) for a, b in pairs]
    gauge_rows = [dict(b.gauges) for _, b in pairs]
    series = {
        "schema": SCHEMA,
        "os": os_name,
        "interval_s": interval_s,
        "ncpu": len(per_cpu) or 1,
        "t_s": [_r(b.t_s - t0) for _, b in pairs],
        "cpu_pct": _columns(cpu_rows),
        "per_cpu_pct": per_cpu,
        "rates_per_s": _columns(rate_rows),
        "gauges": _columns(gauge_rows),
    }
    series["totals"] = _totals(snapshots, series)
    return series


def _totals(snapshots: Sequence[Snapshot], series: Mapping[str, Any]) -> dict[str, Any]:
    first, last = snapshots[0], snapshots[-1]
    wall = last.t_s - first.t_s
    before = first.counters
    counters = {}
    for k, v in last.counters.items():
        if k in before:
            d = v - before[k]
            counters[k] = _r(0.0 if d < 0.0 else d)
    gauges = series["gauges"]
    return {
        "wall_s": _r(wall),
        "cpu_pct": {k: _r(v) for k, v in _cpu_pct(first.cpu["total"], last.cpu["total"]).items()},
        "counters": counters,
        "gauge_mean": {k: _r(m) for k, v in gauges.items() if (m := _mean(v)) is not None},
        # the columns' values have four digits already: their largest needs no rounding again
        "gauge_peak": _peaks(gauges),
        "rate_peak": _peaks(series["rates_per_s"]),
    }


def _peaks(columns: Mapping[str, Sequence[float | None]]) -> dict[str, float]:
    """Each column's largest value (a column with none left out)."""
    out = {}
    for k, v in columns.items():
        if len(v) == 1:  # one interval: its value is the peak
            if v[0] is not None:
                out[k] = v[0]
        elif present := [x for x in v if x is not None]:
            out[k] = max(present)
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None
