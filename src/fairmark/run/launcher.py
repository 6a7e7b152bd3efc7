"""The trial launcher: every trial starts through a small static C program, so that its peak RSS is the workload's
own (the local executor, run/executor.py, and the agent on a host, remote/agent.py, both start trials through it).
What both make of a trial's wait is here too, written once: its measured fields and outcome, and the kill of its
process group.

Standard library only, and nothing of fairmark: the controller ships this file's text ahead of the agent's to
hosts without fairmark (remote.connection.agent_source); where fairmark is installed the agent imports it."""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

# A process's ru_maxrss is the largest resident set of its whole life, exec included: Linux carries the
# high-water mark of the memory it had before execve into the new program's (fs/exec.c: setmax_mm_hiwater_rss),
# and a child started by vfork or fork from fairmark (~90 MB of Python) had fairmark's memory before its exec.
# Neither a wrapper that execs (env, sh -c 'exec …': the mark survives each exec), nor clear_refs (it resets
# the current memory's mark, not the process's), nor a cgroup's memory.peak (a sum over the tree, page cache
# included, and cgroup v2 only) gives what `/usr/bin/time` prints. What does: wait4 of a process started from
# a small one. So every trial starts through this launcher, a small static C program: it vforks the command
# (nothing runs between vfork and exec; the command's mark starts at the launcher's — a few KiB built without a
# C library, ~0.5 MB with glibc — not at fairmark's), waits for it and writes the command's own wait status, clock and rusage to a descriptor
# fairmark reads. FreeBSD (not testable here: no FreeBSD host) keeps ru_maxrss across execve too, but samples it:
# statclock() raises the running thread's ru_maxrss to its vmspace's resident count at each stat tick (stathz,
# ~128 Hz), and wait4 gives the largest over the reaped tree (ruadd). A vfork child shares its parent's vmspace
# until exec, so one tick there would record the parent's memory: started from the launcher it is the launcher's
# few hundred KiB (libc), and the command is measured as `/usr/bin/time -l` measures it — including a peak missed, or a
# 0 recorded, for a command shorter than a tick. The same C source builds with FreeBSD's base cc (clang). A host
# where the launcher cannot be built (no C compiler) records no peak RSS at all: a number known to include
# fairmark's own memory is not recorded (`launcher()` says why, and a run says so at its start).
RSS_METHOD = "launcher"  # Measured.max_rss_method of a peak measured this way; None: fairmark's own included
PRELUDE_C = r"""
/* What fairmark's trial launcher (fairmark.run.launcher.LAUNCHER_C) and its launch server
   (fairmark.run.launch_server.SERVER_C) share: the system calls without a C library (FAIRMARK_NOLIBC, Linux
   x86-64) or through it, vfork, the PATH search made before vfork (the child only execs, as Python's
   subprocess searches: no shell for ENOEXEC) and the report line both write. */
#ifdef FAIRMARK_NOLIBC
typedef unsigned long size_t;
struct timespec { long tv_sec, tv_nsec; };
struct timeval { long tv_sec, tv_usec; };
struct rusage {
    struct timeval ru_utime, ru_stime;
    long ru_maxrss, ru_ixrss, ru_idrss, ru_isrss, ru_minflt, ru_majflt, ru_nswap, ru_inblock, ru_oublock,
        ru_msgsnd, ru_msgrcv, ru_nsignals, ru_nvcsw, ru_nivcsw;
};
#define EINTR 4
#define ENOENT 2
#define ENOTDIR 20
static long sc(long n, long a, long b, long c, long d) {
    register long r10 __asm__("r10") = d;
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}
/* vfork as glibc does it: the return address is kept in a register, so the child's use of the stack cannot
   overwrite the one the parent returns through */
long fm_vfork(void);
__asm__(".text\n.globl fm_vfork\nfm_vfork:\n pop %rdi\n mov $58, %eax\n syscall\n push %rdi\n ret\n"
        ".globl _start\n_start:\n xor %ebp, %ebp\n mov %rsp, %rdi\n and $-16, %rsp\n call fm_start\n hlt\n");
void *memset(void *d, int c, size_t n) {
    unsigned char *p = d;
    while (n--) *p++ = (unsigned char)c;
    return d;
}
void *memcpy(void *d, const void *s, size_t n) {
    unsigned char *p = d;
    const unsigned char *q = s;
    while (n--) *p++ = *q++;
    return d;
}
#define fm_write(fd, b, n) sc(1, fd, (long)(b), n, 0)
#define fm_exit(code) sc(60, code, 0, 0, 0)
#define fm_execve(p, a, e) sc(59, (long)(p), (long)(a), (long)(e), 0)
#define fm_wait4(pid, st, ru) sc(61, pid, (long)(st), 0, (long)(ru))
#define fm_cloexec(fd) sc(72, fd, 2, 1, 0)
#define fm_monotonic(ts) sc(228, 1, (long)(ts), 0, 0)
#else
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static long fm_ret(long r) { return r < 0 ? -errno : r; }
#define fm_write(fd, b, n) fm_ret(write(fd, b, n))
#define fm_exit(code) _exit(code)
#define fm_execve(p, a, e) fm_ret(execve(p, a, e))
#define fm_wait4(pid, st, ru) fm_ret(wait4(pid, st, 0, ru))
#define fm_cloexec(fd) fm_ret(fcntl(fd, F_SETFD, FD_CLOEXEC))
#define fm_monotonic(ts) clock_gettime(CLOCK_MONOTONIC, ts)
#define fm_vfork vfork
#endif

static volatile int exec_errno;
static char names[65536]; /* the command's candidate paths, made before vfork: the child only execs */
static char *paths[1024];

static size_t length(const char *s) {
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

static void candidates(const char *file, char **envp) {
    const char *path = "/bin:/usr/bin", *p;
    char *out = names;
    size_t k = 0, flen = length(file);
    for (char **e = envp; *e; e++)
        if ((*e)[0] == 'P' && (*e)[1] == 'A' && (*e)[2] == 'T' && (*e)[3] == 'H' && (*e)[4] == '=') path = *e + 5;
    for (p = path; k + 1 < sizeof paths / sizeof paths[0];) {
        const char *end = p;
        while (*end && *end != ':') end++;
        size_t dlen = (size_t)(end - p);
        if (dlen == 0) {
            paths[k++] = (char *)file; /* an empty entry is the current directory */
        } else if ((size_t)(out - names) + dlen + flen + 2 <= sizeof names) {
            paths[k++] = out;
            for (size_t i = 0; i < dlen; i++) *out++ = p[i];
            *out++ = '/';
            for (size_t i = 0; i <= flen; i++) *out++ = file[i];
        }
        if (!*end) break;
        p = end + 1;
    }
    paths[k] = 0;
}

/* In the vfork child: exec the command (its path, or each candidate); the errno of the exec that failed. */
static int start(char *const argv[], char **envp) {
    long first = 0, last = -ENOENT;
    const char *file = argv[0];
    for (const char *c = file; *c; c++)
        if (*c == '/') return (int)-fm_execve(file, argv, envp);
    for (char **p = paths; *p; p++) {
        last = fm_execve(*p, argv, envp);
        if (last != -ENOENT && last != -ENOTDIR && !first) first = last;
    }
    return (int)-(first ? first : last);
}

static char *put(char *p, long long v) {
    char digits[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do digits[n++] = (char)('0' + u % 10); while (u /= 10);
    *p++ = ' ';
    if (v < 0) *p++ = '-';
    while (n) *p++ = digits[--n];
    return p;
}

/* "fairmark-launcher 1 STATUS ERRNO WALL_NS USER_US SYS_US MAXRSS_KIB MINFLT MAJFLT NVCSW NIVCSW\n" at p (the
   clock from t0 to t1, the command's wait status and rusage); returns the end. */
static char *report_line(char *p, int status, const struct timespec *t0, const struct timespec *t1,
                         const struct rusage *ru) {
    long long values[] = {status, exec_errno,
                          (long long)(t1->tv_sec - t0->tv_sec) * 1000000000LL + (t1->tv_nsec - t0->tv_nsec),
                          (long long)ru->ru_utime.tv_sec * 1000000LL + ru->ru_utime.tv_usec,
                          (long long)ru->ru_stime.tv_sec * 1000000LL + ru->ru_stime.tv_usec, ru->ru_maxrss,
                          ru->ru_minflt, ru->ru_majflt, ru->ru_nvcsw, ru->ru_nivcsw};
    for (const char *c = "fairmark-launcher 1"; *c; c++) *p++ = *c;
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) p = put(p, values[i]);
    *p++ = '\n';
    return p;
}
"""
LAUNCHER_C = (
    r"""
/* fairmark's trial launcher (fairmark.run.launcher.LAUNCHER_C): launcher REPORT_FD COMMAND [ARG...]
   vforks COMMAND (searched in PATH as Python's subprocess does: no shell for ENOEXEC), waits for it and
   writes one line to REPORT_FD: "fairmark-launcher 1 STATUS ERRNO WALL_NS USER_US SYS_US MAXRSS_KIB MINFLT
   MAJFLT NVCSW NIVCSW" (ERRNO: why the exec failed, else 0). Exits with the command's status (127: no exec,
   128 + N: killed by signal N). SIGTERM, SIGINT, SIGHUP and SIGQUIT are caught (exec resets them for the
   command) so that a signal to the trial's process group ends the command and the report still comes.
   Built with FAIRMARK_NOLIBC (Linux x86-64) it uses no C library: glibc's start-up alone (its CPU feature
   probe: CPUID, which a virtual machine traps) cost 0.8 ms of CPU per exec on a VM, as much as /bin/true. */
"""
    + PRELUDE_C
    + r"""
#ifdef FAIRMARK_NOLIBC
struct ksigaction { void (*handler)(int); unsigned long flags; void (*restorer)(void); unsigned long mask; };
#define SIGHUP 1
#define SIGINT 2
#define SIGQUIT 3
#define SIGTERM 15
#define WIFEXITED(s) (((s) & 0x7f) == 0)
#define WEXITSTATUS(s) (((s) >> 8) & 0xff)
#define WTERMSIG(s) ((s) & 0x7f)
void fm_restorer(void);
__asm__(".text\n.globl fm_restorer\nfm_restorer:\n mov $15, %eax\n syscall\n");
static void caught(int sig) { (void)sig; }
static void fm_catch(int sig) {
    struct ksigaction act = {caught, 0x04000000 | 0x10000000, fm_restorer, 0}, old; /* RESTORER | RESTART */
    if (sc(13, sig, 0, (long)&old, 8) == 0 && old.handler != (void (*)(int))1) sc(13, sig, (long)&act, 0, 8);
}
#else
#include <signal.h>
static void caught(int sig) { (void)sig; }
static void fm_catch(int sig) {
    struct sigaction sa, old;
    sa.sa_handler = caught;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sig, &sa, NULL);
}
#endif

int main(int argc, char **argv, char **envp) {
    static const char usage[] = "usage: fairmark-launcher REPORT_FD COMMAND [ARG...]\n";
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    struct timespec t1;
    struct rusage ru;
    static int report;  /* static: nothing of the parent's is in the frame the vfork child runs on */
    static struct timespec t0;
    int status = 0;
    char line[512];
    if (argc < 3) {
        fm_write(2, usage, sizeof usage - 1);
        return 126;
    }
    for (const char *c = argv[1]; *c >= '0' && *c <= '9'; c++) report = report * 10 + (*c - '0');
    if (fm_cloexec(report) < 0) return 126;
    candidates(argv[2], envp);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) fm_catch(sigs[i]);
    fm_monotonic(&t0);
    long pid = fm_vfork();
    if (pid < 0) return 126;
    if (pid == 0) {
        exec_errno = start(argv + 2, envp);
        fm_exit(127);
    }
    long r;
    while ((r = fm_wait4(pid, &status, &ru)) < 0)
        if (r != -EINTR) return 126;
    fm_monotonic(&t1);
    char *p = report_line(line, status, &t0, &t1, &ru);
    while (fm_write(report, line, p - line) == -EINTR) {
    }
    if (exec_errno) return 127;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#ifdef FAIRMARK_NOLIBC
void fm_start(long *sp) {
    int argc = (int)sp[0];
    char **argv = (char **)(sp + 1);
    fm_exit(main(argc, argv, argv + argc + 1));
}
#endif
"""
)


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fairmark")


