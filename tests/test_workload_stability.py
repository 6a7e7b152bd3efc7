"""stability workload and the kernel-log watch: planted /dev/kmsg messages are detected, classified and timed;
the FreeBSD shapes on captured-format text; the adapter end to end for a few seconds (the 2-minute acceptance run
is plans/stability.toml)."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from fairmark.errors import PlanError
from fairmark.run.monitors import kernel_log
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError, RawOutput
from helpers import fairmark_subprocess, json_out

# One at a time under xdist (tests/conftest.py): writes to /dev/kmsg and watches it (the one kernel log).
pytestmark = pytest.mark.machine

FIX = Path(__file__).parent / "fixtures" / "tools" / "stability"
root_kmsg = pytest.mark.skipif(
    os.geteuid() != 0 or not os.access("/dev/kmsg", os.W_OK), reason="needs root and /dev/kmsg"
)
# The kernel log is the machine's: another test session planting the same messages at the same time must not
# be counted as ours, so each session's messages carry their own token.
MARK = f"(fairmark planted test message {uuid.uuid4().hex[:12]})"
OOPS = f"BUG: kernel NULL pointer dereference, address: 0000000000000008 {MARK}"
OOPS2 = f"Oops: 0002 [#1] PREEMPT SMP NOPTI {MARK}"
HUNG = f"INFO: task fairmark-plant:4242 blocked for more than 120 seconds. {MARK}"


@root_kmsg
def test_planted_messages_are_detected_classified_and_timed(tmp_path: Path):
    out = tmp_path / "kmsg.txt"
    plant = f"import time\nfor m in {[OOPS, OOPS2, HUNG]!r}:\n    open('/dev/kmsg', 'w').write('<2>' + m + '\\n'); time.sleep(0.3)"
    t0 = time.monotonic()
    assert kernel_log.main([str(out), "--", sys.executable, "-c", plant]) == 0
    elapsed = time.monotonic() - t0
    log = out.read_text()
    events = kernel_log.parse_kmsg(log)
    planted = [e for e in events if MARK in e.text]
    assert [e.kind for e in planted] == ["oops", "oops", "hung_task"]
    assert planted[2].text == HUNG and planted[0].time.startswith("20")
    # Timed from the watch's own mark in the kernel log (the kernel's clock on both ends): the command wrote its
    # messages after the watch started, so no time is negative, whatever the printk clock's drift; and while
    # the watch ran, which this test timed around it.
    assert " mark=" in log.splitlines()[0] and "fairmark: kernel-log watch started (" in log
    assert all(0 <= e.t_s <= elapsed for e in planted) and planted[0].t_s <= planted[2].t_s, (
        planted,
        elapsed,
    )
    values = adapter_for("stability").parse(RawOutput("", "", 0, {"kmsg": out.read_text()}))
    assert values["kernel_events"] >= 3 and values["events_oops"] >= 2 and values["events_hung_task"] >= 1
    assert values["host_reachable"] == 1


def test_parse_captured_planted_log():
    raw = (FIX / "planted_kmsg.txt").read_text()
    events = kernel_log.parse_kmsg(raw)
    assert [e.kind for e in events] == ["oops", "oops", "hung_task", "oom_kill_bounded"]
    assert events[2].time == "2026-11-23T00:46:29.756+00:00" and events[2].t_s == pytest.approx(
        0.6206, abs=1e-3
    )
    values = adapter_for("stability").parse(RawOutput("", "", 0, {"kmsg": raw}))
    assert (
        values["kernel_events"] == 3 and values["oom_kills_bounded"] == 1 and values["events_hung_task"] == 1
    )
    with pytest.raises(ParseError, match="did not finish"):
        adapter_for("stability").parse(RawOutput("", "", 0, {"kmsg": raw.split("# end")[0]}))


def test_times_count_from_the_watchs_mark_in_the_kernels_clock():
    """The printk clock ran 10 ms behind CLOCK_MONOTONIC on this VM after 1 h 46 min: times from `mono_us`
    alone came out negative for a message written just after the start (a fresh-machine suite run)."""
    raw = (
        "# fairmark-kmsg mono_us=5000010000 wall=1795394789.000000 mark=77-1\n"
        "5,900,5000000000,-;fairmark: kernel-log watch started (77-1)\n"
        "2,901,5000001500,-;Oops: 0002 [#1] PREEMPT SMP NOPTI\n"
        "5,902,5000002000,-;fairmark: kernel-log watch started (78-1)\n"
    )
    (event,) = kernel_log.parse_kmsg(raw)
    assert event.kind == "oops" and event.t_s == pytest.approx(0.0015)
    assert event.time == "2026-11-23T00:46:29.001+00:00"
    # without the mark (not root enough to write /dev/kmsg, or a log saved before it existed): CLOCK_MONOTONIC
    (event,) = kernel_log.parse_kmsg(raw.replace(" mark=77-1", ""))
    assert event.t_s == pytest.approx(-0.0085)


def test_freebsd_shapes():
    kinds = [e.kind for e in kernel_log.classify((FIX / "freebsd_dmesg.txt").read_text())]
    assert kinds == ["lock_order_reversal", "witness", "kassert", "panic"]


def test_linux_shapes():
    lines = {
        "watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [kworker/1:2:123]": "soft_lockup",
        "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:": "rcu_stall",
        "WARNING: possible circular locking dependency detected": "lockdep",
        "Kernel panic - not syncing: Fatal exception": "panic",
        "kernel BUG at mm/slub.c:306!": "bug",
        "Out of memory: Killed process 1234 (stress-ng) total-vm:1kB": "oom_kill",
        "Memory cgroup out of memory: Killed process 99 (stress-ng-bighe)": "oom_kill_bounded",
        "WARNING: CPU: 0 PID: 1 at kernel/foo.c:12 bar+0x1/0x2": "warning",
        "EXT4-fs (sda1): mounted filesystem": None,
        # the reaper's follow-up of a kill already counted (here a bounded one): not a second event
        "oom_reaper: reaped process 1827 (stress-ng-bighe), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB": None,
    }
    assert {line: kernel_log.kind_of(line) for line in lines} == lines


def test_params_are_checked():
    with pytest.raises(PlanError, match="mix"):
        adapter_for("stability").resolve({"mix": ["fork", "meltdown"]})


@pytest.mark.slow
@pytest.mark.representative
@root_kmsg
@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng missing")
def test_short_run_end_to_end(srv_tmp: Path):
    params = {"duration_s": 3, "instances": 1, "memory_limit": "128M"}
    m = tools.run_once(adapter_for("stability"), params, srv_tmp, timeout_s=120)
    assert m["host_reachable"] == 1 and m["survived_min"] >= 3 / 60
    mine = f"fairmark-stability-{os.getpid()}-"  # other runs on this machine may have theirs
    assert not any(p.name.startswith(mine) for p in Path("/sys/fs/cgroup/memory").iterdir())


@pytest.mark.slow
@root_kmsg
@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng missing")
def test_run_shows_planted_events_with_their_time(tmp_path: Path):
    """`fairmark run` of a short stability plan while the test writes an oops and a hung-task message to
    /dev/kmsg: `run --json` lists them as kernel_events (kind, time, text) and `show` names them."""
    plan = tmp_path / "stab.toml"
    plan.write_text(
        '[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n[[workload]]\nname = "overload"\ntool = "stability"\n'
        'params = { duration_s = 2, instances = 1, mix = ["fork", "fs", "socket"], memory_limit = "128M" }\n'
    )
    stop = threading.Event()

    def plant() -> None:
        while not stop.wait(0.7):
            for m in (OOPS2, HUNG):
                with open("/dev/kmsg", "w") as kmsg:
                    kmsg.write(f"<2>{m}\n")

    planter = threading.Thread(target=plant)
    planter.start()
    try:
        argv = [
            "run",
            str(plan),
            "--store",
            f"sqlite:///{tmp_path / 'x.db'}",
            "--json",
            "--monitor-interval",
            "0.5",
        ]
        res = fairmark_subprocess(*argv, "--accept-risk", "--allow-concurrent", timeout=300)
    finally:
        stop.set()
        planter.join()
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json_out(res.stdout)
    planted = [e for e in doc["kernel_events"] if MARK in e["text"]]
    assert {e["kind"] for e in planted} == {"oops", "hung_task"}
    assert all(e["time"].startswith("20") and e["variant"] == "default" for e in planted)
    verdict = doc["stability"][0]
    assert verdict["kernel_events"] >= len(planted) and verdict["host_reachable"] is True
    assert sum(verdict["by_kind"].values()) == verdict["kernel_events"]  # every event, not the stored tail's
    shown = fairmark_subprocess("show", doc["run"]["id"], "--store", f"sqlite:///{tmp_path / 'x.db'}")
    assert "stability overload/default: survived" in shown.stdout and "hung_task: INFO: task" in shown.stdout
    # The HTML report puts each event on the cell's monitor timeline (a labelled line) and lists it.
    html = tmp_path / "r.html"
    rep = fairmark_subprocess(
        "report", doc["run"]["id"], "--html", str(html), "--store", f"sqlite:///{tmp_path / 'x.db'}"
    )
    assert rep.returncode == 0, rep.stderr[-2000:]
    page = html.read_text()
    monitor = next(svg.split("</svg>")[0] for svg in page.split("<svg")[1:] if "CPU % by state" in svg)
    assert "hung_task" in monitor and "oops" in monitor and "#7b2cbf" in monitor
    assert "purple lines on the timeline above" in page and "fairmark planted test message" in page
    # … and its stability section (report/stability.SECTION: one module and its template) says what show says
    assert "<h3>Stability</h3>" in page and "stability overload/default: survived" in page
