"""`fairmark history` on a store of 1 M samples, SQLite and PostgreSQL (issue 15: answers in < 1 s).

The store: RUNS runs (a CI history: one run per commit, tagged branch=main and commit=N) of WORKLOADS workloads ×
2 variants × TRIALS trials × 5 metrics = 1,000,000 samples with the defaults, written with the store's own
schema. Measured, median of REPS: the history query alone (store.history.query_history: one point per run per
cell, aggregated in the database), the whole read model with change points (report.history.build_history:
e-divisive with 199 permutations on each series of RUNS points), and the command as a user runs it
(`fairmark history w0:wall_s --tag branch=main --json`, a new process: imports included). Wall and CPU time are
both printed (CPU: this process's plus, for PostgreSQL, the server's postmaster and backends): on a loaded
machine wall time is mostly waiting for a CPU. PostgreSQL is a real server started on
loopback here (as tests/test_core_store.py does) and stopped at the end.

    .venv/bin/python bench/history_query.py [--runs 200] [--trials 100] [--reps 5] [--no-postgres]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

from fairmark.report.history import HistoryOptions, build_history
from fairmark.run.launch.launcher import RSS_METHOD
from fairmark.store import schema as S
from fairmark.store.db import Store
from fairmark.store.history import query_history

GOAL_S = 1.0
METRICS = (
    ("wall_s", "s", "lower"),
    ("user_s", "s", "lower"),
    ("sys_s", "s", "lower"),
    ("cpu_s", "s", "lower"),
    ("max_rss_kib", "KiB", "lower"),
)


def fill(store: Store, runs: int, workloads: int, trials: int) -> int:
    """Write the history; returns the number of samples. One transaction per run, as fairmark writes them."""
    rng = random.Random(15)
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    n = 0
    for r in range(runs):
        run_id, started = str(uuid.uuid4()), t0 + dt.timedelta(hours=r)
        step = 1.10 if r >= runs // 2 else 1.0  # a +10% step half way, for the change points to find
        with store.engine.begin() as conn:
            conn.execute(
                sa.insert(S.runs),
                [
                    {
                        "id": run_id,
                        "plan_path": "bench.toml",
                        "plan_text": "",
                        "plan_sha256": "0" * 64,
                        "title": "bench",
                        "seed": r,
                        "host_id": "bench-host",
                        "hostname": "bench",
                        "started_at": started,
                        "ended_at": started,
                        "status": "running",
                        "command_line": "",
                        "fairmark_version": "bench",
                        "accept_risk": False,
                        "options": {},
                        "notes": [],
                    }
                ],
            )
            conn.execute(
                sa.insert(S.run_tags),
                [
                    {"run_id": run_id, "key": "branch", "value": "main"},
                    {"run_id": run_id, "key": "commit", "value": str(r)},
                ],
            )
            for w in range(workloads):
                for v in ("A", "B"):
                    cell_id = conn.execute(
                        sa.insert(S.cells).values(
                            run_id=run_id,
                            key=f"w{w}/{v}",
                            workload=f"w{w}",
                            variant=v,
                            point=[],
                            primary_metric="wall_s",
                            metrics=[{"name": m, "unit": u, "better": b} for m, u, b in METRICS],
                            status="done",
                        )
                    ).inserted_primary_key[0]
                    tr = [
                        {
                            "id": str(uuid.uuid4()),
                            "run_id": run_id,
                            "cell_id": cell_id,
                            "seq": i,
                            "round": i,
                            "warmup": False,
                            "status": "ok",
                            "started_at": started,
                            "stdout_tail": "",
                            "stderr_tail": "",
                            "profiled": False,
                            # as a run measures it: a trial without a method is "left out" of max_rss_kib
                            "max_rss_method": RSS_METHOD,
                        }
                        for i in range(trials)
                    ]
                    conn.execute(sa.insert(S.trials), tr)
                    samples = [
                        {
                            "run_id": run_id,
                            "cell_id": cell_id,
                            "trial_id": t["id"],
                            "metric": m,
                            "unit": u,
                            "better": b,
                            "value": rng.gauss(1.0 * step, 0.02),
                        }
                        for t in tr
                        for m, u, b in METRICS
                    ]
                    conn.execute(sa.insert(S.samples), samples)
                    n += len(samples)
        store.update_run(run_id, status="done")  # as a run's end does (which sums its cells: store/sums.py)
    return n


def timed(
    fn: Callable[[], object], reps: int, server: Callable[[], float] = lambda: 0.0
) -> tuple[float, float]:
    """(median wall s, median CPU s of this process plus the database server's) over `reps` calls."""
    walls, cpus = [], []
    for _ in range(reps):
        w, c, sv = time.perf_counter(), time.process_time(), server()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c + server() - sv)
    return statistics.median(walls), statistics.median(cpus)


