"""The system monitor as a trial hook: a background thread (one per run) samples at a fixed interval during each
trial.

A snapshot is taken in `start` (before the process exists) and in `stop` (after it ended), so every trial has
whole-trial totals however short it is; the thread adds one snapshot per interval in between.
"""

from __future__ import annotations

import platform
import threading
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
        self._snaps: list[Snapshot] = []
        self._stop = threading.Event()  # the trial ended: stop sampling it
        self._go = threading.Event()  # a trial started: sample it
        self._idle = threading.Event()  # the thread sampled its last for that trial
        self._closed = False
        self._sampling = False  # between start and stop of a trial
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []

    def start(self, ctx: HookContext) -> None:
        if self._sampling:  # a trial started and never stopped (a later hook's start failed): end that first
            self._halt()
        self._snaps = [self.reader.snapshot()]
        self._stop.clear()
        if self._thread is None:
            # One thread for the whole run, woken per trial: starting a thread per trial waited for it to be
            # scheduled (Thread.start), a tenth of the harness's time per trial on a busy machine.
            self._thread = threading.Thread(target=self._serve, name="fairmark-monitor", daemon=True)
            self._thread.start()
        self._sampling = True
        self._go.set()

    def _serve(self) -> None:
        while True:
            self._go.wait()
            self._go.clear()
            if self._closed:
                return
            snaps = self._snaps  # this trial's list: a late sample never lands in the next trial's
            # Event.wait sleeps without polling; a stop request ends the wait at once.
            while not self._stop.wait(self.interval_s):
                try:
                    snaps.append(self.reader.snapshot())
                except Exception as exc:  # a failed sample must not kill the trial; the artifact reports it
                    self.errors.append(f"{type(exc).__name__}: {exc}")
            self._idle.set()

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        if not self._sampling:  # start() never ran for this trial (another hook failed first): nothing to say
            return []
        self._halt()
        self._snaps.append(self.reader.snapshot())
        series = build_series(self._snaps, os_name=self.os_name, interval_s=self.interval_s)
        if self.errors:
            series["sample_errors"] = self.errors[:10]
            self.errors = []
        self._snaps = []
        return [Artifact(kind="monitor", name="system", content_type="application/json", data=series)]

    def _halt(self) -> None:
        """End the trial's sampling; the thread is done with it (no sample after the end snapshot)."""
        self._stop.set()
        self._idle.wait()
        self._idle.clear()
        self._sampling = False

    def close(self) -> None:
        self._closed = True
        self._stop.set()
        self._go.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
