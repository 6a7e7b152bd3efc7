"""The local executor: `execute_spec(TrialSpec) -> Measured` (the seam and its contract: `fairmark.run.spec`).
Its own session and process group, monotonic wall clock, rusage of the whole waited tree, a timeout that kills
the whole group (SIGTERM, grace, SIGKILL); never raises for a failing command — a failure is data.
`execute(argv, **keywords)` is the same for a command that is not a trial (setup steps, tests)."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import select
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from fairmark.run.launch import launch_server, placer
from fairmark.run.launch.launcher import (
    group_alive,
    kill_group,
    launcher,
    outcome,
    read_launch_report,
    report_fields,
    waited_fields,
)
from fairmark.run.spec import RAW_BYTES, TAIL_BYTES, Measured, Status, TrialSpec

ExecResult = Measured  # the name callers used before the seam existed
__all__ = [
    "RAW_BYTES",
    "TAIL_BYTES",
    "ExecResult",
    "Measured",
    "Status",
    "TrialSpec",
    "execute",
    "execute_spec",
    "read_outputs",
    "read_text",
]


def read_text(path: str | Path, limit: int | None = None, *, tail: bool = True) -> str:
    """The file's text (its last or first `limit` bytes), "" when it does not exist. Plain os calls: this runs
    twice per trial, and the io layers' buffering and tty checks cost more than reading an empty file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return ""
    try:
        size = os.lseek(fd, 0, os.SEEK_END)  # (its size, without a stat record made of it)
        if size == 0:
            return ""
        start = max(0, size - limit) if limit is not None and tail else 0
        want = size - start if limit is None else min(limit, size - start)
        chunks, got = [], 0
        while got < want:  # pread returns less than asked near a file another process still writes
            chunk = os.pread(fd, want - got, start + got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", errors="replace")


def read_outputs(result: Measured, limit: int | None = None) -> tuple[str, str]:
    """The trial's stdout and stderr text (their last `limit` bytes), as `read_text` reads their files; an output
    its executor saw empty once nothing of the trial could write any more (`Measured.stdout_bytes`) is not
    opened."""
    return (
        "" if result.stdout_bytes == 0 else read_text(result.stdout_path, limit),
        "" if result.stderr_bytes == 0 else read_text(result.stderr_path, limit),
    )


_HAVE_PIDFD = hasattr(os, "pidfd_open")


def _wait_exit(pid: int, timeout_s: float) -> bool:
    """Whether `pid` exited within timeout_s (it stays unreaped for wait4). A pidfd (Linux ≥ 5.3) makes this
    one poll(2), with no watchdog thread per trial (~0.15 ms each); elsewhere a Timer thread does the job
    and this returns True at once."""
    if not _HAVE_PIDFD:
        return True
    try:
        fd = os.pidfd_open(pid)
    except OSError:  # the kernel has no pidfd_open (ENOSYS): ask waitid without reaping instead
        return _wait_exit_polling(pid, timeout_s)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout_s
        while True:  # poll's limit is an int of milliseconds; long timeouts wait in slices
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if poller.poll(min(left, 3600.0) * 1000 + 1):
                return True
    finally:
        os.close(fd)


def _wait_exit_polling(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:
            return True
        time.sleep(0.01)
    return False


def execute(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout_s: float | None = None,
    grace_s: float = 2.0,
    out_dir: str | Path,
    name: str = "trial",
    stdin_devnull: bool = True,
) -> Measured:
    return execute_spec(
        TrialSpec(
            tuple(argv), str(out_dir), name, env, str(cwd) if cwd else None, timeout_s, grace_s, stdin_devnull
        )
    )


# The placement (a variant's cpuset cgroup, its CPUs) is fairmark.run.launch.placer's, the agent's on a host too.
forks_to_place = placer.forks_to_place


_OUTPUT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
# How long an interrupted trial's pid is waited for when the interrupt may have come before the request left
# (inside sendmsg): the server sends a pid once the command has exec'd, well within this even under load.
PID_WAIT_S = 30.0


def execute_spec(spec: TrialSpec) -> Measured:
    for _ in range(2):  # a server that ended since its last trial is replaced once
        server = launch_server.claim(spec, placer.THREAD_AFFINITY)
        if server is None:
            break
        try:
            return _served(spec, server)
        except launch_server.ServerGone:
            continue
    if not os.path.isdir(spec.out_dir):
        os.makedirs(spec.out_dir, exist_ok=True)
    return _launched_trial(spec)


def _served(spec: TrialSpec, server: launch_server.LaunchServer) -> Measured:
    """The trial started by the run's launch server (`fairmark.run.launch.launch_server`: the launcher kept for the
    run), which makes its output files too. fairmark sleeps until the answer; it reads the trial's pid (its
    group) only to kill the group: at the timeout, when interrupted, and when the answer says a process of it
    is left (leftovers). Raises ServerGone (nothing started) when the server had ended since its last trial."""
    lost, sent, timed_out, outputs = True, False, False, (spec.stdout_path, spec.stderr_path)
    try:
        cgroup = launch_server.cgroup_files(server, spec.place_cgroup) if spec.place_cgroup else ("", "")
        for made in (False, True):
            sent = server.start(spec.argv, spec.cwd, outputs, spec.env, spec.place_cpus, cgroup)
            if not sent:  # a request too large for the server (an environment of megabytes): Popen, as before
                lost = False
                return _launched_trial(spec)
            within = server.answer_within(spec.timeout_s)
            if within is None:
                timed_out = True
                _kill_started(server, spec.grace_s)
            answer = server.answer() if within is None else within
            if answer[11] != -2 or answer[2] != errno.ENOENT or made:
                break
            os.makedirs(spec.out_dir, exist_ok=True)  # (its output directory was not there: nothing started)
        lost = False
    except launch_server.ServerGone:
        raise
    except launch_server.ServerLost as exc:
        return Measured.not_started(spec, f"cannot run {spec.argv[0]!r}: {exc}")
    except BaseException:  # Ctrl-C, SIGTERM/SIGHUP (errors.Terminated): the trial's group goes with the run
        if sent or server.requested:  # (requested: the interrupt may have come between the send and `sent`)
            _kill_started(server, spec.grace_s)
        raise
    finally:
        launch_server.release(server, lost)
    return _answered(spec, answer, timed_out)


def _answered(spec: TrialSpec, answer: tuple[int, ...], timed_out: bool) -> Measured:
    """The served trial's record from the server's answer (`LaunchServer.answer`: the launcher's report, the
    trial's pid, whether its group had a process left, its outputs' sizes)."""
    exec_errno, pid, left = answer[2], answer[11], answer[12]
    if exec_errno:
        why = "cannot make its output files" if pid == -2 else f"cannot start {spec.argv[0]!r}"
        return Measured.not_started(spec, f"{why}: {os.strerror(exec_errno)}")
    leftovers = 0
    if left and not timed_out and group_alive(pid):  # (the server's kill(-pid, 0); a zombie is none)
        # Background children outliving the trial would perturb the next one: end them, and say so.
        leftovers = 1
        kill_group(pid, spec.grace_s)
    # its outputs' sizes only when nothing of it could write later: no process left in its group, not cut short
    sizes = (None, None) if left or timed_out else (answer[13], answer[14])
    report = report_fields(answer[1:11])
    return _measured(spec, report["status"], None, report["wall_s"], timed_out, leftovers, report, sizes)


def _kill_started(server: launch_server.LaunchServer, grace_s: float) -> None:
    """Kill the group of the trial the server started (its pid comes once the command has exec'd)."""
    with contextlib.suppress(launch_server.ServerLost, OSError):
        pid = server.pid_within(PID_WAIT_S)
        if pid is not None and pid > 0:
            kill_group(pid, grace_s)


def _launched_trial(spec: TrialSpec) -> Measured:
    """The trial started through the launcher by Popen here (outside a run's rounds, or placed in a way the
    launch server cannot)."""
    timed_out = threading.Event()
    # Plain descriptors, not file objects: the trial writes to them, fairmark never does.
    fo = os.open(spec.stdout_path, _OUTPUT_FLAGS, 0o644)
    try:
        fe = os.open(spec.stderr_path, _OUTPUT_FLAGS, 0o644)
        try:
            with contextlib.ExitStack() as placed:
                joined = placer.join(spec.place_cgroup, placed)
                argv, pipe = _launched(spec, placed)
                t0 = time.monotonic()
                try:
                    proc = _spawn(spec, fo, fe, joined, argv, pipe[1:])
                except (OSError, subprocess.SubprocessError) as exc:
                    why = getattr(exc, "strerror", None) or exc
                    return Measured.not_started(spec, f"cannot start {spec.argv[0]!r}: {why}")
                finally:
                    for fd in pipe[1:]:
                        os.close(fd)  # the launcher's end: ours reads EOF once the launcher exited
                status, ru = _wait(proc, spec, timed_out)
                wall = time.monotonic() - t0
                report = read_launch_report(pipe[0]) if pipe else None
        finally:
            os.close(fe)
    finally:
        os.close(fo)
    return _finished(spec, proc.pid, status, ru, wall, timed_out.is_set(), report)


def _finished(
    spec: TrialSpec,
    pgid: int,
    status: int,
    ru: Any,
    wall: float,
    timed_out: bool,
    report: dict[str, Any] | None,
) -> Measured:
    """The trial's record once its launcher was waited for (`status`, `ru`: the launcher's)."""
    if report and report["exec_errno"]:
        return Measured.not_started(
            spec, f"cannot start {spec.argv[0]!r}: {os.strerror(report['exec_errno'])}"
        )
    leftovers = 0
    if not timed_out and group_alive(pgid):
        # Background children outliving the trial would perturb the next one: end them, and say so.
        leftovers = 1
        kill_group(pgid, spec.grace_s)
    return _measured(spec, status, ru, wall, timed_out, leftovers, report)


def _launched(spec: TrialSpec, stack: contextlib.ExitStack) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The argv that starts the trial through the launcher (`fairmark.run.launch.launcher`: the workload's
    own peak RSS, not fairmark's) and the pipe for its report (the read end closed with `stack`); the bare
    argv and no pipe where no launcher could be built (no peak RSS is recorded then)."""
    path, _ = launcher()
    if path is None:
        return spec.argv, ()
    r, w = os.pipe()
    stack.callback(os.close, r)
    return (path, str(w), *spec.argv), (r, w)


@functools.cache
def _devnull() -> int:
    """/dev/null for the trials' stdin, opened once (subprocess.DEVNULL opens and closes it for every trial);
    close-on-exec, so only a trial's own stdin is it."""
    return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)


def _spawn(
    spec: TrialSpec,
    fo: int,
    fe: int,
    joined: bool = False,
    argv: tuple[str, ...] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.Popen[bytes]:
    """Start the trial's process in its own session and process group (the timeout kills the whole tree),
    placed by `fairmark.run.launch.placer` (vfork where the launching thread hands the placement down: the fork path
    cost ~4 ms more per measured trial here, bench/harness_cost.py). `argv` is the launcher's (`_launched`),
    which starts the command by vfork itself: what is placed here is inherited."""
    return placer.popen(
        argv or spec.argv,
        cgroup=spec.place_cgroup,
        cpus=spec.place_cpus,
        fork_places=spec.fork_places,
        joined=joined,
        stdin=_devnull() if spec.stdin_devnull else None,
        stdout=fo,
        stderr=fe,
        env=spec.env,
        cwd=spec.cwd,
        pass_fds=pass_fds,  # the launcher's report descriptor
    )


def _wait(proc: subprocess.Popen[bytes], spec: TrialSpec, timed_out: threading.Event) -> tuple[int, Any]:
    """wait4 the leader, killing its group at the timeout; returns (wait status, rusage)."""
    timeout_s, grace_s = spec.timeout_s, spec.grace_s
    try:
        if timeout_s and not _wait_exit(proc.pid, timeout_s):
            timed_out.set()
            kill_group(proc.pid, grace_s)
        timer = None
        if timeout_s and not _HAVE_PIDFD:

            def _expire() -> None:
                timed_out.set()
                kill_group(proc.pid, grace_s)

            timer = threading.Timer(timeout_s, _expire)
            timer.daemon = True
            timer.start()
        _, status, ru = os.wait4(proc.pid, 0)
    except BaseException:  # Ctrl-C, SIGTERM/SIGHUP (errors.Terminated): the trial's group goes with the run
        kill_group(proc.pid, grace_s)
        os.wait4(proc.pid, 0)
        raise
    proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
    if timer:
        timer.cancel()
    return status, ru


def _measured(
    spec: TrialSpec,
    status: int,
    ru: Any,
    wall: float,
    timed_out: bool,
    leftovers: int,
    report: dict[str, Any] | None = None,
    sizes: tuple[int | None, int | None] = (None, None),
) -> Measured:
    """The trial's record (run.launch.launcher.waited_fields: the launcher's report, else the waited tree's);
    `sizes`: those of its stdout and stderr when its executor knows them (`Measured.stdout_bytes`)."""
    status, fields = waited_fields(status, ru, wall, report)
    exit_code, sig, st, err = outcome(status, spec.timeout_s if timed_out else None)
    return Measured(
        argv=spec.argv,
        status=st,
        exit_code=exit_code,
        signal=sig,
        stdout_path=spec.stdout_path,
        stderr_path=spec.stderr_path,
        error=err,
        leftovers_killed=leftovers,
        stdout_bytes=sizes[0],
        stderr_bytes=sizes[1],
        **fields,
    )
