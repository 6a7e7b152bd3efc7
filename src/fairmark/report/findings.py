"""The doctor's findings of a run, before and between its rounds (and after it): a section of its report
(report/sections.py) — `show` shows each error and warning once, the text report and HTML every finding, --json
every row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fairmark.console import console, escape
from fairmark.report.section import Context, Section
from fairmark.store.records import jsonable_row

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.report.writer import Writer


def _terminal(r: RunReport, _: Context) -> None:
    seen: set[str] = set()
    shown = []
    for f in r.findings:  # the same noise noticed again between rounds is shown once, first occurrence
        if f["severity"] in ("error", "warn") and f["finding_id"] not in seen:
            seen.add(f["finding_id"])
            shown.append(f)
    if not shown:
        return
    console.print(
        f"[bold]environment findings[/bold] {escape(console.wrap('(fairmark doctor; `fairmark show --json` has them all)', first=21))}"
    )
    for f in shown:
        colour = "red" if f["severity"] == "error" else "yellow"
        when = "" if f["phase"] == "before" else f" ({f['phase']} rounds)" if f["phase"] == "between" else ""
        text = console.wrap(
            f"{f['title']}{when}: {f['evidence']}", first=3 + len(f["severity"]), indent="    "
        )
        console.print(f"  [{colour}]{f['severity']}[/] {escape(text)}")


def _text(w: Writer, report: RunReport, _: Context) -> None:
    w.heading("Doctor findings", 3)
    if not report.findings:
        w.para("none recorded")
    for f in report.findings:
        w.para(f"[{f.get('severity', '')}] {f.get('title', '')}: {f.get('evidence', '')}", "- ")
        if f.get("fix"):
            w.para(f"fix: {f['fix']}", "    ")


def _finding(f: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("phase", "finding_id", "severity", "title", "evidence", "why", "fix")
    return {k: f.get(k, "") for k in keys}


def _json(r: RunReport, _: Context) -> dict[str, Any]:
    return {"findings": [jsonable_row(f) for f in r.findings]}


SECTION = Section(
    "findings",
    terminal=_terminal,
    text=_text,
    json=_json,
    html=lambda r, _: [_finding(f) for f in r.findings],
)
