"""`fairmark run PLAN` and `fairmark resume RUN`."""

from __future__ import annotations

import functools
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from fairmark.cli._builds import bisect_options, run_locked
from fairmark.cli._lockwait import lock_first, wait_lock_option
from fairmark.cli._tags import parse_tags, tag_option
from fairmark.cli.common import (
    ALLOW_CONCURRENT,
    MONITOR_INTERVAL,
    NO_MONITORS_HELP,
    common_options,
    open_store,
    stack,
    state,
)
from fairmark.cli.main import main
from fairmark.console import console
from fairmark.errors import GateTripped, ProfileMissing, RunFailed, UsageError
from fairmark.plan.schedule import cells_of
from fairmark.remote.fleet import run_fleet
from fairmark.report.attribution import MonitorSeries, attribute_cells
from fairmark.run.variants.journal import default_state_dir
from fairmark.run.variants.mount import describe

# The rest is imported when a run is on its way, after the host lock was looked at (cli/_lockwait.py): a run
# refused because another holds the lock does not pay a second of CPU for imports first.
if TYPE_CHECKING:
    from fairmark.assemble import RunRequest
    from fairmark.plan.load import LoadedPlan
    from fairmark.report.data import RunReport
    from fairmark.verdict.run import RunVerdicts


def _gate(report: RunReport, fail_on_regression: float | None) -> None:
    """Exit 1 on a regression proven beyond the threshold — the rule of `check` and `bisect` (verdict.rule): the
    Benjamini-Hochberg decision across the run, and the whole CI of the change beyond it."""
    if fail_on_regression is None:
        return
    from fairmark.verdict.rule import regression_proven

    worse = [v for v in report.verdicts if regression_proven(v, fail_on_regression)]
    if worse:
        lines = "; ".join(f"{v.group} {v.metric} {v.variant}: {v.sentence}" for v in worse)
        raise GateTripped(f"regression proven beyond {fail_on_regression:g}%: {lines}")


def _environment_to_stderr(report: RunReport) -> None:
    """With --json the tables go to stdout as JSON, but a CI log keeps only stderr: the environment's warnings
    (a busy host, CPU pressure) are said there, once each, as `run` without --json shows them — the busy-machine
    headline first, as the tables have it."""
    from fairmark.report.busy import busy_headline

    headline = busy_headline(report, attribute_cells(report, MonitorSeries(report)), tables=False)
    if headline:
        console.warn(headline)
    seen: set[str] = set()
    for f in report.findings:
        if f["severity"] in ("error", "warn") and f["finding_id"] not in seen:
            seen.add(f["finding_id"])
            when = f" ({f['phase']} rounds)" if f["phase"] == "between" else ""
            console.warn(f"{f['title']}{when}: {f['evidence']}")


def _finish(store: Any, run_id: str, fail_on_regression: float | None, judged: RunVerdicts | None) -> None:
    from fairmark.report.failures import profile_failure, run_failure
    from fairmark.report.jsondoc import run_json
    from fairmark.report.load import load_report

    report = load_report(store, run_id, judged)
    if console.json_mode:
        console.emit_json(run_json(report))
        _environment_to_stderr(report)
    else:
        from fairmark.report.terminal import render

        console.print()
        render(report)
        console.note(f"stored as run {run_id} in {store.url}; `fairmark show {run_id[:8]}` shows it again")
    failed = run_failure(report)
    if failed:  # before the regression gate: a comparison that is missing is worse than one that regressed
        raise RunFailed(
            failed, hint=f"`fairmark show {run_id[:8]}` shows each failed cell's first error lines"
        )
    _gate(report, fail_on_regression)
    lost = profile_failure(report)
    if lost:  # after the gate: a regression proven is the verdict asked for, the profile only its explanation
        raise ProfileMissing(
            lost, hint=f"`fairmark report {run_id[:8]} --text` has each cell's profiled trials"
        )


