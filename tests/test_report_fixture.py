"""A synthetic run written into a real store, as the runner would: cells, trials, samples, monitor series,
profiles, findings. Used by the report tests and by bench/report_render.py (no tests in this module)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

from fairmark.plan.metric import MetricSpec
from fairmark.run.monitors.base import Snapshot, build_series
from fairmark.store.db import Store
from fairmark.store.records import CellRecord, Sample, TrialRecord

PLAN = """title = "synthetic"
[[workload]]
name = "w0"
command = ["true"]

[[variant]]
name = "A"

[[variant]]
name = "B"
sysctl = { "kern.foo" = 1 }
"""
# Executes if ever treated as markup: changes the title, or marks the body from an image error handler.
HOSTILE = '<script>document.title="PWNED"</script><img src=x onerror="document.body.dataset.pwned=1">'
FOLDED = (
    "zstd;main;ZSTD_compress;ZSTD_compressBlock 900\nzstd;main;read;entry_SYSCALL_64_[k];ksys_read_[k] 100\n"
)


def monitor_series(steps: int = 4, user: float = 95.0, system: float = 4.0) -> dict[str, Any]:
    """A one-second trial seen by the monitor at 0.25 s: matches the synthetic trials' rusage."""
    snaps, u, s, i, c = [], 0.0, 0.0, 0.0, 0.0
    for k in range(steps + 1):
        cpu = {"user": u, "system": s, "idle": i, "iowait": 0.0, "steal": 0.0}
        counters = {"ctxt": c, "forks": c / 10}
        snaps.append(Snapshot(k / steps, {"total": cpu, "cpu0": cpu}, counters, {"runq": 1.0}))
        u, s, i, c = u + user / steps, s + system / steps, i + (100 - user - system) / steps, c + 250
    return build_series(snaps, os_name="linux", interval_s=1.0 / steps)


def synthetic_run(
    store: Store,
    *,
    workloads: int = 2,
    variants: tuple[str, ...] = ("A", "B"),
    trials: int = 8,
    monitors: bool = True,
    profiles: bool = False,
    hostile: bool = False,
    accept_risk: bool = False,
    seed: int = 7,
    sweep: tuple[int, ...] = (),
    fail_at: int | None = None,  # sweep value at which every trial fails (a failure point)
) -> str:
    rng = random.Random(seed)
    cmdline = "fairmark run plan.toml" + (f" --note '{HOSTILE}'" if hostile else "")
    run_id = store.create_run(
        plan_path="plan.toml",
        plan_text=PLAN + (f"# {HOSTILE}\n" if hostile else ""),
        plan_sha256=hashlib.sha256(PLAN.encode()).hexdigest(),
        title="synthetic run",
        seed=seed,
        host_id="h1",
        hostname=HOSTILE if hostile else "bench-host",
        status="done",
        command_line=cmdline,
        fairmark_version="0.1.0",
        accept_risk=accept_risk,
        options={"policy": {"confidence": 95.0, "baseline": variants[0]}, "hooks": ["monitor.system"]},
        env_before={"kernel": {"release": "6.1.0"}, "cpu": {"governor": "performance"}},
        env_after={"kernel": {"release": "6.1.0"}, "cpu": {"governor": "powersave"}},
        notes=[],
    )
    series = monitor_series()
    metrics = (MetricSpec("wall_s", "s", "lower"),)
    points = [(("threads", x),) for x in sweep] or [()]
    cells = [
        CellRecord(
            key=f"w{w}|{v}|{p}",
            workload=f"w{w}",
            variant=v,
            point=p,
            primary_metric="wall_s",
            metrics=metrics,
            status="done",
            stop_reason="max_trials",
            command=("echo", HOSTILE) if hostile else ("zstd", "-b1"),
        )
        for w in range(workloads)
        for v in variants
        for p in points
    ]
    ids = store.ensure_cells(run_id, cells)
    seq = 0
    for t in range(trials):
        for cell in cells:
            seq += 1
            shift = 1.0 + 0.1 * variants.index(cell.variant)
            threads = cell.point[0][1] if cell.point else 1
            wall = rng.gauss(1.0 * shift / min(threads, 2), 0.02)
            failed = (hostile and t == 0 and cell.variant == variants[-1]) or threads == fail_at
            trial = TrialRecord(
                run_id=run_id,
                cell_id=ids[cell.key],
                seq=seq,
                round=t,
                warmup=False,
                status="failed" if failed else "ok",
                started_at=store_now(),
                wall_s=wall,
                user_s=wall * 0.97,
                sys_s=wall * 0.02,
                max_rss_kib=1000,
                exit_code=1 if failed else 0,
                error=f"tool said {HOSTILE}" if failed else None,
                stdout_tail=HOSTILE if hostile else "",
                stderr_tail=HOSTILE if failed else "",
                argv=cell.command,
            )
            samples = [] if failed else [Sample(trial.id, ids[cell.key], "wall_s", wall, "s", "lower")]
            arts = _artifacts(cell, series, monitors, profiles, hostile)
            store.add_trial(trial, samples, arts)
    store.add_findings(
        run_id,
        "before",
        [
            {
                "id": "governor",
                "severity": "warning",
                "title": "CPU frequency governor is not 'performance'",
                "evidence": HOSTILE if hostile else "powersave",
                "why": "clock changes with load",
                "fix": "cpupower frequency-set -g performance",
            }
        ],
    )
    return run_id


def _artifacts(cell: CellRecord, series: dict, monitors: bool, profiles: bool, hostile: bool) -> list[dict]:
    out = []
    if monitors:
        out.append(_art(cell, "monitor", "system", "application/json", series))
    if profiles:
        folded = FOLDED + (f"{HOSTILE};x 5\n" if hostile else "")
        if cell.variant != "A":
            folded = folded.replace(" 100\n", " 400\n")
        out.append(_art(cell, "profile.cpu", "folded", "text/plain", folded))
        locks = {
            "source": "perf lock contention",
            "rows": [
                {
                    "contended": 10,
                    "total_wait_ns": 5e5,
                    "max_wait_ns": 9e4,
                    "avg_wait_ns": 5e4,
                    "type": "mutex",
                    "lock": HOSTILE if hostile else "ksys_read+0xba",
                }
            ],
        }
        out.append(_art(cell, "profile.locks", "contention", "application/json", locks))
        sysc = {
            "source": "strace -f -c -w",
            "table": [
                {
                    "syscall": "read",
                    "calls": 100,
                    "errors": 0,
                    "seconds": 0.01,
                    "pct_time": 90.0,
                    "usecs_per_call": 100,
                },
                {
                    "syscall": "write",
                    "calls": 10,
                    "errors": 1,
                    "seconds": 0.001,
                    "pct_time": 10.0,
                    "usecs_per_call": 100,
                },
            ],
            "total": None,
            "histograms_us": {"read": [{"le_us": 64, "count": 70}, {"le_us": 128, "count": 30}]},
        }
        out.append(_art(cell, "profile.syscalls", "summary", "application/json", sysc))
    return out


def _art(cell: CellRecord, kind: str, name: str, ctype: str, data: Any) -> dict:
    json_ = ctype == "application/json"
    return {
        "cell_key": cell.key,
        "kind": kind,
        "name": name,
        "content_type": ctype,
        "data": data if json_ else None,
        "text": None if json_ else data,
    }


def store_now():
    from fairmark.store.db import now

    return now()


def open_store(path: Path) -> Store:
    return Store.open(str(path))
