"""Short trials claim the system monitor's fixed-rate samples by their clock window (issue 34 item 15): the
arithmetic of a claim on made-up samples, then on the real /proc against an independent reference — the CPU time
the trials' own processes used (wait4's rusage, what /usr/bin/time reports) — and through a whole run."""

import json
import os
import platform
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from fairmark.report.attribution import MonitorSeries, attribute_cells, monitor_cpu_seconds
from fairmark.report.load import load_report
from fairmark.run.hooks import HookContext
from fairmark.run.monitors import SystemMonitor
from fairmark.run.monitors.base import Snapshot, build_series
from fairmark.run.monitors.sampler import claimed_snapshots, split_claims
from fairmark.store.db import Store

LINUX = pytest.mark.skipif(platform.system() != "Linux", reason="reads /proc")


def _snap(t: float, user: float, system: float, idle: float, ctxt: float, runq: float) -> Snapshot:
    states = {"user": user, "system": system, "idle": idle}
    return Snapshot(
        t, {"total": states, "cpu0": states}, {"ctxt": ctxt, "psi_cpu_some_us": 100 * ctxt}, {"runq": runq}
    )


def test_a_claim_gets_its_share_of_each_interval_it_overlaps() -> None:
    # interval 0 (t 10 → 11): 60 user, 20 system, 20 idle ticks, 1000 context switches; interval 1 (11 → 13):
    # 10 user, 90 system, 100 idle, 4000 switches
    samples = [_snap(10, 0, 0, 0, 0, 1), _snap(11, 60, 20, 20, 1000, 2), _snap(13, 70, 110, 120, 5000, 3)]
    windows = [(10.2, 10.5), (10.9, 11.5), (12.8, 13.4)]  # the last runs past the last sample: still open
    claims, still = split_claims([s.t_s for s in samples], windows)
    assert claims == [(0, pytest.approx(0.4)), (1, pytest.approx(0.5 + 0.2))]
    assert still == [(13, 13.4)]
    series = build_series(claimed_snapshots(samples, claims), os_name="linux", interval_s=1.0)
    # each row has its interval's CPU shares and rates; the totals are the claimed parts' own
    assert series["cpu_pct"]["user"] == [60.0, 5.0] and series["cpu_pct"]["system"] == [20.0, 45.0]
    assert series["rates_per_s"]["ctxt"] == pytest.approx([1000.0, 2000.0])
    assert series["rates_per_s"]["psi_cpu_some_pct"] == pytest.approx([10.0, 20.0])  # stall µs/s → % of time
    assert series["gauges"]["runq"] == [2.0, 3.0]  # at each interval's end
    totals = series["totals"]
    assert totals["wall_s"] == pytest.approx(1.1)
    assert totals["counters"]["ctxt"] == pytest.approx(0.4 * 1000 + 0.7 / 2 * 4000)
    user, system = 0.4 * 60 + 0.35 * 10, 0.4 * 20 + 0.35 * 90
    assert totals["cpu_pct"]["user"] == pytest.approx(
        100 * user / (user + system + 0.4 * 20 + 0.35 * 100), rel=1e-3
    )
    # before the first sample nothing can be claimed; with no sample yet, everything waits
    assert split_claims([11.0, 12.0], [(10.5, 11.5)]) == ([(0, 0.5)], [])
    assert split_claims([], [(1.0, 2.0)]) == ([], [(1.0, 2.0)])


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.03: pass"


def _ctx(cell: str) -> HookContext:
    return HookContext("run", cell, "w", "A", "t", "/tmp", False)


def _busy_s(series: list[dict]) -> float:
    cpu = monitor_cpu_seconds(series)
    assert cpu is not None
    return cpu.user + cpu.system


@LINUX
def test_claimed_cpu_time_covers_what_the_trials_own_processes_used() -> None:
    """Trials that each burn 30 ms of CPU, watched at once by a monitor that claims the sampler's periods and by
    one that takes each trial's own snapshots. The system-wide busy time either gives the trials' windows is at
    least the CPU time the trials' own processes used (wait4's rusage: what /usr/bin/time says) less a margin
    for the 10 ms ticks — at any load: what neighbours add only raises it — and at most the windows' CPU
    capacity. The claimed windows add up to the trials' (the last ones too, at the run's end: `end_of_run`)."""
    claiming, exact = SystemMonitor(0.1), SystemMonitor(0.1)
    claiming.exact_min_s, exact.exact_min_s = float("inf"), 0.0
    claimed, own_series, windows = [], [], []
    own_cpu, started = 0.0, time.monotonic()
    while time.monotonic() - started < 1.5 or len(windows) < 10:
        exact.start(_ctx("c"))
        claiming.start(_ctx("c"))
        t0 = time.monotonic()
        pid = os.spawnv(os.P_NOWAIT, sys.executable, [sys.executable, "-S", "-c", BURN])
        _, status, usage = os.wait4(pid, 0)
        windows.append(time.monotonic() - t0)
        assert os.waitstatus_to_exitcode(status) == 0
        own_cpu += usage.ru_utime + usage.ru_stime
        claimed += [a.data for a in claiming.stop(_ctx("c"), None)]
        own_series += [a.data for a in exact.stop(_ctx("c"), None)]
    claimed += [a.data for _, a in claiming.end_of_run()]
    for hook in (claiming, exact):
        hook.close()
    assert "claimed_trials" not in claimed[0] and all("claimed_trials" in s for s in claimed[1:])
    ncpu = claimed[0]["ncpu"]
    # the first trial took its own snapshots; every later one's window is claimed, start to end
    claimed_wall = sum(s["totals"]["wall_s"] for s in claimed)
    # (each claimed window holds its trial's, and a little more: the hooks' calls around it)
    assert 0.999 * sum(windows) <= claimed_wall <= 1.05 * sum(windows) + 0.05  # (four digits a series)
    for series in (claimed, own_series):
        busy = _busy_s(series)
        assert 0.8 * own_cpu <= busy <= ncpu * sum(s["totals"]["wall_s"] for s in series) * 1.001, (
            busy,
            own_cpu,
        )


