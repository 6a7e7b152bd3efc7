"""The trial launcher: every trial starts through a small static C program, so that its peak RSS is the workload's
own (the local executor, run/executor.py, and the agent on a host, remote/agent.py, both start trials through it).

Standard library only, and nothing of fairmark: the controller ships this file's text ahead of the agent's to
hosts without fairmark (remote.connection.agent_source); where fairmark is installed the agent imports it."""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from typing import Any

# A process's ru_maxrss is the largest resident set of its whole life, exec included: Linux carries the
# high-water mark of the memory it had before execve into the new program's (fs/exec.c: setmax_mm_hiwater_rss),
# and a child started by vfork or fork from fairmark (~90 MB of Python) had fairmark's memory before its exec.
# Neither a wrapper that execs (env, sh -c 'exec …': the mark survives each exec), nor clear_refs (it resets
# the current memory's mark, not the process's), nor a cgroup's memory.peak (a sum over the tree, page cache
# included, and cgroup v2 only) gives what `/usr/bin/time` prints. What does: wait4 of a process started from
# a small one. So every trial starts through this launcher, a small static C program: it vforks the command
# (nothing runs between vfork and exec; the command's mark starts at the launcher's ~0.5 MB, not at
# fairmark's), waits for it and writes the command's own wait status, clock and rusage to a descriptor
# fairmark reads. FreeBSD (not testable here: no FreeBSD host) keeps ru_maxrss across execve too, but samples it:
# statclock() raises the running thread's ru_maxrss to its vmspace's resident count at each stat tick (stathz,
# ~128 Hz), and wait4 gives the largest over the reaped tree (ruadd). A vfork child shares its parent's vmspace
# until exec, so one tick there would record the parent's memory: started from the launcher it is the launcher's
# few hundred KiB, and the command is measured as `/usr/bin/time -l` measures it — including a peak missed, or a
# 0 recorded, for a command shorter than a tick. The same C source builds with FreeBSD's base cc (clang). A host
# where the launcher cannot be built (no C compiler) records no peak RSS at all: a number known to include
# fairmark's own memory is not recorded (`launcher()` says why, and a run says so at its start).
RSS_METHOD = "launcher"  # Measured.max_rss_method of a peak measured this way; None: fairmark's own included
LAUNCHER_C = r"""
/* fairmark's trial launcher (fairmark.run.launcher.LAUNCHER_C): launcher REPORT_FD COMMAND [ARG...]
   vforks COMMAND (searched in PATH as Python's subprocess does: no shell for ENOEXEC), waits for it and
   writes one line to REPORT_FD: "fairmark-launcher 1 STATUS ERRNO WALL_NS USER_US SYS_US MAXRSS_KIB MINFLT
   MAJFLT NVCSW NIVCSW" (ERRNO: why the exec failed, else 0). Exits with the command's status (127: no exec,
   128 + N: killed by signal N). SIGTERM, SIGINT, SIGHUP and SIGQUIT are caught (exec resets them for the
   command) so that a signal to the trial's process group ends the command and the report still comes. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static volatile int exec_errno;

static void caught(int sig) { (void)sig; }

static int start(const char *file, char *const argv[], char *const *paths) {
    int first = 0, last = ENOENT;
    if (strchr(file, '/')) {
        execve(file, argv, environ);
        return errno;
    }
    for (; *paths; paths++) {
        execve(*paths, argv, environ);
        last = errno;
        if (last != ENOENT && last != ENOTDIR && !first) first = last;
    }
    return first ? first : last;
}

static char **candidates(const char *file) {
    const char *path = getenv("PATH"), *p;
    size_t n = 2, flen = strlen(file);
    if (!path) path = "/bin:/usr/bin";
    for (p = path; *p; p++) n += *p == ':';
    char **out = calloc(n, sizeof *out);
    if (!out) return NULL;
    size_t i = 0;
    for (p = path;;) {
        const char *end = strchr(p, ':');
        size_t dlen = end ? (size_t)(end - p) : strlen(p);
        char *one = malloc(dlen + flen + 2);
        if (!one) return NULL;
        memcpy(one, p, dlen);
        one[dlen] = '/';
        memcpy(one + dlen + 1, file, flen + 1);
        out[i++] = dlen ? one : (char *)file;
        if (!end) break;
        p = end + 1;
    }
    return out;
}

int main(int argc, char **argv) {
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    struct sigaction sa, old;
    struct timespec t0, t1;
    struct rusage ru;
    int status = 0;
    char line[512];
    if (argc < 3) {
        fprintf(stderr, "usage: %s REPORT_FD COMMAND [ARG...]\n", argv[0]);
        return 126;
    }
    int report = atoi(argv[1]);
    char **paths = candidates(argv[2]);
    if (!paths || fcntl(report, F_SETFD, FD_CLOEXEC) != 0) return 126;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = caught;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sigs[i], &sa, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = vfork();
    if (pid < 0) return 126;
    if (pid == 0) {
        exec_errno = start(argv[2], argv + 2, paths);
        _exit(127);
    }
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) return 126;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int len = snprintf(line, sizeof line, "fairmark-launcher 1 %d %d %lld %lld %lld %ld %ld %ld %ld %ld\n",
                       status, exec_errno,
                       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec),
                       (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
                       (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec, (long)ru.ru_maxrss,
                       (long)ru.ru_minflt, (long)ru.ru_majflt, (long)ru.ru_nvcsw, (long)ru.ru_nivcsw);
    while (len > 0 && write(report, line, (size_t)len) < 0 && errno == EINTR) {
    }
    if (exec_errno) return 127;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
"""


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
        # static first: no dynamic loader to run at each trial, and the smallest mark the command starts from
        for cc, flags in ((cc, flags) for cc in compilers for flags in (["-static"], [])):
            why = _build_one([cc, "-O2", *flags, "-o", out, src], out)
            if not why:
                os.replace(out, path)  # atomic: a concurrent build of the same source is the same file
                return path, None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return None, f"cannot build fairmark's trial launcher: {why}"


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
    words = data.decode("ascii", "replace").split()
    if len(words) != 12 or words[:2] != ["fairmark-launcher", "1"]:
        return None
    try:
        v = [int(w) for w in words[2:]]
    except ValueError:
        return None
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
