"""The trial seam: what one trial is to execute (`TrialSpec`) and what executing it measured (`Measured`).

Everything above this seam (plan, variants, sweep points, adapters, hooks) only builds a `TrialSpec`;
everything below it (the local executor `fairmark.run.launch.executor.execute_spec`, an agent on another host) only
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
   launcher (`fairmark/run/launch/c/launcher.c`) that starts the command: its peak RSS is then the command's
   own, not the executor's (`max_rss_method`); where no launcher can be built, no peak RSS (None).
4. After `timeout_s`, SIGTERM the whole group, wait `grace_s`, SIGKILL what is left: status "timeout".
5. Processes still in the group after the leader exited are killed and counted (`leftovers_killed`).
6. Never raise for a failing command: a failure (cannot start, non-zero exit, signal, timeout) is data,
   with `error` saying why in words. Only a lost controller↔host connection may raise.

Placement (7): `place_cgroup` (a cgroup directory) and `place_cpus` (a CPU affinity) are applied by the
launcher to the trial's own process before it execs — on Linux inherited from the launching thread (its
affinity; a cgroup v1 cpuset the thread joins for the trial, `fairmark.run.launch.thread_cgroup`), elsewhere or for a
cgroup a thread cannot join written by the child between fork and exec — so the placed side carries no wrapper
process the other side lacks. `fork_places` (set for every trial of a run in which any trial needs the step in
the child): every trial of that run starts through fork with that step, placed or not, so both sides start the
same way; otherwise every trial starts by vfork, placed or not. `cpuset` states the CPU list for the record.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONObject


SPEC_VERSION = 1

TAIL_BYTES = 8192  # kept for every trial
RAW_BYTES = 1 << 20  # kept for failed trials: the raw output is the evidence

Status = Literal["ok", "failed", "timeout"]
STATUSES: dict[str, Status] = {"ok": "ok", "failed": "failed", "timeout": "timeout"}


class SpecVersionError(ValueError):
    """A serialised spec or result from a version this fairmark does not understand."""


def _check_version(data: Mapping[str, object], what: str) -> None:
    version = data.get("version", SPEC_VERSION)
    if version != SPEC_VERSION:
        raise SpecVersionError(f"{what} has version {version!r}; this fairmark understands {SPEC_VERSION}")


class _Fields:
    """A spec or a result read from JSON (an agent's answer, a stored record), each field checked for its type:
    a wrong one is a ValueError naming the field, never a value of the wrong type further down."""

    def __init__(self, data: Mapping[str, object], what: str):
        self.data, self.what = data, what

    def _get(self, key: str, default: object) -> object:
        return self.data.get(key, default)

    def _wrong(self, key: str, value: object, kind: str) -> ValueError:
        return ValueError(f"{self.what}: {key} = {value!r} is not {kind}")

    def text(self, key: str, default: str | None = None) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self._wrong(key, value, "a string")
        return value

    def opt_text(self, key: str) -> str | None:
        return None if self._get(key, None) is None else self.text(key)

    def number(self, key: str, default: float | None = None) -> float:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._wrong(key, value, "a number")
        return float(value)

    def opt_number(self, key: str) -> float | None:
        return None if self._get(key, None) is None else self.number(key)

    def count(self, key: str, default: int | None = None) -> int:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong(key, value, "an integer")
        return value

    def opt_count(self, key: str) -> int | None:
        return None if self._get(key, None) is None else self.count(key)

    def flag(self, key: str, default: bool) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self._wrong(key, value, "true or false")
        return value

    def texts(self, key: str) -> tuple[str, ...]:
        value = self._get(key, [])
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise self._wrong(key, value, "a list of strings")
        return tuple(str(v) for v in value)

    def counts(self, key: str) -> tuple[int, ...]:
        value = self._get(key, [])
        if not isinstance(value, list | tuple) or not all(type(v) is int for v in value):
            raise self._wrong(key, value, "a list of integers")
        return tuple(int(v) for v in value)

    def env(self, key: str) -> dict[str, str] | None:
        value = self._get(key, None)
        if value is None:
            return None
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            raise self._wrong(key, value, "a table of strings")
        return {str(k): str(v) for k, v in value.items()}


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

    def to_dict(self) -> JSONObject:
        d: JSONObject = asdict(self)
        d["argv"], d["files"], d["place_cpus"] = list(self.argv), list(self.files), list(self.place_cpus)
        d["env"] = dict(self.env) if self.env is not None else None
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> TrialSpec:
        _check_version(data, "trial spec")
        f = _Fields(data, "trial spec")
        return cls(
            argv=f.texts("argv"),
            out_dir=f.text("out_dir"),
            name=f.text("name", "trial"),
            env=f.env("env"),
            cwd=f.opt_text("cwd"),
            timeout_s=f.opt_number("timeout_s"),
            grace_s=f.number("grace_s", 2.0),
            stdin_devnull=f.flag("stdin_devnull", True),
            cpuset=f.opt_text("cpuset"),
            place_cgroup=f.opt_text("place_cgroup"),
            place_cpus=f.counts("place_cpus"),
            fork_places=f.flag("fork_places", False),
            files=f.texts("files"),
            tail_bytes=f.count("tail_bytes", RAW_BYTES),
            loops=f.opt_count("loops"),
        )


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
    # fairmark.run.launch.launcher); None from executors before it (the peak included fairmark's memory)
    max_rss_method: str | None = None
    # the bytes the command wrote to stdout and stderr, when its executor saw them once nothing of the trial could
    # write any more (the launch server: fairmark.run.launch.executor.read_outputs opens no empty output); None: unknown
    stdout_bytes: int | None = None
    stderr_bytes: int | None = None
    version: int = field(default=SPEC_VERSION)

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s

    @property
    def timed_out(self) -> bool:
        return self.status == "timeout"

    def to_dict(self) -> JSONObject:
        d: JSONObject = asdict(self)
        d["argv"] = list(self.argv)
        d["timed_out"] = self.timed_out
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Measured:
        _check_version(data, "trial result")
        f = _Fields(data, "trial result")
        status = STATUSES.get(f.text("status"))
        if status is None:
            raise ValueError(
                f"trial result: status = {data.get('status')!r} is not one of {', '.join(STATUSES)}"
            )
        return cls(
            argv=f.texts("argv"),
            status=status,
            exit_code=f.opt_count("exit_code"),
            signal=f.opt_count("signal"),
            wall_s=f.number("wall_s"),
            user_s=f.number("user_s"),
            sys_s=f.number("sys_s"),
            max_rss_kib=f.opt_count("max_rss_kib"),
            stdout_path=f.text("stdout_path"),
            stderr_path=f.text("stderr_path"),
            error=f.opt_text("error"),
            leftovers_killed=f.count("leftovers_killed", 0),
            minor_faults=f.count("minor_faults", 0),
            major_faults=f.count("major_faults", 0),
            voluntary_switches=f.count("voluntary_switches", 0),
            involuntary_switches=f.count("involuntary_switches", 0),
            max_rss_method=f.opt_text("max_rss_method"),
            stdout_bytes=f.opt_count("stdout_bytes"),
            stderr_bytes=f.opt_count("stderr_bytes"),
        )

    @classmethod
    def not_started(cls, spec: TrialSpec, error: str) -> Measured:
        """A trial whose command never ran (cannot start, connection lost): failed, nothing measured."""
        return cls(
            spec.argv, "failed", None, None, 0.0, 0.0, 0.0, 0, spec.stdout_path, spec.stderr_path, error
        )


# What runs a trial on a machine (`Host.execute`; the local one is launch/executor.execute_spec): the seam's
# one function, here so the hosts and the trial name it without importing each other.
Executor = Callable[[TrialSpec], Measured]
