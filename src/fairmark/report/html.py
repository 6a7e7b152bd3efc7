"""`fairmark report --html`: one self-contained HTML file built from the store alone.

Everything shown is data from runs: plan text, command lines, host names, variant names and tool output are
escaped by Jinja2's autoescape, never trusted as markup. Pictures are inline matplotlib SVG (text escaped by
matplotlib) and flame graphs as `<img>` data URIs, so the JavaScript inferno puts in its SVG cannot run inside
the report. No CDN, no web fonts: the file works offline and prints.
"""

from __future__ import annotations

import datetime as dt
import functools
import multiprocessing
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from fairmark import __version__
from fairmark.report import attribution as attr
from fairmark.report import plots
from fairmark.report.data import CellReport, RunArtifacts, RunReport
from fairmark.report.profiles import cpu_line, cpu_view, scope_of
from fairmark.report.sections import NAMES, SECTIONS
from fairmark.report.views import (
    cell_row,
    flatten,
    lock_rows,
    ministat_text,
    syscall_view,
    table_scale,
    verdict_rows,
)
from fairmark.stats import format_value
from fairmark.store.records import TrialRecord

BATCH = 6  # figures per task sent to a worker process


def _draw(job: tuple[str, tuple, str, Path | None]) -> tuple[str, Path | None]:
    """Build, render and optionally save one figure."""
    kind, args, name, png_dir = job
    fig = getattr(plots, kind)(*args)
    png = plots.save_png(fig, png_dir, name) if png_dir is not None else None
    return plots.to_svg(fig), png


def _draw_batch(jobs: list[tuple[str, tuple, str, Path | None]]) -> list[tuple[str, Path | None]]:
    return [_draw(job) for job in jobs]


def _result(future: Future, jobs: list) -> list[tuple[str, Path | None]]:
    """A worker that died (out of memory, fork refused) costs time, not the report: draw here instead."""
    try:
        return future.result()
    except BrokenProcessPool:
        return _draw_batch(jobs)


class Figures:
    """Draws the report's figures while the rest of the view is still being built: every BATCH figures go
    to a worker process (matplotlib is single-threaded; a 50-workload report has 150 figures). A report
    with fewer figures than one batch is drawn in-process, without the cost of a pool."""

    def __init__(self, png_dir: Path | None = None):
        self.png_dir = png_dir
        self.png_paths: list[Path] = []
        self._pending: list[tuple[tuple[str, tuple, str, Path | None], dict[str, Any]]] = []
        self._submitted: list[tuple[Future, list, list[dict[str, Any]]]] = []
        self._pool: ProcessPoolExecutor | None = None
        self._parallel = (os.cpu_count() or 1) > 1

    def add(self, kind: str, args: tuple, name: str) -> dict[str, Any]:
        """A slot whose "svg" is filled by render(); the template reads slot.svg."""
        slot: dict[str, Any] = {"svg": ""}
        self._pending.append(((kind, args, name, self.png_dir), slot))
        if len(self._pending) >= BATCH and self._parallel:
            try:
                self._submit()
            except OSError:  # no processes to be had: draw everything here, in render()
                self._parallel = False
        return slot

    def _submit(self) -> None:
        if self._pool is None:
            ctx = multiprocessing.get_context("fork")
            self._pool = ProcessPoolExecutor(max_workers=os.cpu_count(), mp_context=ctx)
        jobs, slots = [j for j, _ in self._pending], [s for _, s in self._pending]
        self._submitted.append((self._pool.submit(_draw_batch, jobs), jobs, slots))
        self._pending = []

    def render(self) -> None:
        done = [(_draw_batch([j for j, _ in self._pending]), [s for _, s in self._pending])]
        try:
            done += [(_result(future, jobs), slots) for future, jobs, slots in self._submitted]
        finally:
            if self._pool is not None:
                self._pool.shutdown()
            self._pool, self._pending, self._submitted = None, [], []
        for results, slots in done:
            for slot, (svg, png) in zip(slots, results, strict=True):
                slot["svg"] = svg
                if png is not None:
                    self.png_paths.append(png)


# -- per-run pieces -----------------------------------------------------------------------------------------


def cell_profiles(c: CellReport, arts: RunArtifacts, baseline_folded: str | None) -> dict[str, Any] | None:
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


