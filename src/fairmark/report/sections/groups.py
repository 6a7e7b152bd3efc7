"""Each workload and sweep point (a group of cells compared with each other): the variants' table, ministat's
plot, the verdicts (the terminal's; the text and HTML reports have a verdicts section of their own), and each
cell — what the monitors attribute its time to, its other metrics, warnings, failed trials and profiles."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fairmark.console import console, escape
from fairmark.plan.metric import BUILTIN_METRICS
from fairmark.report import attribution as attr
from fairmark.report.boots import levels_lines
from fairmark.report.busy import busy_headline, without_saturation
from fairmark.report.data import trial_dict
from fairmark.report.ministat import ascii_plot, legend
from fairmark.report.profiles import cell_json, cpu_line, cpu_view, scope_of
from fairmark.report.section import Context, Section
from fairmark.report.stability import SHOWN as STABILITY_SHOWN
from fairmark.report.views import (
    cell_row,
    in_unit,
    lock_rows,
    mean_text,
    ministat_text,
    short_text,
    short_verdict,
    syscall_view,
    table_scale,
)
from fairmark.stats import format_median, format_value
from fairmark.stats.describe import mean_ci
from fairmark.stats.digits import (
    column_unit,
    format_cv,
    format_interval,
    format_pair,
    scale_unit,
)
from fairmark.store.events import events_in
from fairmark.verdict.judge import enough

if TYPE_CHECKING:
    from fairmark.report.data import CellReport, RunArtifacts, RunReport, Verdict
    from fairmark.report.writer import Writer
    from fairmark.store.records import TrialRecord


# -- the terminal (`fairmark show`) ---------------------------------------------------------------------------
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
    text = short_verdict(v.comparison)
    return f"A/A calibration: {text}" if v.calibration else text


def _table(r: RunReport, group: str, cells: list[CellReport]) -> None:
    """Variants as rows, values bare (the unit in the title, one prefix for the table). When the medians'
    intervals would push the table past the width, the medians go without them (their digits still as the
    interval supports; `show --json` and the HTML report have it)."""
    primary = cells[0].primary_metric
    spec = cells[0].spec(primary)
    verdicts = {v.variant: v for v in r.verdicts if v.group == group and v.metric == primary}
    failed = any(c.n_failed for c in cells)
    cols = ["variant", "n", "median", f"mean ± {r.confidence:g}% CI", "CV", "fail", "vs baseline"]
    divisor, unit = scale_unit(table_scale(cells) or 0.0, spec.unit)
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


def _verdict_lines(
    r: RunReport, group: str, caveats: dict[tuple[str, str, str], str], cells: list[CellReport]
) -> None:
    scale = table_scale(cells)  # the prefix of the table above: the boot or run means of its metric take it
    for v in r.verdicts:
        if v.group == group:
            fdr = "" if v.fdr_significant or not v.significant else " — not significant after FDR control"
            console.text(f"  {v.metric}: {v.sentence}{fdr}")
            primary = v.metric == cells[0].primary_metric
            for line in levels_lines(v.comparison, v.unit, scale if primary else None):
                console.text(f"    {line}")
            for w in v.comparison.warnings:  # rank tests that disagree, an A/A twin… (issue 23)
                if " has only " in w:  # the cells' own warnings below say how few trials they have
                    continue
                console.print(f"    [yellow]warning[/] {escape(console.wrap(w, first=12, indent='      '))}")
            caveat = caveats.get((v.group, v.variant, v.metric))
            if caveat:
                console.print(f"[yellow]{escape(console.wrap('    ' + caveat))}[/]")


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
    _verdict_lines(r, group, caveats, cells)
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
            if t_.status != "ok" and not t_.profiled:
                line(t_.status, "red", f"{c.key} trial {t_.seq}: {t_.error or ''}")
        lost = [t_ for t_ in c.trials if t_.profiled and t_.status != "ok"]
        if lost:  # one line, not one per profiled trial (a profiler failing in every one made 40 lines)
            n = sum(t_.profiled for t_ in c.trials)
            line(
                "profiled",
                "red",
                f"{c.key}: {len(lost)} of {n} failed; trial {lost[0].seq}: {lost[0].error or ''}",
            )


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


def summary_text(s: dict[str, Any], unit: str) -> str:
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
                parts.append(f"{m.name} {summary_text(s, m.unit)}")
        if parts:
            console.text(f"  [{c.variant}] also: " + ", ".join(parts))


def _terminal(r: RunReport, ctx: Context) -> None:
    attrs = attr.attribute_cells(
        r, attr.MonitorSeries(r)
    )  # a part of each series: not the context's artifacts
    caveats = attr.verdict_caveats(r, attrs)
    headline = busy_headline(r, attrs)
    if headline:  # once, before the tables, instead of "CPU saturated" under every cell
        console.print()
        console.print(f"[bold yellow]{escape(console.wrap(headline))}[/]")
        attrs = without_saturation(attrs)
    for group, cells in r.groups().items():
        console.print()
        _group(r, group, cells, ctx.plot_width, attrs, caveats)


# -- text and Markdown (`fairmark report --text / --markdown`) -----------------------------------------------
def _text_table(cells: Sequence[CellReport], divisor: float) -> list[str]:
    """Columns as wide as their widest value (a number is never cut); the values bare, their unit in the
    heading."""
    rows = [cell_row(c, divisor=divisor) for c in cells]
    cols = [
        ("variant", "variant", "<"),
        ("n", "n", ">"),
        ("mean ± CI", "mean", "<"),
        ("median", "median", "<"),
        ("CV", "cv", ">"),
        ("fail", "failed", ">"),
    ]
    texts = [
        [short_text(r[key], 24) if key == "variant" else str(r[key]) for _, key, _ in cols] for r in rows
    ]
    widths = [max(len(head), *(len(row[i]) for row in texts)) for i, (head, _, _) in enumerate(cols)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(f"{v:{align}{w}}" for v, w, (_, _, align) in zip(values, widths, cols, strict=True))

    return [line([head for head, _, _ in cols]).rstrip()] + [line(row).rstrip() for row in texts]


def _text_cell(w: Writer, c: CellReport, arts: RunArtifacts, a: Any) -> None:
    if c.loops_note:
        w.para(f"[{c.variant}] {c.loops_note}", "  ")
    if a is not None:
        w.para(f"[{c.variant}] {a.sentence}", "  ")
        for f in a.flags:
            w.para(f"USE: {f.message}", "    ")
    digest = monitor_digest(arts.data(c.key, "monitor/system"))
    if digest:
        w.para(f"monitor ({c.variant}, means): {digest}", "    ")
    text_profiles(w, c, arts)


def monitor_digest(series: Sequence[Mapping[str, Any]]) -> str:
    """'CPU user 93%, …, context switches 2600/s, run queue 23.0' (a rate with its unit: it read "2600")."""
    return ", ".join(
        f"{m['name']} {m['mean_text']}{m['unit'] if m['unit'] == '%' or m['unit'].startswith('/') else ''}"
        for m in monitor_rows(series)
        if m["name"] in ("CPU user", "CPU system", "CPU iowait", "run queue", "context switches")
    )


def monitor_rows(series: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """attribution.monitor_summary's rows, each with `mean_text`: its mean (no unit) rounded at the digits of the 95% t
    half-width of the trials' own values' mean (two trials or more; one: four significant digits). The text and
    HTML reports printed four and three significant digits whatever the trials' spread."""
    rows = attr.monitor_summary(series)
    per_trial: dict[str, list[float]] = {}
    for s in series if len(series) >= 2 else ():
        for r in attr.monitor_summary([s]):
            per_trial.setdefault(r["name"], []).append(r["mean"])
    for r in rows:
        vals = per_trial.get(r["name"], [])
        hw = mean_ci(vals)[2] if len(vals) > 1 else None
        r["mean_text"] = format_pair(r["mean"], hw)[
            0
        ]  # its unit in the HTML table's header, the digest's text
    return rows


