"""The launch server: the launcher (`fairmark.run.launcher`) kept for a run. One small C process, started once
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
launching thread does for the launcher (`fairmark.run.thread_cgroup`), so the command inherits its placement.

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

from fairmark.run import thread_cgroup
from fairmark.run.launcher import PRELUDE_C, _cache_dir, _launcher_flags, report_fields
from fairmark.run.spec import TrialSpec

SERVER_C = (
    r"""
/* fairmark's launch server (fairmark.run.launch_server.SERVER_C): launch-server SOCKET_FD PIDS_FD
   The launcher (fairmark.run.launcher.LAUNCHER_C) kept for a run: it starts the trials one at a time for the
   fairmark at the other end of the Unix stream socket SOCKET_FD, each as the launcher starts its command — the
   clock, vfork, exec (PATH searched as Python's subprocess does), wait4, the clock — and answers on SOCKET_FD
   with what the launcher's report line says, as 15 native 64-bit integers: ANSWER_MAGIC STATUS ERRNO WALL_NS
   USER_US SYS_US MAXRSS_KIB MINFLT MAJFLT NVCSW NIVCSW PID LEFT OUT_BYTES ERR_BYTES (PID: the command's, -1
   when not started, -2 when its output files could not be made (ERRNO: why); LEFT: 1 when its process group
   still had a process once the command was waited for — kill(-PID, 0) — else 0; the sizes of its stdout and
   stderr then). A request is a native unsigned 32-bit length and that many bytes of NUL-terminated fields:
   CWD, CPUS (a comma list or ""), JOIN and LEAVE (cgroup v1 tasks files or ""), STDOUT and STDERR (the files
   the command writes: created, or emptied, by the server), ARGC, ARGV..., then ENVC and ENV... or "-" (the
   previous request's environment). Before the clock starts the server takes the output files as its own 1
   and 2 (its 0 is /dev/null, every trial's stdin), moves to CWD and into the placement (the command inherits
   all of it); between the clock's start and the exec the child only calls setsid (the command's own session
   and process group: the launcher's child did not need it, its launcher had one). PID_MAGIC PID T_NS — the
   command's pid (-1: not started) and CLOCK_MONOTONIC once it has exec'd, 3 native 64-bit integers — goes to
   the socket PIDS_FD, which fairmark reads only to kill the trial's group (and then those of a few trials at
   once, to keep the socket from filling), so it is not woken in the middle of a trial. Exits 0 at EOF, 126 on
   a malformed request or a lost socket. Built with FAIRMARK_NOLIBC (Linux x86-64) it uses no C library, as
   the launcher: its memory, where the command's peak RSS starts, is a few KiB plus the largest request. */
#ifndef FAIRMARK_NOLIBC
#define _GNU_SOURCE
#endif
"""
    + PRELUDE_C
    + r"""
