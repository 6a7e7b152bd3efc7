"""How to run it again: fairmark's version, the seed, the plan (its text whole), the command line, and the way
from its bundle on another machine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fairmark.report.section import Context, Section
from fairmark.report.writer import WIDTH

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.report.writer import Writer

FOLD = "↪ "


def fold(lines: Sequence[str], markdown: bool) -> list[str]:
    """Quoted text kept whole but within the width: a long line goes on after FOLD on the next (in Markdown a
    fenced block scrolls instead, and a copy is exact)."""
    if markdown:
        return list(lines)
    out = []
    for line in lines:
        out.append(line[:WIDTH])
        rest = line[WIDTH:]
        while rest:
            out.append(FOLD + rest[: WIDTH - len(FOLD)])
            rest = rest[WIDTH - len(FOLD) :]
    return out


def _text(w: Writer, report: RunReport, _: Context) -> None:
    run = report.run
    w.heading("How to reproduce", 3)
    w.para(
        f"fairmark {run.fairmark_version}, seed {run.seed}, plan {run.plan_path} (sha256 {run.plan_sha256[:16]})"
    )
    w.para("command line:")
    w.block(fold(["  " + run.command_line], w.md))
    w.para(
        f"elsewhere, from its bundle: `fairmark export {run.id[:8]}`, then `fairmark run fairmark-{run.id}.json` "
        f"(this plan text, seed and scale), then `fairmark compare-runs {run.id[:8]} last`"
    )
    w.para(
        "plan:"
        if w.md
        else f"plan (a line longer than {WIDTH} columns goes on after {FOLD.strip()} on the next):"
    )
    w.block(fold(run.plan_text.rstrip("\n").splitlines(), w.md))


def _html(report: RunReport, _: Context) -> dict[str, Any]:
    run = report.run
    return {
        "version": run.fairmark_version,
        "plan_path": run.plan_path,
        "plan_text": run.plan_text,
        "plan_sha256": run.plan_sha256,
        "command_line": run.command_line,
        "seed": run.seed,
    }


SECTION = Section("reproduce", text=_text, html=_html)
