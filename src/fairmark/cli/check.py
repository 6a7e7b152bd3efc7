"""`fairmark check RUN --against BASELINE`: the CI gate. Exit 1 on a regression proven beyond the threshold."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import click
from rich.markup import escape

from fairmark.cli.common import common_options, open_store
from fairmark.console import console
from fairmark.errors import FairmarkError, GateTripped


def _threshold(ctx: click.Context, param: click.Parameter, value: str) -> float:
    try:
        pct = float(value.strip().removesuffix("%"))
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected a percentage such as 3% or 2.5") from None
    if not 0 <= pct < 100:
        raise click.BadParameter(f"{value!r}: expected a percentage in [0, 100)")
    return pct


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--against",
    "against_text",
    default="variant",
    show_default=True,
    metavar="BASELINE",
    help="variant (the run's own interleaved baseline variant), tag:KEY=VALUE[,KEY=VALUE] (the last --last "
    "finished runs with these tags on this host started before RUN; none yet: skipped, exit 0) or run:ID[,ID].",
)
@click.option(
    "--threshold",
    "threshold_pct",
    default="3%",
    show_default=True,
    callback=_threshold,
    metavar="PCT",
    help="Fail only on a regression proven larger than this (the whole CI beyond it).",
)
@click.option(
    "--last", type=click.IntRange(1, 1000), default=10, show_default=True, help="Runs in a tag baseline."
)
@click.option("--any-host", is_flag=True, help="Let the baseline take runs made on other machines.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="Write JUnit XML here.")
@click.option(
    "--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Write a Markdown summary here."
)
@common_options
def check(
    run_ref: str,
    against_text: str,
    threshold_pct: float,
    last: int,
    any_host: bool,
    junit_path: str | None,
    markdown_path: str | None,
) -> None:
    """Check RUN against a baseline with the verdicts of a run; exit 1 on a proven regression beyond the
    threshold (significant after the false-discovery-rate correction, its whole CI beyond --threshold)."""
    from fairmark.report.check import CheckOptions, parse_against
    from fairmark.report.check import check as run_check
    from fairmark.report.check_output import junit_xml, markdown

    started = time.monotonic()
    against, store = parse_against(against_text), open_store()
    opts = CheckOptions(against, threshold_pct, last, any_host, plan_thresholds(store, run_ref))
    result = run_check(store, run_ref, opts)
    if junit_path:
        _write(junit_path, junit_xml(result, elapsed_s=time.monotonic() - started))
    if markdown_path:
        _write(markdown_path, markdown(result))
    if console.json_mode:
        console.emit_json(result.to_dict())
    else:
        _show(result)
    if result.failed:
        raise GateTripped(
            f"{len(result.regressions)} regression(s) proven beyond {threshold_pct:g}%: "
            + "; ".join(f"{c.cell} {c.metric}" for c in result.regressions)
        )


def plan_thresholds(store, run_ref: str) -> dict[tuple[str, str], float]:
    """The metrics' own `fail_on_pct` in the checked run's plan (none: a run stored from a bundle or a plan
    this version cannot read keeps --threshold for every metric)."""
    from fairmark.plan.load import parse_plan
    from fairmark.plan.model import metric_thresholds

    run = store.get_run(run_ref)
    try:
        return metric_thresholds(parse_plan(run.plan_text, run.plan_path))
    except FairmarkError:
        return {}


def _write(path: str, text: str) -> None:
    """Whole or not at all: a CI step never uploads a half-written report."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _show(r) -> None:  # r: fairmark.report.check.CheckResult
    """One line per checked cell (its metric too when a cell has several), then each verdict's sentence."""
    from fairmark.report.check_output import fmt_change

    if r.skipped:
        console.text(f"run {r.run_id[:8]} against {r.against}: skipped — {r.skipped}")
        return
    cells = [c.cell for c in r.cases]
    several = len(set(cells)) < len(cells)
    cols = ("cell", "metric", "change [CI]", "status") if several else ("cell", "change [CI]", "status")
    t = console.table(*cols, wrap=("status",))
    for c in r.cases:
        row = [escape(c.cell), c.metric] if several else [escape(c.cell)]
        t.add_row(*row, fmt_change(c.comparison), c.status)
    console.print_table(t, f"run {r.run_id[:8]} against {r.against} ({r.design})")
    from fairmark.verdict.levels import said_once

    levels = [c.verdict.comparison.levels if c.verdict else None for c in r.cases]
    once, sentences = said_once([(c.sentence, lv) for c, lv in zip(r.cases, levels, strict=True)])
    if once:  # the same runs on every line: their arrangement in time said once, not in every sentence
        console.text(f"  {once[0].upper()}{once[1:]}.")
    for c, sentence in zip(r.cases, sentences, strict=True):
        console.text(f"  {c.cell} {c.metric}: {sentence}")
        if c.where:  # a CI log that says which function regressed
            console.text(f"    where it went: {c.where}")
    for note in r.notes:
        console.note(note)
    if not r.failed:
        console.text(f"passed: no regression proven beyond {r.threshold_pct:g}% ({len(r.cases)} checked)")


commands = [check]
