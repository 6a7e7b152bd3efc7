"""perf's start-up and exit are waited for while perf works (uses CPU), not for a fixed time: in a QEMU guest at
load ~20 they took 15-63 s and a fixed 30 s lost most profiles (run/profiles/base.py, PERF_WAIT_S). A perf that
uses no CPU is given up after PERF_WAIT_S, and the error says so. The perf here is a stand-in (a slow or a stuck
perf cannot be had on demand); what is tested is PerfRecorder's waiting, with real processes and FIFOs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fairmark.run.profiles import base
from fairmark.run.profiles.base import PerfRecorder, ProfilerFailed

# Spins `work` seconds of its own CPU time where asked: at any load, longer than the 0.5 s given below.
FAKE_PERF = r"""
import os, signal, sys, time
mode, args = os.environ["FAKE_PERF"], sys.argv[1:]
ctl, ack = args[args.index("--control") + 1].removeprefix("fifo:").split(",")
stop = []
signal.signal(signal.SIGINT, lambda *_: stop.append(1))
def spin(work=1.2):
    t = time.process_time()
    while time.process_time() - t < work:
        pass
if mode == "slow-start":
    spin()
if mode != "stuck-start":
    os.read(os.open(ctl, os.O_RDONLY), 16)
    os.write(os.open(ack, os.O_WRONLY), b"ack\n")
while not stop:
    time.sleep(0.02)
if mode == "slow-stop":
    spin()
    print("written", file=sys.stderr)
if mode == "stuck-stop":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    time.sleep(3600)
"""


@pytest.fixture
def fake_perf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    script = tmp_path / "perf.py"
    script.write_text(FAKE_PERF)
    monkeypatch.setattr(base, "PERF_WAIT_S", 0.5)

    def start(mode: str) -> PerfRecorder:
        monkeypatch.setenv("FAKE_PERF", mode)
        return PerfRecorder([sys.executable, str(script)], tmp_path / "perf.data")

    return start


def test_a_perf_that_works_longer_than_the_wait_is_waited_for(fake_perf) -> None:
    rec = fake_perf("slow-start")  # 1.2 s of CPU before its ack: a fixed 0.5 s would have failed it
    assert rec.proc.poll() is None
    rec.stop()  # not left sleeping: the worker's next test (test_workload_iperf3) counts its children
    assert rec.proc.returncode == 0
    rec = fake_perf("slow-stop")
    err = rec.stop()  # 1.2 s of CPU writing "its file" after SIGINT
    assert "written" in err and "killed" not in err and rec.proc.returncode == 0


def test_a_perf_that_does_not_start_nor_use_cpu_is_given_up_with_why(fake_perf) -> None:
    with pytest.raises(ProfilerFailed, match=r"did not start in \d+ s, the last \d+ s without using CPU"):
        fake_perf("stuck-start")


def test_a_perf_stuck_at_its_exit_is_killed_and_its_stderr_says_so(fake_perf) -> None:
    rec = fake_perf("stuck-stop")
    err = rec.stop()
    assert "killed: it did not finish its file in" in err and "without using CPU" in err, err
    assert rec.proc.returncode == -9
