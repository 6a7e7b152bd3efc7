"""What a workload adapter is. One small module per tool (iperf3.py, pgbench.py, …) subclasses `Adapter`.

Life cycle the runner drives, per workload:
    check(params) → setup(ctx) → prime(ctx)? → [before_trial(tctx) → command(tctx) → parse(raw) → after_trial(tctx)]*
    → teardown(ctx)   (teardown always runs: normal end, error, Ctrl-C)

`parse` is pure: raw text in, metrics out, so it is tested on real captured outputs in tests/fixtures/.
A tool that exits 0 without producing its result must make `parse` raise ParseError — never a made-up number.
"""

from __future__ import annotations

import functools
import math
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from fairmark.errors import FairmarkError, PlanError

# One MetricSpec from plan to report: adapters declare theirs with it (re-exported here).
from fairmark.plan.model import MetricSpec as MetricSpec


class ParseError(FairmarkError):
    """The tool's output does not contain the result. The trial is recorded as failed with its raw output."""


class SetupError(FairmarkError):
    """A server or data set could not be prepared (the message carries the tool's log tail)."""


@dataclass(frozen=True)
class ParamSpec:
    name: str
    default: Any
    unit: str = ""
    help: str = ""


@dataclass(frozen=True)
class RawOutput:
    stdout: str
    stderr: str
    exit_code: int | None = 0
    files: Mapping[str, str] = field(default_factory=dict)  # name → text of files listed by output_files()


@dataclass(frozen=True)
class DataSet:
    """What a file-system test reads and writes, for the doctor's test-size check (seed 003: under 2 × RAM on a
    disk file system it measures the page cache, not the disk)."""

    size_bytes: int
    directory: str = ""  # "" = the workload's scratch directory (under $TMPDIR)
    bypasses_cache: bool = False  # O_DIRECT (or synchronous writes): RAM size does not matter
    cache_reason: str = ""  # the plan says a cache-sized set is the point, and why


@dataclass
class WorkloadContext:
    """Per workload: a private scratch directory (removed after teardown) and state shared with trials."""

    name: str
    params: dict[str, Any]  # defaults ⊕ plan params (sweep points are added per cell in TrialContext)
    scratch: Path
    cache: Path  # survives runs: generated test files, extracted sources
    is_root: bool
    state: dict[str, Any] = field(default_factory=dict)  # e.g. port, socket path, server pid
    env: dict[str, str] = field(default_factory=dict)  # extra environment for every trial of this workload
    # Clients on other hosts (client_host): servers also listen on this host's `listen_address` and admit
    # `client_addresses`; a trial whose client is elsewhere (TrialContext.client_remote) connects there.
    listen_address: str | None = None
    client_addresses: tuple[str, ...] = ()


@dataclass
class TrialContext:
    workload: WorkloadContext
    params: dict[str, Any]  # workload params ⊕ this cell's sweep point
    trial_dir: Path  # fresh, empty directory for this trial's files
    variant: str
    warmup: bool = False
    client_remote: bool = False  # this trial's command runs on another host than the workload's servers

    @property
    def state(self) -> dict[str, Any]:
        return self.workload.state


