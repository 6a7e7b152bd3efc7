"""The interface of a run's report section (report/sections/ holds the list, in its order), and the context one
rendering of a run hands each section's part."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from fairmark.report.attribution import attribute_cells
from fairmark.report.data import RunArtifacts

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.report.writer import Writer


class FigureSink(Protocol):
    """Who draws the HTML report's pictures (report/html.Figures: matplotlib in worker processes): a part adds a
    figure and gets the slot its template reads (`slot.svg`), filled when the page is rendered."""

    def add(self, kind: str, args: tuple[Any, ...], name: str) -> dict[str, Any]: ...


class Context:
    """One rendering of one run: the renderer's options (the terminal's plot width, the HTML report's figures)
    and what several of the run's sections read — its artifacts by cell and each cell's attribution — made
    once, when a section first asks (the terminal report reads neither: it keeps only a part of each monitor
    series, report/attribution.MonitorSeries)."""

    def __init__(self, report: RunReport, *, plot_width: int = 74, figures: FigureSink | None = None):
        self.report = report
        self.plot_width = plot_width
        self._figures = figures

    @property
    def figures(self) -> FigureSink:
        assert self._figures is not None, "only the HTML report draws figures"
        return self._figures

    @functools.cached_property
    def artifacts(self) -> RunArtifacts:
        return RunArtifacts(self.report)

    @functools.cached_property
    def attributions(self) -> dict[str, Any]:
        return attribute_cells(self.report, self.artifacts)


@dataclass(frozen=True)
class Section:
    """One section of a run's report: its name, and the parts its module writes (None: that renderer shows
    nothing of it). `terminal(r, ctx)` prints it for `show`, `text(w, r, ctx)` writes it for text and Markdown,
    `json(r, ctx)` gives its keys of `--json`, `html(r, ctx)` what its template (report/templates/sections/
    NAME.html.j2) reads as `r[NAME]`."""

    name: str
    terminal: Callable[[RunReport, Context], None] | None = None
    text: Callable[[Writer, RunReport, Context], None] | None = None
    json: Callable[[RunReport, Context], dict[str, Any]] | None = None
    html: Callable[[RunReport, Context], Any] | None = None
