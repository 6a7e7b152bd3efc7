"""Issue 32 item 4: the suite runs without pytest-xdist too (`-p no:xdist`: `pytest tests/test_x.py` on a machine
without the plugin) — the groups conftest adds for xdist's workers failed --strict-markers with an INTERNALERROR."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_collects_grouped_tests_without_xdist() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:xdist",
            "-q",
            "--collect-only",
            "tests/test_architecture.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "INTERNALERROR" not in done.stdout + done.stderr
