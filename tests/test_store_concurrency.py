"""Stores shared and disturbed (issue 9): two runs at once on one SQLite store (--allow-concurrent), four at
once on one PostgreSQL store, and a PostgreSQL store restarted in the middle of a run — every run completes
with its own trials (nothing interleaved wrongly), nothing committed is lost."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from fairmark.store import schema as S
from fairmark.store.db import Store

TRIALS = 12  # per cell; two cells per run


def plan(tmp: Path, name: str, nap: str = "0.02") -> Path:
    p = tmp / f"{name}.toml"
    p.write_text(
        f"title = {name!r}\n[run]\nwarmup = 0\nmin_trials = {TRIALS}\nmax_trials = {TRIALS}\n"
        f"target_ci_pct = 0.0001\n[[workload]]\nname = 'nap'\ncommand = ['sleep', '{nap}']\n"
        "[[variant]]\nname = 'A'\n[[variant]]\nname = 'B'\n"
    )
    return p


def start(tmp: Path, store: str, plan_path: Path) -> subprocess.Popen[str]:
    env = os.environ | {
        "FAIRMARK_STORE": store,
        "FAIRMARK_LOCK_PATH": str(tmp / "lock"),
        "FAIRMARK_STATE_DIR": str(tmp / "state"),
        "NO_COLOR": "1",
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fairmark",
            "run",
            str(plan_path),
            "--no-monitors",
            "--accept-risk",
            "--allow-concurrent",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def check_runs(url: str, titles: set[str]) -> None:
    """Each run is done with exactly its planned trials, each trial in a cell of its own run, seqs 1..N."""
    store = Store.open(url)
    runs = {r["title"]: r for r in store.list_runs()}
    assert set(runs) == titles
    with store.engine.connect() as conn:
        wrong = conn.execute(
            sa.select(sa.func.count())
            .select_from(S.trials.join(S.cells, S.cells.c.id == S.trials.c.cell_id))
            .where(S.cells.c.run_id != S.trials.c.run_id)
        ).scalar()
    assert wrong == 0, "a trial points at a cell of another run"
    for title, r in runs.items():
        assert r["status"] == "done" and r["trials"] == r["trials_ok"] == 2 * TRIALS, (title, r)
        seqs = sorted(t.seq for t in store.trials(r["id"]))
        assert seqs == list(range(1, 2 * TRIALS + 1)), (title, seqs)


def wait_all(procs: list[subprocess.Popen[str]]) -> None:
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]


@pytest.mark.slow
@pytest.mark.representative
def test_two_runs_at_once_on_one_sqlite_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    wait_all([start(tmp_path, url, plan(tmp_path, f"run{i}")) for i in range(2)])
    check_runs(url, {"run0", "run1"})


@pytest.mark.slow
def test_processes_opening_one_fresh_sqlite_store_at_once_all_open_it(tmp_path: Path) -> None:
    """Two `fairmark run`s on a store that does not exist yet: both can see no schema row, and the loser's
    CREATE TABLE or version INSERT fails once the winner committed (a fresh-clone suite hit the INSERT: "internal
    error: UNIQUE constraint failed: fairmark_meta.key"). Every opener must end with the store open."""
    code = "import sys; from fairmark.store.db import Store; Store.open(sys.argv[1]).list_runs(); print('ok')"
    for round_ in range(5):
        url = f"sqlite:///{tmp_path / f'fresh{round_}.db'}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(6)
        ]
        results = [p.communicate(timeout=120) for p in procs]
        assert [out.strip() for out, _ in results] == ["ok"] * 6, [err[-500:] for _, err in results]


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[object]:
    from fairmark.run.workloads.servers import PG_BIN, PostgresServer

    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL server binaries not installed ({PG_BIN}); `make setup` installs them")
    base = Path(tempfile.mkdtemp(prefix="fairmark-pgfault-"))  # outside pytest's 0700 basetemp
    server = PostgresServer(base / "pg", fsync=False)
    try:
        server.start()
        server.psql("CREATE DATABASE fm")
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def pg_url(server: object) -> str:
    return f"postgresql+psycopg://postgres@127.0.0.1:{server.port}/fm"  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.postgres
def test_four_runs_at_once_on_one_fresh_postgresql_store(tmp_path: Path, postgres: object) -> None:
    # all four open the fresh store at the same moment: the schema is created once, not raced
    wait_all([start(tmp_path, pg_url(postgres), plan(tmp_path, f"run{i}")) for i in range(4)])
    check_runs(pg_url(postgres), {f"run{i}" for i in range(4)})


@pytest.mark.slow
@pytest.mark.postgres
def test_postgresql_restarted_mid_run_loses_nothing(tmp_path: Path, postgres: object) -> None:
    url = pg_url(postgres)
    Store.open(url)
    proc = start(tmp_path, url, plan(tmp_path, "restarted", nap="0.3"))
    deadline = time.monotonic() + 120
    while not (runs := Store.open(url).list_runs()) or runs[0]["trials"] < 4:
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.1)
    before = Store.open(url).list_runs()[0]["trials"]
    postgres.restart()  # type: ignore[attr-defined]  # same port, same data; sessions are cut
    _, err = proc.communicate(timeout=600)
    runs = Store.open(url).list_runs()
    assert runs[0]["trials"] >= before, "a committed trial was lost"
    print(f"PostgreSQL restarted after {before} trials: the run exited {proc.returncode}")
    if proc.returncode == 3:  # stopped cleanly: the error names the store; resume continues
        assert "the connection to the database server was lost" in err and "Traceback" not in err, err
        env = os.environ | {
            "FAIRMARK_STORE": url,
            "FAIRMARK_LOCK_PATH": str(tmp_path / "lock"),
            "FAIRMARK_STATE_DIR": str(tmp_path / "state"),
            "NO_COLOR": "1",
        }
        res = subprocess.run(
            [sys.executable, "-m", "fairmark", "resume", runs[0]["id"]],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert res.returncode == 0, res.stderr[-3000:]
    else:
        assert proc.returncode == 0, err[-3000:]  # waited for the server and went on
    check_runs(url, {"restarted"})
