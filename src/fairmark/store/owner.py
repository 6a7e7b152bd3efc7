"""Which process controls a run, and whether it is gone: a run killed with kill -9 (or by `timeout`) never writes
its end, so the store says "running" forever. The run records its controller (host name, boot, PID and the PID's
start time); `runs` and `show` call a run whose controller died — on this machine — "interrupted (controller
gone)". A controller on another machine (a shared PostgreSQL store) cannot be checked from here: its run stays as
the store says. The one liveness check of a PID lives here (run/guard/lock.py uses it). Standard library only: `fairmark runs` imports this without SQLAlchemy."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def proc_state(pid: int) -> str | None:
    """The state letter from /proc/PID/stat ('Z' for a zombie), or None when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()[0]


def process_start(pid: int) -> str | None:
    """When `pid` started (clock ticks since boot, /proc/PID/stat field 22): with the PID it names one process,
    not whichever reuses the number later (None without /proc or when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return text.rsplit(")", 1)[1].split()[19]


def cpu_ticks(pid: int) -> int | None:
    """A process's user + system CPU time in clock ticks (/proc/PID/stat fields 14 and 15), None when it is gone
    (run/profiles: whether a slow perf is still working)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses
    return int(fields[11]) + int(fields[12])


def owner_alive(pid: int, start: str | None) -> bool:
    """True while the process that recorded (pid, start) runs: the PID alive and, where known, started then."""
    if not pid_alive(pid):
        return False
    return start is None or process_start(pid) in (None, start)


def pid_alive(pid: int) -> bool:
    """True while `pid` runs. A zombie does not count (PID 1 here reaps orphans late, and kill -0 says
    "alive" for one); without /proc (FreeBSD) kill -0 is all there is."""
    if Path("/proc/self/stat").exists():
        return proc_state(pid) not in (None, "Z")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


GONE = "interrupted (controller gone)"


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def controller() -> dict[str, str | int | None]:
    """This process as a run's controller (stored in the run's options)."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "boot": _boot_id(), "pid": pid, "start": process_start(pid)}


def controller_gone(status: str, options: object) -> bool:
    """True when a run the store calls running has a controller recorded on this machine that no longer runs
    (dead, or the machine rebooted since)."""
    if status != "running" or not isinstance(options, dict):
        return False
    who = options.get("controller")
    if (
        not isinstance(who, dict)
        or who.get("host") != socket.gethostname()
        or not isinstance(who.get("pid"), int)
    ):
        return False
    boot = _boot_id()
    if boot is not None and who.get("boot") not in (None, boot):
        return True
    start = who.get("start")
    return not owner_alive(who["pid"], start if isinstance(start, str) else None)