@functools.cache
def launcher() -> tuple[str | None, str | None]:
    """(path, None): the launcher built for this host (once, into $XDG_CACHE_HOME/fairmark, named by its
    source's hash); (None, why not) where no C compiler builds one that works."""
    digest = hashlib.sha256(LAUNCHER_C.encode()).hexdigest()[:16]
    path = os.path.join(_cache_dir(), f"launcher-{digest}-{platform.system().lower()}-{platform.machine()}")
    if os.access(path, os.X_OK):
        return path, None
    compilers = [cc for cc in ("cc", "gcc", "clang") if shutil.which(cc)]
    if not compilers:
        return None, "no C compiler (cc, gcc, clang) to build fairmark's trial launcher"
    try:
        os.makedirs(_cache_dir(), exist_ok=True)
        work = tempfile.mkdtemp(prefix=".launcher-", dir=_cache_dir())
    except OSError as exc:
        return None, f"cannot build fairmark's trial launcher in {_cache_dir()}: {exc.strerror or exc}"
    why = ""
    try:
        src, out = os.path.join(work, "launcher.c"), os.path.join(work, "launcher")
        with open(src, "w") as fh:
            fh.write(LAUNCHER_C)
        for cc, flags in ((cc, flags) for cc in compilers for flags in _launcher_flags()):
            why = _build_one([cc, "-O2", *flags, "-o", out, src], out)
            if not why:
                os.replace(out, path)  # atomic: a concurrent build of the same source is the same file
                return path, None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return None, f"cannot build fairmark's trial launcher: {why}"


