"""The launch server: a run's trials start through one small C process, started once per workload's rounds,
that starts each trial's launcher (`fairmark.run.launcher`) as subprocess.Popen started it — in a session of
its own, with exactly the trial's environment, stdin/stdout/stderr, working directory and the launcher's
report descriptor, nothing else open — and answers with the launcher's wait status, rusage and report.

Why: Popen's work in fairmark (the environment encoded again, a pipe for its errors, the child's descriptors
closed, the waits and wakes in Python) was most of what fairmark spent per trial besides the store write
(~0.2–0.3 ms of CPU per trial here under load, bench/harness_cost.py). Through the server a trial is one
message with three descriptors on a Unix socket and one answer; an environment equal to the last trial's is
not sent again.

What is measured is unchanged: the launcher still starts the command (vfork, exec, wait4) and takes its clock
and rusage, and the command's peak RSS still starts from the launcher's few KiB — the server's own memory
never reaches a trial (the launcher's exec replaces it). The placement is the launching thread's, done by the
server for itself: it joins the trial's cgroup v1 cpuset and takes its CPU mask before it starts the launcher
and goes back after the wait (`fairmark.run.thread_cgroup` does the same for a thread).

A run opens it (`serving`, around each workload's rounds); a trial outside one, one another thread starts
meanwhile, a placement the server cannot make (a cgroup a thread cannot join, a fork with a step in the child)
and a host without a C compiler keep Popen. The server ends when fairmark closes its end of the socket (or
exits); one found dead between trials is replaced.
"""

from __future__ import annotations

import array
import contextlib
import functools
import hashlib
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
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fairmark.run import thread_cgroup
from fairmark.run.launcher import _cache_dir, launcher, parse_launch_report
from fairmark.run.spec import TrialSpec

