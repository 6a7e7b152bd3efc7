"""The system monitor as a trial hook: a background thread (one per run) samples each trial once an interval has
passed since its last snapshot.

A snapshot is taken in `start` (before the process exists) and in `stop` (after it ended), so every trial has
whole-trial totals however short it is; the thread adds one snapshot per interval in between.
"""

from __future__ import annotations

import platform
import threading
import time
from typing import Any, Protocol

from fairmark.errors import UsageError
from fairmark.run.hooks import Artifact, HookContext, TrialHook
from fairmark.run.monitors.base import Snapshot, build_series


class Reader(Protocol):
    def snapshot(self) -> Snapshot: ...


def reader_for(system: str | None = None) -> Reader | None:
    system = system or platform.system()
    if system == "Linux":
        from fairmark.run.monitors.linux import LinuxReader

        return LinuxReader()
    if system == "FreeBSD":
        from fairmark.run.monitors.freebsd import FreeBSDReader

        return FreeBSDReader()
    return None


class SystemMonitor(TrialHook):
    name = "monitor.system"

    def __init__(self, interval_s: float = 1.0, reader: Reader | None = None):
        if interval_s <= 0:
            raise UsageError(f"--monitor-interval must be more than 0 seconds, got {interval_s:g}")
        self.interval_s = interval_s
        self.os_name = platform.system().lower()
        self.reader = reader or reader_for()
        if self.reader is None:
            self.unavailable = (
                f"no system monitor for {platform.system()} (Linux /proc and FreeBSD sysctl only)"
            )
        # the current trial's snapshots (the thread appends to this list only)
        self._snaps: list[Snapshot] = []
        self._trial: list[Snapshot] | None = None  # the list being sampled, None between trials
        self._wake = threading.Condition()  # guards _trial and _closed; notified only to close
        self._closed = False
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []

    def _snapshot(self) -> Snapshot:
        if self.reader is None:  # an unavailable hook is never started (run/hooks.py)
            raise RuntimeError(self.unavailable)
        return self.reader.snapshot()

    def start(self, ctx: HookContext) -> None:
        # The thread is not woken: it sleeps at most one interval at a time and, when it wakes, samples the trial
        # then running if its last snapshot is an interval old. Waking it at every trial's start and end cost
        # three thread hand-overs per trial (~0.2 ms of CPU and more of waiting on a busy machine).
        snaps = [self._snapshot()]
        with self._wake:
            self._snaps = self._trial = snaps
        if self._thread is None:  # one thread for the whole run
            self._thread = threading.Thread(target=self._serve, name="fairmark-monitor", daemon=True)
            self._thread.start()

    def _serve(self) -> None:
        while True:
            with self._wake:
                snaps = self._trial
                # a sample is due an interval after the trial's last snapshot (never closer than the interval)
                wait = (
                    self.interval_s if snaps is None else snaps[-1].t_s + self.interval_s - time.monotonic()
                )
                if wait > 0 and not self._closed:
                    self._wake.wait(wait)
                    continue
                if self._closed:
                    return
            try:
                snap = self._snapshot()
            except Exception as exc:  # a failed sample must not kill the trial; the artifact reports it
                self.errors.append(f"{type(exc).__name__}: {exc}")
                snap = None
            with self._wake:
                if (
                    snap is not None and snaps is not None and self._trial is snaps
                ):  # a sample of a trial that has ended is dropped
                    snaps.append(snap)

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        with self._wake:
            snaps, self._trial = self._trial, None
        if snaps is None:  # start() never ran for this trial (another hook failed first): nothing to say
            return []
        snaps.append(self._snapshot())  # after the thread's last: it appends only while _trial is snaps
        series = build_series(snaps, os_name=self.os_name, interval_s=self.interval_s)
        numbers = not self.errors  # an error's text is scrubbed like any other
        if self.errors:
            series["sample_errors"] = self.errors[:10]
            self.errors = []
        self._snaps = []
        return [Artifact("monitor", "system", "application/json", series, numbers_only=numbers)]

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        close = getattr(self.reader, "close", None)
        if close is not None:  # its descriptors (LinuxReader keeps /proc files open for the run)
            close()
