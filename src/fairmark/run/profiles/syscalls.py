"""Syscall profile: `strace -f -C -w -T` around the trial's command — a table and duration histograms.

strace writes every call (with its duration, -T) and, at the end, its summary table (-C) into a FIFO that a
thread of this hook reads while the trial runs. Writing the trace to a file instead is not an option: a
syscall-heavy stressor produced 1.6 GB in a minute here. The thread keeps only per-syscall log2 histograms of
wall-clock durations (-w) and the summary table, which is seed 003's blogbench picture: which calls, how many,
how long each.

strace is the trial's parent while it runs, so a profiled trial's times include ptrace overhead: profiles
explain a result; they are not the result.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fairmark.run.hooks import Artifact, HookContext
from fairmark.run.profiles.base import Profiler, find_tool

TOP_HISTOGRAMS = 5
READER_JOIN_S = 30.0
_CALL = re.compile(r"^(?:\[pid\s+)?\d*\]?\s*(?:<\.\.\. (\w+) resumed>|(\w+)\().*<(\d+\.\d+)>\s*$")
_SUMMARY_HEADER = re.compile(r"^\s*% time\s+seconds\s+usecs/call\s+calls\s+errors\s+syscall")


class SyscallStats:
    """Consumes strace output line by line: histograms from the trace, the table from the summary."""

    def __init__(self) -> None:
        self.hist: dict[str, dict[int, int]] = {}
        self.summary_lines: list[str] = []
        self._in_summary = False

    def feed(self, line: str) -> None:
        if self._in_summary:
            self.summary_lines.append(line)
        elif _SUMMARY_HEADER.match(line):
            self._in_summary = True
        elif (m := _CALL.match(line)) is not None:
            name = m.group(1) or m.group(2)
            bucket = log2_bucket_us(float(m.group(3)) * 1e6)
            h = self.hist.setdefault(name, {})
            h[bucket] = h.get(bucket, 0) + 1

    def result(self) -> dict[str, Any]:
        table, total = parse_summary(self.summary_lines)
        top = [row["syscall"] for row in sorted(table, key=lambda r: -r["seconds"])[:TOP_HISTOGRAMS]]
        hist = {name: histogram_rows(self.hist.get(name, {})) for name in top if self.hist.get(name)}
        return {
            "source": "strace -f -c -w",
            "scope": "process tree (strace -f)",  # strace starts the command: every process of its tree
            "table": table,
            "total": total,
            "histograms_us": hist,
        }


def log2_bucket_us(us: float) -> int:
    """Upper bound of the power-of-two bucket (µs) holding a duration: 0.7 → 1, 3 → 4, 1000 → 1024."""
    return 1 if us <= 1 else 2 ** math.ceil(math.log2(us))


def histogram_rows(hist: dict[int, int]) -> list[dict[str, int]]:
    return [{"le_us": b, "count": hist[b]} for b in sorted(hist)]


def parse_summary(lines: Iterable[str]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """strace -c table rows (errors column may be blank) → rows and the total row."""
    rows, total = [], None
    for line in lines:
        f = line.split()
        if len(f) < 5 or line.lstrip().startswith("-"):
            continue
        try:
            pct, seconds, usecs, calls = float(f[0]), float(f[1]), float(f[2]), int(f[3])
        except ValueError:
            continue
        errors = int(f[4]) if len(f) == 6 else 0
        row = {"syscall": f[-1], "pct_time": pct, "seconds": seconds, "usecs_per_call": usecs, "calls": calls}
        row["errors"] = errors
        if f[-1] == "total":
            total = row
        else:
            rows.append(row)
    return rows, total


class StraceProfile(Profiler):
    name = "profile.syscalls"
    kind = "profile.syscalls"

    def __init__(self) -> None:
        self.strace = find_tool("strace")
        self.unavailable = None if self.strace else "strace not found: install strace"
        self._fifo: Path | None = None
        self._thread: threading.Thread | None = None
        self._stats: SyscallStats | None = None

    def wrap(self, argv: list[str], ctx: HookContext) -> list[str]:
        if self.strace is None:  # an unavailable hook is never used (run/hooks.py)
            raise RuntimeError(self.unavailable)
        self._fifo = Path(ctx.trial_dir) / "strace.fifo"
        self._fifo.unlink(missing_ok=True)
        os.mkfifo(self._fifo)
        return [self.strace, "-f", "-C", "-w", "-T", "-qq", "-o", str(self._fifo), "--", *argv]

    def start(self, ctx: HookContext) -> None:
        self._stats = SyscallStats()
        self._thread = threading.Thread(target=self._read, args=(self._fifo, self._stats), daemon=True)
        self._thread.start()

    @staticmethod
    def _read(fifo: Path, stats: SyscallStats) -> None:
        with open(fifo, errors="replace") as f:  # blocks until strace opens it for writing
            for line in f:
                stats.feed(line)

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        if self._thread is None or self._fifo is None or self._stats is None:
            return [Artifact(self.kind, "error", "text/plain", "strace was not set up for this trial")]
        self._thread.join(READER_JOIN_S)
        if self._thread.is_alive():
            self._unblock()
            self._thread.join(5)
        self._fifo.unlink(missing_ok=True)
        data = self._stats.result()
        self._thread = self._stats = None
        if not data["table"]:
            return [
                Artifact(
                    self.kind, "error", "text/plain", "strace produced no summary (did the command start?)"
                )
            ]
        return [Artifact(self.kind, "summary", "application/json", data)]

    def _unblock(self) -> None:
        """strace never opened the FIFO (the command did not start): open the write end so the reader ends."""
        if self._fifo is None:
            return
        try:
            os.close(os.open(self._fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
