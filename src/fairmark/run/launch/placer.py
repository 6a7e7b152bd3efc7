"""Where a trial's process starts: in a variant's cpuset cgroup, on its CPUs — the one placer of the local executor
(fairmark.run.launch.executor) and of the agent on a host (fairmark.remote.agent, which is shipped this module).

On Linux every placement is handed down by the launching thread: it joins a cgroup v1 cpuset for the trial
(`fairmark.run.launch.thread_cgroup`; it leaves when the caller's ExitStack closes, after the trial's wait) or sets its
own CPU mask around the start, so the trial starts by vfork and inherits both. What a thread cannot hand down
(a cgroup it cannot join; an affinity elsewhere than Linux; `fork_places`, which makes every trial of a run start
the same way) is written by the child between fork and exec. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO

from fairmark.run.launch import thread_cgroup

# Linux's sched_setaffinity(0, …) sets the calling thread's mask, which a child it starts inherits; elsewhere an
# affinity is set in the child between fork and exec.
THREAD_AFFINITY = sys.platform.startswith("linux")

File = int | IO[bytes] | None


def forks_to_place(cgroup: bool, cpus: bool) -> bool:
    """Whether trials placed this way must start through fork with a placement step in the child (a cgroup
    or an affinity the launching thread cannot hand down: see `fairmark.run.launch.thread_cgroup`). A run sets
    `TrialSpec.fork_places` on every trial when any of its trials does, so that both sides of a comparison
    start the same way."""
    return (cgroup or cpus) and not THREAD_AFFINITY


def child_step(cgroup: str | None, cpus: tuple[int, ...]) -> Callable[[], None]:
    """Runs in the child between fork and exec: join the cgroup and set the affinity (inherited by the whole
    tree), so the trial's own process is placed and no wrapper process (`sh -c`, taskset) is measured."""

    def place() -> None:
        if cgroup:
            fd = os.open(f"{cgroup}/cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)
        if cpus:
            os.sched_setaffinity(0, cpus)

    return place


def join(cgroup: str | None, stack: contextlib.ExitStack) -> bool:
    """Whether this thread joined the trial's cgroup for the trial (until `stack` closes); when it cannot, the
    child joins it between fork and exec."""
    if not (THREAD_AFFINITY and cgroup and thread_cgroup.joinable(cgroup)):
        return False
    try:
        stack.enter_context(thread_cgroup.joined(str(cgroup)))
    except OSError:
        return False
    return True


def popen(
    argv: Sequence[str],
    *,
    cgroup: str | None,
    cpus: tuple[int, ...],
    fork_places: bool,
    joined: bool,
    stdin: File,
    stdout: File,
    stderr: File,
    env: Mapping[str, str] | None,
    cwd: str | None,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.Popen[bytes]:
    """Start the placed trial in its own session and process group (a timeout kills the whole tree). Without a
    step in the child subprocess starts it by vfork: it borrows the launcher's memory until exec instead of
    copying the page tables of a ~90 MB process (bench/harness_cost.py has the cost)."""
    step = None
    mine = None
    if not joined and (fork_places or cgroup or forks_to_place(False, bool(cpus))):
        step = child_step(cgroup, cpus)
    elif cpus:
        mine = os.sched_getaffinity(0)
        os.sched_setaffinity(0, cpus)  # this thread's mask: the child inherits it
    try:
        return subprocess.Popen(
            list(argv),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            env=env,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
            pass_fds=pass_fds,
            preexec_fn=step,
        )
    finally:
        if mine is not None:
            os.sched_setaffinity(0, mine)  # the launcher never runs on the trial's CPUs during the trial
