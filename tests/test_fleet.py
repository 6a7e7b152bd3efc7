"""`fairmark run PLAN --hosts …`: one run per host, forked from one controller, into one PostgreSQL store; a host
lost mid-run fails its own run only (interrupted, resumable); --jobs; SIGTERM reaches every host's run.

The trials are held by a gate, not by timing: each host's first trial passes, the later ones wait until the test
creates the file `go` (hosts are told apart by the address their sshd listens on, from $SSH_CONNECTION). So
"after its first stored trial" is a state of the store the test waits for, on a machine of any speed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import nethosts
from fairmark.errors import ExitStatus
from fairmark.remote import fleet
from helpers import REPO, fairmark_subprocess, wait_until
from test_core_store import postgres_url  # noqa: F401 - a real PostgreSQL on loopback (fixture)

needs_hosts = pytest.mark.skipif(nethosts.available() is not None, reason=str(nethosts.available()))


@pytest.fixture(scope="module")
def net() -> Iterator[nethosts.NetHosts]:
    with nethosts.NetHosts(["k1", "k2", "k3"]) as hosts:
        yield hosts


def gated_plan(tmp_path: Path, net: nethosts.NetHosts, trials: int = 3) -> tuple[str, Path]:
    gate = tmp_path / "gate"
    gate.mkdir()
    first = f"{gate}/first-$(echo $SSH_CONNECTION | cut -d' ' -f3)"
    wait = f"while [ ! -e {gate}/go ]; do sleep 0.02; done"
    script = f'if [ -e "{first}" ]; then {wait}; else touch "{first}"; fi'
    path = tmp_path / "plan.toml"
    path.write_text(
        f"[run]\nwarmup = 0\nmin_trials = {trials}\nmax_trials = {trials}\ntarget_ci_pct = 50\n"
        f'[[workload]]\nname = "gated"\ncommand = {json.dumps(["sh", "-c", script])}\n'
        '[[variant]]\nname = "a"\n[[variant]]\nname = "b"\nenv = { B = "1" }\n' + net.hosts_toml()
    )
    return str(path), gate


def start_fleet(plan: str, hosts: list[str], url: str, tag: str) -> subprocess.Popen[str]:
    args = ["run", plan, "--hosts", ",".join(hosts), "--store", url, "--accept-risk", "--tag", f"test={tag}"]
    return subprocess.Popen(
        [sys.executable, "-m", "fairmark", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO,
        # a lost host is given up after two quick reconnection attempts (the default backs off for 15 s)
        env={**os.environ, "FAIRMARK_RECONNECT_BACKOFF_S": "0.2,0.2"},
    )


def runs_of(url: str, tag: str) -> dict[str, dict]:
    """Each host's run (by its one host name) among the runs tagged test=TAG."""
    from fairmark.store.db import Store

    store = Store.open(url)
    try:
        return {r["hosts"][0]: dict(r) for r in store.list_runs(tags={"test": tag})}
    finally:
        store.engine.dispose()


def stored_first_trial(url: str, tag: str, hosts: list[str], proc: subprocess.Popen[str]) -> bool:
    assert proc.poll() is None, proc.communicate()[0]  # the fleet ended before: say why
    runs = runs_of(url, tag)
    return all(h in runs and runs[h]["trials"] >= 1 for h in hosts)


