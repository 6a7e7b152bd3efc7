"""The launching thread joins a trial's cgroup v1 cpuset for the moment it starts the trial, so the trial
starts by vfork and inherits the placement, instead of a fork of the whole controller with the placement written
by the child between fork and exec.

Why: a fork of fairmark (~90 MB of Python) copies its page tables and runs Python in the child before exec —
about 4 ms more in every measured trial of a run with a `cpus` variant here (`true`: 4.45 ms against 0.68 ms by
vfork, both sides of the run alike), and more on a busy machine. cgroup v1 moves single threads (a thread id
written to the cgroup's `tasks` file), and a child joins its parent thread's cgroup at birth; cgroup v2 moves
only whole processes into a domain cgroup, so a cgroup that has no `tasks` file keeps the fork path.

The thread joins before the trial's clock starts and leaves after it stops (leaving takes the cgroup
threadgroup lock, which can wait for an RCU grace period: milliseconds a measured `true` must not carry); it
sits in `wait4` meanwhile. It goes back to its own cpuset and gets its own CPU mask back (joining a cpuset
replaces a thread's mask with the cpuset's)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path


def joinable(cgroup: str | None) -> bool:
    """A cgroup v1 cpuset directory: one thread can join it alone."""
    return bool(cgroup) and os.path.exists(f"{cgroup}/tasks") and os.path.exists(f"{cgroup}/cpuset.cpus")


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def hierarchy_root(cgroup: str) -> Path:
    """The mount point of the v1 hierarchy holding `cgroup` (each hierarchy is a file system of its own)."""
    path = Path(cgroup)
    dev = path.stat().st_dev
    while path.parent != path and path.parent.stat().st_dev == dev:
        path = path.parent
    return path


@contextlib.contextmanager
def joined(cgroup: str) -> Iterator[None]:
    """The calling thread is in `cgroup` inside the block, and back in its own cpuset, with its own CPU mask,
    after it. Raises OSError (and changes nothing) when it cannot join."""
    tid = str(threading.get_native_id())
    mask = os.sched_getaffinity(0)
    home = Path("/proc/thread-self/cpuset").read_text().strip()
    _write(f"{cgroup}/tasks", tid)
    try:
        yield
    finally:
        _write(f"{hierarchy_root(cgroup)}{home.rstrip('/')}/tasks", tid)
        os.sched_setaffinity(0, mask)
