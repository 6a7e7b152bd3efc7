"""CPU profile: `perf record -g` of the trial's own cgroup (its process tree from its first instruction, and the
workload's servers), folded into stacks by an existing collapser, with the share of the busy CPUs' samples that
were the workload's.

Folding is done by inferno's `inferno-collapse-perf` (`cargo install inferno`, or `fairmark setup`) or, when
present, FlameGraph's `stackcollapse-perf.pl`; fairmark does not fold stacks itself. Without a hardware PMU (as
in most VMs) the `cycles` event does not exist and perf samples the software `cpu-clock` timer instead, which
still gives full kernel stacks. The first frame of each stack is the command name, so a server's work (postgres,
redis: it works in the workload's scratch directory and is moved into the cgroup for the trial) is visible next
to the client's; nothing else on the machine is in the flame graph.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from fairmark.run.hooks import Artifact, HookContext
from fairmark.run.profiles.base import (
    PerfProfiler,
    ProfilerFailed,
    cgroup_problem,
    find_tool,
    system_wide_perf_problem,
)

FREQUENCY_HZ = 997  # not 1000: avoids sampling in lock-step with the kernel's periodic timer
COLLAPSERS = ("inferno-collapse-perf", "stackcollapse-perf.pl")
WORKLOAD, ALL = "workload", "all"  # perf's names for the two events: the trial's cgroup, and every CPU
SCOPE = "process tree (cgroup)"


def has_pmu() -> bool:
    devices = Path("/sys/bus/event_source/devices")
    return any((devices / d).is_dir() for d in ("cpu", "cpu_core", "armv8_pmuv3_0"))


def collapser() -> str | None:
    return next((path for name in COLLAPSERS if (path := find_tool(name))), None)


def fold(perf_script_text: str, tool: str, event: str | None = None) -> str:
    """Folded stacks of `event`'s samples (both collapsers take only one event: the first seen, by default)."""
    # --kernel marks kernel frames (_[k]) so the flame graph colours them apart from user space.
    inferno = Path(tool).name.startswith("inferno")
    argv = [tool, "--kernel"] if inferno else [tool]
    if event:
        argv += ["--event-filter", event] if inferno else [f"--event-filter={event}"]
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


_HEADER = re.compile(
    r"^(?!\s)(?P<comm>.+?)\s+(?P<tid>\d+)(?:/\d+)?\s+\[\d+\]\s+[\d.]+:\s+(?:\d+\s+)?(?P<event>[^\s:]+):"
)


def count_samples(script: str) -> dict[str, int]:
    """Samples per event in `perf script` output ("workload", "all"), and the idle ones of "all" (the idle
    task, tid 0: "swapper"), from each sample's header line."""
    counts = {WORKLOAD: 0, ALL: 0, "idle": 0}
    for line in script.splitlines():
        m = _HEADER.match(line)
        if m is None:
            continue
        event = m.group("event")
        counts[event] = counts.get(event, 0) + 1
        if event == ALL and m.group("tid") == "0":
            counts["idle"] += 1
    return counts


def share_meta(workload: int, busy: int) -> dict[str, Any]:
    """The workload's share of the samples taken on busy CPUs while its trial ran (idle excluded)."""
    return {
        "workload_samples": workload,
        "busy_samples": busy,
        # The two events sample independently: a workload alone on the machine can get a few samples more than
        # all busy CPUs together; its share is then all of them.
        "workload_share": min(1.0, workload / busy) if busy else None,
    }


class PerfCpuProfile(PerfProfiler):
    """`perf record -g` of the trial's cgroup, with a second, unfiltered event on every CPU that counts what
    else ran meanwhile: the profile is the workload's, and the share says how much of the machine it was."""

    name = "profile.cpu"
    kind = "profile.cpu"
    out_name = "perf.cpu.data"

    def __init__(self) -> None:
        self.unavailable = system_wide_perf_problem() or cgroup_problem()
        self.collapse = collapser()
        if self.unavailable is None and self.collapse is None:
            self.unavailable = (
                "no stack collapser: `cargo install inferno` (gives inferno-collapse-perf and "
                "inferno-flamegraph) or put FlameGraph's stackcollapse-perf.pl on PATH"
            )
        self.event = "cycles" if has_pmu() else "cpu-clock"

    def record_argv(self, cgroup: str) -> list[str]:
        # -G applies to the events before it in order: the first only in the cgroup, the second everywhere.
        events = ["-e", f"{self.event}/name={WORKLOAD}/", "-G", cgroup, "-e", f"{self.event}/name={ALL}/"]
        return ["perf", "record", "-g", "-F", str(FREQUENCY_HZ), *events]

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        rec, err = self.finish()
        collapse = self.collapse
        if rec is None or collapse is None:  # (no collapser: unavailable, never started)
            return [self._failure(err)]
        try:
            script = self._script(rec.out)
            folded = fold(script, collapse, WORKLOAD)
        except ProfilerFailed as exc:
            return [self._failure(f"{exc.message} {err.strip()[-200:]}")]
        finally:
            rec.out.unlink(missing_ok=True)  # perf.data is large; the folded stacks are what we keep
        counts = count_samples(script)
        meta = {
            "event": self.event,
            "frequency_hz": FREQUENCY_HZ,
            "weight": folded_weight(folded),  # sum of sample periods (ns for cpu-clock)
            "scope": SCOPE,
            "servers": len(self.servers),  # the workload's servers that were in the cgroup too
            "collapser": Path(collapse).name,
        } | share_meta(counts[WORKLOAD], counts[ALL] - counts["idle"])
        out = [Artifact(self.kind, "meta", "application/json", meta)]
        if not folded.strip():
            return [*out, self._failure("no sample of the workload (a trial shorter than a sample period?)")]
        return [Artifact(self.kind, "folded", "text/plain", folded), *out]

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
