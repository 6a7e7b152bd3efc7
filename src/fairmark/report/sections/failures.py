"""What went wrong besides the verdicts: file-system results the disk cannot have produced (report/pagecache.py),
the spread the plan asked about ([run] spread = true), and the failure rate of measured trials
(report/failures.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fairmark.console import console, escape
from fairmark.report import pagecache
from fairmark.report.failures import errors_start, lines, spread_lines
from fairmark.report.section import Context, Section

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.report.writer import Writer


def _terminal(r: RunReport, _: Context) -> None:
    sections = (
        ("page cache", "(file-system results the disk cannot have produced)", pagecache.lines(r)),
        ("spread", "(the plan asked: [run] spread = true)", spread_lines(r)),
        ("failures", "(failed or timed-out measured trials; warm-ups not counted)", lines(r)),
    )
    for title, note, found in sections:
        if found:
            console.print()
            console.print(f"[bold]{title}[/bold] {escape(console.wrap(note, first=len(title) + 1))}")
            for line in found:
                console.text(f"  {line}")


def _bullets(w: Writer, heading: str, found: list[str]) -> None:
    """A part of one bullet per line, or nothing when there are no lines."""
    if found:
        w.heading(heading, 3)
        for line in found:
            w.para(line, "- ")


def _text(w: Writer, report: RunReport, _: Context) -> None:
    _bullets(w, "Page cache (file-system results the disk cannot have produced)", pagecache.lines(report))
    _bullets(w, "Spread (Brown–Forsythe; CV ratio with a percentile bootstrap CI)", spread_lines(report))
    _bullets(w, "Failures (measured trials; warm-ups not counted)", lines(report))


def _json(r: RunReport, _: Context) -> dict[str, Any]:
    return {
        "failures": [f.to_dict() for f in r.failures],
        "errors_start": errors_start(r.failures),
        "spread": list(r.spreads),
        "page_cache": pagecache.flags(r),
    }


def _html(r: RunReport, _: Context) -> dict[str, Any]:
    return {"lines": lines(r), "page_cache": pagecache.lines(r), "spreads": spread_lines(r)}


SECTION = Section("failures", terminal=_terminal, text=_text, json=_json, html=_html)
