"""Real apply/revert on this machine (root): sysctls, scratch file systems, cpusets, hotplug, THP, recovery."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from fairmark.errors import EnvironmentRefused
from fairmark.plan.load import parse_plan
from fairmark.run.variants import tunable
from fairmark.run.variants.driver import Prepared
from fairmark.run.variants.syslock import SystemLock
from fairmark.run.variants.system import SystemState, pending_findings, recover_pending

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="changing the system needs root"),
    pytest.mark.machine,  # sysctls, THP and ASLR, loop mounts, cpusets under the machine-wide system lock
]

SYSCTL = "/proc/sys/net/ipv4/tcp_no_metrics_save"
THP = "/sys/kernel/mm/transparent_hugepage/enabled"


def read(path: str) -> str:
    return Path(path).read_text().strip()


def plan_with(b: str, a: str = ""):
    return parse_plan(
        f"""
[[workload]]
name = "w"
command = ["true"]

[[variant]]
name = "A"
settle_s = 0
{a}

[[variant]]
name = "B"
settle_s = 0
{b}
"""
    )


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def metrics_save():
    """The sysctl the tests flip; whatever happens, the test leaves it as it found it. Held under the
    machine-wide lock, so a fairmark run elsewhere on this machine is not mistaken for the original value."""
    lock = SystemLock()
    lock.acquire(wait_s=300)
    before = read(SYSCTL)
    try:
        yield before
    finally:
        Path(SYSCTL).write_text(before)
        lock.release()


def loops_of(folder: Path) -> str:
    return subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout if folder else ""


def test_sysctl_applied_for_b_and_restored_after_close(state, metrics_save):
    other = "0" if metrics_save == "1" else "1"
    s = SystemState(plan_with(f'sysctl = {{ "net.ipv4.tcp_no_metrics_save" = {other} }}'), state_dir=state)
    assert s.changes_system
    s.activate("A")
    assert read(SYSCTL) == metrics_save
    s.activate("B")
    assert read(SYSCTL) == other
    journal = json.loads(next((state / "journal").glob("*.json")).read_text())
    assert journal["entries"][0]["original"] == metrics_save
    s.activate("A")  # switching back reverts B at once
    assert read(SYSCTL) == metrics_save
    s.activate("B")
    s.close()
    assert read(SYSCTL) == metrics_save
    assert list((state / "journal").glob("*.json")) == []


def test_original_is_on_disk_before_the_value_changes(state, metrics_save, monkeypatch):
    seen = []
    real_write = tunable.write_value

    def spy(path, value):
        if str(path) == SYSCTL:
            files = list((state / "journal").glob("*.json"))
            seen.append([json.loads(f.read_text())["entries"][-1]["original"] for f in files])
        real_write(path, value)

    monkeypatch.setattr(tunable, "write_value", spy)
    other = "0" if metrics_save == "1" else "1"
    s = SystemState(plan_with(f'sysctl = {{ "net.ipv4.tcp_no_metrics_save" = {other} }}'), state_dir=state)
    s.activate("B")
    s.close()
    assert seen[0] == [metrics_save]  # journaled before the first write


def test_error_in_the_run_still_restores(state, metrics_save):
    other = "0" if metrics_save == "1" else "1"
    s = SystemState(plan_with(f'sysctl = {{ "net.ipv4.tcp_no_metrics_save" = {other} }}'), state_dir=state)
    with pytest.raises(RuntimeError):
        try:
            s.activate("B")
            raise RuntimeError("a trial blew up")
        finally:
            s.close()
    assert read(SYSCTL) == metrics_save


def test_a_value_the_kernel_rejects_reverts_what_was_applied(state, metrics_save):
    other = "0" if metrics_save == "1" else "1"
    bad = f'sysctl = {{ "net.ipv4.tcp_no_metrics_save" = {other}, "net.ipv4.ip_local_port_range" = "70000 80000" }}'
    s = SystemState(plan_with(bad), state_dir=state)
    with pytest.raises(EnvironmentRefused, match="ip_local_port_range"):
        s.activate("B")
    assert read(SYSCTL) == metrics_save  # the first sysctl was put back too
    s.close()


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ('sysctl = { "net.ipv4.no_such_knob" = 1 }', "no such sysctl"),
        ('sysctl = { "kernel.osrelease" = "9.9" }', "read-only"),
        ('sysctl = { "mitigations" = "off" }', "boot-time only"),
        ('sysctl = { "net.inet.tcp.hostcache.enable" = 0 }', "FreeBSD name"),
        ("cpus = 64", "only 2 CPU"),
        ("online_cpus = 64", "only"),
        ('mount = { fs = "zfs" }', "mkfs.zfs"),
    ],
)
def test_impossible_changes_are_refused_before_any_trial(state, key, words):
    if "only 2 CPU" in words and os.cpu_count() != 2:
        words = "CPU"
    with pytest.raises(EnvironmentRefused, match=words):
        SystemState(plan_with(key), state_dir=state)


@pytest.mark.skipif(Path("/sys/devices/system/cpu/cpu0/cpufreq").exists(), reason="this kernel has cpufreq")
def test_governor_refused_where_there_is_no_cpufreq(state):
    with pytest.raises(EnvironmentRefused, match="cpufreq"):
        SystemState(plan_with('governor = "performance"'), state_dir=state)


def test_not_root_is_refused_before_any_trial(state, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(EnvironmentRefused, match="needs root"):
        SystemState(plan_with('sysctl = { "net.ipv4.tcp_no_metrics_save" = 1 }'), state_dir=state)
    SystemState(plan_with("malloc_debug = true"), state_dir=state)  # environment only: fine without root


def test_dry_run_describes_and_changes_nothing(state, metrics_save):
    other = "0" if metrics_save == "1" else "1"
    s = SystemState(
        plan_with(
            f'sysctl = {{ "net.ipv4.tcp_no_metrics_save" = {other} }}\nmount = {{ size = "64M" }}\ncpus = 1'
        ),
        state_dir=state,
        dry_run=True,
    )
    s.activate("B")
    prep = s.prepare("B")
    lines = s.describe()["B"]
    assert f"sysctl net.ipv4.tcp_no_metrics_save: {metrics_save} → {other}" in lines
    assert any("scratch ext4" in x for x in lines) and any("CPU(s) 0" in x for x in lines)
    assert s.describe()["A"] == []
    assert str(prep.workdir).startswith("<scratch")
    s.close()
    assert read(SYSCTL) == metrics_save and not state.exists()


@pytest.mark.skipif(not Path("/dev/loop-control").exists(), reason="no loop devices in this environment")
def test_scratch_fs_is_created_used_and_removed(state):
    s = SystemState(plan_with('mount = { fs = "ext4", options = "sync", size = "64M" }'), state_dir=state)
    assert s.prepare("A") == Prepared()
    s.activate("B")
    workdir = Path(str(s.prepare("B").workdir))
    (workdir / "data").write_text("x" * 4096)
    mounts = Path("/proc/self/mounts").read_text()
    line = next(m for m in mounts.splitlines() if m.split()[1] == str(workdir))
    assert line.split()[2] == "ext4" and "sync" in line.split()[3].split(",")
    image = workdir.parent / "image"
    assert str(image) in loops_of(image)
    s.activate("A")
    assert s.prepare("B").workdir == str(workdir)  # kept across blocks: the data set survives
    s.close()
    assert str(workdir) not in Path("/proc/self/mounts").read_text()
    assert str(image) not in loops_of(image)
    assert not workdir.parent.exists()
    assert list((state / "scratch").iterdir()) == []


def test_tmpfs_scratch(state):
    s = SystemState(plan_with('mount = { fs = "tmpfs", size = "16M" }'), state_dir=state)
    s.activate("B")
    workdir = str(s.prepare("B").workdir)
    assert any(
        m.split()[1] == workdir and m.split()[2] == "tmpfs"
        for m in Path("/proc/self/mounts").read_text().splitlines()
    )
    s.close()
    assert not Path(workdir).exists()


@pytest.mark.skipif(not Path("/sys/fs/cgroup/cpuset/cgroup.procs").exists(), reason="no cgroup v1 cpuset")
def test_cpus_puts_the_whole_trial_tree_in_a_cpuset(state):
    s = SystemState(plan_with("cpus = 1"), state_dir=state)
    assert not s.changes_system  # per-trial: no need to order trials in blocks
    s.activate("B")
    cgroup = Path(str(s.prepare("B").cgroup))
    # the launcher places the trial's own process (no wrapper); a grandchild of the trial sees it too
    from fairmark.run.launch.executor import execute_spec
    from fairmark.run.spec import TrialSpec

    argv = ("sh", "-c", "sh -c 'grep Cpus_allowed_list /proc/self/status; cat /proc/self/cpuset'")
    home, mine = Path("/proc/thread-self/cpuset").read_text(), os.sched_getaffinity(0)
    # by vfork from the launching thread, which joins the cpuset for the trial; and by fork + the child's step
    for fork in (False, True):
        spec = TrialSpec(argv, str(state / f"t{fork}"), place_cgroup=str(cgroup), fork_places=fork)
        done = execute_spec(spec)
        assert done.status == "ok", done.error
        assert Path(done.stdout_path).read_text().split()[-2:] == ["0", f"/{cgroup.name}"]
        # the controller thread is back in its own cpuset with its own CPU mask
        assert Path("/proc/thread-self/cpuset").read_text() == home and os.sched_getaffinity(0) == mine
        assert not (cgroup / "tasks").read_text().split()
    from fairmark.run.launch.launch_server import serving

    with serving():  # and by a run's launch server, which joins the cpuset itself to start the trial
        spec = TrialSpec(
            ("sh", "-c", f"echo $PPID; {argv[2]}"), str(state / "served"), place_cgroup=str(cgroup)
        )
        done = execute_spec(spec)
        assert done.status == "ok", done.error
        server, *_, cpus, where = Path(done.stdout_path).read_text().split()
        assert [cpus, where] == ["0", f"/{cgroup.name}"]
        assert (
            Path(f"/proc/{server}/cpuset").read_text() == home and os.sched_getaffinity(int(server)) == mine
        )
        assert not (cgroup / "tasks").read_text().split()
    assert cgroup.exists()
    s.close()
    assert not cgroup.exists()


@pytest.mark.skipif(
    os.environ.get("FAIRMARK_TEST_HOTPLUG") != "1",
    reason="takes a CPU away from everything on the machine, and offlining waits for RCU (up to a minute under "
    "load): opt in with FAIRMARK_TEST_HOTPLUG=1",
)
def test_online_cpus_takes_cpus_offline_and_back(state):
    cpu1 = Path("/sys/devices/system/cpu/cpu1/online")
    if not cpu1.exists() or read(str(cpu1)) != "1":
        pytest.skip("cpu1 is not hotpluggable (or not online) here")
    s = SystemState(plan_with("online_cpus = 1"), state_dir=state)
    s.activate("B")
    assert read("/sys/devices/system/cpu/online") == "0"
    s.close()
    assert read("/sys/devices/system/cpu/online") == "0-1"


@pytest.mark.skipif(not Path(THP).exists(), reason="no transparent hugepages")
def test_thp_and_aslr(state):
    thp_before = tunable.read_value(THP, "bracket")
    aslr_before = read("/proc/sys/kernel/randomize_va_space")
    want = "never" if thp_before != "never" else "always"
    s = SystemState(plan_with(f'thp = "{want}"\naslr = 0'), state_dir=state)
    s.activate("B")
    assert tunable.read_value(THP, "bracket") == want and read("/proc/sys/kernel/randomize_va_space") == "0"
    s.close()
    assert tunable.read_value(THP, "bracket") == thp_before
    assert read("/proc/sys/kernel/randomize_va_space") == aslr_before


def test_close_fails_loudly_when_a_value_did_not_come_back(state, metrics_save, monkeypatch):
    other = "0" if metrics_save == "1" else "1"
    s = SystemState(plan_with(f'sysctl = {{ "net.ipv4.tcp_no_metrics_save" = {other} }}'), state_dir=state)
    s.activate("B")
    monkeypatch.setattr(tunable, "write_value", lambda path, value: None)  # a kernel that ignores the restore
    with pytest.raises(tunable.RevertError, match="NOT as fairmark found it"):
        s.close()
    assert pending_findings(state) == []  # its owner (this process) still runs: not pending yet
    monkeypatch.undo()
    Path(SYSCTL).write_text(metrics_save)


CRASHER = """
import sys, time
from fairmark.plan.load import parse_plan
from fairmark.run.variants.system import SystemState
plan = parse_plan(open(sys.argv[1]).read())
s = SystemState(plan, state_dir=sys.argv[2])
s.activate("B")
print(s.prepare("B").workdir, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not Path("/dev/loop-control").exists(), reason="no loop devices in this environment")
def test_kill_9_leaves_a_journal_that_recovery_undoes(state, metrics_save, tmp_path):
    other = "0" if metrics_save == "1" else "1"
    plan_file = tmp_path / "p.toml"
    plan_file.write_text(
        textwrap.dedent(
            f"""
            [[workload]]
            name = "w"
            command = ["true"]
            [[variant]]
            name = "A"
            [[variant]]
            name = "B"
            settle_s = 0
            sysctl = {{ "net.ipv4.tcp_no_metrics_save" = {other} }}
            mount = {{ size = "32M" }}
            """
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHER, str(plan_file), str(state)], stdout=subprocess.PIPE, text=True
    )
    workdir = proc.stdout.readline().strip()
    assert read(SYSCTL) == other and Path(workdir).is_dir()
    assert pending_findings(state) == []  # alive: not pending, and recovery leaves it alone
    assert recover_pending(state) == []
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.05)
    findings = pending_findings(state)
    assert (
        findings and findings[0]["severity"] == "error" and "tcp_no_metrics_save" in findings[0]["evidence"]
    )
    lines = recover_pending(state)
    assert any(f"restored sysctl net.ipv4.tcp_no_metrics_save = {metrics_save}" in x for x in lines)
    assert any("unmounted" in x and "detached /dev/loop" in x for x in lines)
    assert read(SYSCTL) == metrics_save
    assert workdir not in Path("/proc/self/mounts").read_text() and not Path(workdir).exists()
    assert pending_findings(state) == [] and recover_pending(state) == []


