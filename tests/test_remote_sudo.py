"""A lab that forbids root logins (issue 32 item 3): the host's sshd has `PermitRootLogin no`, fairmark logs in as
a user and runs its agent — and so every system change and trial — as root through `sudo -n` (`sudo = true` in the
host's [hosts] entry). The agent's Python is found by probing the usual places when the entry names none."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import nethosts
from fairmark.remote.connection import HostConnection, HostSpec, python_probe
from helpers import fairmark_subprocess

SYSCTL = "net.ipv4.tcp_slow_start_after_idle"  # per network namespace: the test host has its own


def _why_not() -> str | None:
    if nethosts.available() is not None:
        return nethosts.available()
    if not shutil.which("sudo"):
        return "no sudo here (packages/debian-test.txt: sudo)"
    return None


@pytest.fixture(scope="module")
def lab() -> Iterator[nethosts.NetHosts]:
    with nethosts.NetHosts(["lab1"], login="fmlab") as hosts:
        yield hosts


def _plan(tmp_path: Path, lab: nethosts.NetHosts, body: str, entry: str) -> str:
    head = "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\nmax_failures = 3\n"
    hosts = f'[hosts.lab1]\nssh = "lab1"\nssh_options = ["-F", "{lab.ssh_config}"]\n{entry}'
    path = tmp_path / "plan.toml"
    path.write_text(head + body + hosts)
    return str(path)


def _sysctl(lab: nethosts.NetHosts) -> str:
    return lab.hosts["lab1"].exec("sysctl", "-n", SYSCTL).stdout.strip()


@pytest.mark.slow
@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_a_host_without_root_login_runs_its_variants_through_sudo(
    tmp_path: Path, lab: nethosts.NetHosts
) -> None:
    as_root = subprocess.run(
        [*lab.ssh("lab1"), "-l", "root", "true"], capture_output=True, text=True, check=False
    )
    assert as_root.returncode != 0  # the lab refuses root
    who = subprocess.run([*lab.ssh("lab1"), "id", "-u"], capture_output=True, text=True, check=True)
    assert who.stdout.strip() == "64123"  # the user fairmark logs in as
    before = _sysctl(lab)
    flipped = "0" if before == "1" else "1"
    body = (
        f'[[workload]]\nname = "who"\ncommand = ["sh", "-c", "test $(id -u) = 0 && sysctl -n {SYSCTL}"]\n'
        f'[[variant]]\nname = "a"\nhost = "lab1"\nsysctl = {{ "{SYSCTL}" = {flipped} }}\n'
        '[[variant]]\nname = "b"\nhost = "lab1"\n'
    )
    # without sudo the same run cannot change the host: it says so and changes nothing
    res = fairmark_subprocess("run", _plan(tmp_path, lab, body, ""), "--accept-risk")
    assert res.returncode == 3, res.stderr[-3000:]
    assert "runs as uid 64123, not root" in res.stderr and "sudo = true" in res.stderr
    assert "Traceback" not in res.stderr and _sysctl(lab) == before
    res = fairmark_subprocess("run", _plan(tmp_path, lab, body, "sudo = true\n"), "--accept-risk", "--json")
    assert res.returncode == 0, res.stderr[-3000:]
    assert _sysctl(lab) == before  # put back at the run's end, as root


@pytest.mark.slow
@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_the_agent_finds_its_python_and_says_which(lab: nethosts.NetHosts) -> None:
    spec = HostSpec("lab1", ssh="lab1", ssh_options=("-F", str(lab.ssh_config)), become=("sudo", "-n"))
    with HostConnection(spec) as host:  # no python named: probed
        assert host.hello["python"].startswith("3.")


def test_the_python_probe_looks_beyond_the_login_path() -> None:
    """A host whose login PATH has no python3 (FreeBSD's pkg puts /usr/local/bin/python3.11 there, a `python3`
    only with the meta-package): the probe execs the first Python 3 of the usual places, or says where it
    looked."""
    script = shlex.join([*python_probe(None), "-c", "import sys; print(sys.version_info[0])"])
    found = subprocess.run(
        ["env", "-i", "PATH=/nonexistent", "/bin/sh", "-c", script], capture_output=True, text=True
    )
    assert found.returncode == 0 and found.stdout.strip() == "3", found.stderr
    places = python_probe(None)[2]
    for place in ("/usr/bin/python3", "/usr/local/bin/python3.11"):
        assert place in places
    missing = places.replace("/usr/bin/python3 ", "/nonexistent/python3 ").replace(
        "python3 ", "nopython3 ", 1
    )
    none = subprocess.run(
        ["env", "-i", "PATH=/nonexistent", "/bin/sh", "-c", missing, "sh", "-c", "pass"],
        capture_output=True,
        text=True,
    )
    assert none.returncode == 127 and "set python = in its [hosts] entry" in none.stderr
    assert python_probe("/opt/py/bin/python3") == ["/opt/py/bin/python3"]
