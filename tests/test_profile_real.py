"""Profilers on this machine: a stress-ng fork run shows the kernel's fork/exit paths; strace gives a table."""

import subprocess

import pytest

from fairmark.run.hooks import HookContext
from fairmark.run.profiles import hooks_for


def _run(hook, argv, tmp_path):
    if hook.unavailable:
        pytest.skip(hook.unavailable)
    ctx = HookContext("r", "c", "w", "A", "t", str(tmp_path), False)
    argv = hook.wrap(argv, ctx)
    hook.start(ctx)
    subprocess.run(argv, capture_output=True, check=False, timeout=60)
    return hook.stop(ctx, None)


def test_cpu_profile_of_fork_shows_kernel_fork_and_exit(tmp_path):
    (hook,) = hooks_for(["cpu"])
    arts = _run(hook, ["stress-ng", "--fork", "1", "-t", "1"], tmp_path)
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
    hook.start(ctx)  # the trial is interrupted: stop() never comes
    proc = hook._rec.proc
    hook.close()
    assert proc.poll() is not None and not list(tmp_path.glob("perf*.data"))