def _text_syscalls(w: Writer, c: CellReport, sys_docs: list[Any]) -> None:
    view = syscall_view(sys_docs)
    lines = [f"    {'syscall':<18} {'calls':>10} {'errors':>7} {'seconds':>10} {'%time':>6}"]
    lines += [
        f"    {short_text(r['syscall'], 18):<18} {r['calls']:>10} {r['errors']:>7} {format_value(r['seconds']):>10} "
        f"{r['pct']:>6.1f}"
        for r in view["rows"][:8]
    ]
    w.para(f"syscalls of {c.variant} ({view['source']}; {scope_of(sys_docs)}):", "    ")
    w.block(lines)


def _text_locks(w: Writer, c: CellReport, locks: list[Any]) -> None:
    rows = lock_rows(locks)[:5]
    scope = scope_of(locks)
    w.para(f"lock contention of {c.variant}, {scope}: " + ("none recorded" if not rows else ""), "    ")
    if rows:
        lines = [
            f"    {'lock / caller':<36} {'contended':>9} {'wait ms':>9} {'max µs':>9}"
        ]  # under its caption
        lines += [
            f"    {short_text(r['lock'], 36):<36} {r['contended']:>9} {format_value(r['total_ms']):>9} "
            f"{format_value(r['max_us']):>9}"
            for r in rows
        ]
        w.block(lines)


