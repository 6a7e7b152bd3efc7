"""Host lock: two fairmark runs on one host perturb each other, so the second is refused.

flock() is released by the kernel when its holder dies (even by kill -9), so a lock file whose recorded PID
is dead is simply taken over, with a note.

The lock file lives where only its user can write (issue 37): /run/fairmark for root, $XDG_RUNTIME_DIR/fairmark
or a private /tmp/fairmark-UID for others, created 0600 and opened without following a link. A fixed name in a
world-writable /tmp let another local user plant a symbolic link there (root's run then truncated the file it
named, where fs.protected_symlinks is off: FreeBSD, many containers) or lock the file read-only and deny every
run. The price: runs of two different users do not see each other's lock (the doctor's load check still does)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

from fairmark.errors import EnvironmentRefused


def _private_dir(path: Path) -> Path:
    """`path`, made 0700 if missing, refused unless it is a directory (not a link) of this user that nobody
    else can write to."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise EnvironmentRefused(f"cannot make the lock directory {path}: {exc.strerror}") from None
    problem = _foreign(st, stat.S_ISDIR, "a directory")
    if problem is None and st.st_mode & 0o022:
        problem = f"is writable by others (mode {stat.filemode(st.st_mode)})"
    if problem:
        raise EnvironmentRefused(
            f"the lock directory {path} {problem}: another user could replace the lock",
            hint=f"remove {path} (fairmark makes it again, 0700), or set FAIRMARK_LOCK_PATH",
        )
    return path


def _foreign(st: os.stat_result, kind: Any, what: str) -> str | None:
    """Why a lock's file or directory is not safely this user's own (None when it is)."""
    if not kind(st.st_mode):
        return f"is not {what}"
    if st.st_uid != os.geteuid():
        return f"belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()})"
    return None


def lock_dir() -> Path:
    """Where this user's locks live: only this user can write there."""
    if os.geteuid() == 0:  # whatever XDG_RUNTIME_DIR a `sudo -E` kept: that directory is another user's
        return _private_dir(Path("/run/fairmark" if Path("/run").is_dir() else "/var/run/fairmark"))
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_absolute():
        return _private_dir(Path(xdg) / "fairmark")
    return _private_dir(Path(tempfile.gettempdir()) / f"fairmark-{os.geteuid()}")


def lock_path() -> Path:
    explicit = os.environ.get("FAIRMARK_LOCK_PATH")
    return Path(explicit) if explicit else lock_dir() / "host.lock"


def open_lock_file(path: Path) -> int:
    """A lock file opened read-write: created 0600, never through a symbolic link, refused unless it is a
    regular file of this user with no other name (a hard link planted to another file would pass the rest)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        # a link gives ELOOP, or EACCES where it lies in a sticky directory and belongs to another user
        link = exc.errno == errno.ELOOP or os.path.islink(path)
        why = "is a symbolic link" if link else f"cannot be opened: {exc.strerror}"
        raise EnvironmentRefused(
            f"the lock file {path} {why}", hint=f"remove {path}; fairmark makes it again"
        ) from None
    st = os.fstat(fd)
    problem = _foreign(st, stat.S_ISREG, "a regular file")
    if problem is None and st.st_nlink != 1:
        problem = f"has {st.st_nlink} names (hard links)"
    if problem:
        os.close(fd)
        raise EnvironmentRefused(
            f"the lock file {path} {problem}", hint=f"remove {path}; fairmark makes it again"
        )
    if st.st_mode & 0o077:
        os.fchmod(fd, 0o600)  # an older fairmark's 0666 file: nobody else may lock it read-only
    return fd


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
        if os.environ.get("FAIRMARK_LOCK_PATH"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_lock_file(self.path)
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
