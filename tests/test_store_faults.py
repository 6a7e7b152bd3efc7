"""Store faults (issue 9): the store's file system fills up, the store is read-only, the SQLite file is
corrupted → a clear error naming the store (exit 3), never a traceback, and every trial committed before is
still there."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs (root)")


def fm(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fairmark", *args], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def small_fs(tmp_path: Path):
    mnt = tmp_path / "fs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def env_for(tmp: Path, store: Path) -> dict[str, str]:
    return os.environ | {
        "FAIRMARK_STORE": str(store),
        "FAIRMARK_LOCK_PATH": str(tmp / "lock"),
        "FAIRMARK_STATE_DIR": str(tmp / "state"),
        "NO_COLOR": "1",
    }


def plan(tmp: Path, trials: int, command: str) -> str:
    p = tmp / "plan.toml"
    p.write_text(
        f"[run]\nwarmup = 0\nmin_trials = {trials}\nmax_trials = {trials}\ntarget_ci_pct = 0.0001\n"
        f"[[workload]]\nname = 'w'\ncommand = {command!r}\nshell = true\n"
    )
    return str(p)


def trials_in(store: Path, *, immutable: bool = False) -> int:
    # a WAL database on a read-only file system opens only as immutable (its WAL was checkpointed at close)
    with sqlite3.connect(f"file:{store}?{'immutable=1' if immutable else 'mode=ro'}", uri=True) as conn:
        return conn.execute("SELECT count(*) FROM trials").fetchone()[0]


@pytest.mark.slow
def test_a_full_file_system_stops_the_run_cleanly_and_keeps_the_trials(tmp_path, small_fs) -> None:
    store = small_fs / "store.db"
    env = env_for(tmp_path, store)
    # each trial keeps an 8 KiB output tail: the 1 MiB file system fills after some tens of trials
    res = fm(
        env,
        "run",
        plan(tmp_path, 2000, "head -c 9000 /dev/urandom | base64 -w 0"),
        "--no-monitors",
        "--accept-risk",
    )
    assert res.returncode == 3, res.stderr[-3000:]
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr
    assert re.search(rf"store {re.escape(str(store))}: cannot write, the file system is full", res.stderr)
    # a line is printed after a trial is committed, at most one every 50 ms, and the last one held back is shown
    # when the run ends, even on a failed store: the last trial shown is the last one kept
    shown = [int(n) for n in re.findall(r"^\[\s*(\d+)\] w/default", res.stderr, re.M)]
    assert shown and shown[-1] > 5 and trials_in(store) == shown[-1], res.stderr[-3000:]


@pytest.mark.slow
def test_a_read_only_store_is_refused_naming_it(tmp_path, small_fs) -> None:
    store = small_fs / "store.db"
    env = env_for(tmp_path, store)
    assert fm(env, "run", plan(tmp_path, 3, "true"), "--no-monitors", "--accept-risk").returncode == 0
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    res = fm(env, "run", plan(tmp_path, 3, "true"), "--no-monitors", "--accept-risk")
    assert res.returncode == 3, res.stderr[-3000:]
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr
    assert f"store {store}: cannot write, it is read-only" in res.stderr
    assert trials_in(store, immutable=True) == 3


@pytest.mark.slow
def test_a_corrupted_sqlite_file_names_the_integrity_check_answer(tmp_path) -> None:
    store = tmp_path / "store.db"
    env = env_for(tmp_path, store)
    assert (
        fm(env, "run", plan(tmp_path, 20, "echo " + "x" * 3000), "--no-monitors", "--accept-risk").returncode
        == 0
    )
    with sqlite3.connect(store) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
    with open(store, "r+b") as f:  # scribble over the second half of the file, keeping the header
        f.seek(4096 * (pages // 2))
        f.write(b"\x5a" * 4096 * (pages - pages // 2))
    res = fm(env, "show", "last")
    assert res.returncode == 3, res.stdout[-2000:] + res.stderr[-3000:]
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr
    assert f"store {store} is corrupted" in res.stderr
    assert "PRAGMA integrity_check says:" in res.stderr
