"""A run whose controller died (kill -9, `timeout`) never writes its end: the store keeps "running". `runs` and
`show` tell it apart from a live run by the controller the run recorded (host, boot, PID and its start time) —
issue 32 item 4 — and give the `fairmark resume RUN` hint."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from helpers import REPO, fairmark_subprocess, wait_until

PLAN = """
[run]
warmup = 0
min_trials = 200
max_trials = 200
seed = 5

[[workload]]
name = "nap"
command = ["sleep", "0.2"]

[[variant]]
name = "A"
"""


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=30) as c:
            return c.execute("select count(*) from trials").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_a_killed_runs_controller_is_gone(tmp_path: Path) -> None:
    plan = tmp_path / "naps.toml"
    plan.write_text(PLAN)
    db = Path(os.environ["FAIRMARK_STORE"].removeprefix("sqlite:///"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "fairmark", "run", str(plan), "--no-monitors", "--accept-risk"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: _count(db) >= 3 or proc.poll() is not None, timeout_s=300)
        assert proc.poll() is None, "the run ended before it could be killed"
        res = fairmark_subprocess("runs", "--json")
        assert res.returncode == 0, res.stderr
        alive = json.loads(res.stdout)["runs"][0]
        assert (alive["status"], alive["controller_gone"]) == ("running", False)  # a live run is not gone
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    listed = fairmark_subprocess("runs")
    assert listed.returncode == 0, listed.stderr
    run = json.loads(fairmark_subprocess("runs", "--json").stdout)["runs"][0]
    assert run["controller_gone"] is True and run["status"] == "running"  # the store's word, kept
    assert "interrupted (controller gone)" in listed.stdout
    assert f"fairmark resume {run['id'][:8]}" in listed.stdout

    shown = fairmark_subprocess("show", "last")
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "status interrupted (controller gone)" in text
    assert f"fairmark resume {run['id'][:8]}" in text
    doc = json.loads(fairmark_subprocess("show", "last", "--json").stdout)
    assert doc["run"]["controller_gone"] is True
