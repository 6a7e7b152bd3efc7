"""A store of ten fixed runs for the golden screens (tests/test_screens.py): ids, dates, host and every value are
fixed, so each view renders the same bytes on any machine, at any date, at any speed. No tests in this module.

The data have the shapes issue 25 item 8 is about: a long title, a full commit id in the tags, seconds that read
better as milliseconds, openssl's bytes/s in the billions, a median of tens of thousands of transactions/s, a
KiB peak in the tens of thousands, a sweep (scaling table), a cell with failed trials whose throughput ratio
interval would reach below -100%. Runs 1–5 and 6–10 differ by a +12% step in alloc/nodebug (history's change
point, check's regression, compare-runs' verdict); run 10 booted another kernel (env --diff, compare-runs
refusing without --because); each run is its own boot (compare-runs --vs).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
from pathlib import Path
from typing import Any

from fairmark.plan.metric import MetricSpec
from fairmark.store.db import Store
from fairmark.store.records import CellRecord, Sample, TrialRecord

FIXTURES = Path(__file__).parent / "fixtures" / "screens"
RUN_IDS = (
    "a1f3c9e2-5b7d-4c1e-9f20-3d8e6a4b1c01",
    "b27d4e10-6c8e-4d2f-8a31-4e9f7b5c2d02",
    "c3e85a47-7d9f-4e3a-9b42-5fa08c6d3e03",
    "d4a91b6c-8ea0-4f4b-8c53-60b19d7e4f04",
    "e5b02c8d-9fb1-405c-9d64-71c2ae8f5005",
    "f6c13d9e-a0c2-416d-ae75-82d3bf906106",
    "07d24ea1-b1d3-427e-bf86-93e4c0a17207",
    "18e35fb2-c2e4-438f-8097-a4f5d1b28308",
    "29f460c3-d3f5-4490-91a8-b506e2c39409",
    "3a0571d4-e406-45a1-a2b9-c617f3d4a510",
)
COMMITS = tuple(hashlib.sha1(f"commit {i}".encode()).hexdigest() for i in range(len(RUN_IDS)))
START = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)
HOST, HOST_ID = "bench-host", "5f3c0a1b2c3d4e5f"
STEP_AT = 5  # runs from this index on: alloc/nodebug 12% slower
LAST = len(RUN_IDS) - 1  # the run made after a kernel update
PLAN = """title = "malloc debugging off vs on: allocation-heavy, crypto and OLTP workloads on one host"

[run]
min_trials = 6
max_trials = 8
target_ci_pct = 2.0

[[workload]]
name = "alloc"
command = ["./alloc", "4000000"]

[[workload]]
name = "crypto"
tool = "openssl"
params = { algorithm = "aes-256-gcm", bytes = 16384 }

[[workload]]
name = "oltp"
tool = "sysbench-oltp"
sweep = { threads = [1, 2, 4] }

[[variant]]
name = "nodebug"

