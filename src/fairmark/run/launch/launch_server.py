"""The launch server: the launcher (`fairmark.run.launch.launcher`) kept for a run. One small C process, started once
per workload's rounds, starts each of its trials as the launcher starts its command — the clock, vfork, exec,
wait4, the clock — and answers with what the launcher's report line says.

Why: a trial through the launcher was Popen's work in fairmark (the environment encoded again, a pipe for its
errors, the child's descriptors closed), an exec of the launcher, and two more processes handing the CPU to
each other — on a busy machine each hand-over waits for a CPU, which is what made a trial of `true` cost
fairmark several milliseconds of wall time here (bench/harness_cost.py). Through the server a trial is one
message on a Unix socket and one answer; a request equal to the last trial's (a cell's trials) is not encoded
again, and its environment not sent again; fairmark is woken once, by the answer: a fixed record of integers
— the trial's pid, whether its group has a process left, the sizes of its outputs among them — read and
unpacked at once. The server opens the trial's output files itself and says how much the command wrote, so
fairmark opens nothing for a trial whose outputs are empty (fairmark's own CPU per trial is what a short
trial's measure is beside: issue 24).

What is measured is the launcher's measure: the same clock window (plus setsid in the child, about a
microsecond: the command needs a session of its own, which the launcher had before its clock started), the
rusage of the command's tree, and a peak RSS that starts at the server's memory — built like the launcher,
without a C library on Linux x86-64, it is a few dozen KiB (the launcher's: a few KiB; any command's own is
larger). The trial gets exactly its environment, stdin/stdout/stderr and working directory, its own session
and process group (the timeout and the leftover check kill the group), and its placement: the server joins the
trial's cgroup v1 cpuset and takes its CPU mask before the clock starts and goes back after it stops, as the
launching thread does for the launcher (`fairmark.run.launch.thread_cgroup`), so the command inherits its placement.

A run opens it (`serving`, around each workload's rounds). A trial outside one, one another thread starts
meanwhile, a placement the server cannot make (a cgroup a thread cannot join, a fork with a step in the
child), a request larger than its buffers and a host without a C compiler keep the launcher by Popen. The
server ends when fairmark closes its end of the socket (or exits); one that ended between trials is replaced
when the next request cannot be sent (no trial started).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import platform
import select
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

from fairmark.run.launch import thread_cgroup
from fairmark.run.launch.launcher import _cache_dir, _launcher_flags, c_program, report_fields
from fairmark.run.spec import TrialSpec


@functools.cache
def server_path() -> str | None:
    """The launch server built for this host (once, into $XDG_CACHE_HOME/fairmark, named by its source's hash)
    the way the launcher is (`fairmark.run.launch.launcher._launcher_flags`: without a C library on Linux x86-64, so
    that the commands' peak RSS starts at its few KiB as at the launcher's), or None where no C compiler builds
    one that answers (trials then start through the launcher)."""
    source = c_program("launch_server.c")
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    name = f"launch-server-{digest}-{platform.system().lower()}-{platform.machine()}"
    path = os.path.join(_cache_dir(), name)
    if os.access(path, os.X_OK):
        return path
    compilers = [cc for cc in ("cc", "gcc", "clang") if shutil.which(cc)]
    try:
        os.makedirs(_cache_dir(), exist_ok=True)
        work = tempfile.mkdtemp(prefix=".launch-server-", dir=_cache_dir())
    except OSError:
        return None
    try:
        src, out = os.path.join(work, "server.c"), os.path.join(work, "server")
        with open(src, "w") as fh:
            fh.write(source)
        for cc, flags in ((cc, flags) for cc in compilers for flags in _launcher_flags()):
            if _builds([cc, "-O2", *flags, "-o", out, src], out):
                os.replace(out, path)  # atomic: a concurrent build of the same source is the same file
                return path
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return None


def _builds(argv: list[str], out: str) -> bool:
    """Whether `argv` compiles a server that starts a command and reports its exit status."""
    try:
        built = subprocess.run(argv, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        server = LaunchServer(out) if built.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return False
    if server is None:
        return False
    try:
        server.start(("sh", "-c", "exit 7"), None, (os.devnull, os.devnull), dict(os.environ))
        answer = server.answer_within(30.0)
        report = report_fields(answer[1:11]) if answer else None
    except (OSError, ServerLost):
        report = None
    finally:
        server.close()
    if not report:
        return False
    return os.waitstatus_to_exitcode(report["status"]) == 7 and not report["exec_errno"]


# c/launch_server.c's buffers: a request's bytes (body[]) and the strings of its argv and environment (argv[], envp[])
MAX_REQUEST_BYTES, MAX_STRINGS = 1 << 21, (1 << 15) - 1


class ServerLost(Exception):
    """The launch server ended or answered something else than its protocol (the run goes on without it)."""


class ServerGone(ServerLost):
    """The request could not be sent: the server had ended (killed) since its last answer. No trial started."""


# What the server sends (c/launch_server.c): a trial's answer, and its start record (its pid; sent before the answer).
_ANSWER, _STARTED = struct.Struct("=15q"), struct.Struct("=3q")
ANSWER_MAGIC, PID_MAGIC = 0x666D2D616E737731, 0x666D2D7069643031
# The start records are read only when a trial's group is to be killed; the others wait in the socket and are
# read a few trials' at a time. Each takes ~0.75 KiB of the sender's buffer, and a full buffer would stop the
# server before its next trial's wait: its buffer is made room for 64 KiB (the kernel doubles it; capped by
# net.core.wmem_max), and the records read once they could fill a sixth of what it got, at most 32 trials'.
_PIDS_SNDBUF, _PIDS_UNREAD_MAX = 1 << 16, 32


def _absolute(path: str) -> str:
    """`path` from fairmark's directory; as it is when that directory is gone (the server's start directory)."""
    if os.path.isabs(path):
        return path
    try:
        return os.path.join(os.getcwd(), path)
    except OSError:
        return path


class LaunchServer:
    """One server process and fairmark's ends of its two sockets; one trial at a time (`lock`)."""

    def __init__(self, path: str):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.pids, their_pids = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fds = (theirs.fileno(), their_pids.fileno())
        try:
            with contextlib.suppress(OSError):
                their_pids.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _PIDS_SNDBUF)
            room = their_pids.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
            self._unread_max = max(1, min(_PIDS_UNREAD_MAX, room // 4096))
            # its own process group: a Ctrl-C at the terminal is fairmark's to handle; it ends at EOF
            self.proc = subprocess.Popen(
                [path, *map(str, fds)],
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                process_group=0,
            )
        except BaseException:
            self.sock.close()
            self.pids.close()
            raise
        finally:
            theirs.close()
            their_pids.close()
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self._env: object = None  # the environment the server holds (the last one sent)
        # the last request's command and placement, and that request with "-" for its environment: a cell's
        # trials send the same bytes, not encoded again
        self._key: tuple[Any, ...] | None = None
        self._same = b""
        # the current trial's pid (its group) and time.monotonic() once it had exec'd, from its start record (nan:
        # that record is left unread, with those of `_unread` finished trials before it)
        self._pid: int | None = None
        self._exec_at: float | None = None
        self._unread = 0
        # a request is (or may be) with the server: set before sendmsg, so an interrupt that lands between the
        # send and the caller learning of it still finds the trial to kill (`pid_within`)
        self.requested = False
        self._timeout_s = 0.0  # the answer socket's receive timeout (0: none)
        self.home_cpuset: str | None = None

    def start(
        self,
        argv: tuple[str, ...],
        cwd: str | None,
        outputs: tuple[str, str],
        env: Any,
        cpus: tuple[int, ...] = (),
        cgroup: tuple[str, str] = ("", ""),
    ) -> bool:
        """Send one trial (`outputs`: the files its stdout and stderr go to, which the server makes empty;
        `cgroup`: the tasks file to join, the one to go back to); `answer` follows. False, and nothing sent, for a
        request larger than the server takes (c/launch_server.c's buffers). `cwd` None: the server's own directory, which
        is fairmark's (fairmark does not change its directory)."""
        key = (argv, cwd, outputs, cpus, cgroup)
        if env is not None and key == self._key and (env is self._env or env == self._env):
            request = self._same  # the same command and environment as the last trial's
        else:
            request = self._request(argv, cwd, outputs, env, cpus, cgroup)
            if not request:
                return False
            # (a relative path is fairmark's directory's now: made again each time)
            absolute = all(os.path.isabs(p) for p in (cwd or "/", *outputs))
            self._key = key if absolute else None
        self._env = self._pid = self._exec_at = None  # the environment: unknown until the server took it
        self.requested = True
        try:
            self.sock.sendall(request)
        except OSError as exc:  # (it ended since its last answer: nothing was started)
            raise ServerGone(f"cannot send to the launch server: {exc}") from None
        self._env = env
        return True

    def _request(
        self,
        argv: tuple[str, ...],
        cwd: str | None,
        outputs: tuple[str, str],
        env: Any,
        cpus: tuple[int, ...],
        cgroup: tuple[str, str],
    ) -> bytes:
        """The request's bytes (its length first), b"" when too large; `_same` becomes the request of the same
        command with the environment the server then holds."""
        if env is None:
            encoded = [k + b"=" + v for k, v in os.environb.items()]
        else:
            encoded = [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()]
        paths = [_absolute(cwd) if cwd else "", *map(_absolute, outputs)]  # (the server changes directory)
        where = [os.fsencode(paths[0]), ",".join(map(str, cpus)).encode(), *map(os.fsencode, cgroup)]
        where += map(os.fsencode, paths[1:])
        command = b"\0".join([*where, b"%d" % len(argv), *map(os.fsencode, argv)]) + b"\0"
        body = command + b"\0".join([b"%d" % len(encoded), *encoded]) + b"\0"
        if len(body) >= MAX_REQUEST_BYTES or max(len(argv), len(encoded) + 1) >= MAX_STRINGS:
            return b""
        self._same = struct.pack("=I", len(command) + 2) + command + b"-\0"
        return struct.pack("=I", len(body)) + body

    def pid(self) -> int:
        """The trial's process (its group's id) once it has exec'd; -1: it was not started (the answer says
        why)."""
        return self._pid if self._pid is not None else self._started()[0]

    def _started(self) -> tuple[int, float]:
        """(the command's pid, time.monotonic() once it had exec'd)."""
        if self._exec_at is None:
            self._skip_unread()
            magic, pid, ns = _STARTED.unpack(self._exact(self.pids, _STARTED.size))
            if magic != PID_MAGIC:
                raise ServerLost(f"the launch server sent {magic:#x} for a trial's start")
            self._pid, self._exec_at = pid, ns / 1e9
        assert self._pid is not None
        return self._pid, self._exec_at

    def _skip_unread(self) -> None:
        """Read the start records of the finished trials (all there: each is sent before its trial's answer)."""
        if self._unread:
            self._exact(self.pids, self._unread * _STARTED.size)
            self._unread = 0

    def pid_within(self, timeout_s: float) -> int | None:
        """The current trial's pid if the server sends it within timeout_s; None when no pid comes (the request
        was never sent: an interrupt inside sendmsg)."""
        if self._exec_at is None:
            self._skip_unread()
            poller = select.poll()
            poller.register(self.pids, select.POLLIN)
            if not poller.poll(timeout_s * 1000):
                return None
        return self._started()[0]

    def answer_within(self, timeout_s: float | None) -> tuple[int, ...] | None:
        """The answer (`answer`) if it comes within timeout_s (None: no limit) of the command's exec, else None
        (the trial still runs; its answer comes once it ended). The trial's own clock started before that
        (before vfork), so no trial is cut before timeout_s of it."""
        data = self._receive(timeout_s or 0.0)  # (the command cannot have started before this call)
        while data is None:
            pid, started = self._started()
            if pid < 0:
                return self.answer()  # not started: the answer says why, at once
            left = started + (timeout_s or 0.0) - time.monotonic()
            if left <= 0:
                return None
            data = self._receive(left)
        return self._answered(data)

    def answer(self) -> tuple[int, ...]:
        """The trial's answer (c/launch_server.c): ANSWER_MAGIC, the launcher's report numbers (STATUS ERRNO WALL_NS
        USER_US SYS_US MAXRSS_KIB MINFLT MAJFLT NVCSW NIVCSW), PID, LEFT, OUT_BYTES and ERR_BYTES."""
        data = None
        while data is None:
            data = self._receive(0.0)
        return self._answered(data)

    def _receive(self, timeout_s: float) -> bytes | None:
        """The answer's bytes, None when none came within timeout_s (0: no limit). The socket's own receive
        timeout (SO_RCVTIMEO, set when it changes: a run's trials have one) waits, not a poll before each
        read."""
        if timeout_s != self._timeout_s:
            sec = int(timeout_s)
            usec = max(
                int((timeout_s - sec) * 1e6), 1 if timeout_s > 0 and sec == 0 else 0
            )  # (0 0: no limit)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", sec, usec))
            self._timeout_s = timeout_s
        try:
            data = self.sock.recv(_ANSWER.size)
        except BlockingIOError:  # (EAGAIN: the timeout)
            return None
        if len(data) < _ANSWER.size:  # (sent at once: the rest follows)
            data += self._exact(self.sock, _ANSWER.size - len(data))
        return data

    def _answered(self, data: bytes) -> tuple[int, ...]:
        answer = _ANSWER.unpack(data)
        self.requested = False
        if answer[0] != ANSWER_MAGIC:
            raise ServerLost(f"the launch server answered {data!r}")
        self._pid = answer[11]
        if self._exec_at is None:  # its start record waits unread, after the finished trials'
            self._exec_at = math.nan
            self._unread += 1
            if self._unread >= self._unread_max:
                self._skip_unread()
        return answer

    def report(self) -> dict[str, Any]:
        """The trial's report: the launcher's fields (`fairmark.run.launch.launcher.parse_launch_report`)."""
        return report_fields(self.answer()[1:11])

    def _exact(self, sock: socket.socket, n: int) -> bytes:
        """n bytes the server sent (or sends at once)."""
        data = b""
        while len(data) < n:
            try:
                chunk = sock.recv(n - len(data), socket.MSG_WAITALL)
            except BlockingIOError:  # (the answer socket's receive timeout)
                continue
            if not chunk:
                raise ServerLost("the launch server ended")
            data += chunk
        return data

    def close(self) -> None:
        """Close fairmark's ends: the server ends (after the command it may still wait for)."""
        self.sock.close()
        self.pids.close()
        if self.owner == os.getpid():
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5.0)  # reaped when it answered EOF at once; else left to end alone


# The run's server: `serving` opens it for the runner's thread, its first trial starts it.
_state: dict[str, Any] = {"thread": None, "server": None, "failed": False}  # (a forked child: `_forked`)
_state_lock = threading.Lock()


def _forked() -> None:
    """In a child fairmark forked: no serving block (the thread that forked keeps its id there; the server is
    the parent's), so `claim` need not ask the pid for every trial."""
    _state.update(thread=None, server=None, failed=False)


os.register_at_fork(after_in_child=_forked)


@contextlib.contextmanager
def serving() -> Iterator[None]:
    """Inside the block, trials this thread executes start through one launch server, started at the first of
    them and closed at the end (the runner holds it around a workload's rounds). Inside another thread's or
    an enclosing block it changes nothing."""
    with _state_lock:
        outer = _state["thread"] is not None
        if not outer:
            _state.update(thread=threading.get_ident(), server=None, failed=False)
    try:
        yield
    finally:
        if not outer:
            with _state_lock:
                server = _state["server"]
                _state.update(thread=None, server=None, failed=False)
            if server is not None:
                server.close()


def claim(spec: TrialSpec, thread_affinity: bool) -> LaunchServer | None:
    """The run's server, locked for this trial, when the trial can start through it (see the module docstring);
    else None: the trial starts through the launcher. `thread_affinity`: this OS sets a CPU mask the child
    inherits (Linux)."""
    if (
        _state["thread"] != threading.get_ident()
        or _state["failed"]
        or spec.fork_places
        or not spec.stdin_devnull
        or (spec.place_cpus and not thread_affinity)
        or (spec.place_cgroup and not (thread_affinity and thread_cgroup.joinable(spec.place_cgroup)))
    ):
        return None
    server = _state["server"]  # (one that ended since its last answer is replaced once a request fails)
    if server is None:
        path = server_path()
        try:
            server = _state["server"] = LaunchServer(path) if path else None
        except OSError:
            server = None
        if server is None:
            _state["failed"] = True  # not tried again for every trial of the run
            return None
    return server if server.lock.acquire(blocking=False) else None


def release(server: LaunchServer, lost: bool = False) -> None:
    """The trial is done with the server; `lost`: it is out of step (an interrupted trial, an answer it did not
    give), so it is closed and the next trial starts a new one."""
    server.lock.release()
    if lost:
        with _state_lock:
            if _state["server"] is server:
                _state["server"] = None
        server.close()


def cgroup_files(server: LaunchServer, cgroup: str | None) -> tuple[str, str]:
    """(the cpuset's tasks file the server joins, the one it goes back to: its own cpuset's), or ("", "")."""
    if not cgroup:
        return "", ""
    if server.home_cpuset is None:
        with open(f"/proc/{server.proc.pid}/cpuset") as fh:
            server.home_cpuset = fh.read().strip()
    home = f"{thread_cgroup.hierarchy_root(cgroup)}{server.home_cpuset.rstrip('/')}/tasks"
    return f"{cgroup}/tasks", home
