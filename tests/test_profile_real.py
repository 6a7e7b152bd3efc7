"""Profilers on this machine: a stress-ng fork run shows the kernel's fork/exit paths; strace gives a table; a
profile holds the workload's processes only (its trial's tree and the servers working in its scratch), with its
share of the busy CPUs' samples."""

import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fairmark.run.hooks import HookContext
from fairmark.run.profiles import hooks_for

# One at a time under xdist (tests/conftest.py): perf, whose sample rate the kernel lowers machine-wide under load; stress-ng's /tmp directories.
pytestmark = pytest.mark.machine("perf")


def _run(hook, argv, tmp_path):
    if hook.unavailable:
        pytest.skip(hook.unavailable)
    ctx = HookContext("r", "c", "w", "A", "t", str(tmp_path), False)
    argv = hook.wrap(argv, ctx)
    hook.start(ctx)
    subprocess.run(argv, capture_output=True, check=False, timeout=60)
    return hook.stop(ctx, None)


@pytest.mark.slow
def test_cpu_profile_of_fork_shows_kernel_fork_and_exit(tmp_path):
    (hook,) = hooks_for(["cpu"])
    # 2000 forks, not a second of them: the samples of the fork and exit paths follow the work, whatever CPU
    # share a loaded machine leaves it (at 997 Hz of its own CPU time)
    arts = _run(hook, ["stress-ng", "--fork", "1", "--fork-ops", "2000", "-t", "120"], tmp_path)
    by_name = {a.name: a for a in arts}
    assert "error" not in by_name, by_name.get("error")
    folded = by_name["folded"].data
    frames = {f for line in folded.splitlines() for f in line.rpartition(" ")[0].split(";")}
    names = {f.removesuffix("_[k]") for f in frames}
    assert names & {"kernel_clone", "copy_process", "__do_sys_clone", "_do_fork"}, "no fork path"
    assert names & {"do_exit", "do_group_exit", "__x64_sys_exit_group"}, "no exit path"
    assert by_name["meta"].data["event"] in ("cpu-clock", "cycles")
    assert not list(tmp_path.glob("perf*.data"))  # the big raw file is not left behind


def test_syscall_profile_table(tmp_path):
    (hook,) = hooks_for(["syscalls"])
    (art,) = _run(hook, ["dd", "if=/dev/zero", "of=/dev/null", "bs=4k", "count=500"], tmp_path)
    assert art.name == "summary", art.data
    calls = {r["syscall"]: r["calls"] for r in art.data["table"]}
    assert calls["read"] >= 500 and calls["write"] >= 500
    assert "read" in art.data["histograms_us"]


def test_syscall_profile_when_command_never_starts(tmp_path):
    (hook,) = hooks_for(["syscalls"])
    if hook.unavailable:
        pytest.skip(hook.unavailable)
    ctx = HookContext("r", "c", "w", "A", "t", str(tmp_path), False)
    hook.wrap(["true"], ctx)
    hook.start(ctx)  # the runner failed before exec: strace never opens the FIFO
    import fairmark.run.profiles.syscalls as sc

    sc.READER_JOIN_S, old = 0.2, sc.READER_JOIN_S
    try:
        (art,) = hook.stop(ctx, None)
    finally:
        sc.READER_JOIN_S = old
    assert art.name == "error"


@pytest.mark.slow
def test_lock_profile_runs_or_says_why(tmp_path):
    (hook,) = hooks_for(["locks"])
    arts = _run(hook, ["stress-ng", "--pipe", "2", "-t", "1"], tmp_path)
    (art,) = arts
    assert art.name == "contention", art.data
    assert isinstance(art.data["rows"], list) and art.data["source"] == "perf lock contention"
    assert "contended" in art.data["raw"]  # the table itself (its header at least), wherever perf printed it


def test_close_stops_a_recording_left_running(tmp_path):
    (hook,) = hooks_for(["cpu"])
    if hook.unavailable:
        pytest.skip(hook.unavailable)
    ctx = HookContext("r", "c", "w", "A", "t", str(tmp_path), False)
    hook.wrap(["true"], ctx)
    hook.start(ctx)  # the trial is interrupted: stop() never comes
    proc, cgroup = hook._rec.proc, hook._cgroup.path
    hook.close()
    assert proc.poll() is not None and not list(tmp_path.glob("perf*.data"))
    assert not cgroup.exists()  # the trial's cgroup is removed too


def _first_frames(folded: str) -> set[str]:
    return {line.split(";", 1)[0] for line in folded.splitlines()}


def _spin(name: str, cwd: Path | None = None) -> subprocess.Popen:
    """A CPU-bound process named `name` (a copy of sha1sum reading /dev/zero), in its own session.

    It is killed when the pytest worker dies: a worker killed mid-test (a cancelled suite, a timeout) never runs the
    test's `finally`, and an orphan spinning on /dev/zero burned a CPU for 40 minutes of a later suite."""
    exe = cwd / name if cwd else Path(f"/tmp/{name}-{os.getpid()}")
    exe.write_bytes(Path("/usr/bin/sha1sum").read_bytes())
    exe.chmod(0o755)
    return subprocess.Popen(
        [str(exe), "/dev/zero"], cwd=cwd, start_new_session=True, preexec_fn=_die_with_parent
    )


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@pytest.mark.slow
def test_the_cpu_profile_is_the_workloads_own_tree_with_its_share(tmp_path):
    """Issue 25 item 3: `perf record -a -g` put everything on the machine in the flame graph (alloc 7%, python
    42%, perf 26%). A process spinning beside the trial must not be in it, every process of the trial's tree
    must be, and the share says the workload was only part of the busy CPUs' samples."""
    (hook,) = hooks_for(["cpu"])
    noise = _spin("fmnoise")
    try:
        arts = _run(hook, ["sh", "-c", "head -c 400000000 /dev/zero | md5sum"], tmp_path)
    finally:
        noise.kill()
        noise.wait()
        Path(noise.args[0]).unlink()
    by_name = {a.name: a for a in arts}
    assert "error" not in by_name, by_name.get("error")
    commands = _first_frames(by_name["folded"].data)
    assert "fmnoise" not in commands and {"md5sum", "head"} <= commands, commands
    meta = by_name["meta"].data
    assert meta["scope"] == "process tree (cgroup)"
    assert meta["workload_samples"] > 0 and 0 < meta["workload_share"] < 1, meta  # fmnoise was busy too


@pytest.mark.slow
def test_the_workloads_servers_are_profiled_with_its_trial_and_given_back(tmp_path):
    """A managed server (redis, PostgreSQL) works in the workload's scratch directory, outside the trial's tree:
    it is moved into the trial's cgroup while the trial runs and back into its own cgroup after."""
    (hook,) = hooks_for(["cpu"])
    scratch = tmp_path / "fairmark-scratch-kv-abc"
    (scratch / "trial-00001").mkdir(parents=True)
    server = _spin("fmserver", scratch)
    try:
        home = Path(f"/proc/{server.pid}/cgroup").read_text()
        arts = _run(hook, [sys.executable, "-c", "sum(range(3 * 10**7))"], scratch / "trial-00001")
        assert Path(f"/proc/{server.pid}/cgroup").read_text() == home
    finally:
        server.kill()
        server.wait()
    by_name = {a.name: a for a in arts}
    assert "error" not in by_name, by_name.get("error")
    assert "fmserver" in _first_frames(by_name["folded"].data)
    assert by_name["meta"].data["servers"] == 1
