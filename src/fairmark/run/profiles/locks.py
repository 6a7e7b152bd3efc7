"""Lock contention: `perf lock record` of the trial's own cgroup (base.TrialCgroup: its process tree from the
first instruction, and the workload's servers), then `perf lock contention` as a table. Only the workload's
waits are in it: with strace in the same trial (before each profiler got trials of its own) the table was
topped by strace's ptrace_stop.

The kernel's lock:contention_begin/end tracepoints (Linux ≥ 5.19) are what perf reads here; they need tracefs,
which is mounted when missing. The table is seed 001's lock-profiling view: lock caller, type, how often it
was contended, total and max wait.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from fairmark.run.hooks import Artifact, HookContext
from fairmark.run.profiles.base import (
    PerfProfiler,
    cgroup_problem,
    ensure_tracefs,
    system_wide_perf_problem,
)

TOP_N = 50
SCOPE = "process tree (cgroup)"
_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}
_ROW = re.compile(
    r"^\s*(\d+)\s+([\d.]+)\s*(ns|us|ms|s|m|h)\s+([\d.]+)\s*(ns|us|ms|s|m|h)\s+([\d.]+)\s*(ns|us|ms|s|m|h)"
    r"\s+(\S+)\s+(\S.*?)\s*$"
)


def lock_support_problem() -> str | None:
    if problem := system_wide_perf_problem() or cgroup_problem():
        return problem
    if not ensure_tracefs():
        return "tracefs is not mounted and could not be: `mount -t tracefs nodev /sys/kernel/tracing` as root"
    if not Path("/sys/kernel/tracing/events/lock/contention_begin").is_dir():
        return (
            "this kernel has no lock:contention_begin tracepoint (needs Linux ≥ 5.19); "
            "a newer kernel would enable `perf lock contention`"
        )
    return None


def parse_contention(text: str) -> list[dict[str, Any]]:
    """`perf lock contention` table → rows; waits in nanoseconds."""
    rows = []
    for line in text.splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        g = m.groups()
        rows.append(
            {
                "contended": int(g[0]),
                "total_wait_ns": float(g[1]) * _UNIT_NS[g[2]],
                "max_wait_ns": float(g[3]) * _UNIT_NS[g[4]],
                "avg_wait_ns": float(g[5]) * _UNIT_NS[g[6]],
                "type": g[7],
                "lock": g[8],
            }
        )
    return rows


class PerfLockProfile(PerfProfiler):
    name = "profile.locks"
    kind = "profile.locks"
    out_name = "perf.lock.data"

    def __init__(self) -> None:
        self.unavailable = lock_support_problem()

    def record_argv(self, cgroup: str) -> list[str]:
        # perf lock record's two tracepoints (contention_begin, _end), each only in the trial's cgroup
        return ["perf", "lock", "record", "-G", f"{cgroup},{cgroup}"]

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        rec, err = self.finish()
        if rec is None:
            return [Artifact(self.kind, "error", "text/plain", err)]
        argv = ["perf", "lock", "contention", "-i", str(rec.out), "-E", str(TOP_N)]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        rec.out.unlink(missing_ok=True)
        if proc.returncode != 0:
            return [Artifact(self.kind, "error", "text/plain", f"perf lock contention: {proc.stderr[-300:]}")]
        # perf 6.1 prints the table on stderr (later ones on stdout): every run of `--profile locks` here
        # stored an empty table until this read both.
        table = proc.stdout if "contended" in proc.stdout else proc.stderr
        data = {
            "source": "perf lock contention",
            "scope": SCOPE,
            "servers": len(self.servers),
            "rows": parse_contention(table),
            "raw": table,
        }
        return [Artifact(self.kind, "contention", "application/json", data)]
