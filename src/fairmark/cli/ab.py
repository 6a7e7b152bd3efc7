"""`fairmark ab --base REF --head REF --plan PLAN --build CMD`: a change against its base, decided in one run."""

from __future__ import annotations

import time

import click

from fairmark.cli._builds import bisect_options, build_options, run_locked
from fairmark.cli._lockwait import lock_first, wait_lock_option
from fairmark.cli._tags import tag_option
from fairmark.cli.check import _show, _threshold, _write
from fairmark.cli.common import common_options, guard_options, open_store, profile_options
from fairmark.console import console
from fairmark.errors import GateTripped


@click.command()
@click.option("--base", required=True, metavar="REF", help="The commit the change is measured against.")
@click.option("--head", required=True, metavar="REF", help="The commit with the change.")
@build_options(
    "Plan whose workloads run on both builds (no [[variant]]; a workload finds its build in $FAIRMARK_CHECKOUT)."
)
@click.option(
    "--fail-on",
    "fail_on_pct",
    default="3%",
    show_default=True,
    callback=_threshold,
    metavar="PCT",
    help="Exit 1 on a regression proven larger than this (a metric's fail_on_pct in the plan overrides it).",
)
@click.option(
    "--seed", type=int, default=None, help="Seed of the run's order (default: a random one, stored)."
)
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="Write JUnit XML here.")
@click.option(
    "--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Write a Markdown summary here."
)
@click.option("--quick", is_flag=True, help="The plan's [quick] parameters.")
@guard_options("Run despite doctor errors; the run records it.")
@profile_options
@tag_option("Also tag the run with this (repeatable); it is tagged ab.base, ab.head and commit anyway.")
@wait_lock_option
@common_options
def ab(
    base: str,
    head: str,
    plan_path: str,
    build: str,
    repo: str,
    fail_on_pct: float,
    seed: int | None,
    junit_path: str | None,
    markdown_path: str | None,
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
    """Build BASE and HEAD in checkouts of their own and measure both in ONE run, interleaved (the variants
    `base` and `head`); exit 1 on a regression of HEAD proven beyond --fail-on, as `check` does."""
    lock_first(wait_lock, allow_concurrent=allow_concurrent)  # before the imports a refusal need not pay for
    from fairmark.bisect.ab import AB
    from fairmark.cli._progress import TerminalProgress

    started = time.monotonic()
    opts = bisect_options(
        good=base,
        bad=head,
        plan_path=plan_path,
        build=build,
        repo=repo,
        threshold_pct=fail_on_pct,
        quick=quick,
        accept_risk=accept_risk,
        tag_items=tag_items,
        no_monitors=no_monitors,
        monitor_interval=monitor_interval,
        allow_concurrent=allow_concurrent,
        profile=profile,
        explain=explain,
    )
    store = open_store()
    job = AB(opts, store, seed=seed, progress=TerminalProgress, note=console.note, warn=console.warn)
    done = run_locked(job.run, plan_path, "ab", allow_concurrent=allow_concurrent, wait_s=wait_lock)
    _gate(store, done, fail_on_pct, junit_path, markdown_path, started)


def _gate(
    store, done, fail_on_pct: float, junit_path: str | None, markdown_path: str | None, started: float
) -> None:
    """`check --against variant` of the run, with the plan's own thresholds: its files, its lines, its exit."""
    from fairmark.report.check import Against, CheckOptions
    from fairmark.report.check import check as run_check
    from fairmark.report.check_output import junit_xml, markdown

    check_opts = CheckOptions(Against("variant", text="variant"), fail_on_pct, thresholds=done.thresholds)
    result = run_check(store, done.run_id, check_opts)
    if junit_path:
        _write(junit_path, junit_xml(result, elapsed_s=time.monotonic() - started))
    if markdown_path:
        _write(markdown_path, markdown(result))
    if console.json_mode:
        console.emit_json(result.to_dict() | {"base": done.base, "head": done.head})
    else:
        console.text(f"head {done.head} against base {done.base}: run {done.run_id[:8]}")
        _show(result)
    if result.failed:
        raise GateTripped(
            f"head {done.head[:12]} against base {done.base[:12]}: {len(result.regressions)} regression(s) "
            "proven beyond the threshold: "
            + "; ".join(
                f"{c.cell} {c.metric} {c.comparison.sentence if c.comparison else ''}"
                + (f" (where it went: {c.where})" if c.where else "")
                for c in result.regressions
            )
        )


commands = [ab]
