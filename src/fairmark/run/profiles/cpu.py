"""CPU profile: `perf record -a -g` during the trial, folded into stacks by an existing collapser.

Folding is done by inferno's `inferno-collapse-perf` (`cargo install inferno`, or `fairmark setup`) or, when
present, FlameGraph's `stackcollapse-perf.pl`; fairmark does not fold stacks itself. Without a hardware PMU (as
in most VMs) the `cycles` event does not exist and perf samples the software `cpu-clock` timer instead, which
still gives full kernel stacks. The profile is system-wide: the first frame of each stack is the command name,
so a server's work (postgres, redis) is visible next to the client's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from fairmark.run.hooks import Artifact, HookContext
from fairmark.run.profiles.base import (
    PerfRecorder,
    Profiler,
    ProfilerFailed,
    find_tool,
    system_wide_perf_problem,
)

FREQUENCY_HZ = 997  # not 1000: avoids sampling in lock-step with the kernel's periodic timer
COLLAPSERS = ("inferno-collapse-perf", "stackcollapse-perf.pl")


def has_pmu() -> bool:
    devices = Path("/sys/bus/event_source/devices")
    return any((devices / d).is_dir() for d in ("cpu", "cpu_core", "armv8_pmuv3_0"))


def collapser() -> str | None:
    return next((path for name in COLLAPSERS if (path := find_tool(name))), None)


def fold(perf_script_text: str, tool: str) -> str:
    # --kernel marks kernel frames (_[k]) so the flame graph colours them apart from user space.
    argv = [tool, "--kernel"] if Path(tool).name.startswith("inferno") else [tool]
    proc = subprocess.run(argv, input=perf_script_text, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ProfilerFailed(f"{Path(tool).name} failed: {proc.stderr.strip()[-300:]}")
    return proc.stdout


def folded_weight(folded: str) -> int:
    total = 0
    for line in folded.splitlines():
        _, _, count = line.rpartition(" ")
        if count.isdigit():
            total += int(count)
    return total


class PerfCpuProfile(Profiler):
    name = "profile.cpu"
    kind = "profile.cpu"

    def __init__(self) -> None:
        self.unavailable = system_wide_perf_problem()
        self.collapse = collapser()
        if self.unavailable is None and self.collapse is None:
            self.unavailable = (
                "no stack collapser: `cargo install inferno` (gives inferno-collapse-perf and "
                "inferno-flamegraph) or put FlameGraph's stackcollapse-perf.pl on PATH"
            )
        self.event = "cycles" if has_pmu() else "cpu-clock"
        self._rec: PerfRecorder | None = None
        self._error: str | None = None

    def start(self, ctx: HookContext) -> None:
        self._error = None
        base = ["perf", "record", "-g", "-e", self.event, "-F", str(FREQUENCY_HZ)]
        try:
            self._rec = PerfRecorder(base, Path(ctx.trial_dir) / "perf.cpu.data")
        except ProfilerFailed as exc:
            self._rec, self._error = None, exc.message

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        if self._rec is None:
            return [self._failure(self._error or "perf did not start")]
        rec, self._rec = self._rec, None
        err = rec.stop()
        try:
            folded = fold(self._script(rec.out), self.collapse)
        except ProfilerFailed as exc:
            return [self._failure(f"{exc.message} {err.strip()[-200:]}")]
        finally:
            rec.out.unlink(missing_ok=True)  # perf.data is large; the folded stacks are what we keep
        meta = {
            "event": self.event,
            "frequency_hz": FREQUENCY_HZ,
            "weight": folded_weight(folded),  # sum of sample periods (ns for cpu-clock)
            "scope": "system-wide",
            "collapser": Path(self.collapse).name,
        }
        return [
            Artifact(self.kind, "folded", "text/plain", folded),
            Artifact(self.kind, "meta", "application/json", meta),
        ]

    @staticmethod
    def _script(data: Path) -> str:
        proc = subprocess.run(
            ["perf", "script", "-i", str(data)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0 or not proc.stdout.strip():
            raise ProfilerFailed(f"perf script gave no samples: {proc.stderr.strip()[-300:]}")
        return proc.stdout

    def _failure(self, message: str) -> Artifact:
        return Artifact(self.kind, "error", "text/plain", message)
