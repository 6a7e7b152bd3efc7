"""Lock contention: `perf lock record -a` during the trial, then `perf lock contention` as a table.

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
    PerfRecorder,
    Profiler,
    ProfilerFailed,
    ensure_tracefs,
    system_wide_perf_problem,
)

TOP_N = 50
_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}
_ROW = re.compile(
    r"^\s*(\d+)\s+([\d.]+)\s*(ns|us|ms|s|m|h)\s+([\d.]+)\s*(ns|us|ms|s|m|h)\s+([\d.]+)\s*(ns|us|ms|s|m|h)"
    r"\s+(\S+)\s+(\S.*?)\s*$"
)


def lock_support_problem() -> str | None:
    if problem := system_wide_perf_problem():
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


class PerfLockProfile(Profiler):
    name = "profile.locks"
    kind = "profile.locks"

    def __init__(self) -> None:
        self.unavailable = lock_support_problem()
        self._rec: PerfRecorder | None = None
        self._error: str | None = None

    def start(self, ctx: HookContext) -> None:
        try:
            self._rec, self._error = (
                PerfRecorder(["perf", "lock", "record"], Path(ctx.trial_dir) / "perf.lock.data"),
                None,
            )
        except ProfilerFailed as exc:
            self._rec, self._error = None, exc.message

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        if self._rec is None:
            return [Artifact(self.kind, "error", "text/plain", self._error or "perf lock did not start")]
        rec, self._rec = self._rec, None
        rec.stop()
        argv = ["perf", "lock", "contention", "-i", str(rec.out), "-E", str(TOP_N)]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        rec.out.unlink(missing_ok=True)
        if proc.returncode != 0:
            return [Artifact(self.kind, "error", "text/plain", f"perf lock contention: {proc.stderr[-300:]}")]
        # perf 6.1 prints the table on stderr (later ones on stdout): every run of `--profile locks` here
        # stored an empty table until this read both.
        table = proc.stdout if "contended" in proc.stdout else proc.stderr
        data = {"source": "perf lock contention", "rows": parse_contention(table), "raw": table}
        return [Artifact(self.kind, "contention", "application/json", data)]
