"""One run, assembled and executed: the only place a plan becomes a `Runner` (issue 33 item 6).

Every command that measures — `run` and `resume` (cli/run.py), `calibrate`'s A/A runs (cli/calibrate.py), each
step of `bisect` (bisect/search.py), and later `ab` and a backfill — describes the run it wants in a frozen
`RunRequest` and calls `execute_run`, which builds the trial hooks (monitors, profilers), the plan's hosts
(remote.hosts: run/ never imports remote/, so they are built here, outside the run core), takes the host lock
unless the caller holds it across several runs, starts or resumes the run, and gives back a frozen `RunResult`:
the run's id and its verdicts (verdict.run), as a return value.

    result = execute_run(RunRequest(loaded, quick=True, tags={"commit": sha}), store, progress=TerminalProgress())
    result.run_id, result.verdicts.verdicts

A run that fails or is interrupted raises (fairmark.errors); a returned result is a run whose every round ran.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from fairmark.console import console
from fairmark.plan.load import LoadedPlan
from fairmark.remote.hosts import hosts_for
from fairmark.run.guard.lock import HostLock
from fairmark.run.monitors import default_hooks
from fairmark.run.profiles import hooks_for

if TYPE_CHECKING:
    from fairmark.run.hooks import TrialHook
    from fairmark.run.loop.options import Progress, RunOptions
    from fairmark.run.machine.host import Host
    from fairmark.run.spec import Executor
    from fairmark.store.db import Store
    from fairmark.verdict.run import RunVerdicts


def _frozen(tags: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(tags))


@dataclass(frozen=True)
class RunRequest:
    """What one run is asked to do. `loaded`: the plan as loaded (plan/load.py). `resume`: the id of an
    interrupted run to continue instead of a new run (its stored seed and options are the caller's to pass).
    `monitors`/`monitor_interval`/`profile`: the trial hooks (`run --no-monitors`, `--monitor-interval`,
    `--profile cpu,locks`). `allow_concurrent`: run although another run holds this host's lock (or a host's).
    `hold_lock`: take this machine's lock for the run; False when the caller holds it across several runs
    (calibrate's K runs, a bisect's steps). `lock_label`: what the lock file says the holder runs."""

    loaded: LoadedPlan
    quick: bool = False
    seed: int | None = None
    accept_risk: bool = False
    keep_scratch: bool = False
    calibrate: bool = False  # also an A/A twin of the baseline variant (Plan.with_aa_twin)
    command_line: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    rerun_of: Mapping[str, object] | None = None  # `run BUNDLE.json`: the exported run this one re-runs
    resume: str | None = None
    monitors: bool = True
    monitor_interval: float = 1.0
    profile: tuple[str, ...] = ()
    allow_concurrent: bool = False
    wait_lock: float = 0.0  # seconds to wait for another run's host lock (--wait-lock) before refusing
    hold_lock: bool = True
    # the environment snapshots and the doctor's gate before the run (off: the suite's many short A/A runs)
    probe: bool = True
    lock_label: str = ""
    # stop = "decision" (plan.with_decision_stop()): the (baseline, other) variant pairs it decides, and whether
    # one proven difference is enough (run.loop.stoprule.Decide; a bisect step decides either of its two questions)
    decide: tuple[tuple[tuple[str, str], ...], bool] = ((), False)
    explain: bool = False  # --explain: CPU profiles (as --profile cpu) only where a difference is significant

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", _frozen(self.tags))


@dataclass(frozen=True)
class RunResult:
    """A finished run: its id, its cells and verdicts (verdict.run.RunVerdicts, computed once when the last round
    ended), and the hosts other than this machine its trials ran on (empty for a local run)."""

    run_id: str
    verdicts: RunVerdicts
    hosts: tuple[str, ...] = ()


def execute_run(
    request: RunRequest,
    store: Store,
    *,
    progress: Progress | None = None,
    warn: Callable[[str], None] = console.warn,
    executor: Executor | None = None,
) -> RunResult:
    """Assemble the run `request` describes and execute it to its end. `progress`: what the user sees of it
    (cli/_progress.TerminalProgress; none by default); `warn`: where a hook that cannot work here or a lock
    taken concurrently is said; `executor`: what runs the trials on this machine (a test's double; run.launch.executor
    by default)."""
    from fairmark.run.loop.runner import Runner

    options = run_options(request, warn)
    extra = {"executor": executor} if executor is not None else {}
    runner = Runner(
        request.loaded, store, options, progress=progress, hosts=hosts_of(request, options), **extra
    )
    # The lock guards the measured machine: a plan whose every trial runs on other hosts leaves this one free
    # (a fleet runs one controller process per host at once).
    remote_only = all(v.host for v in runner.plan.variant)
    with _host_lock(request, remote_only, warn):
        for line in [] if request.resume else power_notes(request):
            warn(line)
        run_id = runner.resume(request.resume) if request.resume else runner.start()
    from fairmark.verdict.run import run_verdicts

    return RunResult(run_id, run_verdicts(store, run_id), tuple(sorted(runner.hosts.remote)))


# The power of a run's verdict at 3% with CV 1.5% (at most 20 trials) by its plan's min_trials, from
# `bench/verdict_simulation.py --only min_trials --sims 4000` (docs/statistics.md's table): the first stage's spread
# (Stein's part) has min_trials − 1 degrees of freedom, and below 5 it cannot reach the 95% the README states.
POWER_BY_MIN_TRIALS = {3: "74.0%", 4: "93.6%"}


def power_notes(request: RunRequest) -> list[str]:
    """A plan whose min_trials cannot reach the power the README states (not with --quick: a first look)."""
    run = request.loaded.plan.run
    power = POWER_BY_MIN_TRIALS.get(run.min_trials)
    if request.quick or power is None or run.stop != "precision":
        return []
    return [
        f"min_trials = {run.min_trials}: the verdict's first stage has {run.min_trials - 1} degrees of freedom, "
        f"so a 3% change at CV 1.5% is proven only {power} of the time (95% or more from min_trials = 5, the "
        "default; docs/statistics.md, Power by min_trials)"
    ]


def run_options(request: RunRequest, warn: Callable[[str], None] = console.warn) -> RunOptions:
    """The runner's options for `request`, its trial hooks built fresh (a run closes its hooks at its end)."""
    from fairmark.run.loop.options import RunOptions

    hosts = bool(request.loaded.plan.remote)
    return RunOptions(
        quick=request.quick,
        seed=request.seed,
        accept_risk=request.accept_risk,
        command_line=request.command_line,
        hooks=trial_hooks(request.monitors, request.monitor_interval, _profilers(request), hosts, warn),
        keep_scratch=request.keep_scratch,
        calibrate=request.calibrate,
        allow_concurrent=request.allow_concurrent,  # also for the hosts' own locks
        probe=request.probe,
        tags=dict(request.tags),
        rerun_of=dict(request.rerun_of) if request.rerun_of is not None else None,
        decide=request.decide,
        explain=request.explain,
    )