#ifdef FAIRMARK_NOLIBC
struct iovec { void *iov_base; size_t iov_len; };
struct msghdr {
    void *msg_name;
    unsigned msg_namelen;
    struct iovec *msg_iov;
    size_t msg_iovlen;
    void *msg_control;
    size_t msg_controllen;
    int msg_flags;
};
#define EINVAL 22
#define ENOSYS 38
#define E2BIG 7
#define O_WRONLY 1
#define O_RDWR 2
#define O_CREAT 0100
#define O_CLOEXEC 02000000
#define SEEK_SET 0
#define SEEK_END 2
#define MSG_NOSIGNAL 0x4000
#define fm_read(fd, b, n) sc(0, fd, (long)(b), n, 0)
#define fm_open(p, f) sc(2, (long)(p), f, 0, 0)
#define fm_create(p, f, m) sc(2, (long)(p), f, m, 0)
#define fm_close(fd) sc(3, fd, 0, 0, 0)
#define fm_lseek(fd, o, w) sc(8, fd, o, w, 0)
#define fm_dup2(a, b) sc(33, a, b, 0, 0)
#define fm_sendmsg(fd, m, f) sc(46, fd, (long)(m), f, 0)
#define fm_ftruncate(fd, n) sc(77, fd, n, 0, 0)
#define fm_chdir(p) sc(80, (long)(p), 0, 0, 0)
#define fm_fchdir(fd) sc(81, fd, 0, 0, 0)
#define fm_setsid() sc(112, 0, 0, 0, 0)
#define fm_setaffinity(n, m) sc(203, 0, n, (long)(m), 0)
#define fm_getaffinity(n, m) sc(204, 0, n, (long)(m), 0)
#define fm_kill(pid, sig) sc(62, pid, sig, 0, 0)
#define ESRCH 3
static long fm_size(int fd) { /* st_size of x86-64's struct stat */
    long st[18], r = sc(5, fd, (long)st, 0, 0);
    return r < 0 ? r : st[6];
}
#else
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <string.h>
#include <signal.h>
#ifdef __linux__
#include <sched.h>
#endif
#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif
#define fm_read(fd, b, n) fm_ret(read(fd, b, n))
#define fm_open(p, f) fm_ret(open(p, f))
#define fm_create(p, f, m) fm_ret(open(p, f, m))
#define fm_close(fd) close(fd)
#define fm_lseek(fd, o, w) fm_ret(lseek(fd, o, w))
#define fm_dup2(a, b) fm_ret(dup2(a, b))
#define fm_sendmsg(fd, m, f) fm_ret(sendmsg(fd, m, f))
#define fm_ftruncate(fd, n) fm_ret(ftruncate(fd, n))
static long fm_size(int fd) {
    struct stat st;
    return fstat(fd, &st) < 0 ? -errno : (long)st.st_size;
}
#define fm_chdir(p) fm_ret(chdir(p))
#define fm_fchdir(fd) fm_ret(fchdir(fd))
#define fm_setsid() setsid()
#define fm_kill(pid, sig) fm_ret(kill(pid, sig))
#ifdef __linux__
#define fm_setaffinity(n, m) fm_ret(sched_setaffinity(0, n, (cpu_set_t *)(m)))
#define fm_getaffinity(n, m) fm_ret(sched_getaffinity(0, n, (cpu_set_t *)(m)))
#else
#define fm_setaffinity(n, m) (-ENOSYS)
#define fm_getaffinity(n, m) (-ENOSYS)
#endif
#endif

/* the records it sends, native 64-bit integers with these first (fairmark.run.launch_server._ANSWER, _STARTED) */
#define ANSWER_MAGIC 0x666d2d616e737731LL /* "fm-answ1" */
#define PID_MAGIC 0x666d2d7069643031LL    /* "fm-pid01" */
static int sock, pids, home, devnull;
static char body[1 << 21];    /* a request (its pages count in the commands' peak only once touched) */
static char envs[1 << 21];    /* the environment kept for the requests that say "-" */
static char *envp[1 << 15], *argv[1 << 15];
static unsigned long mask[16], want[16]; /* CPU masks of up to 1024 CPUs: the server's own, the trial's */
static struct timespec t0;

static long number(const char *s) {
    long v = 0;
    if (*s < '0' || *s > '9') return -1;
    for (; *s >= '0' && *s <= '9'; s++) v = v * 10 + (*s - '0');
    return *s ? -1 : v;
}

static int say(int to, const char *data, long n) {
    while (n > 0) {
        struct iovec iov = {(void *)data, (size_t)n};
        struct msghdr msg;
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        long r = fm_sendmsg(to, &msg, MSG_NOSIGNAL);
        if (r == -EINTR) continue;
        if (r <= 0) return -1;
        data += r;
        n -= r;
    }
    return 0;
}

