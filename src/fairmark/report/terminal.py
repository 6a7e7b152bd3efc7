"""`fairmark show` and the end of `fairmark run`: the run's sections (report/sections/) in their order, each
printed by its own terminal part — the header, per workload a table (variants as rows), the ministat-style
plot, verdict sentences, scaling data, warnings and findings. Digits are rounded to what the CI supports."""

from __future__ import annotations

from fairmark.report.data import RunReport
from fairmark.report.section import Context
from fairmark.report.sections import SECTIONS


def render(r: RunReport, *, plot_width: int = 74) -> None:
    ctx = Context(r, plot_width=plot_width)
    for section in SECTIONS:
        if section.terminal:
            section.terminal(r, ctx)
