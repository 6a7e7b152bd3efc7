"""`fairmark bisect --good G --bad B --plan PLAN --build CMD`: which commit made it slower."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.markup import escape

from fairmark.cli._builds import bisect_options, build_options, run_locked
from fairmark.cli._lockwait import lock_first, wait_lock_option
from fairmark.cli._tags import tag_option
from fairmark.cli.check import _threshold
from fairmark.cli.common import common_options, guard_options, open_store, profile_options
from fairmark.console import console

if TYPE_CHECKING:
    from fairmark.bisect.search import BisectResult
    from fairmark.verdict.compare import Comparison


@click.command()
@click.option("--good", required=True, metavar="G", help="A commit without the regression.")
@click.option("--bad", required=True, metavar="B", help="A later commit with it.")
@build_options(
    "Plan whose workloads run on both sides (no [[variant]]; a workload finds its checkout in $FAIRMARK_CHECKOUT)."
)
@click.option(
    "--threshold",
    "threshold_pct",
    default="3%",
    show_default=True,
    callback=_threshold,
    metavar="PCT",
    help="Bisect only a regression between G and B proven larger than this.",
)
@click.option(
    "--attempts",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="Runs of the plan per commit at most (pooled) before a not-proven commit is skipped.",
)
@click.option("--quick", is_flag=True, help="The plan's [quick] parameters for every run.")
@guard_options("Run despite doctor errors; every run records it.")
@profile_options
@tag_option("Also tag every step's run with this (repeatable); each is tagged commit=SHA anyway.")
@wait_lock_option
@common_options
def bisect(
    good: str,
    bad: str,
    plan_path: str,
    build: str,
    repo: str,
    threshold_pct: float,
    attempts: int,
    quick: bool,
    accept_risk: bool,
    allow_concurrent: bool,
    no_monitors: bool,
    monitor_interval: float,
    profile: str | None,
    explain: bool,
    tag_items: tuple[str, ...],
    wait_lock: float,
) -> None:
    """Drive `git bisect` with proven verdicts: each candidate built in its own checkout and measured
    interleaved against the good commit; good/bad only when proven, else more runs, then skip."""
    lock_first(wait_lock, allow_concurrent=allow_concurrent)  # before the imports a refusal need not pay for
    from fairmark.bisect.search import Bisect
    from fairmark.cli._progress import TerminalProgress

    opts = bisect_options(
        good=good,
        bad=bad,
        plan_path=plan_path,
        build=build,
        repo=repo,
        threshold_pct=threshold_pct,
        attempts=attempts,
        quick=quick,
        accept_risk=accept_risk,
        tag_items=tag_items,
        no_monitors=no_monitors,
        monitor_interval=monitor_interval,
        allow_concurrent=allow_concurrent,
        profile=profile,
        explain=explain,
    )
    search = Bisect(opts, open_store(), progress=TerminalProgress, note=console.note, warn=console.warn)
    result = run_locked(search.run, plan_path, "bisect", allow_concurrent=allow_concurrent, wait_s=wait_lock)
    _report(result)


def _report(result: BisectResult) -> None:
    """The table and the answer (--json: the document, and the answer on stderr for a CI log)."""
    where = _where(result)
    if console.json_mode:
        console.emit_json(result.to_dict() | {"where": where or None})
        for line in _conclusion(result):  # a CI log keeps stderr: the answer is said there too
            console.note(line)
        if where:
            console.note(f"where it went: {where}")
        return
    _show(result)
    if where:  # a CI log that says which function regressed
        console.text(f"where it went: {where}")


def _where(result: BisectResult) -> str:
    """Where the first bad commit's difference from the good end went, when its step's run took CPU profiles
    (--profile cpu or --explain; report/explain)."""
    from fairmark.bisect.search import BAD, CANDIDATE
    from fairmark.report.explain import where_by_cell
    from fairmark.report.load import load_report

    step = result.step_of(result.first_bad) if result.proven and result.first_bad else None
    if step is None or not step.runs:
        return ""
    store = open_store()
    for run_id in reversed(step.runs):  # the last attempt, the one that decided
        if not store.artifacts(run_id, "profile.cpu"):
            continue
        found = [
            w
            for (_, variant), w in where_by_cell(load_report(store, run_id)).items()
            if variant in (CANDIDATE, BAD)
        ]
        if found:
            return found[0]
    return ""


def _effect(c: Comparison | None) -> str:
    from fairmark.report.check_output import fmt_change

    return fmt_change(c)


def _show(result: BisectResult) -> None:
    t = console.table("commit", "answer", "change vs good [CI]", "subject", wrap=("subject",))
    for s in result.steps:
        t.add_row(s.commit[:12], s.answer, _effect(s.comparison), escape(s.subject))
    target = f" on {result.target}" if result.target else ""
    console.print_table(t, f"bisect {result.good[:12]}..{result.bad[:12]}{target}")
    for s in result.steps:  # what `fairmark show` can open, and why a step was skipped
        runs = f"run(s) {' '.join(r[:8] for r in s.runs)}" if s.runs else "no run"
        console.text(f"  {s.commit[:12]}: {runs}" + (f"; {s.note}" if s.note else ""))
    for line in _conclusion(result):
        console.text(line)


def _conclusion(result: BisectResult) -> list[str]:
    """What the bisect found, in a line or two: the first bad commit, the commits it is among, or none."""
    if not result.proven:
        first = result.steps[0].comparison if result.steps else None
        tail = f": {first.sentence}" if first else ""
        return [f"no proven regression between {result.good[:12]} and {result.bad[:12]}{tail}"]
    if result.first_bad:
        step = result.step_of(result.first_bad)
        c = step.comparison if step else None
        subject = step.subject if step else ""
        at = [f"at that commit, against {result.good[:12]}: {_effect(c)} — {c.sentence}"] if c else []
        return [f"first bad commit: {result.first_bad} {subject}", *at]
    candidates = " ".join(c[:12] for c in result.candidates)
    return [
        "the first bad commit is one of these (the others could not be told apart and were skipped): "
        + candidates
    ]


commands = [bisect]