/* The request's length, then its body: 0 at EOF, -1 malformed, else the length. */
static long receive(void) {
    unsigned len = 0;
    size_t got = 0;
    while (got < sizeof len) {
        long n = fm_read(sock, (char *)&len + got, sizeof len - got);
        if (n == -EINTR) continue;
        if (n <= 0) return n == 0 && got == 0 ? 0 : -1;
        got += (size_t)n;
    }
    if (len == 0 || len >= sizeof body) return -1;
    for (got = 0; got < len;) {
        long n = fm_read(sock, body + got, len - got);
        if (n == -EINTR) continue;
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    body[len] = 0;
    return (long)len;
}

/* Points out[0..max) at the NUL-terminated fields of [p, end); returns how many there were. */
static long fields(char *p, char *end, char **out, long max) {
    long n = 0;
    for (; p < end && n < max; p += length(p) + 1) out[n++] = p;
    out[n] = 0;
    return n;
}

/* The command's fields (ARGC, ARGV..., ENVC and ENV... or "-") into argv and envp; 0 or -1. */
static int command(char *p, char *end) {
    long argc = number(p);
    p += length(p) + 1;
    if (argc < 1 || argc >= (long)(sizeof argv / sizeof argv[0]) || fields(p, end, argv, argc) != argc) return -1;
    p = argv[argc - 1] + length(argv[argc - 1]) + 1;
    if (p >= end) return -1;
    if (p[0] == '-' && !p[1]) return 0; /* the environment kept from the last request */
    long envc = number(p);
    p += length(p) + 1;
    if (envc < 0 || envc >= (long)(sizeof envp / sizeof envp[0]) || end - p > (long)sizeof envs) return -1;
    memcpy(envs, p, (size_t)(end - p));
    return fields(envs, envs + (end - p), envp, envc) == envc ? 0 : -1;
}

static long write_zero(const char *path) {
    long fd = fm_open(path, O_WRONLY | O_CLOEXEC), r;
    if (fd < 0) return fd;
    r = fm_write(fd, "0", 1);
    fm_close(fd);
    return r == 1 ? 0 : r < 0 ? r : -EINVAL;
}

/* This process into the trial's cpuset (JOIN) and onto its CPUs (CPUS), which the command inherits; 0 or
   -errno. Its own mask is saved first: joining a cpuset replaces it. */
static long place(const char *cpus, const char *join) {
    long r;
    if (!*cpus && !*join) return 0;
    if ((r = fm_getaffinity(sizeof mask, mask)) < 0) return r;
    if (*join && (r = write_zero(join)) < 0) return r;
    if (!*cpus) return 0;
    memset(want, 0, sizeof want);
    for (const char *p = cpus; *p;) {
        long cpu = 0;
        if (*p < '0' || *p > '9') return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) cpu = cpu * 10 + (*p - '0');
        if (cpu >= 1024 || (*p && *p++ != ',')) return -EINVAL;
        want[cpu / 64] |= 1UL << (cpu % 64);
    }
    return fm_setaffinity(sizeof want, want);
}

static void unplace(const char *cpus, const char *join, const char *leave) {
    if (*join && *leave) write_zero(leave);
    if (*cpus || *join) fm_setaffinity(sizeof mask, mask);
}

/* The file at PATH, made empty (not O_TRUNC: that costs ext4 a journalled update of an empty file too), as this
   process's descriptor TO; 0 or -errno. */
static long output(const char *path, int to) {
    long fd = fm_create(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), r;
    if (fd < 0) return fd;
    r = fm_lseek(fd, 0, SEEK_END);
    if (r > 0 && (r = fm_ftruncate(fd, 0)) == 0) r = fm_lseek(fd, 0, SEEK_SET);
    if (r >= 0) r = fm_dup2(fd, to);
    fm_close(fd);
    return r < 0 ? r : 0;
}

/* The trial's stdout and stderr as this process's 1 and 2 (its stdin is /dev/null, as between trials); 0 or
   -errno. */
static long outputs(const char *out, const char *err) {
    long r = output(out, 1);
    return r ? r : output(err, 2);
}

/* vfork in a frame of its own, what the child needs in statics: it runs below this frame and never returns. */
static long __attribute__((noinline)) spawn(void) {
    long pid = fm_vfork();
    if (pid == 0) {
        fm_setsid();
        exec_errno = start(argv, envp);
        fm_exit(127);
    }
    return pid;
}