@LINUX
@pytest.mark.slow
def test_a_run_of_short_trials_stores_claimed_series_that_cover_its_trials(
    tmp_path: Path, fairmark_cli
) -> None:  # type: ignore[no-untyped-def]
    plan = tmp_path / "p.toml"
    plan.write_text(
        "[run]\nwarmup = 1\nmin_trials = 60\nmax_trials = 60\ntarget_ci_pct = 0.0001\n"
        "[[workload]]\nname = 'w'\ncommand = ['true']\n[[variant]]\nname = 'a'\n[[variant]]\nname = 'b'\n"
    )
    store = tmp_path / "s.db"
    code, out, err = fairmark_cli(
        "run", str(plan), "--json", "--accept-risk", "--store", str(store), "--monitor-interval", "0.05"
    )
    assert code == 0, err
    assert {c["variant"] for c in json.loads(out)["cells"]} == {"a", "b"}
    with closing(sqlite3.connect(store)) as db:
        trials = {
            tid: (cell, warm, wall)
            for tid, cell, warm, wall in db.execute(
                "SELECT t.id, c.key, t.warmup, t.wall_s FROM trials t JOIN cells c ON c.id = t.cell_id"
            )
        }
        arts = [
            (tid, json.loads(data))
            for tid, data in db.execute("SELECT trial_id, data FROM artifacts WHERE kind = 'monitor'")
        ]
    for cell in ("w/a", "w/b"):
        measured = [w for c, warm, w in trials.values() if c == cell and not warm]
        series = [s for tid, s in arts if trials[tid][0] == cell and not trials[tid][1]]
        assert (
            len(measured) == 60 and len(series) < 60
        )  # most trials claimed the sampler's periods, a few at once
        # every measured trial is in a series (its own, or a claim), each claim's window holds its trial's time
        assert sum(s.get("claimed_trials", 1) for s in series) >= 60
        assert sum(s["totals"]["wall_s"] for s in series) >= 0.9 * sum(measured)
    # the reports read them: each cell's CPU split is the claimed periods' (a report's attribution line)
    report = load_report(Store.open(f"sqlite:///{store}"), "last")
    series = MonitorSeries(report)
    for cell in ("w/a", "w/b"):
        cpu = monitor_cpu_seconds(series.data(cell, "monitor/system"))
        assert cpu is not None and cpu.wall >= 0.9 * sum(
            w for c, warm, w in trials.values() if c == cell and not warm
        )
    assert all(attribute_cells(report, series).values())


def test_a_freebsd_claim_keeps_what_freebsd_lacks_absent() -> None:
    """FreeBSD's samples (one sysctl call each: a process per sample, dearer than a trial of `true`) claimed the
    same way: no iowait or steal tick there, so none in the claimed series either — absent, never zero."""
    from fairmark.run.monitors import freebsd

    fix = Path(__file__).parent / "fixtures" / "h4"
    a = freebsd.to_snapshot(freebsd.parse_sysctl((fix / "freebsd_sysctl_a.txt").read_text()), 0.0)
    b = freebsd.to_snapshot(freebsd.parse_sysctl((fix / "freebsd_sysctl_b.txt").read_text()), 2.0)
    claims, still = split_claims([0.0, 2.0], [(0.5, 1.0), (1.5, 2.5)])
    assert claims == [(0, 1.0)] and still == [(2.0, 2.5)]
    claimed = build_series(claimed_snapshots([a, b], claims), os_name="freebsd", interval_s=2.0)
    whole = build_series([a, b], os_name="freebsd", interval_s=2.0)
    assert "iowait" not in claimed["cpu_pct"] and "steal" not in claimed["totals"]["cpu_pct"]
    assert claimed["totals"]["cpu_pct"] == whole["totals"]["cpu_pct"]  # the interval's shares
    assert claimed["rates_per_s"] == whole["rates_per_s"]  # and its rates, over half its time:
    assert claimed["totals"]["wall_s"] == 1.0
    for k, v in whole["totals"]["counters"].items():
        assert claimed["totals"]["counters"][k] == pytest.approx(v / 2, rel=1e-3), k
