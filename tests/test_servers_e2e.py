"""Managed servers under the real runner (`fairmark run`): the shipped plans load, a run ends with no server and
no scratch directory left — after a normal end, after a failed setup, and after Ctrl-C."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import pytest

from fairmark.plan.load import load_plan
from fairmark.plan.schedule import expand_sweep_values
from fairmark.run.workloads import adapter_for
from helpers import REPO

needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis not installed")
PLANS = ("small-transactions", "network", "connections", "smp-scaling", "mariadb", "stability", "nfs")


@pytest.mark.parametrize("name", PLANS)
def test_shipped_plan_loads_and_every_sweep_point_resolves(name: str):
    plan = load_plan(REPO / "plans" / f"{name}.toml").plan
    for w in plan.workload:
        adapter = adapter_for(w.tool)
        for quick in (False, True):
            base = dict(w.params) | (plan.quick.params.get(w.name, {}) if quick else {})
            for key, values in w.sweep.items():
                if key == "cpus":  # the runner's, not the adapter's (CPU affinity of the trial tree)
                    continue
                for value in expand_sweep_values(key, values, ncpu=2):
                    adapter.resolve(base | {key: value})


def servers_of(tag: str) -> list[psutil.Process]:
    """Processes running in (servers are started with cwd = their directory) or naming a scratch directory of
    this test's workload; redis rewrites its command line, so the working directory is the reliable mark."""
    found = []
    for p in psutil.process_iter(["cmdline", "cwd", "status"]):
        where = " ".join(p.info["cmdline"] or []) + " " + (p.info["cwd"] or "")
        if tag in where and "pytest" not in where and p.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(p)
    return found


def scratch_dirs(tag: str) -> list[str]:
    return glob.glob(os.path.join(tempfile.gettempdir(), f"fairmark-*{tag}-*"))


def plan_file(tmp_path: Path, tag: str, params: str, extra: str = "") -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(
        f"""
[run]
warmup = 0
min_trials = 3
max_trials = 3
timeout_s = 60

[[workload]]
name = "{tag}"
tool = "redis"
params = {params}
{extra}
"""
    )
    return path


def fairmark_run(plan: Path, tmp_path: Path, **kw) -> subprocess.Popen:
    argv = [sys.executable, "-m", "fairmark", "run", str(plan), "--store", f"sqlite:///{tmp_path / 'x.db'}"]
    argv += ["--json", "--no-monitors", "--accept-risk", "--allow-concurrent"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, **kw)


@pytest.mark.slow
@needs_redis
def test_run_ends_normally_with_nothing_left(tmp_path: Path):
    tag = f"h3b-{uuid.uuid4().hex[:8]}"
    proc = fairmark_run(plan_file(tmp_path, tag, '{ requests = 5000, clients = 5, tests = "get" }'), tmp_path)
    deadline = time.monotonic() + 120  # a wait for an event, not a speed limit
    while not servers_of(tag):  # the check below is only meaningful if the mark finds the running server
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert '"rps"' in out
    assert servers_of(tag) == [] and scratch_dirs(tag) == []


@pytest.mark.slow
@needs_redis
def test_run_with_failing_trials_leaves_nothing(tmp_path: Path):
    # every trial of the wrapped variant exits 1: the cell gives up, teardown still stops the server
    tag = f"h3b-{uuid.uuid4().hex[:8]}"
    extra = '[[variant]]\nname = "ok"\n[[variant]]\nname = "broken"\nwrap = ["false"]\n'
    plan = plan_file(tmp_path, tag, '{ requests = 2000, clients = 2, tests = "get" }', extra)
    proc = fairmark_run(plan, tmp_path)
    out, err = proc.communicate(timeout=60)
    assert '"failed"' in out, err
    assert servers_of(tag) == [] and scratch_dirs(tag) == []


@pytest.mark.slow
def test_bad_params_refused_before_any_server_starts(tmp_path: Path):
    tag = f"h3b-{uuid.uuid4().hex[:8]}"
    proc = fairmark_run(plan_file(tmp_path, tag, '{ tests = "nosuchtest" }'), tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "unknown test" in err and "plan.toml" in err
    assert servers_of(tag) == [] and scratch_dirs(tag) == []


@pytest.mark.slow
@needs_redis
def test_ctrl_c_during_a_trial_stops_the_server(tmp_path: Path):
    tag = f"h3b-{uuid.uuid4().hex[:8]}"
    plan = plan_file(tmp_path, tag, '{ requests = 50000000, clients = 5, tests = "get" }')
    proc = fairmark_run(plan, tmp_path)
    try:
        deadline = time.monotonic() + 120  # a wait for an event, not a speed limit
        # The trial's redis-benchmark (its request count), not the `redis-benchmark --version` the environment
        # snapshot asks before the server starts.
        while not any("50000000" in _cmdline(p) for p in _children(proc.pid)):
            assert time.monotonic() < deadline and proc.poll() is None, (
                proc.stderr.read() if proc.poll() else ""
            )
            time.sleep(0.1)
        assert servers_of(tag)  # the server is up, the trial is running
        proc.send_signal(signal.SIGINT)  # what the terminal sends on Ctrl-C
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # a failed assertion above must not leave the run (and its server) going
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert servers_of(tag) == [] and scratch_dirs(tag) == []


def _cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:  # it ended between the listing and the question
        return ""


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