# Like the runner: everything after construction inside try/finally, since a signal may come at any moment;
# and like the CLI's edge (cli/main.py), the library's Terminated becomes the exit status 128 + signal.
RUNNER_LIKE = """
import sys, time
from fairmark.errors import Terminated
from fairmark.plan.load import parse_plan
from fairmark.run.variants.system import SystemState
s = SystemState(parse_plan(open(sys.argv[1]).read()), state_dir=sys.argv[2])
try:
    try:
        s.activate("B")
        print("active", flush=True)
        time.sleep(60)
    finally:
        s.close()
except Terminated as exc:
    sys.exit(exc.exit_status)
"""


def test_sigterm_unwinds_like_ctrl_c(state, metrics_save, tmp_path):
    other = "0" if metrics_save == "1" else "1"
    plan_file = tmp_path / "p.toml"
    plan_file.write_text(
        '[[workload]]\nname = "w"\ncommand = ["true"]\n[[variant]]\nname = "A"\n[[variant]]\nname = "B"\n'
        f'settle_s = 0\nsysctl = {{ "net.ipv4.tcp_no_metrics_save" = {other} }}\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER_LIKE, str(plan_file), str(state)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.readline()
    assert read(SYSCTL) == other
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert read(SYSCTL) == metrics_save, err
    assert pending_findings(state) == []


def test_unreadable_journal_is_reported_not_guessed(state):
    (state / "journal").mkdir(parents=True)
    (state / "journal" / "1-2.json").write_text("{not json")
    assert "unreadable journal" in recover_pending(state)[0]
    assert pending_findings(state)[0]["severity"] == "error"


def test_restore_command(state, metrics_save, fairmark_cli, monkeypatch):
    monkeypatch.setenv("FAIRMARK_STATE_DIR", str(state))
    code, out, err = fairmark_cli("restore")
    assert code == 0 and "nothing to restore" in out
    assert "fairmark restore --host DEST" in err  # where else a killed run's changes may remain (issue 32)
    other = "0" if metrics_save == "1" else "1"
    (state / "journal").mkdir(parents=True)
    entry = {"id": "e1", "type": "file", "path": SYSCTL, "original": metrics_save, "label": "sysctl x"}
    journal = {"format": 1, "pid": 999999999, "start": 1.0, "created": 0, "host": "h", "entries": [entry]}
    (state / "journal" / "999999999-1000.json").write_text(json.dumps(journal))
    Path(SYSCTL).write_text(other)
    code, out, _ = fairmark_cli("restore", "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert any("restored sysctl x" in a for a in doc["actions"]) and doc["still_pending"] == []
    assert read(SYSCTL) == metrics_save


def test_a_second_fairmark_may_not_change_the_machine_at_the_same_time(tmp_path):
    path = tmp_path / "system.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(EnvironmentRefused, match=f"another fairmark \\(pid {holder.pid}\\)"):
            SystemLock(path).acquire(wait_s=0.3)
    finally:
        holder.kill()
        holder.wait()
    lock = SystemLock(path)
    lock.acquire()  # the kernel released it with the process
    lock.release()


HOLDER = """
import sys, time
from pathlib import Path
from fairmark.run.variants.syslock import SystemLock
SystemLock(Path(sys.argv[1])).acquire()
print("held", flush=True)
time.sleep(60)
"""


def test_a_run_starts_all_its_trials_the_same_way(state, monkeypatch):
    """On Linux the launching thread hands down both an affinity and a v1 cpuset (it joins it for the
    trial), so every trial of a run with `cpus` starts by vfork; where a placement needs a step in the child
    between fork and exec, every trial of the run (the unplaced side too) starts through fork."""
    from fairmark.run.launch import placer
    from fairmark.run.trials import trial as trial_mod
    from fairmark.run.variants import cpus as cpus_mod

    def path_for(plan):
        hosts = SimpleNamespace(local=SimpleNamespace(system=SystemState(plan, state_dir=state)))
        return trial_mod.TrialPath(plan, plan.policy(False), None, "r", hosts, str, print)  # type: ignore[arg-type]

    assert not path_for(plan_with("")).fork_places
    monkeypatch.setattr(cpus_mod, "cpuset_usable", lambda *a: False)
    assert not path_for(plan_with("cpus = 1")).fork_places
    monkeypatch.setattr(cpus_mod, "cpuset_usable", lambda *a: True)
    monkeypatch.setattr(cpus_mod, "cpuset_hierarchy", lambda *a: ("/sys/fs/cgroup/cpuset", 1))
    assert not path_for(plan_with("cpus = 1")).fork_places
    # cgroup v2 moves whole processes only: no thread joins, every trial of the run starts by fork
    monkeypatch.setattr(cpus_mod, "cpuset_hierarchy", lambda *a: ("/sys/fs/cgroup", 2))
    assert path_for(plan_with("cpus = 1")).fork_places
    monkeypatch.setattr(cpus_mod, "cpuset_hierarchy", lambda *a: ("/sys/fs/cgroup/cpuset", 1))
    monkeypatch.setattr(placer, "THREAD_AFFINITY", False)  # FreeBSD's launcher, say
    assert path_for(plan_with("cpus = 1")).fork_places


def test_an_older_agents_linux_sysctl_journal_is_restored(tmp_path, metrics_save, monkeypatch):
    """Journal compatibility (issue 33 item 1): an agent from before the drivers journaled a sysctl as
    {"type": "sysctl", name, original, want}, no entry id, "started" for its start; the next agent (whose
    journal is the drivers' now) still restores it, and leaves neither journal nor lock behind."""
    import json

    from fairmark.remote import agent

    other = "0" if metrics_save == "1" else "1"
    state_dir = tmp_path / "agent-state"
    monkeypatch.setenv("FAIRMARK_AGENT_STATE", str(state_dir))
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    entry = {
        "type": "sysctl",
        "name": "net.ipv4.tcp_no_metrics_save",
        "original": metrics_save,
        "want": other,
    }
    journal = state_dir / "journal" / f"{pid}-old.json"
    journal.parent.mkdir(parents=True)
    journal.write_text(json.dumps({"format": 1, "pid": pid, "started": 0, "entries": [entry]}))
    Path(SYSCTL).write_text(other)
    assert agent.recover_dead() == [
        f"restored sysctl net.ipv4.tcp_no_metrics_save = {metrics_save} (was {other}) (left by agent {pid})"
    ]
    assert read(SYSCTL) == metrics_save and list(journal.parent.iterdir()) == []


def test_a_cpuset_on_cgroup_v2_enables_the_controller_and_takes_it_back(tmp_path, monkeypatch):
    """Issue 32 item 1, on a fixture tree shaped like a v2 root (the real one: tests/test_cgroup_v2.py in the
    QEMU guest booted with cgroup_no_v1=all): the controller is enabled for the root's children, the child gets
    the CPUs and the root's effective memory nodes, and the journal's undo removes both."""
    from fairmark.run.variants import cpus as cpus_mod
    from fairmark.run.variants.journal import Journal

    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (root / "cgroup.subtree_control").write_text("cpu memory\n")
    (root / "cpuset.mems.effective").write_text("0\n")
    monkeypatch.setattr(cpus_mod, "cpuset_hierarchy", lambda *a: (str(root), 2))
    cpuset = cpus_mod.CpuSet("one", [0], use_cgroup=True)
    assert cpuset.method == "cpuset v2" and "cgroup v2" in cpuset.description()
    journal = Journal.for_this_process(tmp_path / "state")
    placement = cpuset.prepared(journal)
    child = root / f"fairmark-{os.getpid()}-one"
    assert placement.cgroup == str(child)
    assert (root / "cgroup.subtree_control").read_text() == "+cpuset"  # what a real root takes
    assert (child / "cpuset.cpus").read_text() == "0" and (child / "cpuset.mems").read_text() == "0"
    entry = journal.get(str(cpuset.entry_id))
    for f in ("cpuset.cpus", "cpuset.mems"):  # a real cgroup's files go with its rmdir
        (child / f).unlink()
    (child / "cgroup.procs").write_text("")  # no process left in it
    real_rmdir = Path.rmdir

    def rmdir(path: Path) -> None:  # a real cgroup directory is removed with its interface files
        if path == child:
            (child / "cgroup.procs").unlink()
        real_rmdir(path)

    monkeypatch.setattr(Path, "rmdir", rmdir)
    done, problem = cpus_mod.undo_cgroup(entry)
    assert problem is None and "disabled the cpuset controller" in done, done
    assert (root / "cgroup.subtree_control").read_text() == "-cpuset" and not child.exists()


def test_without_a_cpuset_controller_the_affinity_fallback_says_why(monkeypatch):
    from fairmark.run.variants import cpus as cpus_mod

    monkeypatch.setattr(cpus_mod, "cpuset_hierarchy", lambda *a: None)
    cpuset = cpus_mod.CpuSet("one", [0], use_cgroup=True)
    assert cpuset.method == "affinity" and not cpuset.use_cgroup
    line = cpuset.description()
    assert "via CPU affinity, which a child can widen" in line
    assert "no cpuset controller" in line or "not root" in line