def _launcher_flags() -> list[list[str]]:
    """How to build the launcher, best first: without a C library on Linux x86-64 (no start-up cost, the
    smallest mark the command starts from), static (no dynamic loader at each trial), then as cc likes."""
    nolibc = ["-static", "-nostdlib", "-ffreestanding", "-fno-stack-protector", "-fno-builtin"]
    nolibc += ["-fno-pie", "-no-pie", "-DFAIRMARK_NOLIBC"]
    linux_x86_64 = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")
    return [nolibc] * linux_x86_64 + [["-static"], []]


def _build_one(argv: list[str], out: str) -> str:
    """'' when `argv` compiled a launcher that reports a command's exit status; else what went wrong."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{argv[0]}: {exc}"
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return f"{' '.join(argv[:3])}: {lines[-1] if lines else f'exit status {proc.returncode}'}"
    r, w = os.pipe()
    try:
        check = subprocess.run([out, str(w), "sh", "-c", "exit 7"], pass_fds=(w,), timeout=30)
        os.close(w)
        w = -1
        report = read_launch_report(r)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the launcher {' '.join(argv[:3])} built does not run: {exc}"
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    if check.returncode != 7 or report is None or os.waitstatus_to_exitcode(report["status"]) != 7:
        return f"the launcher {' '.join(argv[:3])} built does not report a command's status"
    return ""


def read_launch_report(fd: int) -> dict[str, Any] | None:
    """The launcher's report from the read end of its descriptor (after the launcher exited), or None when it
    wrote none (killed, or not a launcher): the command's wait status, why its exec failed (an errno, 0 when it
    did not) and its measured fields as `Measured` names them."""
    data = b""
    while chunk := os.read(fd, 4096):
        data += chunk
    return parse_launch_report(data)


def parse_launch_report(data: bytes) -> dict[str, Any] | None:
    """`read_launch_report`'s dict from the report's text (also a launch server's answer,
    fairmark.run.launch_server), or None when it is not one."""
    words = data.split()  # (int() takes ASCII digits as bytes: no text made of the line first)
    if len(words) != 12 or words[0] != b"fairmark-launcher" or words[1] != b"1":
        return None
    try:
        v = [int(w) for w in words[2:]]
    except ValueError:
        return None
    return report_fields(v)


def report_fields(v: Sequence[int]) -> dict[str, Any]:
    """The report's dict from its numbers after "fairmark-launcher 1" (see `read_launch_report`)."""
    return {
        "status": v[0],
        "exec_errno": v[1],
        "wall_s": v[2] / 1e9,
        "user_s": v[3] / 1e6,
        "sys_s": v[4] / 1e6,
        "max_rss_kib": v[5],
        "minor_faults": v[6],
        "major_faults": v[7],
        "voluntary_switches": v[8],
        "involuntary_switches": v[9],
        "max_rss_method": RSS_METHOD,
    }


