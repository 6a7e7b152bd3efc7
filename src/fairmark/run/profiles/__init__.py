"""Opt-in profilers (`fairmark run --profile cpu,locks,syscalls`), each a TrialHook.

Each profiler runs in profiled trials of its own (the runner never attaches two to one trial), and records the
workload's processes only: Linux: cpu = perf record -g of the trial's cgroup (cpu-clock without a PMU) folded
by inferno, with the workload's share of the busy CPUs' samples; locks = perf lock contention of the same
cgroup; syscalls = strace -f -c with duration histograms. FreeBSD: DTrace profile-997 of the process tree (with
the same share; pmcstat's process-mode sampling where DTrace cannot run), truss -f -c; lockstat has no process
filter and is labelled system-wide.
A profiler that cannot work here carries `.unavailable` (why, and what would enable it); the run goes on
without it. Trials on a host are profiled there, by its agent, with that host's profilers
(fairmark.remote.profiling); one that cannot work on a host refuses the run.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence

from fairmark.errors import UsageError
from fairmark.run.hooks import TrialHook

NAMES = ("cpu", "locks", "syscalls")


def _linux() -> dict[str, Callable[[], TrialHook]]:
    from fairmark.run.profiles.cpu import PerfCpuProfile
    from fairmark.run.profiles.locks import PerfLockProfile
    from fairmark.run.profiles.syscalls import StraceProfile

    return {"cpu": PerfCpuProfile, "locks": PerfLockProfile, "syscalls": StraceProfile}


def _freebsd() -> dict[str, Callable[[], TrialHook]]:
    from fairmark.run.profiles.freebsd import FREEBSD_PROFILERS

    return dict(FREEBSD_PROFILERS)


class Unsupported(TrialHook):
    def __init__(self, name: str, why: str):
        self.name = f"profile.{name}"
        self.unavailable = why


def hooks_for(names: Sequence[str], system: str | None = None) -> list[TrialHook]:
    """One hook per requested profile, in the order given; unknown names are a usage error."""
    wanted = [n.strip() for n in names if n.strip()]
    unknown = sorted(set(wanted) - set(NAMES))
    if unknown:
        raise UsageError(f"unknown profile(s) {', '.join(unknown)}; expected some of: {', '.join(NAMES)}")
    system = system or platform.system()
    factories = {"Linux": _linux, "FreeBSD": _freebsd}.get(system)
    if factories is None:
        return [Unsupported(n, f"no {n} profiler for {system} (Linux and FreeBSD only)") for n in wanted]
    table = factories()
    return [table[n]() for n in dict.fromkeys(wanted)]


__all__ = ["NAMES", "hooks_for"]
