"""Helpers shared by tests (importable as `helpers`: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
