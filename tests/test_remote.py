"""Hosts over SSH: real sshd in network namespaces made here (tests/nethosts.py), fairmark's agent at the other end.

Costs ~1 s of set-up per module (namespaces, keys, sshd) plus the runs below."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import nethosts
from fairmark.remote.connection import AgentError, ConnectionLost, HostConnection, HostSpec

pytestmark = pytest.mark.skipif(nethosts.available() is not None, reason=str(nethosts.available()))
SYSCTL = "net.ipv4.tcp_slow_start_after_idle"  # per network namespace: each test host has its own


@pytest.fixture(scope="module")
def net() -> Iterator[nethosts.NetHosts]:
    with nethosts.NetHosts(["h1", "h2"]) as hosts:
        yield hosts


def spec(net: nethosts.NetHosts, name: str) -> HostSpec:
    return HostSpec(name, ssh=name, ssh_options=("-F", str(net.ssh_config)))


def plan(tmp_path: Path, net: nethosts.NetHosts, body: str, name: str = "plan.toml", top: str = "") -> str:
    head = top + "[run]\nwarmup = 0\nmin_trials = 5\nmax_trials = 8\ntarget_ci_pct = 50\nmax_failures = 3\n"
    path = tmp_path / name
    path.write_text(head + body + net.hosts_toml())
    return str(path)


def test_teardown_leaves_nothing() -> None:
    hosts = nethosts.NetHosts(["t1"])
    with hosts:
        assert subprocess.run([*hosts.ssh("t1"), "true"], check=False).returncode == 0
    assert hosts.leftovers() == []


def test_agent_runs_a_trial_with_local_semantics(net: nethosts.NetHosts) -> None:
    with HostConnection(spec(net, "h1")) as host:
        assert host.hello["protocol"] == 1 and host.hello["boot_id"]
        assert host.hello["fairmark"] is False  # the shipped stdlib-only copy, not the package
        ok = host.call("exec", argv=["sh", "-c", "echo out; echo err >&2; exit 3"], timeout_s=10)
        assert (ok["status"], ok["exit_code"], ok["error"]) == ("failed", 3, "exit status 3")
        assert ok["stdout_b64"] == "b3V0Cg==" and ok["boot_id"] == host.hello["boot_id"]
        t = host.call("exec", argv=["sh", "-c", "sleep 30 & sleep 30"], timeout_s=0.3, grace_s=0.3)
        assert t["status"] == "timeout" and "process group killed" in t["error"]
        # nothing of the killed tree is left in the namespace
        ps = net.hosts["h1"].exec("sh", "-c", "ps -eo args | grep -c '^sleep 30' || true").stdout
        assert ps.strip() == "0"
        with pytest.raises(AgentError, match="unknown op"):
            host.call("shell", cmd="id")
        # only sshd listens in the host's namespace: the agent opens no port
        listen = net.hosts["h1"].exec("ss", "-Hltnup").stdout
        assert listen.count("LISTEN") == 1 and "sshd" in listen


def test_a_host_that_cannot_be_reached_is_a_clear_error(net: nethosts.NetHosts) -> None:
    bad = HostSpec("nope", ssh="nope", ssh_options=("-F", str(net.ssh_config), "-o", "ConnectTimeout=2"))
    with pytest.raises(ConnectionLost, match="cannot connect with `ssh nope`"):
        HostConnection(bad).connect()


def test_aa_over_two_hosts(tmp_path: Path, net: nethosts.NetHosts, fairmark_cli) -> None:
    body = (
        '[[workload]]\nname = "spin"\ncommand = ["python3", "-c", "sum(range(300000))"]\n'
        '[[variant]]\nname = "a"\nhost = "h1"\n[[variant]]\nname = "b"\nhost = "h2"\n'
    )
    code, out, err = fairmark_cli("run", plan(tmp_path, net, body), "--json")
    assert code == 0, err
    report = json.loads(out)
    verdict = report["verdicts"][0]
    assert not verdict["significant"] and "no difference proven" in verdict["sentence"]
    boot = net.hosts["h1"].exec("cat", "/proc/sys/kernel/random/boot_id").stdout.strip()
    trials = [t for c in report["cells"] for t in c["trials"]]
    assert {t["host"] for t in trials} == {"h1", "h2"} and {t["boot_id"] for t in trials} == {boot}
    from fairmark.remote.report import host_diff
    from fairmark.store.db import Store

    diffs = host_diff(Store.open(os.environ["FAIRMARK_STORE"]), report["run"]["id"])
    assert diffs and {d["key"].split(".")[0] for d in diffs} == {"remote"}, diffs  # only host identity


def test_a_hardware_difference_between_hosts_is_refused(
    tmp_path: Path, net, fairmark_cli, monkeypatch
) -> None:
    from fairmark.remote import probe

    real = probe.remote_snapshot

    def planted(conn, **kw):
        snap = real(conn, **kw)
        if conn.spec.name == "h2":
            snap["cpu"]["model"] = "Planted CPU 9000"
        return snap

    monkeypatch.setattr(probe, "remote_snapshot", planted)
    body = '[[workload]]\nname = "t"\ncommand = ["true"]\n[[variant]]\nname = "a"\nhost = "h1"\n'
    body += '[[variant]]\nname = "b"\nhost = "h2"\n'
    code, _, err = fairmark_cli("run", plan(tmp_path, net, body))
    assert code == 3 and "cpu_model" in err and "Planted CPU 9000" in err and "declare" in err
    code, _, err = fairmark_cli("run", plan(tmp_path, net, body, "p2.toml", top='declare = ["cpu_model"]\n'))
    assert code == 0, err