def _execute(request: RunRequest, fail_on_regression: float | None, progress: Any = None) -> None:
    from fairmark.assemble import execute_run
    from fairmark.cli._progress import TerminalProgress

    store = open_store()
    result = execute_run(request, store, progress=progress or TerminalProgress())
    _finish(store, result.run_id, fail_on_regression, result.verdicts)
    if result.hosts and not console.json_mode:
        from fairmark.report.hosts import print_host_diff

        print_host_diff(store, result.run_id)


_run_options = [
    ALLOW_CONCURRENT,
    click.option(
        "--fail-on-regression",
        type=float,
        metavar="PCT",
        help="Exit 1 on a regression proven beyond PCT%: worse than the baseline, significant after "
        "Benjamini-Hochberg, and the whole CI of the change beyond PCT% (the rule of check and bisect).",
    ),
    click.option("--no-monitors", is_flag=True, help=NO_MONITORS_HELP),
    MONITOR_INTERVAL,
    click.option(
        "--profile",
        metavar="LIST",
        help="Profilers (cpu,locks,syscalls): extra trials per cell, each profiler in trials of its own, of the "
        "workload's own processes; cpu's go on until the top function's difference is decided, asked after 5, "
        "10, 20 … rounds up to max_profiled.",
    ),
    click.option(
        "--explain",
        is_flag=True,
        help="Where a significant difference went: CPU-profiled trials (as --profile cpu) only for a workload "
        "whose measured trials ended significant, and per-function differences with intervals.",
    ),
    click.option(
        "--host", metavar="NAME", help="Run every variant on this host ([hosts.NAME] or an ssh destination)."
    ),
    click.option(
        "--hosts", metavar="A,B,…", help="A fleet: the plan on each host at once, one run per host."
    ),
    wait_lock_option,
]


_backfill_options = [
    click.option(
        "--commits",
        metavar="A..B",
        help="Backfill: one run per commit of A..B (first-parent line), each built with --build in a worktree of "
        "its own ($FAIRMARK_CHECKOUT) and tagged commit=SHA; commits already stored for this plan on this host "
        "are skipped.",
    ),
    click.option("--build", metavar="CMD", help="With --commits: the shell command that builds a checkout."),
    click.option(
        "--every",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="With --commits: every N-th.",
    ),
    click.option("--oldest-first", is_flag=True, help="With --commits: measure the oldest commit first."),
    click.option(
        "--repo", default=".", show_default=True, type=click.Path(file_okay=False), help="With --commits."
    ),
]


def _backfill(plan, tags, quick, accept_risk, allow_concurrent, no_monitors, interval, opts) -> None:
    """`run PLAN --commits A..B --build CMD`: bisect/backfill.py, under this machine's lock for all of it."""
    from fairmark.bisect.backfill import Backfill
    from fairmark.cli._progress import TerminalProgress

    if not opts["build"]:
        raise UsageError("--commits A..B needs --build CMD: each commit is built before it is measured")
    bopts = bisect_options(
        good="",
        bad="",
        plan_path=plan,
        build=opts["build"],
        repo=opts["repo"],
        quick=quick,
        accept_risk=accept_risk,
        tags=tags,
        no_monitors=no_monitors,
        monitor_interval=interval,
        allow_concurrent=allow_concurrent,
    )
    job = Backfill(
        bopts,
        open_store(),
        spec=opts["commits"],
        every=opts["every"],
        oldest_first=opts["oldest_first"],
        progress=TerminalProgress,
        note=console.note,
        warn=console.warn,
    )
    done = run_locked(job.run, plan, "backfill", allow_concurrent=allow_concurrent, wait_s=opts["wait_lock"])
    if console.json_mode:
        console.emit_json(done.to_dict())
        return
    console.text(
        f"{len(done.commits)} commit(s): {len(done.measured)} measured, {len(done.stored)} already stored, "
        f"{len(done.failed)} did not build"
    )


