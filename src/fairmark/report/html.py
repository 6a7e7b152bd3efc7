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
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from fairmark import __version__
from fairmark.report import plots
from fairmark.report.data import RunReport
from fairmark.report.section import Context
from fairmark.report.sections import NAMES, SECTIONS
from fairmark.report.views import flatten

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


# -- a run: its sections' views, each under its name for its template ----------------------------------------


def run_view(report: RunReport, figs: Figures) -> dict[str, Any]:
    """What the run's templates read: its id, title, confidence and baseline (every section's template may), and
    each section's own view under its name (report/sections/: a section with an `html` part)."""
    ctx = Context(report, figures=figs)
    run = report.run
    base = {"id": run.id, "title": run.title, "confidence": report.confidence, "baseline": report.baseline}
    return base | {s.name: s.html(report, ctx) for s in SECTIONS if s.html}


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
