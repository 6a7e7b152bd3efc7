"""Trial hooks: monitors and profilers plug into every trial through this one interface.

The runner calls, for each trial: argv = hook.wrap(argv, ctx) for every hook (profilers such as strace wrap
the command), hook.start(ctx) just before the process starts, hook.stop(ctx, result) right after it ended;
stop() returns artifacts (time series, folded stacks, tables) that the store keeps with the trial.
A hook that cannot work here says why once (`unavailable`) and the run continues without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Artifact:
    kind: str  # "monitor", "profile.cpu", "profile.locks", "profile.syscalls", "env", …
    name: str
    content_type: str  # "application/json", "text/plain", "image/svg+xml"
    data: Any  # JSON-able for application/json, str otherwise
    # numbers under names fairmark chose (a monitor series of /proc counters): nothing a secret could be in, so
    # not walked by the run's scrubber — ~120 keys a trial, 0.1 ms of a millisecond trial (bench/monitor_overhead.py)
    numbers_only: bool = False


@dataclass(frozen=True)
class HookContext:
    run_id: str
    cell_key: str
    workload: str
    variant: str
    trial_id: str
    trial_dir: str  # a directory of the trial's own for a profiler; other hooks must not write there
    warmup: bool
    place_cgroup: str | None = None  # the trial's placement cgroup (a `cpus` variant's), where it has one


class TrialHook:
    name: str = "hook"
    unavailable: str | None = None  # why this hook cannot run here (set by the constructor), else None

    def wrap(self, argv: list[str], ctx: HookContext) -> list[str]:
        return argv

    def start(self, ctx: HookContext) -> None:
        pass

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        return []

    def end_of_run(self) -> list[tuple[str, Artifact]]:
        """End of run, before `close`: artifacts that only the run's end completes, each of a cell (its key),
        stored with that cell's last measured trial (the system monitor's last claims)."""
        return []

    def close(self) -> None:
        """End of run: release anything held across trials."""