SERVER_C = r"""
/* fairmark's launch server (fairmark.run.launch_server.SERVER_C): launch-server SOCKET_FD PIDS_FD LAUNCHER
   Starts trials one at a time for the fairmark at the other end of the Unix stream socket SOCKET_FD, each as
   subprocess.Popen started the launcher for it: LAUNCHER REPORT_FD COMMAND [ARG...] in a session of its own,
   with exactly the trial's environment, descriptors and working directory and nothing else open but
   REPORT_FD. A request is a native unsigned 32-bit length and that many bytes of NUL-terminated fields: CWD,
   CPUS (a comma list or ""), JOIN and LEAVE (cgroup v1 tasks files or ""), ARGC, ARGV..., then ENVC and
   ENV... or "-" (the previous request's environment); three descriptors ride with its first bytes
   (SCM_RIGHTS): the trial's stdin, stdout and stderr. "PID T_NS" — the launcher's pid (its group's id; -1
   when it could not be started) and CLOCK_MONOTONIC when it had exec'd — goes to the socket PIDS_FD:
   fairmark reads that channel only when its timeout expires, to kill the group, or after the answer, so it is
   not woken in the middle of a trial. Two lines answer on SOCKET_FD
   once the launcher has been waited for: "fairmark-served 1 STATUS ERRNO WALL_NS USER_US SYS_US MINFLT MAJFLT
   NVCSW NIVCSW" (the launcher's wait status and the rusage of its tree, ERRNO: why it did not start), then
   the launcher's own report line, empty if it wrote none. The server takes the descriptors, the directory and
   the placement itself before it starts the launcher (which inherits them) and undoes the placement after the
   wait. Exits 0 at EOF, 126 on a malformed request or a lost socket. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif
#ifndef MSG_CMSG_CLOEXEC
#define MSG_CMSG_CLOEXEC 0
#endif
#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

static int sock = -1, pids = -1, home = -1, null = -1;
static char *buf, **env, *envbuf, *launcher;
static size_t bufcap;
static volatile int exec_errno;
static char **run_argv; /* what the child execs: the launcher, its report descriptor, the command */
static int run_report;  /* the pipe's write end the launcher reports on */

static int say(int to, const char *line, int len) {
    while (len > 0) {
        ssize_t n = send(to, line, (size_t)len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        line += n;
        len -= (int)n;
    }
    return 0;
}

/* The request's length and descriptors, then its body into buf: 0 at EOF, -1 malformed, else the length. */
static long receive(int fds[3]) {
    uint32_t len = 0;
    size_t got = 0;
    char ctl[CMSG_SPACE(3 * sizeof(int))];
    fds[0] = fds[1] = fds[2] = -1;
    while (got < sizeof len) {
        struct iovec iov = {(char *)&len + got, sizeof len - got};
        struct msghdr msg;
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctl;
        msg.msg_controllen = sizeof ctl;
        ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n == 0 && got == 0 ? 0 : -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                c->cmsg_len == CMSG_LEN(3 * sizeof(int)) && fds[0] < 0)
                memcpy(fds, CMSG_DATA(c), 3 * sizeof(int));
        got += (size_t)n;
    }
    if (fds[0] < 0 || len == 0 || len > (1u << 28)) return -1;
    if (len + 1 > bufcap) {
        free(buf);
        bufcap = len + 1;
        if (!(buf = malloc(bufcap))) return -1;
    }
    for (got = 0; got < len;) {
        ssize_t n = read(sock, buf + got, len - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    buf[len] = 0;
    return (long)len;
}

/* Splits [p, end) at its NULs into at most max fields; returns how many. */
static size_t fields(char *p, char *end, char **out, size_t max) {
    size_t n = 0;
    for (; p < end && n < max; p += strlen(p) + 1) out[n++] = p;
    return n;
}

/* The environment at REST (ENVC, then ENVC fields up to END), kept for the requests that say "-". */
static int take_env(char *rest, char *end) {
    long envc = strtol(rest, NULL, 10);
    char *first = rest + strlen(rest) + 1;
    if (envc < 0 || first > end || envc > end - first + 1) return -1;
    free(env);
    free(envbuf);
    env = NULL;
    if (!(envbuf = malloc((size_t)(end - first) + 1)) || !(env = calloc((size_t)envc + 1, sizeof *env)))
        return -1;
    memcpy(envbuf, first, (size_t)(end - first));
    envbuf[end - first] = 0;
    return fields(envbuf, envbuf + (end - first), env, (size_t)envc) == (size_t)envc ? 0 : -1;
}

/* vfork in a frame of its own, its arguments in statics: the child runs below it and never returns, so no
   variable of the caller can be clobbered. The child: its own session, the report descriptor kept open
   across exec, the launcher. */
static pid_t __attribute__((noinline)) spawn(void) {
    pid_t pid = vfork();
    if (pid == 0) {
        setsid();
        if (fcntl(run_report, F_SETFD, 0) == 0) execve(launcher, run_argv, env);
        exec_errno = errno;
        _exit(127);
    }
    return pid;
}

static int write_zero(const char *path) {
    int fd = open(path, O_WRONLY | O_CLOEXEC), err = 0;
    if (fd < 0) return errno;
    if (write(fd, "0", 1) != 1) err = errno;
    close(fd);
    return err;
}

#ifdef __linux__
static cpu_set_t mask;
#endif

/* This process in the trial's cpuset (JOIN) and on its CPUs (CPUS), the launcher inheriting both; 0 or an
   errno. The CPU mask is saved first: joining a cpuset replaces it. */
static int place(const char *cpus, const char *join) {
    if (!*cpus && !*join) return 0;
#ifdef __linux__
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) return errno;
    if (*join && write_zero(join) != 0) return errno ? errno : EIO;
    if (!*cpus) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const char *p = cpus; *p; p += *p == ',') {
        char *end;
        long cpu = strtol(p, &end, 10);
        if (end == p || cpu < 0 || cpu >= CPU_SETSIZE) return EINVAL;
        CPU_SET((int)cpu, &set);
        p = end;
    }
    return sched_setaffinity(0, sizeof set, &set) ? errno : 0;
#else
    return ENOSYS;
#endif
}

static void unplace(const char *cpus, const char *join, const char *leave) {
    if (*join && *leave) write_zero(leave);
#ifdef __linux__
    if (*cpus || *join) sched_setaffinity(0, sizeof mask, &mask);
#endif
    (void)cpus;
}

/* The trial's descriptors as this process's 0, 1, 2 and its working directory; 0 or an errno. */
static int ready(int fds[3], const char *cwd) {
    int err = 0;
    for (int i = 0; i < 3; i++) {
        if (!err && dup2(fds[i], i) < 0) err = errno;
        close(fds[i]);
    }
    if (!err && (*cwd ? chdir(cwd) : fchdir(home)) != 0) err = errno;
    return err;
}

/* The pid and when it exec'd (on PIDS_FD), the wait, the placement undone, the answer; 0 or -1 (a socket
   lost). */
static int answer(pid_t pid, int report, struct timespec t0, char *const f[5]) {
    struct timespec t1;
    struct rusage ru;
    char line[1024];
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int status = 0, got = 0,
        n = snprintf(line, sizeof line, "%ld %lld\n", (long)pid, (long long)t1.tv_sec * 1000000000LL + t1.tv_nsec);
    if (say(pids, line, n) != 0) return -1;
    memset(&ru, 0, sizeof ru);
    if (pid > 0)
        while (wait4(pid, &status, 0, &ru) < 0)
            if (errno != EINTR) return -1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    unplace(f[1], f[2], f[3]); /* before the answer: fairmark may remove the cpuset once it has it */
    n = snprintf(line, 512, "fairmark-served 1 %d %d %lld %lld %lld %ld %ld %ld %ld\n", status, exec_errno,
                 (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec),
                 (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
                 (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec, (long)ru.ru_minflt,
                 (long)ru.ru_majflt, (long)ru.ru_nvcsw, (long)ru.ru_nivcsw);
    while (report >= 0 && n + got < (int)sizeof line - 2) { /* the launcher's report: one short line */
        ssize_t r = read(report, line + n + got, sizeof line - 2 - (size_t)(n + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (int)r;
    }
    while (got > 0 && line[n + got - 1] == '\n') got--;
    line[n + got] = '\n';
    return say(sock, line, n + got + 1);
}

/* One request: 0 answered, -1 malformed or a socket lost. */
static int serve(long len, int fds[3]) {
    char *f[5], **argv, *end = buf + len, wfd[16];
    int pipefd[2] = {-1, -1};
    struct timespec t0;
    pid_t pid = -1;
    if (fields(buf, end, f, 5) < 5) return -1;
    long argc = strtol(f[4], NULL, 10);
    char *rest = f[4] + strlen(f[4]) + 1;
    if (argc < 1 || argc > end - rest || !(argv = calloc((size_t)argc + 3, sizeof *argv))) return -1;
    if (fields(rest, end, argv + 2, (size_t)argc) != (size_t)argc) return -1;
    rest = argv[argc + 1] + strlen(argv[argc + 1]) + 1;
    if (rest >= end || (strcmp(rest, "-") != 0 && take_env(rest, end) != 0)) return -1;
    exec_errno = ready(fds, f[0]);
    if (!exec_errno && pipe2(pipefd, O_CLOEXEC) != 0) exec_errno = errno;
    if (!exec_errno) exec_errno = place(f[1], f[2]);
    snprintf(wfd, sizeof wfd, "%d", pipefd[1]);
    argv[0] = launcher;
    argv[1] = wfd;
    run_argv = argv;
    run_report = pipefd[1];
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!exec_errno && (pid = spawn()) < 0) exec_errno = errno;
    if (pipefd[1] >= 0) close(pipefd[1]); /* the launcher's: ours reads EOF once it exited */
    int done = answer(pid, pid > 0 ? pipefd[0] : -1, t0, f);
    if (pipefd[0] >= 0) close(pipefd[0]);
    for (int i = 0; i < 3; i++) dup2(null, i); /* the trial's files are not held open until the next one */
    free(argv);
    return done;
}

int main(int argc, char **argv) {
    int fds[3];
    if (argc != 4) {
        fprintf(stderr, "usage: %s SOCKET_FD PIDS_FD LAUNCHER\n", argv[0]);
        return 126;
    }
    sock = atoi(argv[1]);
    pids = atoi(argv[2]);
    launcher = argv[3];
    null = open("/dev/null", O_RDWR | O_CLOEXEC);
    home = open(".", O_RDONLY | O_CLOEXEC);
    if (null < 0 || home < 0 || fcntl(sock, F_SETFD, FD_CLOEXEC) != 0 || fcntl(pids, F_SETFD, FD_CLOEXEC) != 0)
        return 126;
    for (;;) {
        long len = receive(fds);
        if (len == 0) return 0;
        if (len < 0 || serve(len, fds) != 0) return 126;
    }
}
"""