class Adapter:
    name: ClassVar[str]
    summary: ClassVar[str] = ""
    # OS package names providing the executables, per package manager family.
    packages: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    executables: ClassVar[tuple[str, ...]] = ()
    # How to ask an executable its version when it is not `--version` (() = no such option: its package's
    # version is recorded). Every executable a run uses is recorded in the environment snapshot.
    version_args: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    params: ClassVar[tuple[ParamSpec, ...]] = ()
    metrics: ClassVar[tuple[MetricSpec, ...]] = ()
    # Whether the client may run on another host than the server (client_host; see WorkloadContext).
    remote_client: ClassVar[bool] = False
    # What the trial measures, for the doctor and attribution: "cpu", "memory", "disk", "network", "kernel".
    measures: ClassVar[tuple[str, ...]] = ()

    # -- declaration helpers --------------------------------------------------------------------------
    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return {p.name: p.default for p in cls.params}

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        known = {p.name for p in self.params}
        unknown = sorted(set(params) - known)
        if unknown:
            raise PlanError(
                f"tool {self.name!r} has no parameter(s) {', '.join(unknown)}; it takes: {', '.join(sorted(known))}"
            )
        merged = self.defaults() | dict(params)
        self.check(merged)
        return merged

    def executables_for(self, params: Mapping[str, Any]) -> tuple[str, ...]:
        """The programs a run with these parameters executes (a choice of server changes them)."""
        return self.executables

    def constant_metrics(self, params: Mapping[str, Any]) -> frozenset[str]:
        """The metrics that cannot vary between trials with these parameters (MetricSpec.constant): a ratio of a
        fixed input, a direction the mode does not do. Their zero spread is no sign of a coarse clock."""
        return frozenset(m.name for m in self.metrics if m.constant)

    def data_set(self, params: Mapping[str, Any]) -> DataSet | None:
        """The data set a file-system adapter works on (None: the tool has none on a disk)."""
        return None

    def claimed_io(self, params: Mapping[str, Any], values: Mapping[str, float]) -> dict[str, float]:
        """What one trial claims it moved to or from its files, from its parsed values: `read`/`write` (or `io`
        when the tool counts both together) as `<dir>_mib_s` and `<dir>_bytes`. The report holds these against
        what the monitors saw reach the disks and what the device did with O_DIRECT (fairmark.report.pagecache):
        a file-system result faster than the hardware measured the page cache. {} = nothing to compare."""
        return {}

    def missing_executables(self) -> list[str]:
        return [exe for exe in self.executables if shutil.which(exe) is None]

    def host_problem(self) -> str | None:
        """Why this tool cannot run on this host even with its programs installed (None: nothing known);
        `fairmark tools` says "refused on this host: …" and the workload's setup refuses with it."""
        return None

    # -- life cycle (override what the tool needs) -----------------------------------------------------
    def check(self, params: dict[str, Any]) -> None:
        """Raise PlanError for parameter values that cannot work (before anything runs)."""

    def setup(self, ctx: WorkloadContext) -> None:
        """Once per workload: start servers, generate data. Raise SetupError with the server's log tail."""

    def prime(self, ctx: WorkloadContext) -> None:
        """Once, after setup and before warm-up: fill caches, a priming build."""

    def before_trial(self, ctx: TrialContext) -> None:
        """Per trial, not timed: e.g. restart the server, `make clean`."""

    def command(self, ctx: TrialContext) -> list[str]:
        raise NotImplementedError

    def output_files(self, ctx: TrialContext) -> dict[str, Path]:
        """Files the command writes its result to (read after the trial, passed to parse as raw.files)."""
        return {}

    def parse(self, raw: RawOutput) -> dict[str, float]:
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "parse" in vars(cls):  # every adapter's parse is checked the same way, whatever it parses
            setattr(cls, "parse", _checked(vars(cls)["parse"]))  # noqa: B010 - a method replaced

    def after_trial(self, ctx: TrialContext) -> None:
        """Per trial, not timed: clean up what the trial created."""

    def teardown(self, ctx: WorkloadContext) -> None:
        """Always called, also after errors and Ctrl-C: stop servers, remove data."""


def measured_values(tool: str, values: dict[str, float]) -> dict[str, float]:
    """A value that is not a finite number ≥ 0 is not a measurement (a tool printed `inf`, a counter wrapped,
    a field was cut off): the trial fails with its raw output kept, instead of the number entering the
    statistics."""
    for metric, v in values.items():
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise ParseError(f"{tool}: {metric} = {v!r} is not a measurement (expected a finite number ≥ 0)")
    return values


def _checked(
    parse: Callable[[Any, RawOutput], dict[str, float]],
) -> Callable[[Any, RawOutput], dict[str, float]]:
    """`parse` is pure (text in, numbers out), so any exception it raises means the output was not in the shape
    the tool prints (cut off, a field missing, a number too big for a float): a ParseError naming what went
    wrong, so the trial is recorded as failed with its raw output — never an internal error of the run."""

    @functools.wraps(parse)
    def checked(self: Adapter, raw: RawOutput) -> dict[str, float]:
        try:
            values = parse(self, raw)
        except (ParseError, MemoryError):  # running out of memory is the machine's failure, not the output's
            raise
        except Exception as exc:
            raise ParseError(
                f"{self.name}: output not in the expected shape ({type(exc).__name__}: {str(exc)[:200]})"
            ) from exc
        return measured_values(self.name, values)

    return checked
