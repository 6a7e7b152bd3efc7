"""`--json` of a run (`fairmark show --json`, `fairmark run --json`): each section's keys (report/sections/), in
the sections' order — one document, every number, the trials with their samples and output tails."""

from __future__ import annotations

from typing import Any

from fairmark.report.data import RunReport
from fairmark.report.section import Context
from fairmark.report.sections import SECTIONS


def run_json(report: RunReport) -> dict[str, Any]:
    """The run as `--json` has it."""
    ctx = Context(report)
    doc: dict[str, Any] = {}
    for section in SECTIONS:
        if section.json:
            doc |= section.json(report, ctx)
    return doc
