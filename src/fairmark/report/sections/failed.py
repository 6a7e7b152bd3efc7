"""Cells that measured nothing, first: with the first lines their command wrote, so the cause shows at the top
(report/failures.py finds them and words the run's failure); then the profiles asked for and not delivered."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fairmark.console import console, escape
from fairmark.report.failures import (
    failed_cells,
    failed_lines,
    missing_profiles,
    profile_failure,
    run_failure,
)
from fairmark.report.section import Context, Section

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.report.writer import Writer


def _terminal(r: RunReport, _: Context) -> None:
    _missing_terminal(r)
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


def _missing_terminal(r: RunReport) -> None:
    """A --profile that came back empty, in red where the run ends: its measured part is shown below as usual."""
    verdict = profile_failure(r)
    if not verdict:
        return
    said = verdict.removeprefix("profiles missing: ")
    console.print(f"[bold red]PROFILES MISSING[/] {escape(console.wrap(said, first=17))}")
    for m in missing_profiles(r):
        console.print(f"  [red]{escape(console.wrap(m.sentence, first=2, indent='    '))}[/]")
        for line in m.lines:
            console.print(f"      {escape(console.wrap(line, first=6, indent='        '))}")


def _text(w: Writer, report: RunReport, _: Context) -> None:
    """Cells that measured nothing, with the first error lines of their first failed trial; profiles missing."""
    verdict = profile_failure(report)
    if verdict:
        w.heading("PROFILES MISSING: " + verdict, 3)
        for m in missing_profiles(report):
            w.para(m.sentence, "- ")
            if m.lines:
                w.block(["    " + line for line in m.lines])
    found = failed_cells(report.cells)
    if not found:
        return
    verdict = run_failure(report)
    w.heading("FAILED: " + verdict if verdict else "Cells with no successful trial", 3)
    for f in found:
        w.para(f.sentence, "- ")
        if f.lines:
            w.block(["    " + line for line in f.lines])


def _json(r: RunReport, _: Context) -> dict[str, Any]:
    return {
        "failed_cells": [f.to_dict() for f in failed_cells(r.cells)],
        "run_failure": run_failure(r),
        "missing_profiles": [m.to_dict() for m in missing_profiles(r)],
        "profile_failure": profile_failure(r),
    }


def _html(r: RunReport, _: Context) -> dict[str, Any]:
    return {
        "cells": [f.to_dict() for f in failed_cells(r.cells)],
        "run_failure": run_failure(r),
        "missing": [m.sentence for m in missing_profiles(r)],
        "profile_failure": profile_failure(r),
    }


SECTION = Section("failed", terminal=_terminal, text=_text, json=_json, html=_html)