@functools.cache
def server_path() -> str | None:
    """The launch server built for this host (once, into $XDG_CACHE_HOME/fairmark, named by its source's hash),
    or None where no launcher exists or no C compiler builds a server that answers (trials then start through
    the launcher by Popen)."""
    launcher_path, _ = launcher()
    digest = hashlib.sha256(SERVER_C.encode()).hexdigest()[:16]
    name = f"launch-server-{digest}-{platform.system().lower()}-{platform.machine()}"
    path = os.path.join(_cache_dir(), name)
    if launcher_path is None or os.access(path, os.X_OK):
        return path if launcher_path else None
    compilers = [cc for cc in ("cc", "gcc", "clang") if shutil.which(cc)]
    try:
        os.makedirs(_cache_dir(), exist_ok=True)
        work = tempfile.mkdtemp(prefix=".launch-server-", dir=_cache_dir())
    except OSError:
        return None
    try:
        src, out = os.path.join(work, "server.c"), os.path.join(work, "server")
        with open(src, "w") as fh:
            fh.write(SERVER_C)
        for cc in compilers:
            if _builds([cc, "-O2", "-o", out, src], out, launcher_path):
                os.replace(out, path)  # atomic: a concurrent build of the same source is the same file
                return path
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return None


def _builds(argv: list[str], out: str, launcher_path: str) -> bool:
    """Whether `argv` compiles a server that starts a command through the launcher and reports its status."""
    try:
        built = subprocess.run(argv, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        server = LaunchServer(out, launcher_path) if built.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return False
    if server is None:
        return False
    try:
        devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        try:
            server.start(("sh", "-c", "exit 7"), None, (devnull, devnull, devnull), dict(os.environ))
        finally:
            os.close(devnull)
        served, report = server.report() if server.answered(30.0) else (None, None)
    except (OSError, ServerLost):
        served = report = None
    finally:
        server.close()
    if not served or not report:
        return False
    return os.waitstatus_to_exitcode(report["status"]) == 7


def _ran_or_waited_s(pid: int) -> float:
    """The time process `pid` has spent on a CPU or in a run queue (0 where /proc has no schedstat)."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as fh:
            ran_ns, waited_ns, _ = fh.read().split()
    except (OSError, ValueError):
        return 0.0
    return (int(ran_ns) + int(waited_ns)) / 1e9


class ServerLost(Exception):
    """The launch server ended or answered something else than its protocol (the run goes on without it)."""


@dataclass(frozen=True)
class Served:
    """The launch server's answer about the launcher it started: its wait status, the rusage of its tree (as
    wait4 gives it), the server's clock around it, and why it did not start (an errno, 0 when it did)."""

    status: int
    errno: int
    wall_s: float
    ru: Any  # ru_utime, ru_stime, ru_minflt, ru_majflt, ru_nvcsw, ru_nivcsw as in resource.struct_rusage


