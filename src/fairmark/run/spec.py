"""The trial seam: what one trial is to execute (`TrialSpec`) and what executing it measured (`Measured`).

Everything above this seam (plan, variants, sweep points, adapters, hooks) only builds a `TrialSpec`;
everything below it (the local executor `fairmark.run.executor.execute_spec`, an agent on another host) only
turns a `TrialSpec` into a `Measured`. Both are frozen, plain data (str, int, float, bool, None, tuples, a
str→str dict), and round-trip through JSON with `to_dict()` / `from_dict()`; `SPEC_VERSION` changes whenever a
field changes meaning or is removed (adding a field with a default does not change it), and `from_dict`
refuses a version it does not know instead of guessing.

An executor's contract (what the runner relies on):

1. Run `argv` with exactly `env` (None: the executor's own environment) in `cwd`, stdin from /dev/null unless
   `stdin_devnull` is false, in its own session and process group.
2. Write the command's whole stdout and stderr to `<out_dir>/<name>.stdout` and `.stderr` on the controller
   (an agent sends at least the last `tail_bytes` of each back, and the output `files` the adapter parses).
3. Measure the wall time on a monotonic clock and the rusage of the whole waited tree (wait4), taken by the
   launcher (`fairmark/run/c/launcher.c`) that starts the command: its peak RSS is then the command's
   own, not the executor's (`max_rss_method`); where no launcher can be built, no peak RSS (None).
4. After `timeout_s`, SIGTERM the whole group, wait `grace_s`, SIGKILL what is left: status "timeout".
5. Processes still in the group after the leader exited are killed and counted (`leftovers_killed`).
6. Never raise for a failing command: a failure (cannot start, non-zero exit, signal, timeout) is data,
   with `error` saying why in words. Only a lost controller↔host connection may raise.

Placement (7): `place_cgroup` (a cgroup directory) and `place_cpus` (a CPU affinity) are applied by the
launcher to the trial's own process before it execs — on Linux inherited from the launching thread (its
affinity; a cgroup v1 cpuset the thread joins for the trial, `fairmark.run.thread_cgroup`), elsewhere or for a
cgroup a thread cannot join written by the child between fork and exec — so the placed side carries no wrapper
process the other side lacks. `fork_places` (set for every trial of a run in which any trial needs the step in
the child): every trial of that run starts through fork with that step, placed or not, so both sides start the
same way; otherwise every trial starts by vfork, placed or not. `cpuset` states the CPU list for the record.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

SPEC_VERSION = 1

TAIL_BYTES = 8192  # kept for every trial
RAW_BYTES = 1 << 20  # kept for failed trials: the raw output is the evidence

Status = Literal["ok", "failed", "timeout"]


class SpecVersionError(ValueError):
    """A serialised spec or result from a version this fairmark does not understand."""


def _check_version(data: Mapping[str, Any], what: str) -> None:
    version = data.get("version", SPEC_VERSION)
    if version != SPEC_VERSION:
        raise SpecVersionError(f"{what} has version {version!r}; this fairmark understands {SPEC_VERSION}")


def _known(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclass(frozen=True)
class TrialSpec:
    """One command to execute and how (see the module docstring for the executor's contract)."""

    argv: tuple[str, ...]
    out_dir: str  # where <name>.stdout / <name>.stderr are written (on the controller)
    name: str = "trial"
    env: Mapping[str, str] | None = None  # the complete environment; None: the executor's own
    cwd: str | None = None
    timeout_s: float | None = None
    grace_s: float = 2.0
    stdin_devnull: bool = True
    cpuset: str | None = None  # placement, for the record (see the module docstring)
    place_cgroup: str | None = None  # applied by the launcher before exec
    place_cpus: tuple[int, ...] = ()  # applied by the launcher before exec (sched_setaffinity)
    fork_places: bool = False  # start through fork + a placement step in the child (see the docstring)
    files: tuple[str, ...] = ()  # output files the adapter parses, besides stdout and stderr
    tail_bytes: int = RAW_BYTES  # how much of each output stream must reach the controller at least
    # the loop count the command was handed (already in argv and env: an executor runs it like any command;
    # the runner divides the times by it — a workload's `loops`)
    loops: int | None = None
    version: int = SPEC_VERSION

    def __post_init__(self) -> None:
        # Plain data whatever the caller passed (lists, Paths, os.environ): the spec must serialise as given.
        object.__setattr__(self, "argv", tuple(str(a) for a in self.argv))
        object.__setattr__(self, "out_dir", str(self.out_dir))
        object.__setattr__(self, "files", tuple(str(f) for f in self.files))
        object.__setattr__(self, "place_cpus", tuple(int(c) for c in self.place_cpus))
        if self.cwd is not None:
            object.__setattr__(self, "cwd", str(self.cwd))
        if self.env is not None:
            object.__setattr__(self, "env", {str(k): str(v) for k, v in self.env.items()})

    @functools.cached_property  # (its instance dict, not a field: a frozen spec reused by a cell's trials)
    def stdout_path(self) -> str:
        return os.path.join(self.out_dir, f"{self.name}.stdout")  # not PurePath: several times per trial

    @functools.cached_property
    def stderr_path(self) -> str:
        return os.path.join(self.out_dir, f"{self.name}.stderr")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["argv"], d["files"], d["place_cpus"] = list(self.argv), list(self.files), list(self.place_cpus)
        d["env"] = dict(self.env) if self.env is not None else None
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialSpec:
        _check_version(data, "trial spec")
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class Measured:
    """What executing one `TrialSpec` measured. Times in seconds, memory in KiB, counts as counts."""

    argv: tuple[str, ...]
    status: Status
    exit_code: int | None  # None when killed by a signal or never started
    signal: int | None
    wall_s: float
    user_s: float
    sys_s: float
    # peak resident set of the largest process in the command's tree (None: not measured on this host)
    max_rss_kib: int | None
    stdout_path: str
    stderr_path: str
    error: str | None = None  # why it failed, in words
    leftovers_killed: int = 0  # processes still in the group after the leader exited
    minor_faults: int = 0
    major_faults: int = 0
    voluntary_switches: int = 0
    involuntary_switches: int = 0
    # how max_rss_kib was measured: "launcher" (wait4 by fairmark's small launcher: the command's own peak,
    # fairmark.run.launcher); None from executors before it (the peak included fairmark's memory)
    max_rss_method: str | None = None
    # the bytes the command wrote to stdout and stderr, when its executor saw them once nothing of the trial could
    # write any more (the launch server: fairmark.run.executor.read_outputs opens no empty output); None: unknown
    stdout_bytes: int | None = None
    stderr_bytes: int | None = None
    version: int = field(default=SPEC_VERSION)

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s

    @property
    def timed_out(self) -> bool:
        return self.status == "timeout"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["argv"] = list(self.argv)
        d["timed_out"] = self.timed_out
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measured:
        _check_version(data, "trial result")
        d = _known(cls, data)
        d["argv"] = tuple(d.get("argv", ()))
        return cls(**d)

    @classmethod
    def not_started(cls, spec: TrialSpec, error: str) -> Measured:
        """A trial whose command never ran (cannot start, connection lost): failed, nothing measured."""
        return cls(
            spec.argv, "failed", None, None, 0.0, 0.0, 0.0, 0, spec.stdout_path, spec.stderr_path, error
        )
