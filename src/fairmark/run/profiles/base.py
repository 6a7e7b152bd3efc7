"""Shared pieces of the profilers: finding tools, a `perf record` that starts exactly with the trial, tracefs.

perf is started system-wide (-a) in `start` and stopped in `stop`, instead of wrapping the command, for two
reasons measured here: wrapping makes perf the trial's parent, so its own CPU time lands in the trial's rusage;
and with inherited per-task sampling perf lost most samples of stress-ng's short-lived fork children (31
samples in 1 s vs 2062 system-wide). perf is started disabled (-D -1) and enabled through its control FIFO, so
recording begins when `start` returns, not whenever perf finished setting up.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from fairmark.errors import FairmarkError
from fairmark.probe.which import find_tool
from fairmark.run.hooks import TrialHook


class ProfilerFailed(FairmarkError):
    """A profiler that was expected to work failed for this trial (its error text is kept)."""


PERF_SETUP_TIMEOUT_S = 30.0


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def perf_paranoid() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    except (OSError, ValueError):
        return None


def system_wide_perf_problem() -> str | None:
    """Why `perf record -a` cannot run here (None when it can)."""
    if find_tool("perf") is None:
        return "perf not found: install linux-perf (Debian) / linux-tools (Ubuntu)"
    paranoid = perf_paranoid()
    if not is_root() and (paranoid is None or paranoid > 0):
        return f"system-wide perf needs root or kernel.perf_event_paranoid <= 0 (it is {paranoid})"
    return None


def ensure_tracefs() -> bool:
    """Mount tracefs at /sys/kernel/tracing when it is not there (root only). True when events are readable."""
    events = Path("/sys/kernel/tracing/events")
    if events.is_dir():
        return True
    if is_root() and Path("/sys/kernel/tracing").is_dir():
        subprocess.run(
            ["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], capture_output=True, check=False
        )
    return events.is_dir()


class PerfRecorder:
    """One `perf <sub> record -a … -o FILE` per trial, enabled through a control FIFO, stopped with SIGINT."""

    def __init__(self, base_argv: list[str], out: Path):
        self.out = out
        self._dir = Path(tempfile.mkdtemp(prefix="fairmark-perfctl-"))
        ctl, ack = self._dir / "ctl", self._dir / "ack"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        argv = [*base_argv, "-a", "-D", "-1", "--control", f"fifo:{ctl},{ack}", "-o", str(out), "-q"]
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # O_RDWR opens a FIFO without waiting for the other end (Linux), so a perf that dies at start-up
        # cannot hang the trial; the "enable" waits in the pipe until perf reads it.
        self._ctl = os.open(ctl, os.O_RDWR)
        self._ack = os.open(ack, os.O_RDWR)
        os.write(self._ctl, b"enable\n")
        self._wait_ack()

    def _wait_ack(self) -> None:
        deadline = time.monotonic() + PERF_SETUP_TIMEOUT_S
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._ack], [], [], 0.1)
            if ready:
                os.read(self._ack, 16)
                return
            if self.proc.poll() is not None:
                break
        err = self.stop()
        raise ProfilerFailed(f"{' '.join(self.argv[:3])} did not start: {err.strip()[-300:] or 'no ack'}")

    def stop(self) -> str:
        """Stop recording; returns perf's stderr (empty when all went well)."""
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=PERF_SETUP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        for fd in (self._ctl, self._ack):
            os.close(fd)
        shutil.rmtree(self._dir, ignore_errors=True)
        return err.decode(errors="replace")


class Profiler(TrialHook):
    """A profile hook: `kind` is the artifact kind ("profile.cpu" …)."""

    kind = "profile"
    _rec: PerfRecorder | None = None

    def close(self) -> None:
        """End of run (also after Ctrl-C between start and stop): no perf left recording."""
        if self._rec is not None:
            self._rec.stop()
            self._rec.out.unlink(missing_ok=True)
            self._rec = None
