"""`fairmark report --text / --markdown`: an 80-column report for a mailing list — ASCII plots, no colour.

Same content as the HTML report minus pictures: the run's sections (report/sections/) in their order, each
written by its own text part — verdicts first, then per workload the variants' table, the ministat plot,
attribution and USE flags, a monitor digest and the top of the lock and syscall profiles; then scaling, doctor
findings and how to reproduce. Markdown wraps the same text in headings and fences (report/writer.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from fairmark.report.data import RunReport
from fairmark.report.section import Context
from fairmark.report.sections import SECTIONS
from fairmark.report.writer import Writer


def _run(w: Writer, report: RunReport) -> None:
    ctx = Context(report)
    for section in SECTIONS:
        if section.text:
            section.text(w, report, ctx)


def render_text(reports: Sequence[RunReport], *, markdown: bool = False) -> str:
    w = Writer(markdown)
    for r in reports:
        _run(w, r)
    return "\n".join(line.rstrip() for line in w.lines).strip("\n") + "\n"