def _parse_served(line: bytes) -> Served | None:
    words = line.decode("ascii", "replace").split()
    if len(words) != 11 or words[:2] != ["fairmark-served", "1"]:
        return None
    try:
        v = [int(w) for w in words[2:]]
    except ValueError:
        return None
    ru = types.SimpleNamespace(
        ru_utime=v[3] / 1e6,
        ru_stime=v[4] / 1e6,
        ru_minflt=v[5],
        ru_majflt=v[6],
        ru_nvcsw=v[7],
        ru_nivcsw=v[8],
    )
    return Served(status=v[0], errno=v[1], wall_s=v[2] / 1e9, ru=ru)


class LaunchServer:
    """One server process and fairmark's ends of its two sockets; one trial at a time (`lock`)."""

    def __init__(self, path: str, launcher_path: str):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.pids, their_pids = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fds = (theirs.fileno(), their_pids.fileno())
        try:
            # its own process group: a Ctrl-C at the terminal is fairmark's to handle; it ends at EOF
            self.proc = subprocess.Popen(
                [path, *map(str, fds), launcher_path],
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
        self._bufs = {self.sock: b"", self.pids: b""}
        self._env: object = None  # the environment the server holds (the last one sent)
        self._pid: tuple[int, float] | None = None  # the current trial's launcher and its start, once read
        self._poller = select.poll()
        self._poller.register(self.sock, select.POLLIN)
        self.home_cpuset: str | None = None

    def start(
        self,
        argv: tuple[str, ...],
        cwd: str | None,
        fds: tuple[int, int, int],
        env: Any,
        cpus: tuple[int, ...] = (),
        cgroup: tuple[str, str] = ("", ""),
    ) -> None:
        """Send one trial (`cgroup`: the tasks file to join, the one to go back to); `pid` and `report` follow."""
        if env is None or env != self._env:
            pairs = (
                os.environb.items()
                if env is None
                else ((os.fsencode(k), os.fsencode(v)) for k, v in env.items())
            )
            encoded = [k + b"=" + v for k, v in pairs]
            env_part = [b"%d" % len(encoded), *encoded]
        else:
            env_part = [b"-"]  # the same environment as the last trial's: not encoded and sent again
        if cwd is None or not os.path.isabs(cwd):
            # (fairmark's own directory gone: the server's start directory)
            with contextlib.suppress(OSError):
                cwd = os.path.join(os.getcwd(), cwd or "")
        where = [os.fsencode(cwd or ""), ",".join(map(str, cpus)).encode(), *map(os.fsencode, cgroup)]
        body = b"\0".join([*where, b"%d" % len(argv), *map(os.fsencode, argv), *env_part]) + b"\0"
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
        self._env, self._pid = None, None  # the environment: unknown until the server took the request
        try:
            self.sock.sendmsg([struct.pack("=I", len(body)), body], rights)
        except OSError as exc:
            raise ServerLost(f"cannot send to the launch server: {exc}") from None
        self._env = env

    def pid(self) -> int:
        """The trial's launcher (its group's id) once it has exec'd; -1: it was not started (the answer says
        why)."""
        return self._started()[0]

    def _started(self) -> tuple[int, float]:
        """(the launcher's pid, time.monotonic() when it had exec'd)."""
        if self._pid is None:
            line = self._line(self.pids)
            try:
                pid, ns = map(int, line.split())
            except ValueError:
                raise ServerLost(f"the launch server answered {line!r}") from None
            self._pid = (pid, ns / 1e9)
        return self._pid

    def answered(self, timeout_s: float) -> bool:
        """Whether the answer came within timeout_s of the trial's start (it stays to be read by `report`). The
        trial's clock starts in its launcher, which first has to run: the timeout counts from the launcher's
        exec plus all the time it has spent on a CPU or waiting for one since (Linux's schedstat), so that no
        trial is cut before timeout_s of its own clock, however long a busy machine kept the launcher waiting."""
        deadline = time.monotonic() + timeout_s  # the launcher cannot have started earlier
        while not self._readable(deadline - time.monotonic()):
            pid, started = self._started()
            if pid < 0:
                return True  # not started: the answer says why, at once
            late = started + timeout_s + _ran_or_waited_s(pid)
            if time.monotonic() >= late:
                return False
            deadline = late
        return True

    def _readable(self, timeout_s: float) -> bool:
        if b"\n" in self._bufs[self.sock]:
            return True
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:  # poll takes int milliseconds: long waits in slices
            if self._poller.poll(min(left, 3600.0) * 1000 + 1):
                return True
        return False

    def report(self) -> tuple[Served, dict[str, Any] | None]:
        """The server's answer and the launcher's own report (`fairmark.run.launcher.parse_launch_report`;
        None when the launcher wrote none: killed, or not started)."""
        line = self._line(self.sock)
        served = _parse_served(line)
        if served is None:
            raise ServerLost(f"the launch server answered {line!r}")
        return served, parse_launch_report(self._line(self.sock))

    def _line(self, sock: socket.socket) -> bytes:
        while b"\n" not in self._bufs[sock]:
            chunk = sock.recv(4096)
            if not chunk:
                raise ServerLost("the launch server ended")
            self._bufs[sock] += chunk
        line, _, self._bufs[sock] = self._bufs[sock].partition(b"\n")
        return line

    def close(self) -> None:
        """Close fairmark's ends: the server ends (after the command it may still wait for)."""
        self.sock.close()
        self.pids.close()
        if self.owner == os.getpid():
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5.0)  # reaped when it answered EOF at once; else left to end alone


