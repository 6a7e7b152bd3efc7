"""pbuild: parse on captured driver outputs (binutils packages; the small fixture packages with leftovers and a
failure), the FreeBSD jail path as argv, and a real run with isolated builders that must leave no namespace,
mount or process behind (the binutils sweep itself is plans/pbuild.toml)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import _pbuild, adapter_for, tools
from fairmark.run.workloads.base import ParseError, RawOutput
from fairmark.run.workloads.pbuild import parse_pbuild
from helpers import fairmark_subprocess, json_out

# One at a time under xdist (tests/conftest.py): finds builders' namespaces and processes machine-wide.
pytestmark = pytest.mark.machine

FIX = Path(__file__).parent / "fixtures" / "tools" / "pbuild"
SRC = Path(__file__).parent / "fixtures" / "pbuild-src"  # small packages to build (not tool output)
isolating = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or not sys.platform.startswith("linux"),
    reason="needs root and unshare (Linux)",
)


def test_parse_captured_binutils_run():
    m = parse_pbuild((FIX / "binutils-2-builders.txt").read_text())
    assert m["packages_per_hour"] > 0 and m["build_p50_s"] <= m["build_p95_s"] <= m["build_max_s"]
    assert m["forks"] > 1000 and m["forks_per_s"] > 0  # configure scripts: thousands of short processes
    assert 0 < m["sys_share_pct"] < 100 and m["leftover_killed"] == 0
    assert 0 <= m["last_gap_s"] <= m["idle_tail_s"] <= m["build_max_s"]


def test_parse_figures_by_hand():
    out = (
        "# pbuild builders=2 packages=3 jobs=1 isolation=unshare tree=/x\n"
        "pkg seq=0 name=a builder=0 start_s=0.000 end_s=10.000 status=0 leftover=1 forks=100 user_s=3 sys_s=1\n"
        "pkg seq=1 name=b builder=1 start_s=0.000 end_s=20.000 status=0 leftover=0 forks=100 user_s=3 sys_s=1\n"
        "pkg seq=2 name=c builder=0 start_s=10.000 end_s=40.000 status=0 leftover=0 forks=100 user_s=3 sys_s=1\n"
        "# end elapsed_s=40.000\n"
    )
    m = parse_pbuild(out)
    assert m["packages_per_hour"] == pytest.approx(3 / 40 * 3600)
    assert (m["build_p50_s"], m["build_max_s"]) == (20.0, 30.0)
    assert m["idle_tail_s"] == 20.0  # builder 1 found the queue empty at 20 s, the run ended at 40 s
    assert m["last_gap_s"] == 20.0 and m["builder_idle_pct"] == pytest.approx(100 * (1 - 60 / 80))
    assert m["sys_share_pct"] == 25.0 and m["leftover_killed"] == 1 and m["forks_per_s"] == 300 / 40


def test_a_failed_package_fails_the_trial_and_names_it():
    raw = (FIX / "tiny-leftovers-failed.txt").read_text()
    assert "configure: error: no frobnicator found" in raw  # the failed package's log tail is kept
    with pytest.raises(ParseError, match=r"broken \(status 1\)"):
        adapter_for("pbuild").parse(RawOutput(raw, "", 0))
    with pytest.raises(ParseError, match="did not finish"):
        parse_pbuild(raw.split("# end")[0])
    with pytest.raises(ParseError, match="expected 4"):
        parse_pbuild(re.sub(r"^pkg seq=3 .*\n", "", raw, flags=re.MULTILINE))


def test_params_are_checked():
    pbuild = adapter_for("pbuild")
    with pytest.raises(PlanError, match="no package gcc in binutils"):
        pbuild.resolve({"queue": ["zlib", "gcc"]})
    with pytest.raises(PlanError, match="builders"):
        pbuild.resolve({"builders": 0})
    with pytest.raises(PlanError, match="queue"):
        pbuild.resolve({"queue": ["../etc"], "source": str(SRC)})


def test_freebsd_builder_is_a_jail_on_tmpfs():
    steps = _pbuild.freebsd_steps(
        "fairmark-pbuild-7-0", "/s/builders/b0", "1G", ["/src", "zlib", "1", "/l", "/r"]
    )
    assert steps["mount"] == ["mount", "-t", "tmpfs", "-o", "size=1G", "tmpfs", "/s/builders/b0"]
    build = steps["build"]
    assert build[:2] == ["jail", "-c"] and "name=fairmark-pbuild-7-0" in build and "path=/" in build
    assert {"ip4=disable", "ip6=disable", "persist"} <= set(build)  # no network; kept for the leftover count
    cmd = build.index("command=/bin/sh")
    assert build[cmd + 1 : cmd + 3] == ["-c", _pbuild.FREEBSD]
    assert build[cmd + 3 :] == ["sh", "/s/builders/b0", "/src", "zlib", "1", "/l", "/r"]
    assert _pbuild.FREEBSD.startswith("MAKE=gmake\n") and "${MAKE:-make} -j" in _pbuild.FREEBSD  # GNU make
    assert steps["leftover"] == ["pgrep", "-j", "fairmark-pbuild-7-0"]
    assert steps["remove"] == ["jail", "-r", "fairmark-pbuild-7-0"]  # kills what is left in the jail
    assert steps["unmount"] == ["umount", "-f", "/s/builders/b0"]


def test_linux_builder_is_in_its_own_namespaces():
    argv = _pbuild.linux_argv("/s/b0", ["/src", "zlib"])
    assert argv[0] == "unshare" and {
        "--mount",
        "--pid",
        "--net",
        "--fork",
        "--kill-child",
        "--mount-proc",
    } <= set(argv)
    assert argv[argv.index("--propagation") + 1] == "private"  # the tmpfs never shows outside
    assert argv[-4:] == ["sh", "/s/b0", "/src", "zlib"]


def _in_a_build(builds: list[set[str]]) -> list[str]:
    """Processes in every namespace of one of the builds (its mnt, pid and net): a builder's process left behind.
    Not any process holding one of their numbers: the kernel gives a freed namespace's number to the next one,
    which any test running beside (namespace hosts, unshare, Chromium's sandbox) may make meanwhile."""
    found = []
    for ns in Path("/proc").glob("[0-9]*/ns"):
        try:
            held = {os.readlink(ns / kind) for kind in ("mnt", "pid", "net")}
        except OSError:  # the process ended while we looked
            continue
        if any(build <= held for build in builds):
            found.append(f"pid {ns.parent.name}: {_cmdline(ns.parent / 'cmdline')!r}")
    return found


@pytest.mark.slow
@pytest.mark.representative
@isolating
def test_isolated_builders_leave_nothing_behind(tmp_path: Path):
    """Two builders build the fixture packages; `daemon` leaves a background and a setsid'd `sleep 3607`
    behind. They are counted and killed, and afterwards no process, mount or namespace of a builder exists."""
    params = {"builders": 2, "queue": ["hello", "daemon", "hello", "daemon"], "source": str(SRC)}
    m = tools.run_once(adapter_for("pbuild"), params, tmp_path, timeout_s=240)
    assert m["leftover_killed"] == 4 and m["forks"] > 0 and m["packages_per_hour"] > 0
    logs = sorted((tmp_path / "scratch" / "trial-00001" / "logs").glob("*daemon.log"))
    builds = [
        {ln.split()[2] for ln in log.read_text().splitlines() if ln.startswith("namespace")} for log in logs
    ]
    logged = [ns for build in builds for ns in build]
    # mnt, pid, net of each of the two daemon builds, none of them this process's own. (Not "all six distinct":
    # the kernel may give a freed namespace's inode number to the next one, seen when one build ended first.)
    assert len(logged) == 6 and not set(logged) & {os.readlink(ns) for ns in Path("/proc/self/ns").iterdir()}
    assert _in_a_build(builds) == []
    assert not [p for p in Path("/proc").glob("[0-9]*/cmdline") if _cmdline(p) == b"sleep\x003607\x00"]
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(tmp_path) not in mounts and "fairmark-pbuild" not in mounts
    assert not list((tmp_path / "scratch" / "builders").rglob("*"))[2:]  # b0, b1 and nothing in them


def _cmdline(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


@pytest.mark.slow
@isolating
def test_sweep_over_builders_end_to_end(tmp_path: Path):
    """`fairmark run` of a builders sweep on the fixture packages: every cell has the pbuild figures."""
    plan = tmp_path / "pbuild.toml"
    plan.write_text(
        '[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n[[workload]]\nname = "ports"\ntool = "pbuild"\n'
        f'params = {{ queue = ["hello", "hello", "hello"], source = "{SRC}" }}\nsweep = {{ builders = [1, 2] }}\n'
    )
    argv = ["run", str(plan), "--store", f"sqlite:///{tmp_path / 'x.db'}", "--json", "--no-monitors"]
    res = fairmark_subprocess(*argv, "--accept-risk", "--allow-concurrent", timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json_out(res.stdout)
    cells = doc["cells"]
    assert doc["scaling"][0]["parameter"] == "builders" and doc["scaling"][0]["metric"] == "packages_per_hour"
    assert sorted(dict(c["point"])["builders"] for c in cells) == [1, 2]
    assert all(c["n_ok"] == 3 and c["primary_metric"] == "packages_per_hour" for c in cells)
    # show gives the other figures too (percentiles, tail, task rate), not only the verdict metric
    shown = fairmark_subprocess("show", doc["run"]["id"], "--store", f"sqlite:///{tmp_path / 'x.db'}").stdout
    assert shown.count("also: build_p50_s") == 2 and "idle_tail_s" in shown and "tasks/s" in shown
