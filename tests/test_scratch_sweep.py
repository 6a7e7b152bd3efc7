"""A killed fairmark leaves its scratch directory and, worse, the servers it started there (they run in their own
session, so a SIGKILL of fairmark's process group misses them): the next run removes both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fairmark.run.lock import pid_alive
from fairmark.run.stage import sweep_stale_scratch
from helpers import wait_until


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_dead_fairmarks_scratch_and_the_server_working_in_it_are_removed(tmp_path: Path) -> None:
    dead = _dead_pid()
    scratch = tmp_path / f"fairmark-{dead}-kv-abc"
    (scratch / "redis-server").mkdir(parents=True)
    # A stand-in for a managed server: its own session, its working directory in the scratch directory.
    server = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        cwd=scratch / "redis-server",
        start_new_session=True,
    )
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    live = tmp_path / f"fairmark-{owner.pid}-live-abc"  # a live fairmark's directory is not touched
    live.mkdir()
    try:
        lines = sweep_stale_scratch(str(tmp_path))
        server.wait(timeout=60)
        assert not pid_alive(server.pid)
        assert not scratch.exists() and live.exists()
        assert any(f"pid {server.pid}" in line and f"fairmark process {dead}" in line for line in lines), (
            lines
        )
    finally:
        for proc in (server, owner):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_server_whose_scratch_is_already_gone_is_stopped_too(tmp_path: Path) -> None:
    """An older fairmark removed the directory but not the server: the kernel shows its cwd as '(deleted)'."""
    dead = _dead_pid()
    scratch = tmp_path / f"fairmark-{dead}-kv-abc"
    scratch.mkdir()
    server = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], cwd=scratch, start_new_session=True
    )
    try:
        wait_until(lambda: Path(f"/proc/{server.pid}/cwd").resolve() == scratch, timeout_s=60)
        scratch.rmdir()
        sweep_stale_scratch(str(tmp_path))
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