# The run's server: `serving` opens it for the runner's thread, its first trial starts it.
_state: dict[str, Any] = {"thread": None, "pid": None, "server": None, "failed": False}
_state_lock = threading.Lock()


@contextlib.contextmanager
def serving() -> Iterator[None]:
    """Inside the block, trials this thread executes start through one launch server, started at the first of
    them and closed at the end (the runner holds it around a workload's rounds). Inside another thread's or
    an enclosing block it changes nothing."""
    with _state_lock:
        outer = _state["thread"] is not None and _state["pid"] == os.getpid()
        if not outer:
            _state.update(thread=threading.get_ident(), pid=os.getpid(), server=None, failed=False)
    try:
        yield
    finally:
        if not outer:
            with _state_lock:
                server = _state["server"]
                _state.update(thread=None, pid=None, server=None, failed=False)
            if server is not None:
                server.close()


def claim(spec: TrialSpec, thread_affinity: bool) -> LaunchServer | None:
    """The run's server, locked for this trial, when the trial can start through it (see the module docstring);
    else None: the trial starts through the launcher. `thread_affinity`: this OS sets a CPU mask the child
    inherits (Linux)."""
    if (
        _state["thread"] != threading.get_ident()
        or _state["pid"] != os.getpid()
        or _state["failed"]
        or spec.fork_places
        or not spec.stdin_devnull
        or (spec.place_cpus and not thread_affinity)
        or (spec.place_cgroup and not (thread_affinity and thread_cgroup.joinable(spec.place_cgroup)))
    ):
        return None
    server = _state["server"]
    if server is not None and server.proc.poll() is not None:  # it ended between trials (killed): a new one
        server.close()
        server = _state["server"] = None
    if server is None:
        path, launcher_path = server_path(), launcher()[0]
        try:
            server = _state["server"] = LaunchServer(path, launcher_path) if path and launcher_path else None
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