/* The trial's start record (PIDS_FD), the wait, the placement undone, its answer; 0 or -1 (a socket lost). */
static int answer(long pid, char *const f[4]) {
    struct timespec t1;
    struct rusage ru;
    int status = 0;
    fm_monotonic(&t1);
    long long started[3] = {PID_MAGIC, pid, (long long)t1.tv_sec * 1000000000LL + t1.tv_nsec};
    if (say(pids, (const char *)started, sizeof started) != 0) return -1;
    memset(&ru, 0, sizeof ru);
    long r;
    while (pid > 0 && (r = fm_wait4(pid, &status, &ru)) < 0)
        if (r != -EINTR) return -1;
    fm_monotonic(&t1);
    long long left = pid > 0 && fm_kill(-pid, 0) != -ESRCH; /* EPERM: a process is there */
    unplace(f[1], f[2], f[3]); /* before the answer: fairmark may remove the cpuset once it has it */
    long long done[15] = {ANSWER_MAGIC, status, exec_errno,
                          (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec),
                          (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
                          (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec, ru.ru_maxrss,
                          ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw, pid, left, fm_size(1), fm_size(2)};
    return say(sock, (const char *)done, sizeof done);
}

/* One request: 0 answered, -1 malformed or a socket lost. */
static int serve(long len) {
    char *f[8], *end = body + len;
    long pid = -1, r;
    if (fields(body, end, f, 7) < 7 || command(f[6], end) != 0) return -1;
    candidates(argv[0], envp);
    if ((r = outputs(f[4], f[5])) < 0) {
        pid = -2; /* its output files could not be made: nothing started */
    } else if ((r = *f[0] ? fm_chdir(f[0]) : fm_fchdir(home)) >= 0) {
        r = place(f[1], f[2]);
    }
    exec_errno = r < 0 ? (int)-r : 0;
    fm_monotonic(&t0);
    if (!exec_errno && (pid = spawn()) < 0) {
        exec_errno = (int)-pid;
        pid = -1;
    }
    int done = answer(pid, f);
    fm_dup2(devnull, 1); /* the trial's files are not held until the next one */
    fm_dup2(devnull, 2);
    return done;
}

int main(int argc, char **args) {
    if (argc != 3) return 126;
    sock = (int)number(args[1]);
    pids = (int)number(args[2]);
    devnull = (int)fm_open("/dev/null", O_RDWR | O_CLOEXEC);
    home = (int)fm_open(".", O_CLOEXEC);
    if (sock < 0 || pids < 0 || devnull < 0 || home < 0 || fm_cloexec(sock) < 0 || fm_cloexec(pids) < 0) return 126;
    for (int i = 0; i < 3; i++)
        if (fm_dup2(devnull, i) < 0) return 126; /* every trial's stdin */
    for (;;) {
        long len = receive();
        if (len == 0) return 0;
        if (len < 0 || serve(len) != 0) return 126;
    }
}

#ifdef FAIRMARK_NOLIBC
void fm_start(long *sp) {
    fm_exit(main((int)sp[0], (char **)(sp + 1)));
}
#endif
"""
)


@functools.cache
def server_path() -> str | None:
    """The launch server built for this host (once, into $XDG_CACHE_HOME/fairmark, named by its source's hash)
    the way the launcher is (`fairmark.run.launcher._launcher_flags`: without a C library on Linux x86-64, so
    that the commands' peak RSS starts at its few KiB as at the launcher's), or None where no C compiler builds
    one that answers (trials then start through the launcher)."""
    digest = hashlib.sha256(SERVER_C.encode()).hexdigest()[:16]
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
            fh.write(SERVER_C)
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


# SERVER_C's buffers: a request's bytes (body[]) and the strings of its argv and environment (argv[], envp[])
MAX_REQUEST_BYTES, MAX_STRINGS = 1 << 21, (1 << 15) - 1


class ServerLost(Exception):
    """The launch server ended or answered something else than its protocol (the run goes on without it)."""


class ServerGone(ServerLost):
    """The request could not be sent: the server had ended (killed) since its last answer. No trial started."""


# What the server sends (SERVER_C): a trial's answer, and its start record (its pid; sent before the answer).
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
        request larger than the server takes (SERVER_C's buffers). `cwd` None: the server's own directory, which
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
        """The trial's answer (SERVER_C): ANSWER_MAGIC, the launcher's report numbers (STATUS ERRNO WALL_NS
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
        """The trial's report: the launcher's fields (`fairmark.run.launcher.parse_launch_report`)."""
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