@needs_hosts
def test_a_host_lost_mid_run_interrupts_only_its_run_and_resume_completes_it(
    tmp_path: Path,
    net: nethosts.NetHosts,
    postgres_url: str,  # noqa: F811
) -> None:
    hosts = ["k1", "k2", "k3"]
    plan, gate = gated_plan(tmp_path, net)
    proc = start_fleet(plan, hosts, postgres_url, "lost")
    try:
        assert wait_until(lambda: stored_first_trial(postgres_url, "lost", ["k2"], proc), timeout_s=300)
        net.stop_sshd("k2")  # its second trial is waiting at the gate: the connection drops under it
        # the fleet's controller for k2 gives up on the host (its run interrupted) while the others still wait
        assert wait_until(
            lambda: runs_of(postgres_url, "lost")["k2"]["status"] == "interrupted", timeout_s=300
        )
        (gate / "go").touch()
        out, _ = proc.communicate(timeout=600)
    finally:
        proc.kill()
        net.start_sshd("k2") if net.hosts["k2"].sshd.poll() is not None else None
    assert proc.returncode == ExitStatus.ENVIRONMENT, out
    assert "fleet run: 1 of 3 host(s) failed: k2 (exit 3)" in out, out
    runs = runs_of(postgres_url, "lost")
    assert {h: runs[h]["status"] for h in hosts} == {"k1": "done", "k2": "interrupted", "k3": "done"}
    assert runs["k1"]["trials_ok"] == runs["k3"]["trials_ok"] == 6
    assert (runs["k2"]["trials_ok"], runs["k2"]["trials"]) == (1, 2)  # the first trial, and the one cut off

    res = fairmark_subprocess("resume", runs["k2"]["id"], "--store", postgres_url, "--json", timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    after = runs_of(postgres_url, "lost")["k2"]
    assert after["status"] == "done" and after["trials_ok"] >= 6, after
    assert {h: runs_of(postgres_url, "lost")[h]["id"] for h in hosts} == {h: runs[h]["id"] for h in hosts}


@needs_hosts
def test_jobs_runs_the_hosts_one_after_another(
    tmp_path: Path,
    net: nethosts.NetHosts,
    postgres_url: str,  # noqa: F811
) -> None:
    plan, gate = gated_plan(tmp_path, net)
    (gate / "go").touch()
    res = fairmark_subprocess(
        "run",
        plan,
        "--hosts",
        "k1,k3",
        "--jobs",
        "1",
        "--store",
        postgres_url,
        "--accept-risk",
        "--tag",
        "test=jobs",
        timeout=600,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    runs = sorted(runs_of(postgres_url, "jobs").values(), key=lambda r: r["started_at"])
    assert [r["hosts"] for r in runs] == [["k1"], ["k3"]]
    assert runs[0]["ended_at"] <= runs[1]["started_at"]  # one slot: the second waited for the first
    assert "--jobs" not in res.stdout and "host k1: exit 0" in res.stdout and "host k3: exit 0" in res.stdout


@needs_hosts
def test_sigterm_to_the_fleet_interrupts_every_hosts_run(
    tmp_path: Path,
    net: nethosts.NetHosts,
    postgres_url: str,  # noqa: F811
) -> None:
    hosts = ["k1", "k3"]
    plan, gate = gated_plan(tmp_path, net)
    proc = start_fleet(plan, hosts, postgres_url, "term")
    waiting = "sh -c if [ -e"  # a trial at the gate, as ps shows it on its host
    try:
        assert wait_until(lambda: stored_first_trial(postgres_url, "term", hosts, proc), timeout_s=300)
        assert wait_until(lambda: all(net.hosts[h].count(waiting) == 1 for h in hosts), timeout_s=300)
        proc.send_signal(signal.SIGTERM)  # to the fleet's controller only, as a CI cancel sends it
        assert wait_until(
            lambda: all(r["status"] == "interrupted" for r in runs_of(postgres_url, "term").values()),
            timeout_s=300,
        )
        # each host's trial waiting at the gate was ended by its agent (the controller closed the session)
        assert wait_until(lambda: all(net.hosts[h].count(waiting) == 0 for h in hosts), timeout_s=60)
    finally:
        (gate / "go").touch()
        out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 128 + signal.SIGTERM, out


@needs_hosts
def test_kill_9_of_the_fleet_stops_every_hosts_run(
    tmp_path: Path,
    net: nethosts.NetHosts,
    postgres_url: str,  # noqa: F811
) -> None:
    """Issue 32 item 4: the per-host controllers ran on to the end, their output lost; they stop with the fleet
    (PR_SET_PDEATHSIG) and store their runs as interrupted — before the gate opens, so not by finishing."""
    hosts = ["k1", "k3"]
    plan, gate = gated_plan(tmp_path, net)
    proc = start_fleet(plan, hosts, postgres_url, "kill9")
    waiting = "sh -c if [ -e"
    try:
        assert wait_until(lambda: stored_first_trial(postgres_url, "kill9", hosts, proc), timeout_s=300)
        assert wait_until(lambda: all(net.hosts[h].count(waiting) == 1 for h in hosts), timeout_s=300)
        proc.kill()  # SIGKILL to the fleet's controller only
        proc.wait()
        assert wait_until(
            lambda: all(r["status"] == "interrupted" for r in runs_of(postgres_url, "kill9").values()),
            timeout_s=120,
        )
        assert wait_until(lambda: all(net.hosts[h].count(waiting) == 0 for h in hosts), timeout_s=60)
    finally:
        (gate / "go").touch()
        proc.communicate(timeout=600)
    assert len(runs_of(postgres_url, "kill9")) == 2


def test_each_host_gets_the_command_line_with_host_instead_of_hosts_and_jobs() -> None:
    argv = [
        "run",
        "--hosts",
        "a,b",
        "--jobs=2",
        "p.toml",
        "--store",
        "sqlite:///x",
        "--hosts=a,b",
        "--jobs",
        "1",
    ]
    assert fleet.child_args("p.toml", "b", argv) == ["run", "--store", "sqlite:///x", "p.toml", "--host", "b"]


def test_the_fleet_exits_with_the_failed_hosts_status() -> None:
    assert fleet.FleetFailed("x", 3).exit_status == ExitStatus.ENVIRONMENT
    assert fleet.FleetFailed("x", 4).exit_status == ExitStatus.RUN_FAILED
    assert fleet.FleetFailed("x", 137).exit_status == ExitStatus.ENVIRONMENT  # killed: not one of fairmark's


def test_what_the_fleet_preloads_exists() -> None:
    """A module renamed or moved would silently cost every forked host its import again."""
    import importlib.util

    assert [m for m in fleet.PRELOAD if importlib.util.find_spec(m) is None] == []