def text_profiles(w: Writer, c: CellReport, arts: RunArtifacts) -> None:
    sys_docs = arts.data(c.key, "profile.syscalls/summary")
    if sys_docs:
        _text_syscalls(w, c, sys_docs)
    locks = arts.data(c.key, "profile.locks/contention")
    if locks:
        _text_locks(w, c, locks)
    cpu = cpu_view(arts.data(c.key, "profile.cpu/meta"))
    if cpu:
        w.para(f"CPU profile of {c.variant}: {cpu_line(cpu)}", "    ")
    if arts.data(c.key, "profile.cpu/folded"):
        w.para(
            f"CPU flame graph of {c.variant}: in the HTML report (`fairmark report RUN --html FILE`)", "    "
        )


def _text(w: Writer, report: RunReport, ctx: Context) -> None:
    attrs = ctx.attributions
    if busy_headline(report, attrs):  # the header said it once for all (report/busy.py), as `show` does
        attrs = without_saturation(attrs)
    for group, cells in report.groups().items():
        metric = cells[0].primary_metric
        spec = cells[0].spec(metric)
        divisor, unit = column_unit(((c.summaries.get(metric) or {}).get("mean") for c in cells), spec.unit)
        w.heading(f"{group} — {metric}" + (f" in {unit}" if unit else "") + f", {spec.better} is better", 3)
        w.block(_text_table(cells, divisor))
        plot = ministat_text(cells, metric, divisor)
        if plot:
            w.blank()
            w.block(plot.splitlines())
        for c in cells:
            _text_cell(w, c, ctx.artifacts, attrs.get(c.key))


# -- --json ----------------------------------------------------------------------------------------------------
def cell_dict(c: CellReport, trials: bool = True) -> dict[str, Any]:
    d: dict[str, Any] = {
        "key": c.key,
        "group": c.group,
        "workload": c.workload,
        "variant": c.variant,
        "point": [list(p) for p in c.point],
        "status": c.status,
        "stop_reason": c.stop_reason,
        "primary_metric": c.primary_metric,
        "metrics": [m.row() for m in c.metrics],
        "command": list(c.command) if c.command is not None else None,
        "params": c.params,
        "labels": c.labels,
        "n_ok": c.n_ok,
        "n_failed": c.n_failed,
        "summaries": c.summaries,
        "warnings": list(c.warnings),
        "loops": c.record.loops,
        "loops_note": c.loops_note,
        "values": c.values,
    }
    if trials:
        d["trials"] = [trial_dict(t, c.samples.get(t.id, {})) for t in c.trials]
    return d


def _json_profiles(r: RunReport, ctx: Context) -> dict[str, Any]:
    """Runs with profilers: each cell's profiles, their scope and the workload's share of the CPU samples."""
    if not any(str(h).startswith("profile.") for h in (r.run.options or {}).get("hooks") or ()):
        return {}

    cells = [doc for c in r.cells if (doc := cell_json(c.key, c.variant, ctx.artifacts))]
    return {"profiles": cells} if cells else {}


def _json(r: RunReport, ctx: Context) -> dict[str, Any]:
    return {"cells": [cell_dict(c) for c in r.cells]} | _json_profiles(r, ctx)


# -- HTML (templates/sections/groups.html.j2) ---------------------------------------------------------------
def _flame(folded: str, title: str, diff_of: str | None) -> dict[str, str]:
    from fairmark.report import plots  # matplotlib: the HTML report's alone

    made = plots.flamegraph_svg(folded, title, diff_of=diff_of)
    if made is None:
        return {"missing": "no flame graph renderer: `cargo install inferno` (or FlameGraph on PATH)"}
    svg, renderer = made
    return {"uri": plots.svg_data_uri(svg), "renderer": renderer}


def cell_profiles(c: CellReport, arts: RunArtifacts, baseline_folded: str | None) -> dict[str, Any] | None:
    from fairmark.report import plots

    folded = plots.merge_folded(arts.data(c.key, "profile.cpu/folded"))
    errors = [
        e
        for k in ("profile.cpu", "profile.locks", "profile.syscalls")
        for e in arts.data(c.key, f"{k}/error")
    ]
    locks = arts.data(c.key, "profile.locks/contention")
    sys_docs = arts.data(c.key, "profile.syscalls/summary")
    if not (folded or errors or locks or sys_docs):
        return None
    out: dict[str, Any] = {"variant": c.variant, "errors": sorted(set(errors))[:5], "folded": folded}
    if cpu := cpu_view(arts.data(c.key, "profile.cpu/meta")):
        out["cpu_scope"] = cpu_line(cpu)
    if folded:
        out["flame"] = _flame(folded, f"{c.group} — {c.variant}", None)
        if baseline_folded and baseline_folded != folded:
            out["diff"] = _flame(folded, f"{c.group}: {c.variant} vs baseline (red = more)", baseline_folded)
    if locks:
        out["locks"] = lock_rows(locks)
        out["lock_source"] = f"{locks[0].get('source', '')}; {scope_of(locks)}"
    if sys_docs:
        out["syscalls"] = syscall_view(sys_docs) | {"scope": scope_of(sys_docs)}
    return out


