"""The run's header: its facts (plan, seed, status, start) and the notes a reader needs before its numbers
(--accept-risk, a quick run, a re-run, profiled trials, fairmark's own memory stored as the trials')."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from fairmark.console import console, escape
from fairmark.report.busy import busy_headline
from fairmark.report.section import Context, Section
from fairmark.store.owner import GONE

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.report.writer import Writer


def resume_hint(run_id: str, status: str) -> str:
    """What to do about a run that did not end: its finished trials are kept, `resume` runs the rest."""
    how = {
        "interrupted": "was interrupted",
        GONE: "was interrupted: its controller is gone (killed)",
    }.get(status, "has not ended (still running, or killed)")
    return f"this run {how}: `fairmark resume {run_id[:8]}` continues it, keeping its finished trials"


def _terminal(r: RunReport, _: Context) -> None:
    run = r.run
    status = GONE if run.controller_gone else run.status
    title = f" — {run.title}" if run.title else ""
    console.print(f"[bold]{escape(console.wrap(f'run {run.id}{title}'))}[/bold]")
    console.text(
        f"plan {run.plan_path} (sha256 {run.plan_sha256[:12]}), seed {run.seed}, status {status}, "
        f"started {run.started_at:%Y-%m-%d %H:%M:%S}, fairmark {run.fairmark_version}"
    )
    if run.status in ("interrupted", "running"):  # a run killed mid-way stays "running" in the store
        console.print(f"[yellow]{escape(console.wrap(resume_hint(run.id, status)))}[/]")
    if run.options.get("quick"):
        console.print(
            f"[yellow]{console.wrap('quick run: few trials and short parameters — a first look, not a result to quote')}[/]"
        )
    if r.rerun_note:
        console.text(r.rerun_note)
    if r.profiled_note:
        console.print(f"[yellow]{escape(console.wrap(r.profiled_note))}[/]")
    if r.rss_note:
        console.print(f"[yellow]{escape(console.wrap(r.rss_note))}[/]")
    if r.risk_note:
        colour = "bold red" if "found errors" in r.risk_note else "yellow"
        console.print(f"[{colour}]{escape(console.wrap(r.risk_note))}[/]")


def _text(w: Writer, report: RunReport, ctx: Context) -> None:
    run = report.run
    w.heading(f"fairmark run {run.id}" + (f" — {run.title}" if run.title else ""), 2)
    w.para(
        f"status {run.status}, host {run.hostname}, started {run.started_at:%Y-%m-%d %H:%M:%S}, "
        f"confidence {report.confidence:g}%, baseline {report.baseline}"
    )
    if report.risk_note:
        w.para(f"!!! {report.risk_note} !!!")
    if (run.options or {}).get("quick"):
        w.para("quick run: few trials and short parameters — a first look, not a result to quote")
    if report.rerun_note:
        w.para(report.rerun_note)
    if report.profiled_note:
        w.para(report.profiled_note)
    if report.rss_note:
        w.para(report.rss_note)
    headline = busy_headline(report, ctx.attributions)
    if headline:  # as `show` says it, once before the verdicts (groups' text drops "CPU saturated" per cell)
        w.para(headline)


def _json(r: RunReport, _: Context) -> dict[str, Any]:
    return {
        "run": r.run.to_dict(),
        "confidence": r.confidence,
        "baseline": r.baseline,
        "profiled_note": r.profiled_note,
        "rerun_note": r.rerun_note,
        "rss_note": r.rss_note,
    }


def _when(t: dt.datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if t else "—"


def _html(report: RunReport, _: Context) -> dict[str, Any]:
    run = report.run
    hooks = (run.options or {}).get("hooks", [])
    return {
        "status": run.status,
        "hostname": run.hostname,
        "started": _when(run.started_at),
        "ended": _when(run.ended_at),
        "quick": bool((run.options or {}).get("quick")),
        "accept_risk": run.accept_risk,
        "risk_note": report.risk_note,
        "hooks": hooks,
        "profiled_note": report.profiled_note,
        "rerun_note": report.rerun_note,
        "rss_note": report.rss_note,
        "profilers": [h for h in hooks if h.startswith("profile.")],
    }


SECTION = Section("header", terminal=_terminal, text=_text, json=_json, html=_html)
