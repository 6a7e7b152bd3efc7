"""`fairmark show` and the end of `fairmark run`: per workload a table (variants as rows), the ministat-style
plot, verdict sentences, scaling data, warnings and findings. Digits are rounded to what the CI supports."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rich.markup import escape

from fairmark.console import console
from fairmark.plan.model import BUILTIN_METRICS
from fairmark.report.boots import levels_lines
from fairmark.report.data import CellReport, RunReport, Verdict
from fairmark.report.ministat import ascii_plot, legend
from fairmark.report.sections import SECTIONS
from fairmark.report.stability import SHOWN as STABILITY_SHOWN
from fairmark.report.views import mean_text
from fairmark.stats import format_median, format_value
from fairmark.stats.compare import Comparison
from fairmark.stats.digits import column_unit, format_cv, format_interval
from fairmark.stats.judge import enough
from fairmark.store.owner import GONE


def resume_hint(run_id: str, status: str) -> str:
    """What to do about a run that did not end: its finished trials are kept, `resume` runs the rest."""
    how = {
        "interrupted": "was interrupted",
        GONE: "was interrupted: its controller is gone (killed)",
    }.get(status, "has not ended (still running, or killed)")
    return f"this run {how}: `fairmark resume {run_id[:8]}` continues it, keeping its finished trials"


def _header(r: RunReport) -> None:
    run = r.run
    status = GONE if run.controller_gone else run.status
    title = f" — {run.title}" if run.title else ""
    console.print(f"[bold]{escape(console.wrap(f'run {run.id}{title}'))}[/bold]")
    console.text(
        f"plan {run.plan_path} (sha256 {run.plan_sha256[:12]}), seed {run.seed}, status {status}, "
        f"started {run.started_at:%Y-%m-%d %H:%M:%S}, fairmark {run.fairmark_version}"
    )
    if run.status in ("interrupted", "running"):  # a run killed mid-way stays "running" in the store
        console.print(f"[yellow]{escape(console.wrap(resume_hint(run.id, status)))}[/]")
    if run.options.get("quick"):
        console.print(
            f"[yellow]{console.wrap('quick run: few trials and short parameters — a first look, not a result to quote')}[/]"
        )
    if r.rerun_note:
        console.text(r.rerun_note)
    if r.profiled_note:
        console.print(f"[yellow]{escape(console.wrap(r.profiled_note))}[/]")
    if r.rss_note:
        console.print(f"[yellow]{escape(console.wrap(r.rss_note))}[/]")
    if r.risk_note:
        colour = "bold red" if "found errors" in r.risk_note else "yellow"
        console.print(f"[{colour}]{escape(console.wrap(r.risk_note))}[/]")


def _cell_row(
    c: CellReport, verdict: str, divisor: float | None = None, *, median_interval: bool = True
) -> list[str]:
    """variant, n, median, mean ± CI, CV, failed, vs baseline. With `divisor`, the values are shown divided by
    it and without their unit (the table's title has it); `median_interval`: the median's own interval shown."""
    s = c.summaries.get(c.primary_metric)
    unit = "" if divisor else c.spec(c.primary_metric).unit
    d = divisor or 1.0
    if not s or s["n"] < 2:
        return [escape(c.variant), str(c.n_ok), "—", "—", "—", str(c.n_failed), escape(verdict or c.status)]
    cv = format_cv(s.get("cv"))
    hw = s["ci_half_width"] / d
    low, high = s.get("median_ci_low", math.nan), s.get("median_ci_high", math.nan)
    low, high = (None if x is None else x / d for x in (low, high))
    median = format_median(s["median"] / d, low, high, unit, fallback_half_width=hw, interval=median_interval)
    return [
        escape(c.variant),
        str(s["n"]),
        median,
        mean_text(s, c.spec(c.primary_metric).unit, d, shown=unit),
        cv,
        str(c.n_failed),
        escape(verdict),
    ]


def _short(v: Verdict | None) -> str:
    """The table's verdict column: the change and its interval as a % of the baseline, and whether it is proven."""
    if v is None:
        return "—"
    c = v.comparison
    text = short_verdict(c)
    return f"A/A calibration: {text}" if v.calibration else text


def short_verdict(c: Comparison) -> str:
    """'+394% (+381% to +408%) worse', '-0.3% (-2.9% to +2.3%), not proven': a table cell — the change and the
    interval of the design that decided (paired, Welch, units; not ministat's); the sentence goes below."""
    interval = c.interval
    if c.significant:
        return f"{interval} {c.change}"
    return interval if interval.startswith(("no ", "unbounded")) else f"{interval}, not proven"


def _table(r: RunReport, group: str, cells: list[CellReport]) -> None:
    """Variants as rows, values bare (the unit in the title, one prefix for the table). When the medians'
    intervals would push the table past the width, the medians go without them (their digits still as the
    interval supports; `show --json` and the HTML report have it)."""
    primary = cells[0].primary_metric
    spec = cells[0].spec(primary)
    verdicts = {v.variant: v for v in r.verdicts if v.group == group and v.metric == primary}
    failed = any(c.n_failed for c in cells)
    cols = ["variant", "n", "median", f"mean ± {r.confidence:g}% CI", "CV", "fail", "vs baseline"]
    divisor, unit = column_unit(((c.summaries.get(primary) or {}).get("mean") for c in cells), spec.unit)
    texts = {
        c.variant: "baseline" if c.variant == r.baseline else _short(verdicts.get(c.variant)) for c in cells
    }
    keep = [i for i in range(len(cols)) if failed or cols[i] != "fail"]
    rows = [[row[i] for i in keep] for row in (_cell_row(c, texts[c.variant], divisor) for c in cells)]
    shown = [cols[i] for i in keep]
    if console.natural_width(shown, rows) > console.width:
        rows = [
            [row[i] for i in keep]
            for row in (_cell_row(c, texts[c.variant], divisor, median_interval=False) for c in cells)
        ]
    t = console.table(*shown, wrap=("vs baseline",), right=("n", "CV", "fail"))
    for row in rows:
        t.add_row(*row)
    console.print_table(t, f"{group} — {primary}{in_unit(unit)} ({spec.better} is better)")


def in_unit(unit: str) -> str:
    """' in ms' for a title whose table shows bare values."""
    return f" in {unit}" if unit else ""


def _group(
    r: RunReport,
    group: str,
    cells: list[CellReport],
    plot_width: int,
    attrs: dict[str, Any],
    caveats: dict[tuple[str, str, str], str],
) -> None:
    primary = cells[0].primary_metric
    _table(r, group, cells)
    data = [(c.variant, c.values.get(primary, [])) for c in cells if enough(c.values.get(primary, []))]
    if data:
        console.block(legend(data) + ascii_plot(data, width=plot_width))
    for v in r.verdicts:
        if v.group == group:
            fdr = "" if v.fdr_significant or not v.significant else " — not significant after FDR control"
            console.text(f"  {v.metric}: {v.sentence}{fdr}")
            for line in levels_lines(v.comparison, v.unit):
                console.text(f"    {line}")
            for w in v.comparison.warnings:  # rank tests that disagree, an A/A twin… (issue 23)
                if " has only " in w:  # the cells' own warnings below say how few trials they have
                    continue
                console.print(f"    [yellow]warning[/] {escape(console.wrap(w, first=12, indent='      '))}")
            caveat = caveats.get((v.group, v.variant, v.metric))
            if caveat:
                console.print(f"[yellow]{escape(console.wrap('    ' + caveat))}[/]")
    _params(cells)
    _other_metrics(cells)
    for c in cells:
        a = attrs.get(c.key)
        if a is not None:
            console.text(f"  [{c.variant}] {a.sentence}")
            for flag in a.flags:
                console.print(
                    f"    [yellow]USE[/] {escape(console.wrap(flag.message, first=8, indent='      '))}"
                )
    _cell_notes(cells)


def _cell_notes(cells: list[CellReport]) -> None:
    """Each cell's warnings, abandonment and failed trials, wrapped under a coloured word."""

    def line(word: str, colour: str, text: str) -> None:
        wrapped = console.wrap(text, first=3 + len(word), indent="    ")
        console.print(f"  [{colour}]{word}[/] {escape(wrapped)}")

    for c in cells:
        if c.loops_note:
            line("loops", "cyan", f"{c.key}: {c.loops_note}")
        for w in c.warnings:
            line("warning", "yellow", f"{c.key}: {w}")
        if c.status == "abandoned":
            line("abandoned", "red", f"{c.key}: {c.stop_reason or ''}")
        for t_ in c.trials:
            if t_.status != "ok":
                line(t_.status, "red", f"{c.key} trial {t_.seq}: {t_.error or ''}")


def _params(cells: list[CellReport]) -> None:
    """A tool's parameters where the variants differ, and what the report must state (e.g. fsync)."""
    rows = [(c, c.params) for c in cells if c.params]
    if not rows:
        return
    keys = sorted({k for _, params in rows for k in params})
    differ = [k for k in keys if len({repr(params.get(k)) for _, params in rows}) > 1]
    first = rows[0][1]
    same = {k: first[k] for k in keys if k not in differ and k in first}
    console.text("  params: " + ", ".join(f"{k}={v}" for k, v in same.items()))
    for c, params in rows:
        diff = ", ".join(f"{k}={params.get(k)}" for k in differ)
        labels = ", ".join(f"{k}: {v}" for k, v in (c.labels or {}).items())
        if diff or labels:
            console.text(f"  [{c.variant}] " + "; ".join(x for x in (diff, labels) if x))


def _summary_text(s: dict[str, Any], unit: str) -> str:
    """mean ± CI; a count of rare events: its mean and exact Poisson interval, never below zero."""
    if s.get("interval") == "exact Poisson":
        return format_interval(s["mean"], s["ci_low"], s["ci_high"], unit) + " (exact Poisson)"
    if s.get("n", 0) > 1 and s.get("min") == s.get("max"):  # "ratio 1.333 ± 0 x": no interval to give
        return format_value(s["mean"], None, unit) + " in every trial"
    return mean_text(s, unit)


def _numbers(s: dict[str, Any] | None) -> tuple[Any, ...]:
    return tuple((s or {}).get(k) for k in ("n", "mean", "median", "stddev", "ci_half_width", "min", "max"))


def _other_metrics(cells: list[CellReport]) -> None:
    """The tool's other metrics (mean ± CI of each), one line per cell: the table shows only the primary one,
    and a workload such as pbuild reports its percentiles, tail and rates there."""
    for c in cells:
        # a metric with the numbers of one shown before (compress_mb_s_L1 is compress_mb_s when one level ran)
        # is a copy: listed once, under its first name
        seen = {_numbers(c.summaries.get(c.primary_metric))}
        parts = []
        for m in c.metrics[1:]:
            s = c.summaries.get(m.name)
            if m.name in BUILTIN_METRICS or not s or not s.get("n") or s.get("mean") is None:
                continue  # the runner's wall/CPU/RSS: the attribution line has them
            if m.name in STABILITY_SHOWN and "kernel_events" in c.values:
                continue  # the stability line gives it with its exact interval ("0 ± 0" beside [0, 4.9])
            if _numbers(s) not in seen:
                seen.add(_numbers(s))
                parts.append(f"{m.name} {_summary_text(s, m.unit)}")
        if parts:
            console.text(f"  [{c.variant}] also: " + ", ".join(parts))


def _scaling(r: RunReport) -> None:
    for s in r.scaling:
        efficiency = any(p.efficiency is not None for p in s.points)  # CPU/thread sweeps only
        cols = (s.parameter, "n", f"mean ± {r.confidence:g}% CI", "speedup", "efficiency")[: 4 + efficiency]
        t = console.table(*cols)
        divisor, shown = column_unit((p.mean for p in s.points), s.unit)
        for p in s.points:
            mark = "  ← peak" if s.peak is not None and p.value == s.peak else ""
            eff = [f"{100 * p.efficiency:.0f}%" if p.efficiency is not None else "—"] if efficiency else []
            hw = None if p.ci_half_width is None else p.ci_half_width / divisor
            t.add_row(
                str(p.value), str(p.n), format_value(p.mean / divisor, hw), f"{p.speedup:.2f}×{mark}", *eff
            )
        title = f"scaling: {s.workload}/{s.variant} over {s.parameter} — {s.metric}{in_unit(shown)}"
        console.print_table(t, title)
        console.text(f"  {s.summary}")


def _failures(r: RunReport) -> None:
    from fairmark.report.failures import lines, spread_lines
    from fairmark.report.pagecache import lines as page_cache_lines

    sections = (
        ("page cache", "(file-system results the disk cannot have produced)", page_cache_lines(r)),
        ("spread", "(the plan asked: [run] spread = true)", spread_lines(r)),
        ("failures", "(failed or timed-out measured trials; warm-ups not counted)", lines(r)),
    )
    for title, note, found in sections:
        if found:
            console.print()
            console.print(f"[bold]{title}[/bold] {escape(console.wrap(note, first=len(title) + 1))}")
            for line in found:
                console.text(f"  {line}")


def _failed(r: RunReport) -> None:
    """Cells that measured nothing, first: with the first lines their command wrote, so the cause shows here."""
    from fairmark.report.failures import failed_lines, run_failure

    found = failed_lines(r)
    if not found:
        return
    verdict = run_failure(r)
    console.print(
        f"[bold red]FAILED[/] {escape(console.wrap(verdict, first=7))}"
        if verdict
        else "[bold]cells with no successful trial[/]"
    )
    for line in found:  # wrapped as `report --text` wraps them (a log is read at 80 columns)
        text = escape(console.wrap(line, first=2, indent=" " * (len(line) - len(line.lstrip()) + 4)))
        console.print(f"  [red]{text}[/]" if not line.startswith(" ") else f"  {text}")


def _groups(r: RunReport, plot_width: int) -> None:
    from fairmark.report.attribution import attribute_cells, verdict_caveats
    from fairmark.report.data import MonitorSeries

    attrs = attribute_cells(r, MonitorSeries(r))
    caveats = verdict_caveats(r, attrs)
    from fairmark.report.busy import busy_headline, without_saturation

    headline = busy_headline(r, attrs)
    if headline:  # once, before the tables, instead of "CPU saturated" under every cell
        console.print()
        console.print(f"[bold yellow]{escape(console.wrap(headline))}[/]")
        attrs = without_saturation(attrs)
    for group, cells in r.groups().items():
        console.print()
        _group(r, group, cells, plot_width, attrs, caveats)


def _scaling_part(r: RunReport) -> None:
    if r.scaling:
        console.print()
        _scaling(r)


def _summary(r: RunReport) -> None:
    significant = [v for v in r.verdicts if v.significant]
    if r.verdicts:
        console.print()
        console.text(
            f"{len(r.verdicts)} comparison(s), {len(significant)} significant at {r.confidence:g}%; "
            f"{sum(v.fdr_significant for v in r.verdicts)} survive Benjamini-Hochberg (FDR "
            f"{100 - r.confidence:g}%) across the run"
        )


# What `fairmark show` shows of each section (report/sections.py), in the sections' order.
PARTS: dict[str, Callable[[RunReport, int], None]] = {
    "header": lambda r, _: _header(r),
    "failed": lambda r, _: _failed(r),
    "groups": _groups,
    "scaling": lambda r, _: _scaling_part(r),
    "failures": lambda r, _: _failures(r),
    "summary": lambda r, _: _summary(r),
}


def render(r: RunReport, *, plot_width: int = 74) -> None:
    for section in SECTIONS:
        if section.terminal:
            section.terminal(r)
        elif section.name in PARTS:
            PARTS[section.name](r, plot_width)