def cell_kernel_events_of(trial: TrialRecord) -> list[dict[str, Any]]:
    return [] if trial.warmup else events_in(trial.stderr_tail or "")


def cell_kernel_events(c: CellReport) -> list[dict[str, Any]]:
    """The kernel events the stability watch reported in this cell's measured trials, in order."""
    return [{"trial": t.seq} | e for t in c.trials for e in cell_kernel_events_of(t)]


def kernel_marks(c: CellReport, arts: RunArtifacts) -> list[tuple[float, str]]:
    """Kernel events placed on the monitor plot's axis: the trials' series are drawn end to end, so an event
    t_s seconds into a trial sits at the durations of the trials before it plus t_s."""
    by_trial = {t.id: events for t in c.trials if (events := cell_kernel_events_of(t))}
    if not by_trial:
        return []
    marks: list[tuple[float, str]] = []
    offset = 0.0
    for entry in arts.entries(c.key, "monitor/system"):
        data = entry["data"]
        ts = data.get("t_s") if isinstance(data, dict) else None
        marks += [
            (offset + e["t_s"], e["kind"])
            for e in by_trial.get(entry["trial_id"] or "", [])
            if e["t_s"] is not None
        ]
        last = ts[-1] if isinstance(ts, list) and ts else 0.0
        offset += last if isinstance(last, int | float) else 0.0
    return marks


def _slim(series: Mapping[str, Any]) -> dict[str, Any]:
    """Only what the monitor plot draws: less to send to a worker process."""
    return {
        "t_s": series.get("t_s"),
        "cpu_pct": series.get("cpu_pct"),
        "gauges": {"runq": (series.get("gauges") or {}).get("runq")},
    }


def _cell_view(c: CellReport, name: str, ctx: Context, base_folded: str | None) -> dict[str, Any]:
    arts = ctx.artifacts
    series = arts.data(c.key, "monitor/system")
    monitor_svg = None
    if series:
        ncpu = max(s.get("ncpu") or 1 for s in series)
        slim = [_slim(s) for s in series]
        marks = kernel_marks(c, arts)
        monitor_svg = ctx.figures.add("monitor_plot", (slim, ncpu, marks), f"{name}-{c.variant}-monitor")
    return {
        "variant": c.variant,
        "command": c.command,
        "params": c.params or {},
        "labels": c.labels or {},
        "attribution": ctx.attributions.get(c.key),
        "monitor_svg": monitor_svg,
        "monitor_rows": monitor_rows(series),
        "kernel_events": cell_kernel_events(c),
        "warnings": list(c.warnings),
        "loops_note": c.loops_note,
        "failures": [t for t in c.trials if t.status != "ok"][:3],
        "profiles": cell_profiles(c, arts, base_folded),
    }


def group_view(report: RunReport, name: str, cells: list[CellReport], ctx: Context) -> dict[str, Any]:
    from fairmark.report import plots

    first = cells[0]
    metric = first.primary_metric
    spec = first.spec(metric)
    datasets = [(c.variant, c.values.get(metric, [])) for c in cells if c.values.get(metric)]
    plot = (
        ctx.figures.add("strip_plot", (datasets, metric, spec.unit, spec.better), f"{name}-{metric}")
        if datasets
        else None
    )
    base = next((c for c in cells if c.variant == report.baseline), cells[0])
    base_folded = plots.merge_folded(ctx.artifacts.data(base.key, "profile.cpu/folded")) or None
    scale = table_scale(cells)
    return {
        "name": name,
        "metric": metric,
        "unit": spec.unit,
        "better": spec.better,
        "rows": [cell_row(c, scale) for c in cells],
        "plot_svg": plot,
        "ministat": ministat_text(cells, metric),
        "cells": [_cell_view(c, name, ctx, base_folded if c is not base else None) for c in cells],
    }


def _html(report: RunReport, ctx: Context) -> list[dict[str, Any]]:
    return [group_view(report, g, cells, ctx) for g, cells in report.groups().items()]


SECTION = Section("groups", terminal=_terminal, text=_text, json=_json, html=_html)