def _profilers(request: RunRequest) -> tuple[str, ...]:
    """--profile's, and with --explain the CPU profiler (its trials taken only if a difference is significant)."""
    return (*request.profile, "cpu") if request.explain else request.profile


def trial_hooks(
    monitors: bool,
    interval: float,
    profile: tuple[str, ...],
    hosts: bool = False,
    warn: Callable[[str], None] = console.warn,
) -> list[TrialHook]:
    """The run's trial hooks. `hosts`: the plan runs trials on hosts, where each profiler is checked on the host
    (remote.profiling): one that cannot work here still profiles the trials there."""
    hooks: list[TrialHook] = []
    if monitors:
        hooks += default_hooks(interval)
    if profile:
        hooks += hooks_for(list(profile))
    for h in hooks:
        if h.unavailable and hosts and h.name.startswith("profile."):
            warn(f"{h.name}: not available here — {h.unavailable}; only trials on hosts are profiled")
        elif h.unavailable:
            warn(f"{h.name}: not available here — {h.unavailable}; continuing without it")
    return [h for h in hooks if not h.unavailable or (hosts and h.name.startswith("profile."))]


def hosts_of(request: RunRequest, options: RunOptions) -> dict[str, Host] | None:
    """The [hosts.NAME] the run's variants use, for the runner (which connects them); None for a plan that runs
    on this machine alone. Built here: the run core never imports remote/."""
    loaded = request.loaded
    if not loaded.plan.remote:
        return None

    built = hosts_for(
        loaded.plan, loaded.path, hooks=options.hooks, allow_concurrent=options.allow_concurrent
    )
    return dict(built)


def _host_lock(
    request: RunRequest, remote_only: bool, warn: Callable[[str], None]
) -> AbstractContextManager[None]:
    if not request.hold_lock or remote_only:
        # a run measured on hosts only perturbs nothing here: each host's own lock guards it, and a sibling
        # of a fleet (or a local run) beside it is neither refused nor told that it was "asked" to run along
        return nullcontext()
    label = request.lock_label or request.resume or ""
    return host_lock(
        request.loaded.path,
        label,
        allow_concurrent=request.allow_concurrent,
        wait_s=request.wait_lock,
        warn=warn,
    )


@contextmanager
def host_lock(
    plan_path: str,
    label: str,
    *,
    allow_concurrent: bool = False,
    wait_s: float = 0.0,
    warn: Callable[[str], None] = console.warn,
) -> Iterator[None]:
    """This machine's lock for one or several runs of `plan_path` (`label`: the run id, "calibrate", "bisect";
    each run writes its own id into it when it starts), its notes (a stale lock taken over, a concurrent run
    allowed) said through `warn`. `wait_s`: how long to wait for another run's lock (--wait-lock), saying once
    who holds it, before refusing (exit 3)."""
    info = {"plan": plan_path, "run_id": label}
    with HostLock(info, allow_concurrent=allow_concurrent, wait_s=wait_s, on_wait=console.note) as lock:
        for note in lock.notes:
            warn(note)
        yield
