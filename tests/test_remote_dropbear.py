"""A host whose SSH server is dropbear (tests/nethosts.py, server="dropbear"): it refuses a command over 9000
bytes, so the agent must come on stdin behind a short bootstrap (fairmark.remote.connection)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import nethosts
from fairmark.remote.connection import HostConnection, HostSpec
from helpers import fairmark_subprocess

pytestmark = pytest.mark.skipif(
    nethosts.available("dropbear") is not None, reason=str(nethosts.available("dropbear"))
)
SYSCTL = "net.ipv4.tcp_slow_start_after_idle"  # per network namespace: the test host has its own
BOOTSTRAP = "python3 -c import hashlib,os,sys,zlib;"  # the shipped agent's command line, as ps shows it


@pytest.fixture(scope="module")
def net() -> Iterator[nethosts.NetHosts]:
    with nethosts.NetHosts(["d1"], server="dropbear") as hosts:
        yield hosts


def test_the_host_is_dropbear_and_refuses_a_long_command(net: nethosts.NetHosts) -> None:
    """What the fixture stands for: the server is dropbear, and a command of 9000 bytes runs where one of
    9001 does not (the limit an agent inline in the command line ran into: 18 KB)."""
    assert any(cmd.startswith("dropbear ") for cmd in net.hosts["d1"].processes())
    ok = subprocess.run([*net.ssh("d1"), "true #" + "x" * (9000 - 6)], capture_output=True, check=False)
    refused = subprocess.run([*net.ssh("d1"), "true #" + "x" * (9001 - 6)], capture_output=True, check=False)
    assert (ok.returncode, refused.returncode) == (0, 255)
    assert "String too long" in (net.dir / "d1-sshd.log").read_text()


def test_the_shipped_agent_starts_on_a_dropbear_host(net: nethosts.NetHosts, tmp_path: Path) -> None:
    from fairmark.remote import agent
    from fairmark.remote.executor import RemoteExecutor
    from fairmark.run.spec import TrialSpec

    spec = HostSpec("d1", ssh="d1", ssh_options=("-F", str(net.ssh_config)))
    with HostConnection(spec) as host:
        assert host.hello["protocol"] == agent.PROTOCOL and host.hello["fairmark"] is False
        assert host.hello["state_dir"] == str(net.hosts["d1"].state_dir)  # dropbear -e passed it on
        done = RemoteExecutor(host)(TrialSpec(("sh", "-c", "echo out; exit 3"), str(tmp_path), timeout_s=30))
        assert (done.status, done.exit_code, Path(done.stdout_path).read_text()) == ("failed", 3, "out\n")
    assert net.hosts["d1"].count(BOOTSTRAP) == 0


@pytest.mark.slow
def test_a_plan_runs_on_a_dropbear_host_end_to_end(net: nethosts.NetHosts, tmp_path: Path) -> None:
    """`fairmark run PLAN --hosts d1`: every trial stored as run there, variant a's sysctl set there by the
    agent and undone after, no agent left on the host and no journal in its state directory."""
    from fairmark.store.db import Store

    host = net.hosts["d1"]
    before = host.exec("sysctl", "-n", SYSCTL).stdout.strip()
    flipped = "0" if before == "1" else "1"
    path, seen = tmp_path / "plan.toml", tmp_path / "seen"  # the namespace shares this file system
    path.write_text(
        "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n"
        '[[workload]]\nname = "seen"\n'
        f'command = ["sh", "-c", "cat /proc/sys/{SYSCTL.replace(".", "/")} >> {seen}"]\n'
        f'[[variant]]\nname = "a"\nsysctl = {{ "{SYSCTL}" = {flipped} }}\n[[variant]]\nname = "b"\n'
        + net.hosts_toml()
    )
    res = fairmark_subprocess("run", str(path), "--hosts", "d1", "--accept-risk")
    assert res.returncode == 0, res.stdout + res.stderr
    store = Store.open(os.environ["FAIRMARK_STORE"])
    (run,) = store.list_runs()
    assert run["status"] == "done" and run["hosts"] == ["d1"], run
    trials = store.trials(run["id"])
    boot = host.exec("cat", "/proc/sys/kernel/random/boot_id").stdout.strip()
    assert len(trials) == 6 and all(t.status == "ok" for t in trials), [t.error for t in trials]
    assert {(t.host, t.boot_id) for t in trials} == {("d1", boot)}
    assert sorted(seen.read_text().split()) == sorted([before] * 3 + [flipped] * 3)  # set by the agent there
    assert host.exec("sysctl", "-n", SYSCTL).stdout.strip() == before
    assert host.count(BOOTSTRAP) == 0
    assert not list(host.state_dir.glob("journal/*.json"))
