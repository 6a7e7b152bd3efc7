"""Helpers shared by tests (importable as `helpers`: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"


def fairmark_subprocess(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300, **kw: object
) -> subprocess.CompletedProcess[str]:
    """Run the installed CLI as a user would, in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "fairmark", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        cwd=REPO,
        **kw,
    )


def json_out(stdout: str) -> dict:
    return json.loads(stdout)


def wait_until(check: Callable[[], bool], timeout_s: float = 60.0, every_s: float = 0.05) -> bool:
    """Poll `check` until it holds or `timeout_s` passed: a test waits for an event (a process gone, a file
    written) without assuming how fast this shared machine is right now."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(every_s)
    return True


def realtime_prefix() -> str:
    """'chrt -f 10 ' where a test may run a timed program under SCHED_FIFO (root), else ''. A sleeping program's
    wake-up then does not wait behind the load of this shared machine: a 0.15 s sleep's wall time had a CV of
    7.8% at load 16 on 2 CPUs, 1.7% under chrt -f (measured while writing the continual-benchmarking tests)."""
    import shutil

    return "chrt -f 10 " if os.geteuid() == 0 and shutil.which("chrt") else ""


def raised_priority(nice: int = -10):  # -> contextlib context manager
    """Run the block at a higher CPU priority (root only; elsewhere a no-op): fairmark's own fork, exec and wait
    around a trial then do not queue behind the other test suites of this shared machine, whose delays (tens of
    ms at load 16) would otherwise be most of a short trial's noise. Restored afterwards."""
    import contextlib

    @contextlib.contextmanager
    def block():
        before = os.getpriority(os.PRIO_PROCESS, 0)
        try:
            if os.geteuid() == 0:
                os.setpriority(os.PRIO_PROCESS, 0, nice)
            yield
        finally:
            if os.geteuid() == 0:
                os.setpriority(os.PRIO_PROCESS, 0, before)

    return block()