@click.command()
@click.argument("plan", type=click.Path(dir_okay=False))
@click.option("--quick", is_flag=True, help="Few trials and the plan's [quick] parameters: a first look.")
@click.option("--seed", type=int, help="Seed of the randomized trial order (default: random, recorded).")
@click.option("--accept-risk", is_flag=True, help="Run despite doctor errors; every report will say so.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Check the plan as the run does (tool parameters too) and print what would run and change; run nothing.",
)
@click.option("--keep-scratch", is_flag=True, help="Keep per-trial scratch directories (for debugging).")
@click.option(
    "--calibrate",
    is_flag=True,
    help="Also run an A/A twin of the baseline: measures false positives and the smallest change "
    "this machine can show, and warns about verdicts within it.",
)
@click.option(
    "--checkout",
    type=click.Path(file_okay=False, exists=True),
    metavar="DIR",
    help="Set $FAIRMARK_CHECKOUT to DIR, as `fairmark bisect` does for each side: one plan for both.",
)
@click.option(
    "--map-host",
    "map_hosts",
    multiple=True,
    metavar="NAME=DEST",
    help="PLAN a bundle: run what its plan runs on [hosts.NAME] on ssh destination DEST here (repeatable; "
    "NAME='-p 2222 DEST': with ssh options, which replace the plan's).",
)
@click.option(
    "--jobs",
    type=int,
    metavar="N",
    help="With --hosts: run at most N hosts at once (default: all of them).",
)
@tag_option("Tag the run (repeatable), e.g. --tag commit=$(git rev-parse HEAD) --tag branch=main.")
@stack(*_run_options)
@stack(*_backfill_options)
@common_options
def run(
    plan: str,
    checkout: str | None,
    tag_items: tuple[str, ...],
    quick: bool,
    seed: int | None,
    accept_risk: bool,
    dry_run: bool,
    keep_scratch: bool,
    calibrate: bool,
    map_hosts: tuple[str, ...],
    jobs: int | None,
    allow_concurrent: bool,
    fail_on_regression: float | None,
    no_monitors: bool,
    monitor_interval: float,
    profile: str | None,
    explain: bool,
    host: str | None,
    hosts: str | None,
    wait_lock: float,
    **backfill: Any,
) -> None:
    """Run PLAN: interleaved trials of every cell, stored as they finish, then the verdicts.

    PLAN may be a bundle (`fairmark export RUN`): its run is run again here — its plan text, seed and scale —
    and recorded as a re-run of it; `fairmark compare-runs ORIGINAL RERUN` then holds the two side by side."""
    if not (dry_run or host or hosts):  # on hosts only (--host, a fleet): this machine is not locked
        lock_first(wait_lock, allow_concurrent=allow_concurrent, plan=plan)
    tags = parse_tags(tag_items)
    if backfill["commits"]:
        backfill["wait_lock"] = wait_lock
        return _backfill(
            plan, tags, quick, accept_risk, allow_concurrent, no_monitors, monitor_interval, backfill
        )
    if checkout:  # before the plan is checked: its commands' "$FAIRMARK_CHECKOUT/…" name programs there
        os.environ["FAIRMARK_CHECKOUT"] = str(Path(checkout).resolve())
    fleet = [h.strip() for h in hosts.split(",") if h.strip()] if hosts else []
    loaded, rerun = _load(plan, map_hosts, host or (fleet[0] if fleet else None))
    if hosts:
        _fleet(plan, fleet, rerun, fleet_jobs(loaded, fleet, jobs))
        return
    if jobs is not None:
        raise UsageError("--jobs N is for --hosts A,B,…: how many of the hosts run at once")
    _one(
        loaded,
        rerun,
        dry_run,
        fail_on_regression,
        quick=quick,
        seed=seed,
        accept_risk=accept_risk,
        keep_scratch=keep_scratch,
        calibrate=calibrate,
        tags=tags,
        allow_concurrent=allow_concurrent,
        wait_lock=wait_lock,
        **_hook_options(no_monitors, monitor_interval, profile, explain),
    )