def _flame(folded: str, title: str, diff_of: str | None) -> dict[str, str]:
    made = plots.flamegraph_svg(folded, title, diff_of=diff_of)
    if made is None:
        return {"missing": "no flame graph renderer: `cargo install inferno` (or FlameGraph on PATH)"}
    svg, renderer = made
    return {"uri": plots.svg_data_uri(svg), "renderer": renderer}


def group_view(
    report: RunReport, name: str, cells: list[CellReport], arts: RunArtifacts, figs: Figures, attrs: dict
) -> dict[str, Any]:
    first = cells[0]
    metric = first.primary_metric
    spec = first.spec(metric)
    datasets = [(c.variant, c.values.get(metric, [])) for c in cells if c.values.get(metric)]
    plot = (
        figs.add("strip_plot", (datasets, metric, spec.unit, spec.better), f"{name}-{metric}")
        if datasets
        else None
    )
    base = next((c for c in cells if c.variant == report.baseline), cells[0])
    base_folded = plots.merge_folded(arts.data(base.key, "profile.cpu/folded")) or None
    cell_views = []
    for c in cells:
        series = arts.data(c.key, "monitor/system")
        a = attrs.get(c.key)
        monitor_svg = None
        if series:
            ncpu = max(s.get("ncpu") or 1 for s in series)
            slim = [_slim(s) for s in series]
            marks = kernel_marks(c, arts)
            monitor_svg = figs.add("monitor_plot", (slim, ncpu, marks), f"{name}-{c.variant}-monitor")
        cell_views.append(
            {
                "variant": c.variant,
                "command": c.command,
                "params": c.params or {},
                "labels": c.labels or {},
                "attribution": a,
                "monitor_svg": monitor_svg,
                "monitor_rows": attr.monitor_summary(series),
                "kernel_events": cell_kernel_events(c),
                "warnings": list(c.warnings),
                "loops_note": c.loops_note,
                "failures": [t for t in c.trials if t.status != "ok"][:3],
                "profiles": cell_profiles(c, arts, base_folded if c is not base else None),
            }
        )
    return {
        "name": name,
        "metric": metric,
        "unit": spec.unit,
        "better": spec.better,
        "rows": [cell_row(c, table_scale(cells)) for c in cells],
        "plot_svg": plot,
        "ministat": ministat_text(cells, metric),
        "cells": cell_views,
    }


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


def cell_kernel_events_of(trial: TrialRecord) -> list[dict[str, Any]]:
    from fairmark.store.events import events_in

    return [] if trial.warmup else events_in(trial.stderr_tail or "")


