"""A variant's system changes on a host beyond sysctls (issue 26 item 4): a scratch file system (`mount`) and a CPU
set (`cpus`) made there by the agent with fairmark's own run/variants code, journaled in the agent's journal there,
seen by the variant's trials, and undone — at the run's end; after kill -9 of the controller (the agent, at its end
of input); and after kill -9 of the controller and of the agent both (the dead agent's journal, undone at the next
contact: the resumed run).

"Nothing left" is judged against a snapshot taken before the test (mounts, loop devices, cpuset cgroups, the
host's journal and scratch directories), never by a PID: the namespace host shares the machine's file system,
mounts and cgroups with everything else running here."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import nethosts
from helpers import wait_until

CPUSET = Path("/sys/fs/cgroup/cpuset")
VARIANT = "onhost"  # the variant with the mount and the cpus (its cgroup is named after it)
# what the variant makes on the host (a cpuset cgroup where the machine has the cgroup v1 hierarchy)
MADE = {"mounts", "loops", "scratch", "journals"} | (
    {"cgroups"} if (CPUSET / "cpuset.cpus").exists() else set()
)


def _why_not() -> str | None:
    if nethosts.available() is not None:
        return nethosts.available()
    if not (shutil.which("mkfs.ext4") and shutil.which("losetup") and Path("/dev/loop-control").exists()):
        return "no loop devices or mkfs.ext4 here (packages/debian-test.txt: e2fsprogs, util-linux)"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))]


@pytest.fixture(scope="module")
def net() -> Iterator[nethosts.NetHosts]:
    with nethosts.NetHosts(["vh"]) as hosts:
        _mount_cpusets(hosts.hosts["vh"])
        yield hosts


def _mount_cpusets(host: nethosts.NetHost) -> None:
    """`ip netns exec` gives the host a mount namespace of its own with a fresh sysfs, without the machine's
    cgroup hierarchies: mount the cpuset hierarchy there, as a real host has it (the same hierarchy, so its
    cgroups are the machine's; the mounts go with the namespace's last process at teardown)."""
    if not (CPUSET / "cpuset.cpus").exists():
        return  # no cgroup v1 cpuset on this machine: the agent places trials by affinity (checked so)
    assert host.sshd is not None
    for argv in (
        ["mount", "-t", "tmpfs", "cgroups", "/sys/fs/cgroup"],
        ["mkdir", "/sys/fs/cgroup/cpuset"],
        ["mount", "-t", "cgroup", "-o", "cpuset", "cpuset", "/sys/fs/cgroup/cpuset"],
    ):
        subprocess.run(["nsenter", "-t", str(host.sshd.pid), "-m", *argv], check=True, capture_output=True)


def _mountinfo(net: nethosts.NetHosts) -> str:
    """The host's mounts: those of its sshd's mount namespace, which its agents share (not the test's own)."""
    sshd = net.hosts["vh"].sshd
    assert sshd is not None
    return Path(f"/proc/{sshd.pid}/mountinfo").read_text()


@dataclass(frozen=True)
class State:
    """What of the variants' changes exists on the machine (the namespace host's are the machine's)."""

    mounts: frozenset[str]
    loops: frozenset[tuple[str, str]]  # (device, its backing file)
    cgroups: frozenset[str]
    journals: frozenset[str]
    scratch: frozenset[str]

    @classmethod
    def now(cls, net: nethosts.NetHosts) -> State:
        state_dir = net.hosts["vh"].state_dir
        mounts = {line.split()[4] for line in _mountinfo(net).splitlines()}
        loops = set()
        for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
            loops.add((backing.parent.parent.name, backing.read_text().strip()))
        cgroups = {p.name for p in CPUSET.iterdir() if p.is_dir()} if CPUSET.is_dir() else set()
        journals = {p.name for p in (state_dir / "journal").glob("*")}  # with their lock files
        scratch = {p.name for p in (state_dir / "scratch").glob("*")}
        return cls(*map(frozenset, (mounts, loops, cgroups, journals, scratch)))

    def new_since(self, before: State, state_dir: Path) -> dict[str, list[str]]:
        """What exists now and did not before: the host's mounts and loop devices (under its state directory,
        where its scratch images live), the variant's cgroups, the host's pending journals and scratch."""
        where = str(state_dir)
        return {
            k: v
            for k, v in {
                "mounts": sorted(m for m in self.mounts - before.mounts if m.startswith(where)),
                "loops": sorted(f"{d} ({f})" for d, f in self.loops - before.loops if f.startswith(where)),
                "cgroups": sorted(c for c in self.cgroups - before.cgroups if c.endswith(f"-{VARIANT}")),
                "journals": sorted(self.journals - before.journals),
                "scratch": sorted(self.scratch - before.scratch),
            }.items()
            if v
        }


PROBE = """#!/bin/sh
# what a trial sees: its data directory, working directory, cpuset, allowed CPUs, the device of its directory
printf '%s|%s|%s|%s|%s|%s\\n' "$FAIRMARK_WORKDIR" "$PWD" "$(cat /proc/self/cpuset)" \\
    "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)" "$(df --output=source . | tail -n 1)" \\
    "$GLIBC_TUNABLES" >> "$1"
[ -n "$FAIRMARK_WORKDIR" ] || exit 0
# the variant's second trial waits inside its file system and cgroup while the test holds it
if [ -e seen ] && [ -e "$2" ]; then exec sleep 600; fi
touch seen
"""


def _plan(tmp_path: Path, net: nethosts.NetHosts, tuning: bool = False) -> tuple[Path, Path, Path]:
    """Two variants on the host: `plain`, and VARIANT with a scratch ext4, one CPU and the allocator's
    debugging mode (its mount from a [tuning.NAME] set with `tuning`)."""
    probe, evidence, hold = tmp_path / "probe.sh", tmp_path / "evidence", tmp_path / "hold"
    probe.write_text(PROBE)
    path = tmp_path / "plan.toml"
    mount = 'mount = { fs = "ext4", size = "64M" }\n'
    path.write_text(
        "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\nmax_failures = 3\n"
        + (f"[tuning.scratch]\n{mount}" if tuning else "")
        + f'[[workload]]\nname = "probe"\ncommand = ["sh", "{probe}", "{evidence}", "{hold}"]\ntimeout_s = 900\n'
        '[[variant]]\nname = "plain"\nhost = "vh"\n'
        f'[[variant]]\nname = "{VARIANT}"\nhost = "vh"\ncpus = 1\nmalloc_debug = true\n'
        + ('tuning = "scratch"\n' if tuning else mount)
        + net.hosts_toml()
    )
    return path, evidence, hold


def _fairmark(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fairmark", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def _store() -> sqlite3.Connection:
    """The run's store, read only (the run makes it: reading must not make an empty one first)."""
    path = os.environ["FAIRMARK_STORE"].removeprefix("sqlite:///")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)


def _stored_trials(variant: str) -> int:
    try:
        with contextlib.closing(_store()) as db:
            (n,) = db.execute(
                "SELECT count(*) FROM trials t JOIN cells c ON t.cell_id = c.id WHERE c.variant = ?",
                (variant,),
            ).fetchone()
    except sqlite3.OperationalError:  # not made yet, or its tables not yet
        return 0
    return int(n)


def _trial_lines(evidence: Path) -> list[list[str]]:
    return [line.split("|") for line in evidence.read_text().splitlines()] if evidence.exists() else []


def _held(evidence: Path, net: nethosts.NetHosts) -> bool:
    """The variant's trial is waiting inside its file system and cgroup (its `sleep` runs in the namespace)."""
    return any(cmd.startswith("sleep 600") for cmd in net.hosts["vh"].processes())


def _assert_placed(line: list[str], state_dir: Path) -> None:
    workdir, pwd, cpuset, allowed, device, tunables = line
    assert "glibc.malloc.check=3" in tunables, line  # malloc_debug, as the host's glibc takes it
    assert workdir.startswith(str(state_dir / "scratch")) and pwd == workdir, line
    assert device.startswith("/dev/loop"), line  # the scratch ext4 on its loop device
    from fairmark.run.variants.cpus import online_cpu_ids

    assert allowed == str(online_cpu_ids()[0]), line  # cpus = 1: the first online CPU
    if (CPUSET / "cpuset.cpus").exists():  # a cpuset cgroup (the host has the hierarchy: _mount_cpusets)
        assert cpuset.startswith("/fairmark-") and cpuset.endswith(f"-{VARIANT}"), line


def test_a_mount_and_a_cpus_variant_are_applied_on_the_host_and_undone_at_the_end(
    tmp_path: Path, net: nethosts.NetHosts
) -> None:
    """The mount comes from the variant's [tuning.NAME] set: a set's kinds travel to the host too."""
    state_dir = net.hosts["vh"].state_dir
    before = State.now(net)
    path, evidence, _ = _plan(tmp_path, net, tuning=True)
    proc = _fairmark("run", str(path), "--accept-risk")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    lines = _trial_lines(evidence)
    placed = [line for line in lines if line[0]]
    plain = [line for line in lines if not line[0]]
    assert len(placed) == 3 and len(plain) == 3, lines
    for line in placed:
        _assert_placed(line, state_dir)
    assert len({line[0] for line in placed}) == 1  # one file system for the variant, kept between its blocks
    for line in plain:  # the other variant: no data directory, not on the variant's CPU set
        assert not line[2].endswith(f"-{VARIANT}") and not line[4].startswith("/dev/loop") and not line[5], (
            line
        )
    assert State.now(net).new_since(before, state_dir) == {}


def _run_id() -> str:
    with contextlib.closing(_store()) as db:
        (run_id,) = db.execute("SELECT id FROM runs").fetchone()
    return str(run_id)


def _start_and_hold(tmp_path: Path, net: nethosts.NetHosts) -> tuple[subprocess.Popen[str], Path, Path]:
    """A run whose host variant has a stored trial and a second one waiting inside its mount and cgroup."""
    path, evidence, hold = _plan(tmp_path, net)
    hold.touch()
    proc = _fairmark("run", str(path), "--accept-risk")
    assert wait_until(lambda: _stored_trials(VARIANT) >= 1 or proc.poll() is not None, 300), "no stored trial"
    assert wait_until(lambda: _held(evidence, net) or proc.poll() is not None, 300), "the trial did not wait"
    assert proc.poll() is None, proc.communicate()
    return proc, evidence, hold


def test_kill_9_of_the_controller_mid_run_leaves_no_mount_loop_cgroup_or_journal_on_the_host(
    tmp_path: Path, net: nethosts.NetHosts
) -> None:
    state_dir = net.hosts["vh"].state_dir
    before = State.now(net)
    proc, evidence, _ = _start_and_hold(tmp_path, net)
    during = State.now(net).new_since(before, state_dir)
    assert set(during) >= MADE, during  # applied there, journaled there
    _assert_placed(_trial_lines(evidence)[-1], state_dir)
    proc.kill()
    proc.communicate()
    # the controller's ssh dies with it; the agent sees its input end, kills the trial and undoes its journal
    assert wait_until(lambda: State.now(net).new_since(before, state_dir) == {}, 120), State.now(
        net
    ).new_since(before, state_dir)


def _kill_held_trial(state_dir: Path) -> None:
    """The held trial outlives its killed agent (nobody is left to end it): found by where it is — in the
    variant's cgroup, or working in the host's scratch file system — never by a PID guessed."""
    pids = [
        p for cg in CPUSET.glob(f"fairmark-*-{VARIANT}") for p in (cg / "cgroup.procs").read_text().split()
    ]
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if proc.name.isdigit() and (proc / "cwd").resolve().is_relative_to(state_dir / "scratch"):
                pids.append(proc.name)
    assert pids, "the held trial is not there"
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    assert wait_until(lambda: all(not Path(f"/proc/{p}").exists() for p in pids), 60)


def test_a_dead_agents_mount_and_cpuset_are_undone_when_the_run_is_resumed(
    tmp_path: Path, net: nethosts.NetHosts
) -> None:
    state_dir = net.hosts["vh"].state_dir
    before = State.now(net)
    proc, evidence, hold = _start_and_hold(tmp_path, net)
    (journal,) = (state_dir / "journal").glob("*.json")
    entries = json.loads(journal.read_text())["entries"]
    assert {e["type"] for e in entries} >= {"scratch"}, entries
    agent_pid = json.loads(journal.read_text())["pid"]
    # controller and agent both die (the controller frozen first, so it cannot reconnect): only the journal
    # on the host knows what is mounted, attached and created
    proc.send_signal(signal.SIGSTOP)
    os.kill(agent_pid, signal.SIGKILL)
    proc.kill()
    proc.communicate()
    _kill_held_trial(state_dir)
    left = State.now(net).new_since(before, state_dir)
    assert set(left) >= MADE, left  # what a dead agent leaves
    hold.unlink()
    res = subprocess.run(
        [sys.executable, "-m", "fairmark", "resume", _run_id()],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 0, res.stderr
    assert f"(left by agent {agent_pid})" in res.stderr, res.stderr  # undone at the next contact, and said so
    assert State.now(net).new_since(before, state_dir) == {}
    placed = [line for line in _trial_lines(evidence) if line[0]]
    assert len(placed) >= 3 and len({line[0] for line in placed}) == 2  # the resumed run's own file system
    for line in placed:
        _assert_placed(line, state_dir)


def test_what_a_host_cannot_change_is_refused_before_any_trial_and_nothing_is_made_there(
    tmp_path: Path, net: nethosts.NetHosts
) -> None:
    from fairmark.run.variants.cpus import online_cpu_ids

    before = State.now(net)
    path, _, _ = _plan(tmp_path, net)
    too_many = len(online_cpu_ids()) + 1
    path.write_text(path.read_text().replace("cpus = 1\n", f"cpus = {too_many}\n"))
    proc = _fairmark("run", str(path), "--accept-risk")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 3, err
    assert f"variant '{VARIANT}' on host vh: cpus: cpus = {too_many}: only" in " ".join(err.split()), err
    assert _stored_trials(VARIANT) == 0 and _stored_trials("plain") == 0
    assert State.now(net).new_since(before, net.hosts["vh"].state_dir) == {}  # its mount was not made first
    path.write_text(
        path.read_text()
        .replace(f"cpus = {too_many}\n", "")
        .replace('name = "plain"\n', 'name = "plain"\nsysctl = { "net.ipv4.fairmark_nosuch" = 1 }\n')
    )
    res = subprocess.run(
        [sys.executable, "-m", "fairmark", "run", str(path), "--accept-risk"],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 3, res.stderr
    assert (
        "variant 'plain' on host vh: sysctl: sysctl net.ipv4.fairmark_nosuch: no such sysctl on this kernel "
        "(/proc/sys/net/ipv4/fairmark_nosuch does not exist)" in " ".join(res.stderr.split())
    ), res.stderr


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (packages/debian-test.txt)")
def test_a_tool_workloads_data_set_is_on_the_variants_scratch_file_system_on_the_host(
    tmp_path: Path, net: nethosts.NetHosts
) -> None:
    """fio (its adapter run on the host by `fairmark agent`) lays out and reads its files in the variant's own
    scratch file system there, and in the host's scratch directory for the other variant — as on the
    controller, where a variant with a mount gets a data directory of its own on it."""
    state_dir = net.hosts["vh"].state_dir
    before = State.now(net)
    path = tmp_path / "plan.toml"
    path.write_text(
        "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n"
        '[[workload]]\nname = "io"\ntool = "fio"\n'
        'params = { rw = "randread", bs = "4k", size = "8M", direct = true, runtime_s = 1 }\n'
        '[[variant]]\nname = "plain"\nhost = "vh"\n'
        f'[[variant]]\nname = "{VARIANT}"\nhost = "vh"\nmount = {{ fs = "ext4", size = "64M" }}\n'
        + net.hosts_toml(agent=[sys.executable, "-m", "fairmark", "agent"])
    )
    res = subprocess.run(
        [sys.executable, "-m", "fairmark", "run", str(path), "--accept-risk", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    dirs = {}
    for cell in doc["cells"]:
        assert cell["n_ok"] == 3, [t["error"] for t in cell["trials"]]
        dirs[cell["variant"]] = {
            a.split("=", 1)[1] for t in cell["trials"] for a in t["argv"] if a.startswith("--directory=")
        }
    (on_mount,) = dirs[VARIANT]
    assert on_mount.startswith(str(state_dir / "scratch")) and "/mnt/" in on_mount, dirs
    assert not any(d.startswith(str(state_dir)) for d in dirs["plain"]), dirs
    assert State.now(net).new_since(before, state_dir) == {}