[[variant]]
name = "malloc-debug"
env = { LD_PRELOAD = "libc_malloc_debug.so.0", GLIBC_TUNABLES = "glibc.malloc.check=3:glibc.malloc.perturb=165" }
"""
BUILTIN = [
    {"name": "wall_s", "unit": "s", "better": "lower"},
    {"name": "user_s", "unit": "s", "better": "lower"},
    {"name": "sys_s", "unit": "s", "better": "lower"},
    {"name": "max_rss_kib", "unit": "KiB", "better": "lower"},
]
CRYPTO = [
    {"name": "bytes_s", "unit": "B/s", "better": "higher"},
    {"name": "bytes_s_16384B", "unit": "B/s", "better": "higher"},
]
OLTP = [
    {"name": "transactions_s", "unit": "transactions/s", "better": "higher"},
    {"name": "latency_p95_ms", "unit": "ms", "better": "lower"},
]
OLTP_BASE = {1: 28435.5, 2: 52100.0, 4: 51300.0}  # transactions/s of nodebug by threads: flat past 2
FAILED_CELL = "oltp[threads=4]/malloc-debug"
FAILED_ROUNDS = (1, 3, 5, 6, 7)  # its trials that failed: 3 left, wildly apart
FAILED_ERROR = (
    "sysbench exited 1: FATAL: `thread_run' function failed: ./oltp_common.lua:409: "
    "db_query() failed (connection refused by 127.0.0.1:5433)"
)


def env(index: int) -> dict[str, Any]:
    """The environment snapshot before run `index`: run 6 booted the next kernel package."""
    snap = json.loads((FIXTURES / "env.json").read_text())
    if index == LAST:
        snap["os"]["release"] = "6.1.0-21-amd64"
        snap["os"]["version"] = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.90-1 (2024-05-03)"
        snap["os"]["cmdline"] = snap["os"]["cmdline"].replace("6.1.0-18", "6.1.0-21")
    snap["taken_at"] = (START + dt.timedelta(days=index) - dt.timedelta(seconds=2)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    return snap


def build(path: Path) -> Store:
    """The runs in a new SQLite store at `path`."""
    store = Store.open(f"sqlite:///{path}")
    for i in range(len(RUN_IDS)):
        _run(store, i)
    return store


def _cells() -> list[dict[str, Any]]:
    out = []
    for variant in ("nodebug", "malloc-debug"):
        out.append(_cell("alloc", variant, [], "wall_s", BUILTIN, ["./alloc", "4000000"]))
        argv = ["openssl", "speed", "-evp", "aes-256-gcm", "-bytes", "16384", "-seconds", "3"]
        out.append(_cell("crypto", variant, [], "bytes_s", CRYPTO + BUILTIN, argv))
        for threads in OLTP_BASE:
            argv = ["sysbench", "oltp_read_write", f"--threads={threads}", "--time=30", "run"]
            out.append(_cell("oltp", variant, [["threads", threads]], "transactions_s", OLTP + BUILTIN, argv))
    return out


def _cell(
    workload: str, variant: str, point: list, primary: str, metrics: list, argv: list
) -> dict[str, Any]:
    group = workload + (f"[{','.join(f'{k}={v}' for k, v in point)}]" if point else "")
    return {
        "key": f"{group}/{variant}",
        "workload": workload,
        "variant": variant,
        "point": point,
        "primary_metric": primary,
        "metrics": metrics,
        "status": "done",
        "stop_reason": "max_trials (8) reached",
        "command": argv,
    }


def _record(c: dict[str, Any]) -> CellRecord:
    """A cell as the store's record."""
    return CellRecord(
        key=c["key"],
        workload=c["workload"],
        variant=c["variant"],
        point=tuple((str(k), v) for k, v in c["point"]),
        primary_metric=c["primary_metric"],
        metrics=tuple(MetricSpec.from_row(m) for m in c["metrics"]),
        command=tuple(c["command"]),
        status=c["status"],
        stop_reason=c["stop_reason"],
    )


