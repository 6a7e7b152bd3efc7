"""`fairmark ab --base REF --head REF --plan PLAN --build CMD`: a change against its base, decided in one run."""

from __future__ import annotations

import shlex
import sys
import time

import click

from fairmark.cli._lockwait import lock_first, wait_lock_option
from fairmark.cli._tags import parse_tags, tag_option
from fairmark.cli.check import _show, _threshold, _write
from fairmark.cli.common import common_options, open_store, profile_options, profilers
from fairmark.console import console
from fairmark.errors import GateTripped


@click.command()
@click.option("--base", required=True, metavar="REF", help="The commit the change is measured against.")
@click.option("--head", required=True, metavar="REF", help="The commit with the change.")
@click.option(
    "--plan",
    "plan_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Plan whose workloads run on both builds (no [[variant]]; a workload finds its build in "
    "$FAIRMARK_CHECKOUT).",
)
@click.option(
    "--build", required=True, metavar="CMD", help="Shell command that builds a checkout (run in it)."
)
@click.option(
    "--repo", default=".", show_default=True, type=click.Path(file_okay=False), help="The git repository."
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
@click.option("--accept-risk", is_flag=True, help="Run despite doctor errors; the run records it.")
@click.option(
    "--allow-concurrent", is_flag=True, help="Run even if another fairmark run holds the host lock."
)
@click.option("--no-monitors", is_flag=True, help="Do not sample vmstat-like monitors during trials.")
@click.option("--monitor-interval", type=float, default=1.0, show_default=True, metavar="S")
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
    from fairmark.assemble import host_lock
    from fairmark.bisect.ab import AB
    from fairmark.bisect.search import BisectOptions
    from fairmark.cli._progress import TerminalProgress
    from fairmark.run.signals import unwinding

    started = time.monotonic()
    opts = BisectOptions(
        good=base,
        bad=head,
        plan_path=plan_path,
        build=build,
        repo=repo,
        threshold_pct=fail_on_pct,
        quick=quick,
        accept_risk=accept_risk,
        tags=parse_tags(tag_items),
        command_line=shlex.join(["fairmark", *sys.argv[1:]]),
        monitors=not no_monitors,
        monitor_interval=monitor_interval,
        allow_concurrent=allow_concurrent,
        **profilers(profile, explain),
    )
    store = open_store()
    # SIGTERM/SIGHUP (a CI cancel) from here on unwind: the lock released, the repository put back, exit 128+N
    with unwinding():
        job = AB(opts, store, seed=seed, progress=TerminalProgress, note=console.note, warn=console.warn)
        with host_lock(plan_path, "ab", allow_concurrent=allow_concurrent, wait_s=wait_lock):
            done = job.run()
    for problem in done.cleanup_problems:
        console.warn(f"the repository is not as it was: {problem}")
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