# What the launcher measured of the command itself (Linux and FreeBSD report ru_maxrss in KiB).
REPORTED = (
    "wall_s",
    "user_s",
    "sys_s",
    "max_rss_kib",
    "max_rss_method",
    "minor_faults",
    "major_faults",
    "voluntary_switches",
    "involuntary_switches",
)


def waited_fields(
    status: int, ru: Any, wall_s: float, report: dict[str, Any] | None
) -> tuple[int, dict[str, Any]]:
    """A trial's wait status and measured fields (the local executor's and a host's agent's alike): the
    command's own from the launcher's `report`; without one (no launcher on this host, or it was killed at a
    timeout) the waited tree's, with no peak RSS (the leader's mark started at fairmark's own memory)."""
    if report:
        return report["status"], {k: report[k] for k in REPORTED}
    return status, {
        "wall_s": wall_s,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "max_rss_kib": None,
        "minor_faults": int(ru.ru_minflt),
        "major_faults": int(ru.ru_majflt),
        "voluntary_switches": int(ru.ru_nvcsw),
        "involuntary_switches": int(ru.ru_nivcsw),
    }


def outcome(status: int, timed_out_after: float | None) -> tuple[int | None, int | None, str, str | None]:
    """(exit code, signal, status, error) of a trial's wait status; `timed_out_after`: the timeout it hit."""
    code = os.waitstatus_to_exitcode(status)
    exit_code, sig = (code, None) if code >= 0 else (None, -code)
    if timed_out_after is not None:
        return exit_code, sig, "timeout", f"timed out after {timed_out_after:g} s; process group killed"
    if sig is not None:
        return exit_code, sig, "failed", f"killed by signal {signal.Signals(sig).name}"
    if exit_code != 0:
        return exit_code, sig, "failed", f"exit status {exit_code}"
    return exit_code, sig, "ok", None


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` is still running (a trial's leftovers)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Zombies count as members until reaped; PID 1 here reaps orphans late, so look at the states.
    if not os.path.exists("/proc/self/stat"):
        return True
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def kill_group(pgid: int, grace_s: float, kill_wait_s: float = 5.0) -> None:
    """SIGTERM the whole group, wait up to grace_s, then SIGKILL what is left (waiting up to kill_wait_s)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else kill_wait_s)
        while time.monotonic() < deadline:
            if not group_alive(pgid):
                return
            time.sleep(0.02)
