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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fairmark.errors import EnvironmentRefused
from fairmark.run.guard.signals import held
from fairmark.store.owner import owner_alive as owner_alive
from fairmark.store.owner import pid_alive as pid_alive
from fairmark.store.owner import proc_state as proc_state
from fairmark.store.owner import process_start as process_start


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


POLL_S = 0.25  # how often a waiting run tries the lock again


def holder_text(holder: dict[str, Any]) -> str:
    """Who holds the lock, as its file says: PID, plan, run (or what the holder runs: calibrate, bisect, ab)."""
    since = holder.get("since")
    held = f", for {time.time() - since:.0f} s" if isinstance(since, int | float) else ""
    return f"PID {holder.get('pid', '?')}, plan {holder.get('plan') or '?'}, run {holder.get('run_id') or '?'}{held}"


def _read(fd: int) -> dict[str, Any]:
    try:
        doc = json.loads(os.pread(fd, 65536, 0).decode() or "{}")
    except (ValueError, OSError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _flock(fd: int, wait_s: float, on_wait: Callable[[str], None] | None) -> dict[str, Any] | None:
    """Lock `fd` exclusively, trying again for up to wait_s seconds; None once locked, else the holder (read
    from the file at the last try). `on_wait` hears once who holds it, when this starts waiting."""
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            holder = _read(fd)
        left = deadline - time.monotonic()
        if left <= 0:
            return holder
        if on_wait is not None and not told:
            on_wait(
                f"the host lock is held by {holder_text(holder)}; waiting up to {_duration(wait_s)} for it"
            )
            told = True
        time.sleep(min(POLL_S, left))


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 120 else f"{seconds:g} s"


def _refusal(holder: dict[str, Any], wait_s: float) -> EnvironmentRefused:
    waited = f"waited {_duration(wait_s)}; " if wait_s > 0 else ""
    return EnvironmentRefused(
        f"another fairmark run holds the host lock: {holder_text(holder)}",
        hint=f"{waited}wait for it with --wait-lock DURATION, or pass --allow-concurrent (both results are then "
        "perturbed)",
    )


def wait_until_free(wait_s: float = 0.0, on_wait: Callable[[str], None] | None = None) -> None:
    """Return when the host lock is free — tried with one flock, taken and let go at once —, waiting up to wait_s
    seconds for it (`on_wait` hears once who holds it); else EnvironmentRefused (exit 3) naming the holder.
    For a command's first lines, before its heavy imports: a run that is refused (or waits) costs a few
    milliseconds of CPU, not the second of imports a loaded machine stretches to many. Standard library only.
    The run still takes the lock itself (HostLock): another may take it in between."""
    path = lock_path()
    if os.environ.get("FAIRMARK_LOCK_PATH"):
        path.parent.mkdir(parents=True, exist_ok=True)
    fd = open_lock_file(path)
    try:
        holder = _flock(fd, wait_s, on_wait)
        if holder is not None:
            raise _refusal(holder, wait_s)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class HostLock:
    """This machine's lock, held while a run (or calibrate's, a bisect's, ab's runs) measures. `wait_s`: wait
    that long for a holder to finish (`--wait-lock`), `on_wait` hearing once who it is, before refusing."""

    _held: HostLock | None = None  # the lock this process holds (announce_run writes the run's id into it)

    def __init__(
        self,
        info: dict[str, Any],
        *,
        allow_concurrent: bool = False,
        wait_s: float = 0.0,
        on_wait: Callable[[str], None] | None = None,
    ):
        self.info, self.allow_concurrent = info, allow_concurrent
        self.wait_s, self.on_wait = wait_s, on_wait
        self.path = lock_path()
        self.fd: int | None = None
        self.notes: list[str] = []

    def __enter__(self) -> HostLock:
        if os.environ.get("FAIRMARK_LOCK_PATH"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_lock_file(self.path)
        holder = _flock(fd, 0.0 if self.allow_concurrent else self.wait_s, self.on_wait)
        if holder is not None:
            os.close(fd)
            if self.allow_concurrent:
                self.notes.append(
                    f"another fairmark run is active (PID {holder.get('pid', '?')}); "
                    "running concurrently as asked (--allow-concurrent): both are perturbed"
                )
                return self
            raise _refusal(holder, self.wait_s)
        previous = _read(fd)
        if previous.get("pid") and previous["pid"] != os.getpid() and not pid_alive(int(previous["pid"])):
            self.notes.append(
                f"took over a stale host lock of PID {previous['pid']} "
                f"(plan {previous.get('plan', '?')}), which died without releasing it"
            )
        self.info |= {"pid": os.getpid(), "since": time.time()}
        self._write(fd)
        self.fd = fd
        HostLock._held = self
        return self

    def _write(self, fd: int) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(self.info).encode(), 0)

    def update(self, **info: Any) -> None:
        if self.fd is not None:
            self.info |= info
            self._write(self.fd)

    def __exit__(self, *exc: object) -> None:
        with held():  # a SIGTERM arriving now waits: the lock is released whole, never left half-written
            if self.fd is not None:
                os.ftruncate(self.fd, 0)  # a clean exit leaves no PID to look stale
                fcntl.flock(self.fd, fcntl.LOCK_UN)
                os.close(self.fd)
                self.fd = None
            if HostLock._held is self:
                HostLock._held = None


def announce_run(run_id: str) -> None:
    """The run this process measures now, written into the host lock it holds (if it holds it): a run refused or
    waiting names it. The lock is taken before the run has an id (and calibrate's and a bisect's span several)."""
    if HostLock._held is not None:
        HostLock._held.update(run_id=run_id)
