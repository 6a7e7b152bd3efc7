"""One fairmark at a time changes machine-wide settings.

Two processes flipping the same sysctl would each journal the other's value as "original" and put the wrong
one back, so a SystemState with machine-wide changes holds an exclusive flock on one file per machine
(system.lock beside the host lock, where only its user can write: /run/fairmark for root, see run/guard/lock.py;
$FAIRMARK_SYSTEM_LOCK overrides) from construction to close(). The kernel drops the lock when the process dies,
so a killed fairmark never leaves it stuck. (It was /run/lock/fairmark-system.lock: /run/lock is writable by
every user, who could plant a symbolic link there for root's fairmark to truncate the file it names.)

The lock is re-entrant within a process, and a process whose ancestor holds it runs under that ancestor's
lock: a test suite or a wrapper script can hold it around the `fairmark` commands it starts.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

import psutil

from fairmark.errors import EnvironmentRefused
from fairmark.run.guard.lock import lock_dir, open_lock_file

_HELD: dict[str, int] = {}  # lock path → fd, for the locks this process holds


def lock_path() -> Path:
    explicit = os.environ.get("FAIRMARK_SYSTEM_LOCK")
    if explicit:
        return Path(explicit)
    return lock_dir() / "system.lock"


def _holder(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(os.pread(fd, 64, 0).split()[0])
    return None


def _is_ancestor(pid: int) -> bool:
    with contextlib.suppress(psutil.Error):
        return pid in {p.pid for p in psutil.Process().parents()}
    return False


class SystemLock:
    def __init__(self, path: Path | None = None):
        self._path = path
        self.owned = False

    @property
    def path(self) -> Path:
        """Found when first asked (acquire): a state that changes nothing machine-wide makes no directory."""
        if self._path is None:
            self._path = lock_path()
        return self._path

    def acquire(self, wait_s: float = 0.0) -> None:
        """Take the lock, waiting up to wait_s; refuse (EnvironmentRefused) naming the holder otherwise."""
        key = str(self.path)
        if key in _HELD:
            return  # this process holds it already (nested use)
        fd = open_lock_file(self.path)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = _holder(fd)
                if holder is not None and _is_ancestor(holder):
                    os.close(fd)
                    return  # our parent holds it for us
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise EnvironmentRefused(
                        f"another fairmark (pid {holder or '?'}) is changing this machine's settings "
                        f"(lock {self.path}); two runs changing one machine would each restore the other's "
                        "values",
                        hint="wait for it to finish, then run again",
                    ) from None
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        _HELD[key] = fd
        self.owned = True

    def release(self) -> None:
        if not self.owned:
            return
        fd = _HELD.pop(str(self.path))
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        self.owned = False