def _one(
    loaded: LoadedPlan, rerun: Any, dry_run: bool, fail_on_regression: float | None, **fields: Any
) -> None:
    """One run of `loaded` (a bundle's re-run: its scale, its seed unless --seed), or its --dry-run."""
    from fairmark.assemble import RunRequest

    if rerun:
        fields["quick"] = fields["quick"] or rerun.quick
        fields["calibrate"] = fields["calibrate"] or rerun.calibrate
        fields["seed"] = rerun.seed if fields["seed"] is None else fields["seed"]
    if dry_run:
        _dry_run(loaded, fields["quick"], rerun.warnings if rerun else ())
        return
    command_line = shlex.join(["fairmark", *sys.argv[1:]])
    rerun_of = rerun.record if rerun else None
    _start(
        RunRequest(loaded, command_line=command_line, rerun_of=rerun_of, **fields), rerun, fail_on_regression
    )


def _hook_options(
    no_monitors: bool, monitor_interval: float, profile: str | None, explain: bool = False
) -> dict[str, Any]:
    """--no-monitors, --monitor-interval, --profile and --explain as a RunRequest takes them."""
    profilers = tuple(p.strip() for p in profile.split(",") if p.strip()) if profile else ()
    hooks = {"monitors": not no_monitors, "monitor_interval": monitor_interval, "profile": profilers}
    return hooks | {"explain": explain}


def _start(request: RunRequest, rerun: Any, fail_on_regression: float | None) -> None:
    run_one = functools.partial(_execute, request, fail_on_regression)
    if rerun is None:
        run_one()
        return
    from fairmark.cli._rerun import execute_rerun

    execute_rerun(rerun, run_one)


def _fleet(plan: str, fleet: list[str], rerun: Any, jobs: int | None) -> None:

    if rerun:  # once here, not by each host's controller at once
        from fairmark.cli._rerun import bring_in

        bring_in(rerun, open_store())
    run_fleet(plan, fleet, sys.argv[1:], state["store"], main=main, jobs=jobs)


def fleet_jobs(loaded: LoadedPlan, fleet: list[str], jobs: int | None) -> int | None:
    """How many of the fleet's hosts may run at once, given the plan's client hosts: each run locks every host it
    uses, so a client host shared by the fleet's runs serves them one at a time, and a client host that is also
    one of the fleet's hosts would be locked by two runs at once — refused before anything starts."""
    clients = sorted(set(loaded.plan.client_hosts().values()))
    if both := [c for c in clients if c in fleet]:
        raise UsageError(
            f"{loaded.path}: client_host {both[0]!r} is also one of --hosts: every host's run uses it as its "
            "client, and a host measures one run at a time; leave it out of --hosts, or give it a run of its own"
        )
    if clients and (jobs is None or jobs > 1) and len(fleet) > 1:
        console.note(
            f"the fleet's runs share the client host{'s' if len(clients) > 1 else ''} {', '.join(clients)} "
            f"(client_host): they run one host at a time (--jobs 1), each with the client to itself"
        )
        return 1
    return jobs


def _load(plan: str, map_hosts: tuple[str, ...], host: str | None) -> tuple[LoadedPlan, Any]:
    """PLAN as a plan file, or as a bundle whose run is run again (cli/_rerun.py); `host`: --host (or the first
    of --hosts, to check the bundle before the fleet starts)."""
    from fairmark.cli._rerun import is_bundle
    from fairmark.plan.load import LoadedPlan, check_hosts, load_plan

    if is_bundle(plan):
        from fairmark.cli._rerun import load_rerun, parse_map_hosts

        rerun = load_rerun(plan, host=host, map_hosts=parse_map_hosts(map_hosts))
        return rerun.loaded, rerun
    if map_hosts:
        raise UsageError(
            "--map-host names the hosts of a bundle's plan; PLAN is a plan file (edit its [hosts])"
        )
    loaded = load_plan(plan)
    if host:
        loaded = LoadedPlan(plan=loaded.plan.with_host(host), path=loaded.path, text=loaded.text)
        check_hosts(loaded.plan, loaded.text, loaded.path)  # its variants' kinds must run on that host
    return loaded, None


