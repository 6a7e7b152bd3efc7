"""Each swept parameter's curve: per point n, mean ± CI, the speedup over the first point (and, for a CPU or
thread sweep, the efficiency), and the curve's shape in words — claiming only what the tests proved."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from fairmark.console import console
from fairmark.report.section import Context, Section
from fairmark.report.views import in_unit, short_text
from fairmark.stats import format_value
from fairmark.stats.digits import column_unit

if TYPE_CHECKING:
    from fairmark.report.data import RunReport, Scaling
    from fairmark.report.writer import Writer


def _table(s: Scaling, confidence: float) -> None:
    efficiency = any(p.efficiency is not None for p in s.points)  # CPU/thread sweeps only
    cols = (s.parameter, "n", f"mean ± {confidence:g}% CI", "speedup", "efficiency")[: 4 + efficiency]
    t = console.table(*cols)
    divisor, shown = column_unit((p.mean for p in s.points), s.unit)
    for p in s.points:
        mark = "  ← peak" if s.peak is not None and p.value == s.peak else ""
        eff = [f"{100 * p.efficiency:.0f}%" if p.efficiency is not None else "—"] if efficiency else []
        hw = None if p.ci_half_width is None else p.ci_half_width / divisor
        t.add_row(str(p.value), str(p.n), format_value(p.mean / divisor, hw), f"{p.speedup:.2f}×{mark}", *eff)
    title = f"scaling: {s.workload}/{s.variant} over {s.parameter} — {s.metric}{in_unit(shown)}"
    console.print_table(t, title)
    console.text(f"  {s.summary}")


def _terminal(r: RunReport, _: Context) -> None:
    if r.scaling:
        console.print()
        for s in r.scaling:
            _table(s, r.confidence)


def _text(w: Writer, report: RunReport, _: Context) -> None:
    if not report.scaling:
        return
    w.heading("Scaling", 3)
    for s in report.scaling:
        divisor, unit = column_unit((p.mean for p in s.points), s.unit)
        w.para(f"{s.workload} / {s.variant} vs {s.parameter} ({s.metric}{in_unit(unit)}): {s.summary}", "")
        efficiency = any(p.efficiency is not None for p in s.points)  # CPU/thread sweeps only
        means = [
            format_value(p.mean / divisor, None if p.ci_half_width is None else p.ci_half_width / divisor)
            for p in s.points
        ]
        mw = max(len("mean ± CI"), *map(len, means))
        head = f"  {s.parameter[:10]:>10}  {'n':>3}  {'mean ± CI':<{mw}} {'speedup':>8}"
        lines = [head + (f" {'effic.':>7}" if efficiency else "")]
        for p, mean in zip(s.points, means, strict=True):
            eff = "—" if p.efficiency is None else f"{100 * p.efficiency:.0f}%"
            line = f"  {short_text(p.value, 10):>10}  {p.n:>3}  {mean:<{mw}} {p.speedup:>8.3g}"
            lines.append(line + (f" {eff:>7}" if efficiency else ""))
        w.block(lines)


def _json(r: RunReport, _: Context) -> dict[str, Any]:
    return {"scaling": [s.to_dict() for s in r.scaling]}


def failure_points(report: RunReport, workload: str, param: str) -> list[tuple[str, Any]]:
    """(variant, sweep value) of the cells of this sweep that produced no measurement at all."""
    return [
        (c.variant, c.point[0][1])
        for c in report.cells
        if c.workload == workload
        and len(c.point) == 1
        and c.point[0][0] == param
        and c.n_ok == 0
        and (c.n_failed > 0 or c.status == "abandoned")
    ]


def _rows(curves: list[Scaling]) -> list[dict[str, Any]]:
    return [
        {
            "variant": c.variant,
            "value": p.value,
            "n": p.n,
            "mean": format_value(p.mean, p.ci_half_width, c.unit),
            "speedup": f"{p.speedup:.3g}",
            "efficiency": "—" if p.efficiency is None else f"{100 * p.efficiency:.0f}%",
            "peak": c.peak is not None and p.value == c.peak,
        }
        for c in curves
        for p in c.points
    ]


def _html(report: RunReport, ctx: Context) -> list[dict[str, Any]]:
    by_workload: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for s in report.scaling:
        by_workload[(s.workload, s.parameter)].append(s)
    out = []
    for (workload, param), curves in by_workload.items():
        failed = failure_points(report, workload, param)
        xs = sorted({x for _, x in failed if isinstance(x, int | float)})
        svg = ctx.figures.add("scaling_plot", (curves, xs), f"{workload}-scaling-{param}")
        notes = [f"{c.variant}: {c.summary}" for c in curves]
        notes += [f"{v}: every trial failed at {param} = {x} (failure point)" for v, x in failed]
        efficiency = any(p.efficiency is not None for c in curves for p in c.points)  # CPU/thread sweeps only
        out.append(
            {
                "workload": workload,
                "parameter": param,
                "svg": svg,
                "rows": _rows(curves),
                "notes": notes,
                "efficiency": efficiency,
            }
        )
    return out


SECTION = Section("scaling", terminal=_terminal, text=_text, json=_json, html=_html)
