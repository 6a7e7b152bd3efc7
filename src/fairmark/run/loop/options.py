"""What a run is asked to do (RunOptions, from the command line) and what it tells the user (Progress: the CLI
plugs in a rich or plain implementation). Imported by the runner and re-exported there."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fairmark.plan.model import RunPolicy
from fairmark.run.hooks import TrialHook
from fairmark.stats import RunningMean

if TYPE_CHECKING:
    from fairmark.run.trials.prepare import CellState, WorkloadRuntime
    from fairmark.run.trials.trial import Outcome


@dataclass
class RunOptions:
    quick: bool = False
    seed: int | None = None
    accept_risk: bool = False
    probe: bool = True  # environment snapshots and the doctor gate (off only in scheduler tests)
    command_line: str = ""
    hooks: Sequence[TrialHook] = ()
    keep_scratch: bool = False
    calibrate: bool = False  # add an A/A twin of the baseline variant (see Plan.with_aa_twin)
    allow_concurrent: bool = False  # another run may use the same host (a host's lock, as the local HostLock)
    tags: dict[str, str] = field(default_factory=dict)  # `run --tag k=v`: stored with the run, queried later
    # `run BUNDLE.json`: the exported run this one re-runs (its id, host, commit, bundle), stored as options.rerun_of
    rerun_of: dict[str, Any] | None = None
    # stop = "decision": the (baseline, other) pairs it decides and whether one proven difference is enough
    # (run.loop.stoprule.Decide; a bisect step sets both)
    decide: tuple[tuple[tuple[str, str], ...], bool] = ((), False)
    # --explain: the CPU profiler's trials only for a workload that ended with a significant difference
    explain: bool = False


class Progress:
    """What the runner tells the user; the CLI plugs in a rich or plain implementation."""

    def started(self, run_id: str, cells: int, policy: RunPolicy, done: int = 0) -> None:
        """`done`: the trials the run already has (a resumed run counts on from them)."""

    def workload(self, name: str, phase: str) -> None: ...
    def trial(self, event: dict[str, Any]) -> None: ...
    def cell_stopped(self, key: str, status: str, reason: str) -> None: ...
    def note(self, message: str) -> None: ...
    def finished(self) -> None: ...


def trial_event(
    seq: int,
    running: dict[str, RunningMean],
    policy: RunPolicy,
    rt: WorkloadRuntime,
    cs: CellState,
    r: int,
    out: Outcome,
) -> dict[str, Any]:
    """What Progress.trial gets for one finished trial: its value, the cell's count and its running mean and CI,
    updated in O(1) per trial (describe() would sort and search order statistics)."""
    est = running.setdefault(cs.cell.key, RunningMean()).update(cs.values)
    mean, half = (est.mean, est.ci_half_width(policy.confidence)) if est.n >= 2 else (None, None)
    primary = rt.primary
    return {
        "seq": seq,
        "cell": cs.cell.key,
        "round": r,
        "warmup": r < 0,
        "status": out.status,
        "error": out.error,
        "last_lines": out.last_lines,
        "metric": primary,
        "unit": rt.metric_specs[primary].unit,
        "value": out.values.get(primary),
        "n": len(cs.values),
        "max_trials": policy.max_trials,
        "failures": cs.failures,
        "max_failures": policy.max_failures,
        "mean": mean,
        "ci_half_width": half,
        "wall_s": out.values.get("wall_s"),
    }
