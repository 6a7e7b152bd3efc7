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