def scaling_views(report: RunReport, figs: Figures) -> list[dict[str, Any]]:
    by_workload: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for s in report.scaling:
        by_workload[(s.workload, s.parameter)].append(s)
    out = []
    for (workload, param), curves in by_workload.items():
        failed = failure_points(report, workload, param)
        xs = sorted({x for _, x in failed if isinstance(x, int | float)})
        svg = figs.add("scaling_plot", (curves, xs), f"{workload}-scaling-{param}")
        rows = [
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
        notes = [f"{c.variant}: {c.summary}" for c in curves]
        notes += [f"{v}: every trial failed at {param} = {x} (failure point)" for v, x in failed]
        efficiency = any(p.efficiency is not None for c in curves for p in c.points)  # CPU/thread sweeps only
        out.append(
            {
                "workload": workload,
                "parameter": param,
                "svg": svg,
                "rows": rows,
                "notes": notes,
                "efficiency": efficiency,
            }
        )
    return out


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


def _slim(series: Mapping[str, Any]) -> dict[str, Any]:
    """Only what the monitor plot draws: less to send to a worker process."""
    return {
        "t_s": series.get("t_s"),
        "cpu_pct": series.get("cpu_pct"),
        "gauges": {"runq": (series.get("gauges") or {}).get("runq")},
    }


def run_view(report: RunReport, figs: Figures) -> dict[str, Any]:
    arts = RunArtifacts(report)
    attrs = attr.attribute_cells(report, arts)
    run = report.run
    groups = [group_view(report, g, cells, arts, figs, attrs) for g, cells in report.groups().items()]
    return {
        "id": run.id,
        "title": run.title,
        "status": run.status,
        "hostname": run.hostname,
        "started": _when(run.started_at),
        "ended": _when(run.ended_at),
        "quick": bool((run.options or {}).get("quick")),
        "accept_risk": run.accept_risk,
        "risk_note": report.risk_note,
        "confidence": report.confidence,
        "baseline": report.baseline,
        "hooks": (run.options or {}).get("hooks", []),
        "profiled_note": report.profiled_note,
        "rerun_note": report.rerun_note,
        "rss_note": report.rss_note,
        "profilers": [h for h in (run.options or {}).get("hooks", []) if h.startswith("profile.")],
        "verdicts": verdict_rows(report, attrs),
        "groups": groups,
        "scaling": scaling_views(report, figs),
        "failures": failure_lines(report),
        "failed_cells": [f.to_dict() for f in failed_cells(report.cells)],
        "run_failure": run_failure(report),
        "page_cache": page_cache_lines(report),
        "spreads": spread_lines(report),
        "reproduce": {
            "version": run.fairmark_version,
            "plan_path": run.plan_path,
            "plan_text": run.plan_text,
            "plan_sha256": run.plan_sha256,
            "command_line": run.command_line,
            "seed": run.seed,
        },
    } | {s.name: s.html(report) for s in SECTIONS if s.html}  # a section's own view, under its name


def spread_lines(report: RunReport) -> list[str]:
    from fairmark.report.failures import spread_lines

    return spread_lines(report)


def page_cache_lines(report: RunReport) -> list[str]:
    from fairmark.report.pagecache import lines

    return lines(report)


def failed_cells(cells: Any) -> Any:
    from fairmark.report.failures import failed_cells

    return failed_cells(cells)


def run_failure(report: RunReport) -> str | None:
    from fairmark.report.failures import run_failure

    return run_failure(report)


def failure_lines(report: RunReport) -> list[str]:
    from fairmark.report.failures import lines

    return lines(report)


def _when(t: dt.datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if t else "—"


# -- environment, across runs and before/after --------------------------------------------------------------


def environment_view(reports: Sequence[RunReport]) -> dict[str, Any]:
    columns, flats = [], []
    for r in reports:
        short = r.run.id[:8]
        for label, env in (("before", r.run.env_before), ("after", r.run.env_after)):
            if env:
                columns.append(f"{short} {label}")
                flats.append(flatten(env))
    keys = sorted({k for f in flats for k in f})
    rows = [{"key": k, "values": [f.get(k, "—") for f in flats]} for k in keys]
    differ = [r for r in rows if len(set(r["values"])) > 1]
    same = [r for r in rows if len(set(r["values"])) <= 1]
    return {"columns": columns, "differ": differ, "same": same}


# -- the document --------------------------------------------------------------------------------------------


@functools.cache  # compiling the template takes 40 ms: once per process (a site has a page per run)
def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("fairmark.report", "templates"),
        autoescape=select_autoescape(["html", "j2", "html.j2"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    return env


def _num(x: Any, digits: int = 3) -> str:
    if isinstance(x, int | float) and x == x:
        return f"{x:.{digits}g}" if abs(x) < 10**digits else f"{x:,.0f}"
    return "—"


# Nothing from elsewhere, nothing that runs: styles inline, pictures inline SVG or data: URIs. A report of a
# bundle from someone else shows their text (escaped); were any of it to get through as markup, this policy
# still loads and runs nothing. The dashboard's pages (report/publish) are these reports and carry the same.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


@functools.cache
def html_sections() -> frozenset[str]:
    """The sections the HTML report shows: each by its template, report/templates/sections/NAME.html.j2."""
    here = Path(__file__).parent / "templates" / "sections"
    return frozenset(name for name in NAMES if (here / f"{name}.html.j2").is_file())


def render_html(
    reports: Sequence[RunReport], *, png_dir: Path | None = None, figures: Figures | None = None
) -> tuple[str, list[Path]]:
    """The report and the PNGs written (`png_dir`); `figures`: who draws the pictures (default: matplotlib)."""
    figs = figures or Figures(png_dir)
    view = {
        "csp": CSP,
        "version": __version__,
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "runs": [run_view(r, figs) for r in reports],  # figures are collected here …
        "environment": environment_view(reports),
        "flame_renderer": (Path(renderer).name if (renderer := plots.flame_renderer()) else None),
        # each run's sections in their order (report/sections.py): those with a template of their own
        "sections": NAMES,
        "html_sections": html_sections(),
    }
    figs.render()  # … and drawn here, all at once
    return _env().get_template("report.html.j2").render(**view), figs.png_paths


def write_html(reports: Sequence[RunReport], path: Path, *, png_dir: Path | None = None) -> list[Path]:
    html, pngs = render_html(reports, png_dir=png_dir)
    path.write_text(html, encoding="utf-8")
    return pngs
