"""Scratch directories a live run owns, and the sweep of those a killed fairmark left behind.

A scratch directory is *held*: its owner keeps an `flock` on the directory itself from the moment it exists
under its final name until it is removed, and a sweep removes only a directory whose lock it can take. The
kernel drops the lock when the owner dies, however it dies (kill -9 included), so the question "does anyone
still use this?" is answered by the one party that knows. The PID that used to be in the name answered it by
guessing: a fairmark in another PID namespace (a container, `unshare --pid`) sees a live owner's PID as free
and removed its scratch under it, and a reused PID makes a dead owner look alive.

Directories named by older fairmark versions (`fairmark-PID-…`, no lock) are still swept by that PID, as those
versions did: nothing better is known about them.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

from fairmark.run.guard.lock import pid_alive
from fairmark.run.launch.launcher import kill_group

PREFIX = "fairmark-scratch-"  # a held scratch directory
KEPT_PREFIX = "fairmark-kept-"  # `run --keep-scratch`: left for the user, never swept
_LEGACY = re.compile(r"^fairmark-(\d+)-")  # before the lock: the owner's PID in the name


def _same(fd: int, path: Path) -> bool:
    """Whether `path` still names the directory open as `fd` (a sweep may have removed it in between)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def take(path: str | os.PathLike[str]) -> int | None:
    """Lock directory `path` if no one holds it: its descriptor (keep it open to keep the lock), or None when
    a live owner holds it or it is gone."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)  # not inherited by children (PEP 446)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    if not _same(fd, Path(path)):
        os.close(fd)
        return None
    return fd


class Scratch:
    """A fresh scratch directory for `name`, held until `remove()` (or `keep()`)."""

    def __init__(self, name: str, base: str | None = None):
        while True:
            path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{name}-", dir=base))
            fd = take(path)
            if fd is not None:
                break
            # A sweep took the fresh directory's lock before we did (it cannot tell it from a dead one's) and
            # removed it: make another.
        self.path: Path = path
        self._fd: int | None = fd

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        self._release()

    def keep(self) -> Path:
        """Leave the directory for the user under a name no sweep touches; returns where it is."""
        kept = self.path.with_name(KEPT_PREFIX + self.path.name[len(PREFIX) :])
        os.rename(self.path, kept)
        self._release()
        return kept

    def _release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _is(name: str, top: str) -> bool:
    return top == name


def _legacy_owner(name: str) -> int | None:
    m = _LEGACY.match(name)
    return int(m.group(1)) if m and int(m.group(1)) != os.getpid() else None


def sweep(base: str | None = None) -> list[str]:
    """Remove the scratch directories no live process holds, after stopping what their dead owners left
    running in them (a managed server runs in its own session, so a SIGKILL of fairmark's group misses it)."""
    root = Path(base or tempfile.gettempdir())
    lines: list[str] = []
    for path in sorted(root.glob(f"{PREFIX}*")):
        fd = take(path)
        if fd is None:
            continue  # a live owner holds it
        try:
            lines += _stop_working_in(root, functools.partial(_is, path.name))
            shutil.rmtree(path, ignore_errors=True)
            lines.append(
                f"removed {path}, left by a fairmark process that no longer runs (its lock was free)"
            )
        finally:
            os.close(fd)

    def orphan(top: str) -> bool:
        if top.startswith(PREFIX):  # its directory is gone: no one holds it any more
            return not (root / top).exists()
        owner = _legacy_owner(top)
        return owner is not None and not pid_alive(owner)

    lines += _stop_working_in(root, orphan)
    for path in sorted(root.glob("fairmark-*-*")):
        owner = _legacy_owner(path.name)
        if owner is not None and not pid_alive(owner) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            lines.append(f"removed {path}, left by fairmark process {owner}, which no longer runs")
    return lines


def _stop_working_in(root: Path, orphan: Callable[[str], bool]) -> list[str]:
    """Stop the process group of every process whose working directory is in a scratch directory that
    `orphan(name)` says no live fairmark owns (also one already removed: the kernel shows it as 'PATH
    (deleted)', which psutil gives without the suffix)."""
    import psutil

    lines = []
    for proc in psutil.process_iter(["pid", "cwd", "name"]):
        cwd = proc.info.get("cwd") or ""
        if proc.pid == os.getpid() or not cwd.startswith(f"{root}/fairmark-"):
            continue
        top = Path(cwd.removesuffix(" (deleted)")).relative_to(root).parts[0]
        if not orphan(top):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError, psutil.Error):
            group = os.getpgid(proc.pid)
            if group == os.getpgrp():  # never our own group
                os.kill(proc.pid, signal.SIGKILL)
            else:
                kill_group(group, grace_s=5.0)  # the server's own clean shutdown first (shared memory, files)
            owner = _legacy_owner(top)
            by = (
                f"fairmark process {owner}" if owner is not None else "a fairmark process that no longer runs"
            )
            lines.append(f"stopped {proc.info['name']} (pid {proc.pid}), left in {root / top} by {by}")
    return lines
