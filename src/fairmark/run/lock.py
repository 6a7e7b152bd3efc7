"""Host lock: two fairmark runs on one host perturb each other, so the second is refused.

flock() is released by the kernel when its holder dies (even by kill -9), so a lock file whose recorded PID
is dead is simply taken over, with a note."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

from fairmark.errors import EnvironmentRefused


def lock_path() -> Path:
    return Path(os.environ.get("FAIRMARK_LOCK_PATH") or "/tmp/fairmark-host.lock")


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


class HostLock:
    def __init__(self, info: dict[str, Any], *, allow_concurrent: bool = False):
        self.info, self.allow_concurrent = info, allow_concurrent
        self.path = lock_path()
        self.fd: int | None = None
        self.notes: list[str] = []

    def __enter__(self) -> HostLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._read(fd)
            os.close(fd)
            if self.allow_concurrent:
                self.notes.append(
                    f"another fairmark run is active (PID {holder.get('pid', '?')}); "
                    "running concurrently as asked (--allow-concurrent): both are perturbed"
                )
                return self
            raise EnvironmentRefused(
                f"another fairmark run holds the host lock: PID {holder.get('pid', '?')}, "
                f"plan {holder.get('plan', '?')}, run {holder.get('run_id', '?')}",
                hint="wait for it to finish, or pass --allow-concurrent (both results are then perturbed)",
            ) from None
        previous = self._read(fd)
        if previous.get("pid") and previous["pid"] != os.getpid() and not pid_alive(int(previous["pid"])):
            self.notes.append(
                f"took over a stale host lock of PID {previous['pid']} "
                f"(plan {previous.get('plan', '?')}), which died without releasing it"
            )
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(self.info | {"pid": os.getpid(), "since": time.time()}).encode(), 0)
        self.fd = fd
        return self

    @staticmethod
    def _read(fd: int) -> dict[str, Any]:
        try:
            return json.loads(os.pread(fd, 65536, 0).decode() or "{}")
        except (ValueError, OSError):
            return {}

    def update(self, **info: Any) -> None:
        if self.fd is not None:
            self.info |= info
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, json.dumps(self.info | {"pid": os.getpid()}).encode(), 0)

    def __exit__(self, *exc: object) -> None:
        from fairmark.run.signals import held

        with held():  # a SIGTERM arriving now waits: the lock is released whole, never left half-written
            if self.fd is not None:
                os.ftruncate(self.fd, 0)  # a clean exit leaves no PID to look stale
                fcntl.flock(self.fd, fcntl.LOCK_UN)
                os.close(self.fd)
                self.fd = None
