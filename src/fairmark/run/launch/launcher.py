"""The trial launcher: every trial starts through a small static C program, so that its peak RSS is the workload's
own (the local executor, run/launch/executor.py, and the agent on a host, remote/agent.py, both start trials through it).
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
from typing import Any, Literal

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
# The C programs are package data beside this module (c/launcher.c, c/launch_server.c and the header both
# include, c/fairmark_launch.h); `make lint` compiles them with -Wall -Wextra -Werror.
C_DIR = "c"
C_HEADER = "fairmark_launch.h"


@functools.cache
def c_program(name: str) -> str:
    """The C program `name` (launcher.c, launch_server.c) as one translation unit: the shared header inlined
    where it is included. It is built from this one file, and named by this text's hash."""
    return _c_text(name).replace(f'#include "{C_HEADER}"\n', _c_text(C_HEADER), 1)


def _c_text(name: str) -> str:
    # the shipped agent carries the texts (remote.connection.agent_source defines _C_SOURCES after this file's
    # text, before any call); where fairmark is installed they are files of the package
    shipped = globals().get("_C_SOURCES")
    if shipped is not None:
        return str(shipped[name])
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), C_DIR, name), encoding="utf-8") as fh:
        return fh.read()


def _cache_dir() -> str:
    # fairmark.cachedir's rule, written again: this file is shipped alone to hosts that have no fairmark
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fairmark")


@functools.cache
def launcher() -> tuple[str | None, str | None]:
    """(path, None): the launcher built for this host (once, into $XDG_CACHE_HOME/fairmark, named by its
    source's hash); (None, why not) where no C compiler builds one that works."""
    source = c_program("launcher.c")
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
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
            fh.write(source)
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
    fairmark.run.launch.launch_server), or None when it is not one."""
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


Outcome = Literal["ok", "failed", "timeout"]


def outcome(status: int, timed_out_after: float | None) -> tuple[int | None, int | None, Outcome, str | None]:
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