def _run(store: Store, index: int) -> None:
    rng = random.Random(index)
    started = START + dt.timedelta(days=index)
    run_id = store.create_run(
        id=RUN_IDS[index],
        plan_path="plans/malloc-debug.toml",
        plan_text=PLAN,
        plan_sha256=hashlib.sha256(PLAN.encode()).hexdigest(),
        title=PLAN.splitlines()[0][9:-1],
        seed=1000 + index,
        host_id=HOST_ID,
        hostname=HOST,
        started_at=started,
        ended_at=started + dt.timedelta(minutes=42),
        status="done",
        command_line=f"fairmark run plans/malloc-debug.toml --tag branch=main --tag commit={COMMITS[index]}",
        fairmark_version="0.1.0",
        accept_risk=False,
        options={
            "policy": {"confidence": 95.0, "baseline": "nodebug", "min_trials": 6},
            "hooks": ["monitor.system"],
        },
        env_before=env(index),
        env_after=env(index),
        notes=[],
        tags={"branch": "main", "commit": COMMITS[index]},
    )
    cells = _cells()
    ids = store.ensure_cells(run_id, [_record(c) for c in cells])
    seq = 0
    for rnd in range(8):
        for cell in cells:
            seq += 1
            trial, samples = _trial(cell, index, rnd, rng)
            record = TrialRecord(
                **trial,
                id=f"{run_id[:24]}{seq:012d}",
                run_id=run_id,
                cell_id=ids[cell["key"]],
                seq=seq,
                round=rnd,
                started_at=started + dt.timedelta(seconds=10 * seq),
                boot_id=f"boot-{index + 1}",
                argv=tuple(cell["command"]),
            )
            store.add_trial(record, [Sample(record.id, record.cell_id, **s) for s in samples])
    store.add_findings(run_id, "before", [_finding()])


def _trial(cell: dict, index: int, rnd: int, rng: random.Random) -> tuple[dict, list[dict]]:
    debug = cell["variant"] == "malloc-debug"
    failed = cell["key"] == FAILED_CELL and rnd in FAILED_ROUNDS
    values: dict[str, float] = {}
    if cell["workload"] == "alloc":
        wall = (
            rng.gauss(0.2796, 0.0021)
            if debug
            else rng.gauss(0.0566, 0.0009) * (1.12 if index >= STEP_AT else 1)
        )
        values = {"max_rss_kib": rng.gauss(87770, 700) if debug else rng.gauss(2228, 20)}
    elif cell["workload"] == "crypto":
        wall = 3.0 + rng.gauss(0.01, 0.002)
        rate = rng.gauss(5.28e9, 1.9e8)
        values = {"bytes_s": rate, "bytes_s_16384B": rate, "max_rss_kib": rng.gauss(6120, 30)}
    else:
        threads = cell["point"][0][1]
        tps = OLTP_BASE[threads] * (0.31 if debug else 1)
        if cell["key"] == FAILED_CELL:
            tps = {0: 2100.0, 2: 30400.0, 4: 9100.0}.get(rnd, 1.0) * rng.gauss(
                1, 0.05
            )  # the three that ran: far apart
        else:
            tps = rng.gauss(tps, tps * 0.012)
        wall = 30.0 + rng.gauss(0.2, 0.05)
        values = {
            "transactions_s": tps,
            "latency_p95_ms": 1000 * threads / tps * 2.4,
            "max_rss_kib": rng.gauss(11800, 60),
        }
    values |= {"wall_s": wall, "user_s": wall * 0.93, "sys_s": wall * 0.05}
    trial = {
        "warmup": False,
        "status": "failed" if failed else "ok",
        "wall_s": wall,
        "user_s": wall * 0.93,
        "sys_s": wall * 0.05,
        "max_rss_kib": int(values["max_rss_kib"]),
        "max_rss_method": "launcher",  # measured as fairmark does since schema 9 (the workload's own peak)
        "exit_code": 1 if failed else 0,
        "error": FAILED_ERROR if failed else None,
        "stdout_tail": "",
        "stderr_tail": FAILED_ERROR if failed else "",
    }
    if failed:
        return trial, []
    specs = {m["name"]: m for m in cell["metrics"]}
    samples = [
        {"metric": name, "value": v, "unit": specs[name]["unit"], "better": specs[name]["better"]}
        for name, v in values.items()
        if name in specs
    ]
    return trial, samples


def _finding() -> dict[str, str]:
    return {
        "id": "governor",
        "severity": "warn",
        "title": "CPU frequency governor is not 'performance'",
        "evidence": "governor: schedutil on cpu0-cpu7",
        "why": "the clock follows the load, so a variant that loads the CPU differently runs at another speed",
        "fix": "`cpupower frequency-set -g performance`",
    }