def server_cpu(pid: int) -> Callable[[], float]:
    """CPU seconds used so far by a PostgreSQL server: its postmaster and every backend (psutil)."""
    import psutil

    def total() -> float:
        root = psutil.Process(pid)
        out = 0.0
        for p in [root, *root.children(recursive=True)]:
            try:
                t = p.cpu_times()
                out += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return out

    return total


def measure(name: str, url: str, args: argparse.Namespace, server: Callable[[], float] = lambda: 0.0) -> None:
    store = Store.open(url)
    t = time.perf_counter()
    n = fill(store, args.runs, args.workloads, args.trials)
    print(f"{name}: {n:,} samples in {args.runs} runs written in {time.perf_counter() - t:.0f} s")
    tags = {"branch": "main"}
    q = timed(lambda: query_history(store, "w0", metric="wall_s", tags=tags), args.reps, server)
    series = query_history(store, "w0", metric="wall_s", tags=tags)
    h = timed(lambda: build_history(store, HistoryOptions("w0", "wall_s", tags=tags)), args.reps, server)
    found = [len(s["change_points"]) for s in build_history(store, HistoryOptions("w0", "wall_s", tags=tags))]
    env = os.environ | {"FAIRMARK_STORE": url}
    cmd = [sys.executable, "-m", "fairmark", "history", "w0:wall_s", "--tag", "branch=main", "--json"]

    def children_cpu() -> float:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime + server()

    def cli() -> None:
        subprocess.run(cmd, env=env, check=True, capture_output=True)

    c = timed(cli, args.reps, children_cpu)
    points = sum(len(s.points) for s in series)
    verdict = f"wall {'PASS' if q[0] < GOAL_S else 'FAIL'} (ratio {q[0] / GOAL_S:.2f}), CPU " + (
        f"{'PASS' if q[1] < GOAL_S else 'FAIL'} (ratio {q[1] / GOAL_S:.2f})"
    )
    print(
        f"{name}: history query ({len(series)} series, {points} points): {q[0]:.3f} s wall, {q[1]:.3f} s CPU "
        f"at load {os.getloadavg()[0]:.1f} — goal < {GOAL_S:g} s: {verdict}"
    )
    print(
        f"{name}: with change points (e-divisive, 199 permutations; found {found} per series, planted 1): "
        f"{h[0]:.3f} s wall, {h[1]:.3f} s CPU"
    )
    print(
        f"{name}: `fairmark history w0:wall_s --tag branch=main --json` (new process, imports included): "
        f"{c[0]:.3f} s wall, {c[1]:.3f} s CPU"
    )
    store.engine.dispose()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--workloads", type=int, default=5)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-postgres", action="store_true")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped bench still stops its server
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        measure("SQLite", f"sqlite:///{Path(tmp) / 'history.db'}", args)
    if not args.no_postgres:
        from fairmark.run.workloads.servers import PG_BIN, PostgresServer

        if not (PG_BIN / "initdb").exists():
            print(f"PostgreSQL: not measured (no server binaries in {PG_BIN}; `make setup` installs them)")
            return 0
        base = Path(tempfile.mkdtemp(prefix="fairmark-bench-pg-"))
        server = PostgresServer(base / "pg", fsync=False)
        try:
            server.start()
            server.psql("CREATE DATABASE bench")
            assert server.proc is not None
            url = f"postgresql+psycopg://postgres@127.0.0.1:{server.port}/bench"
            measure("PostgreSQL", url, args, server_cpu(server.proc.pid))
        finally:
            server.stop()
            shutil.rmtree(base, ignore_errors=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
