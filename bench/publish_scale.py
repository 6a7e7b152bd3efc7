"""`fairmark publish` of a store of 10 000 runs × 20 series (issue 26: ≤ 60 s, index ≤ 1 MB).

The store: RUNS runs of a CI history (one run per commit, tagged branch=main and commit=SHA) on HOSTS hosts in
turn, each run measuring WORKLOADS command workloads (one variant, TRIALS trials, the five metrics every command
workload records), so HOSTS × WORKLOADS × 5 series — 2 × 2 × 5 = 20 with the defaults, 5 000 points each. Every
run carries a real environment snapshot of this machine (before and after) and the doctor's findings, as a
`fairmark run` stores them, and is written with the store's own API (create_run, ensure_cells, insert_rows,
add_findings, update_run). The wall time of the first workload steps up 10% at 80% of the history.

Measured: the first publish (every page), a second one with nothing new, and a third after 10 more runs —
wall and CPU time (this process and its workers), pages written and skipped, the size of the index and of the
site, the load average around each.

    .venv/bin/python bench/publish_scale.py [--runs 10000] [--store PATH] [--out DIR] [--jobs N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import random
import resource
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import _commit  # bench/: the commit the figures are of
from fairmark.plan.metric import MetricSpec
from fairmark.probe.doctor import diagnose
from fairmark.probe.snapshot import take_snapshot
from fairmark.report.publish.site import PublishOptions, publish
from fairmark.store import schema as S
from fairmark.store.db import Store
from fairmark.store.records import CellRecord

GOAL_S, GOAL_INDEX_BYTES = 60.0, 1_000_000
METRICS = (
    ("wall_s", "s", "lower"),
    ("user_s", "s", "lower"),
    ("sys_s", "s", "lower"),
    ("cpu_s", "s", "lower"),
    ("max_rss_kib", "KiB", "lower"),
)
PLAN = "title = 'ci'\n[[workload]]\nname = 'w0'\ncommand = ['w0']\n"
# what `fairmark run` stores of a plan without variants (its policy and resolved baseline variant)
OPTIONS = {
    "quick": False,
    "policy": {
        "warmup": 1,
        "min_trials": 5,
        "max_trials": 5,
        "target_ci_pct": 1.5,
        "confidence": 95.0,
        "max_failures": 3,
        "failures": "abandon",
        "spread": False,
        "timeout_s": 600.0,
        "baseline": None,
    },
    "baseline": "default",
    "variants": {"default": {"name": "default", "env": {}, "sysctl": {}, "description": ""}},
    "tuning": {},
    "hooks": [],
}


def _sha(i: int) -> str:
    return hashlib.sha1(f"commit {i}".encode()).hexdigest()


def _trials(rng: random.Random, run_id: str, cell_id: int, w: int, step: float, trials: int, t0: dt.datetime):
    rows, samples = [], []
    for k in range(trials):
        trial_id = str(uuid.uuid4())
        wall = rng.gauss(1.0 + 0.3 * w, 0.02) * (step if w == 0 else 1.0)
        rows.append(
            {
                "id": trial_id,
                "run_id": run_id,
                "cell_id": cell_id,
                "seq": k,
                "round": k,
                "warmup": False,
                "status": "ok",
                "started_at": t0,
                "wall_s": wall,
                "stdout_tail": "",
                "stderr_tail": "",
                "profiled": False,
            }
        )
        values = {
            "wall_s": wall,
            "user_s": wall * 0.8,
            "sys_s": wall * 0.1,
            "cpu_s": wall * 0.9,
            "max_rss_kib": rng.gauss(80000, 500),
        }
        samples += [
            {
                "run_id": run_id,
                "cell_id": cell_id,
                "trial_id": trial_id,
                "metric": m,
                "unit": u,
                "better": b,
                "value": values[m],
            }
            for m, u, b in METRICS
        ]
    return rows, samples


def add_run(
    store: Store, i: int, args: argparse.Namespace, env: dict, findings: list, rng: random.Random
) -> None:
    """One run as `fairmark run` stores it: the run and its tags, its cells, trials and samples, the findings,
    then its end."""
    started = dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=10 * i)
    host = f"bench-{i % args.hosts}"
    run_id = store.create_run(
        plan_path="ci.toml",
        plan_text=PLAN,
        plan_sha256="0" * 64,
        title="ci",
        seed=i,
        host_id=host,
        hostname=host,
        started_at=started,
        status="running",
        command_line="fairmark run ci.toml",
        fairmark_version="bench",
        options=OPTIONS,
        env_before=env,
        notes=[],
        tags={"branch": "main", "commit": _sha(i)},
    )
    metrics = tuple(MetricSpec(m, u, b) for m, u, b in METRICS)
    cells = [
        CellRecord(
            f"w{w}/default",
            f"w{w}",
            "default",
            (),
            "wall_s",
            metrics,
            command=(f"w{w}",),
            status="done",
            stop_reason="max_trials",
        )
        for w in range(args.workloads)
    ]
    ids = store.ensure_cells(run_id, cells)
    step = 1.10 if i >= 0.8 * args.runs else 1.0
    trials, samples = [], []
    for w in range(args.workloads):
        t, s = _trials(rng, run_id, ids[f"w{w}/default"], w, step, args.trials, started)
        trials, samples = trials + t, samples + s
    store.insert_rows({S.trials: trials, S.samples: samples})
    store.add_findings(run_id, "before", findings)
    store.update_run(run_id, status="done", ended_at=started + dt.timedelta(minutes=5), env_after=env)


def build(store: Store, args: argparse.Namespace, first: int, count: int) -> None:
    env = take_snapshot()
    findings = [f.to_dict() for f in diagnose(env)]
    rng = random.Random(26 + first)
    for i in range(first, first + count):
        add_run(store, i, args, env, findings, rng)


def measure(store: Store, opts: PublishOptions, label: str) -> None:
    load0 = os.getloadavg()[0]
    cpu0 = time.process_time()
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    outcome = publish(store, opts)
    wall = time.perf_counter() - t0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - cpu0 + (kids.ru_utime - kids0.ru_utime) + (kids.ru_stime - kids0.ru_stime)
    index = (opts.out / "index.html").stat().st_size
    total = sum(p.stat().st_size for p in opts.out.rglob("*.html"))
    verdict = f"{'PASS' if wall <= GOAL_S else 'FAIL'} (ratio {wall / GOAL_S:.2f})"
    print(
        f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU, load average {load0:.1f} → {os.getloadavg()[0]:.1f}; "
        f"{outcome.sentence()}; index {index:,} bytes, site {total / 1e6:.0f} MB — goal ≤ {GOAL_S:g} s: {verdict}, "
        f"index ≤ 1 MB: {'PASS' if index <= GOAL_INDEX_BYTES else 'FAIL'}",
        flush=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--workloads", type=int, default=2)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--store", help="an SQLite file: built if missing, reused if there")
    ap.add_argument("--out", help="the site's directory (default: a new temporary one)")
    ap.add_argument("--jobs", type=int, default=0)
    _commit.add_option(ap)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fairmark-publish-bench-"))
    path = Path(args.store) if args.store else tmp / "store.db"
    fresh = not path.exists()
    store = Store.open(str(path))
    if fresh:
        t = time.perf_counter()
        build(store, args, 0, args.runs)
        print(f"store: {args.runs} runs written in {time.perf_counter() - t:.0f} s ({path})", flush=True)
    print(f"commit {_commit.commit(args.commit)}, {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
    out = Path(args.out) if args.out else tmp / "site"
    opts = PublishOptions(
        out=out, tags={"branch": "main"}, repo_url="https://example.org/repo/commit/{sha}", workers=args.jobs
    )
    try:
        measure(store, opts, "first publish")
        measure(store, opts, "second publish, nothing new")
        build(store, args, args.runs + 100_000, 10)
        measure(store, opts, "third publish, 10 new runs")
    finally:
        store.engine.dispose()
        shutil.rmtree(tmp, ignore_errors=True)  # the store and the site given by --store/--out stay
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
