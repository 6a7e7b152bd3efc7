"""What the text/Markdown and HTML reports of a run show alike, as plain values (rows of dicts, lines): the
verdicts' rows, a table's rows and unit, ministat's plot, the lock and system-call tables of the profiles, what
each variant changes. Free of matplotlib and jinja2 (report/html.py draws and templates): `fairmark report
--text` never loads them."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fairmark.report import attribution as attr
from fairmark.report.boots import levels_lines
from fairmark.report.data import CellReport, RunReport
from fairmark.report.ministat import ascii_plot, legend, vitals_line
from fairmark.stats import format_median, format_value
from fairmark.stats.digits import (
    bounds,
    estimate_text,
    format_bounded,
    format_cv,
    scale_unit,
    shared_scale,
    unit_suffix,
)

if TYPE_CHECKING:
    from fairmark.verdict.compare import Comparison

NAME_W = 14  # characters of a name in the text report's narrow columns


def short_text(text: Any, width: int = NAME_W) -> str:
    """A name cut to `width` characters (an ellipsis where it was cut), for a fixed-width column."""
    s = str(text)
    return s if len(s) <= width else s[: width - 1] + "…"


def short_verdict(c: Comparison) -> str:
    """'+394% (+381% to +408%) worse', '-0.3% (-2.9% to +2.3%), not proven': a table cell — the change and the
    interval of the design that decided (paired, Welch, units; not ministat's); the sentence goes below."""
    interval = c.interval
    if c.significant:
        return f"{interval} {c.change}"
    return interval if interval.startswith(("no ", "unbounded")) else f"{interval}, not proven"


def in_unit(unit: str) -> str:
    """' in ms' for a title whose table shows bare values."""
    return f" in {unit}" if unit else ""


ENV_VALUE_MAX = 200  # characters of one environment value shown; the store keeps it whole
TOP_LOCKS = 15
TOP_SYSCALLS = 20


def verdict_rows(report: RunReport, attributions: Mapping[str, Any]) -> list[dict[str, Any]]:
    caveats = attr.verdict_caveats(report, attributions)
    rows = []
    for v in report.verdicts:
        c = v.comparison
        unit = v.unit
        caveat = caveats.get((v.group, v.variant, v.metric))
        rows.append(
            {
                "group": v.group,
                "metric": v.metric,
                "baseline": v.baseline,
                "variant": v.variant,
                # the point difference of the means, and the change with the interval of the design that decided
                # (paired by round, Welch, units): never ministat's unpaired ± beside a paired verdict
                "difference": difference_text(c, unit),
                "percent": c.interval,
                "significant": v.significant,
                "fdr_significant": v.fdr_significant,
                "change": c.change,
                "sentence": v.sentence,
                "warnings": list(v.warnings),
                "caveat": caveat,
                "levels": levels_lines(c, unit),  # boots as the unit: per-boot means, sd at each level
            }
        )
    return rows


def difference_text(c: Comparison, unit: str) -> str:
    """The difference of the arithmetic means, its sign written out as the change's is, with the digits the
    verdict's interval gives it in the unit (at least two significant): "means differ by 1.588 s" stood beside
    "+350% (+290% to +430%)", and "-26.83 µs" beside an interval of ±54 µs. Empty for a metric that never
    varied. Not always of the change's sign: the change is the deciding design's estimate (paired by round, on
    logarithms), and where its interval spans 0 the two can differ ("-0.78% (-45% to +79%)", "+7.7 MB/s")."""
    if c.constant and c.difference == 0:
        return ""
    low, high = c.ratio_ci_low, c.ratio_ci_high
    width = (high - low) / 2 * abs(c.mean_baseline) if math.isfinite(high - low) else c.half_width
    hw = width if math.isfinite(width) and width > 0 else None
    divisor, shown = scale_unit(max(abs(c.difference), hw or 0.0), unit)
    text = estimate_text(c.difference / divisor, None if hw is None else hw / divisor)
    sign = "" if text.startswith("-") or float(text) == 0 else "+"
    return sign + text + unit_suffix(shown)


def mean_text(
    s: dict[str, Any],
    unit: str,
    divisor: float = 1.0,
    *,
    scale: float | None = None,
    shown: str | None = None,
) -> str:
    """A summary's mean ± CI — its interval cut at the metric's bounds (a count is never below zero, a share
    never above 100%: stats.digits.bounds) — divided by `divisor` and shown in `shown` (default: `unit`)."""
    hw = s.get("ci_half_width")
    low, high = bounds(unit, s.get("min"), s.get("max"))
    d = divisor
    return format_bounded(
        s["mean"] / d,
        None if hw is None else hw / d,
        unit if shown is None else shown,
        low=None if low is None else low / d,
        high=None if high is None else high / d,
        scale=scale,
    )


def cell_row(c: CellReport, scale: float | None = None, *, divisor: float | None = None) -> dict[str, Any]:
    """A variant's row of a table; `scale`: the magnitude that picks the unit prefix the table shares. With
    `divisor`, values divided by it and shown without their unit (the table's heading says it)."""
    s = c.summaries.get(c.primary_metric)
    unit = "" if divisor else c.spec(c.primary_metric).unit
    d = divisor or 1.0
    row = {"variant": c.variant, "n": c.n_ok, "failed": c.n_failed, "stop": c.stop_reason or c.status}
    if s and s["n"] >= 2:
        hw = s["ci_half_width"] / d
        low, high = s.get("median_ci_low", math.nan), s.get("median_ci_high", math.nan)
        low, high = (None if x is None else x / d for x in (low, high))
        row |= {
            "mean": mean_text(s, c.spec(c.primary_metric).unit, d, scale=scale, shown=unit),
            "median": format_median(s["median"] / d, low, high, unit, fallback_half_width=hw, scale=scale),
            "cv": format_cv(s.get("cv")),
        }
    elif s:
        row |= {"mean": format_value(s["mean"] / d, None, unit, scale=scale), "median": "—", "cv": "—"}
    else:
        row |= {"mean": "—", "median": "—", "cv": "—"}
    return row


def table_scale(cells: Sequence[CellReport]) -> float | None:
    """The largest mean of the cells' primary metric: one SI prefix for a whole table's column."""
    return shared_scale((c.summaries.get(c.primary_metric) or {}).get("mean") for c in cells)


def ministat_text(cells: Sequence[CellReport], metric: str, divisor: float = 1.0) -> str:
    """ministat's plot and N/Min/Max/… lines of the cells' `metric`, its values divided by `divisor`: in the
    unit of the table above them (the text report's "wall_s in ms" table was followed by "0.069011467")."""
    datasets = [
        (c.variant, [v / divisor for v in c.values.get(metric, [])])
        for c in cells
        if len(c.values.get(metric, [])) >= 1
    ]
    if not datasets:
        return ""
    try:
        lines = legend(datasets) + ascii_plot(datasets, 74)
    except ValueError as exc:
        return f"[no plot: {exc}]"
    lines.append("    N           Min           Max        Median           Avg        Stddev")
    lines += [vitals_line(i, v) for i, (_, v) in enumerate(datasets)]
    return "\n".join(lines)


def lock_rows(docs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for doc in docs:
        for r in doc.get("rows", []):
            key = (r.get("type", ""), r.get("lock", "") + (" " + r["caller"] if r.get("caller") else ""))
            m = merged.setdefault(
                key, {"type": key[0], "lock": key[1], "contended": 0, "total": 0.0, "max": 0.0}
            )
            m["contended"] += r.get("contended", 0)
            m["total"] += r.get("total_wait_ns", 0.0)
            m["max"] = max(m["max"], r.get("max_wait_ns") or r.get("avg_wait_ns") or 0.0)
    rows = sorted(merged.values(), key=lambda r: -r["total"])[:TOP_LOCKS]
    return [r | {"total_ms": r["total"] / 1e6, "max_us": r["max"] / 1e3} for r in rows]


def syscall_view(docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    table: dict[str, dict[str, Any]] = {}
    hists: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for doc in docs:
        for r in doc.get("table", []):
            m = table.setdefault(
                r["syscall"], {"syscall": r["syscall"], "calls": 0, "errors": 0, "seconds": 0.0}
            )
            m["calls"] += r.get("calls", 0)
            m["errors"] += r.get("errors", 0)
            m["seconds"] += r.get("seconds", 0.0)
        for name, buckets in (doc.get("histograms_us") or {}).items():
            for b in buckets:
                hists[name][b["le_us"]] += b["count"]
    total = sum(r["seconds"] for r in table.values()) or 1.0
    rows = sorted(table.values(), key=lambda r: -r["seconds"])[:TOP_SYSCALLS]
    for r in rows:
        r["pct"] = 100 * r["seconds"] / total
        r["usecs_per_call"] = 1e6 * r["seconds"] / r["calls"] if r["calls"] else 0.0
    histograms = []
    for name, buckets in hists.items():
        peak = max(buckets.values())
        bars = [{"le_us": b, "count": n, "width": 100 * n / peak} for b, n in sorted(buckets.items())]
        histograms.append({"syscall": name, "bars": bars})
    return {"rows": rows, "histograms": histograms, "source": docs[0].get("source", "") if docs else ""}


def flatten(obj: Any, prefix: str = "", out: dict[str, str] | None = None) -> dict[str, str]:
    out = {} if out is None else out
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, list) and obj and all(isinstance(x, Mapping) for x in obj):
        for i, v in enumerate(obj):
            flatten(v, f"{prefix}[{i}]", out)
    else:
        text = obj if isinstance(obj, str) else json.dumps(obj, default=str)
        out[prefix] = text if len(text) <= ENV_VALUE_MAX else text[:ENV_VALUE_MAX] + "…"
    return out