@click.command()
@click.argument("run_ref", metavar="RUN")
@stack(*_run_options)
@common_options
def resume(
    run_ref: str,
    allow_concurrent: bool,
    fail_on_regression: float | None,
    no_monitors: bool,
    monitor_interval: float,
    profile: str | None,
    explain: bool,
    host: str | None,
    hosts: str | None,
    wait_lock: float,
) -> None:
    """Continue an interrupted run: finished trials are kept, the interrupted one is re-run."""
    from fairmark.assemble import RunRequest
    from fairmark.plan.load import LoadedPlan, parse_plan

    stored = open_store().get_run(run_ref)
    loaded = LoadedPlan(
        plan=parse_plan(stored.plan_text, stored.plan_path), path=stored.plan_path, text=stored.plan_text
    )
    opts = stored.options or {}
    ran_on = list(opts.get("hosts") or {})
    if host is None and len(ran_on) == 1 and not loaded.plan.remote:
        host = ran_on[0]  # a run made with --host continues on that host
    if host:
        loaded = LoadedPlan(plan=loaded.plan.with_host(host), path=loaded.path, text=loaded.text)
    request = RunRequest(
        loaded,
        quick=bool(opts.get("quick")),
        calibrate=bool(opts.get("calibrate")),
        seed=stored.seed,
        accept_risk=stored.accept_risk,
        command_line=stored.command_line,
        resume=stored.id,
        allow_concurrent=allow_concurrent,
        wait_lock=wait_lock,
        **_hook_options(no_monitors, monitor_interval, profile, explain),
    )
    _execute(request, fail_on_regression)


def _dry_run(loaded: LoadedPlan, quick: bool, warnings: tuple[str, ...] = ()) -> None:
    for line in warnings:  # what in a bundle does not fit together
        console.warn(line)
    from fairmark.run.trials.prepare import build_runtimes
    from fairmark.run.variants.basic import command_for

    plan = loaded.plan
    policy = plan.policy(quick)
    cells = cells_of(plan)
    # what the run checks before it writes anything, tool parameters included (the tools of variants on hosts
    # are the hosts' business: the run checks them there)
    runtimes = build_runtimes(
        plan, loaded.path, quick=quick, check_executables=not plan.remote, text=loaded.text
    )
    from fairmark.remote.hosts import wire_changes  # the kinds of change an agent applies on its host

    hosts = {
        v.name: {"host": v.host, "ssh": plan.hosts[v.host].ssh} | wire_changes(v, plan.tuning)
        for v in plan.variant
        if v.host
    }
    doc = {
        "plan": loaded.path,
        "policy": policy.model_dump(),
        "cells": [c.key for c in cells],
        "commands": {
            c.key: command_for(plan.workload_named(c.workload), plan.variant_named(c.variant)) for c in cells
        },
        "tool_params": {cs.cell.key: cs.params for rt in runtimes if rt.adapter for cs in rt.cells},
        "tools": {c.key: w.tool for c in cells if (w := plan.workload_named(c.workload)).tool},
        "loops": {w.name: w.loops for w in plan.workload if w.loops is not None},
        "system_changes": _system_changes(plan),
        "hosts": hosts,
        "client_hosts": _client_hosts(plan),
        "boots": _boot_plan(plan, policy),
    }
    if console.json_mode:
        console.emit_json(doc)
        return
    console.text(
        f"plan {loaded.path}: {len(cells)} cell(s); {policy.warmup} warm-up + {policy.min_trials}–"
        f"{policy.max_trials} trials each, target CI ±{policy.target_ci_pct:g}% at {policy.confidence:g}%"
    )
    _print_dry_run(plan, doc)


def _system_changes(plan: Any) -> dict[str, list[str]]:
    from fairmark.run.variants.system import SystemState

    local = plan
    if plan.remote:  # a variant's changes on a host are that host's business, not this machine's
        from fairmark.run.machine.host import local_part

        local = local_part(plan)
    return SystemState(local, state_dir=default_state_dir(), dry_run=True).describe()


def _print_dry_run(plan: Any, doc: dict[str, Any]) -> None:
    for key, argv in doc["commands"].items():
        params = " ".join(f"{k}={v}" for k, v in doc["tool_params"].get(key, {}).items())
        tool = doc["tools"].get(key, "tool")
        console.text(f"  {key}: {shlex.join(argv) if argv else f'tool {tool} with {params}'}")
    for name, loops in doc["loops"].items():
        how = (
            "calibrated at each cell's first trial (its loops last ≥ 100 ms and 10× the process start, up to 1 s)"
            if loops == "auto"
            else str(loops)
        )
        console.text(f"  workload {name}: loops {how}: {{loops}} in argv, $FAIRMARK_LOOPS; times per loop")
    for v in plan.variant:
        env = " ".join(f"{k}={val}" if val is not False else f"-u {k}" for k, val in v.env.items())
        wrap = f", wrapped in {shlex.join(v.wrap)}" if v.wrap else ""
        console.text(f"  variant {v.name}: {'env ' + env if env else 'no environment changes'}{wrap}")
    for variant, h in doc["hosts"].items():
        made = [_host_change(kind, value) for kind, value in h.items() if kind not in ("host", "ssh")]
        there = f", setting {'; '.join(m for m in made if m)} there" if any(made) else ""
        console.text(f"  variant {variant} runs on host {h['host']} (ssh {h['ssh']}){there}")
    for cell, h in doc["client_hosts"].items():
        console.text(f"  {cell}: its client runs on host {h['host']} (ssh {h['ssh']})")
    changes = doc["system_changes"]
    for variant, items in changes.items():
        for item in items:
            console.text(f"  variant {variant} would change the system: {item}")
    if not any(changes.values()):
        # a host variant's changes are said above, on its own line: this one speaks of this machine only
        console.text(
            "  no system changes on this machine"
            + (
                " (the hosts' changes are listed above)"
                if doc["hosts"]
                else " (env/wrap/command variants only)"
            )
        )
    for line in doc["boots"]:
        console.text(f"  {line}")


def _client_hosts(plan: Any) -> dict[str, dict[str, str]]:
    """Each workload × variant whose tool client runs on a [hosts.NAME] (the variant's client_host, else the
    workload's), with that host's ssh destination."""
    clients = plan.client_hosts()
    return {
        f"{w.name} × {v.name}": {"host": name, "ssh": plan.hosts[name].ssh}
        for w in plan.workload  # workload by workload, as the cells are listed
        for v in plan.variant
        if (name := clients.get((v.name, w.name)))
    }


def _host_change(kind: str, value: Any) -> str:
    """A change a variant makes on its host, in words ("" for none)."""
    from fairmark.plan.kinds import given

    if not given(value):  # aslr = 0 is a change
        return ""
    if isinstance(value, dict) and kind == "sysctl":
        return f"sysctl {', '.join(f'{k}={val}' for k, val in value.items())}"
    if kind == "mount":
        from fairmark.plan.model import MountSpec

        return describe(MountSpec.model_validate(value))
    if kind == "malloc_debug":
        return "the allocator's debugging mode (as the host's libc takes it)"
    if kind == "cpus":
        return f"its trials on CPU(s) {value}" if isinstance(value, str) else f"its trials on {value} CPU(s)"
    return f"{kind} {value}"


def _boot_plan(plan: Any, policy: Any) -> list[str]:
    """What a plan with boot variants would do, boot by boot (nothing for other plans)."""
    if not any(v.boot for v in plan.variant):
        return []
    from fairmark.run.loop.bootrun import blocks, boots_per_variant, trials_per_boot, warmup_per_boot
    from fairmark.run.machine.boots import describe, reboot_command

    per = f"{warmup_per_boot(policy)} warm-up + {trials_per_boot(policy)} trials per cell"
    return [
        f"boot {b.index + 1}: {b.variant} — `{describe(boot)}`, then `{shlex.join(reboot_command(boot))}`; "
        f"verified, then {per}"
        for b in blocks([v.name for v in plan.variant], boots_per_variant(policy))
        for boot in [plan.variant_named(b.variant).boot]
    ]


commands = [run, resume]
