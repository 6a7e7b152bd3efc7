"""A workload's stage: its private scratch directory and adapter contexts, the plan's setup/prime commands
before its trials and teardown after them (always, on every host its variants use), and the removal of the
scratch directories a killed fairmark process left behind."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fairmark.errors import FairmarkError
from fairmark.plan.model import RunPolicy, Workload
from fairmark.run.build import step_spec
from fairmark.run.executor import execute_spec, kill_group, read_text
from fairmark.run.lock import pid_alive
from fairmark.run.prepare import WorkloadRuntime
from fairmark.run.trial import Contexts, Executor
from fairmark.run.workloads.base import WorkloadContext

SCRATCH_PREFIX = "fairmark-"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fairmark"


@contextmanager
def workload_stage(
    rt: WorkloadRuntime,
    policy: RunPolicy,
    *,
    remote: Any = None,
    phase: Callable[[str, str], None] = lambda name, phase: None,
    keep_scratch: bool = False,
) -> Iterator[Contexts]:
    """Set the workload up (its setup and prime commands), yield its contexts for the trials, tear it down."""
    w = rt.workload
    # The PID in the name lets a later run remove what a killed one left (see sweep_stale_scratch).
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-{w.name}-"))
    ctx = WorkloadContext(
        name=w.name, params=rt.params, scratch=scratch, cache=cache_dir() / (w.tool or "command"),
        is_root=os.geteuid() == 0,
    )  # fmt: skip
    ctx.cache.mkdir(parents=True, exist_ok=True)
    # Plain command workloads find their private scratch directory (removed after the workload) here.
    ctx.env["FAIRMARK_SCRATCH"] = str(scratch)
    # ... and a TCP port free on loopback when the workload starts, for a server its setup starts (plans
    # hard-coding ports collide with each other and with whatever else runs)
    from fairmark.run.workloads.servers import free_port

    ctx.env["FAIRMARK_PORT"] = str(free_port())
    contexts = Contexts(ctx)
    executors = step_executors(rt, remote)
    try:
        phase(w.name, "setup")
        for step in ("setup", "prime"):
            for ex in executors:
                shell_step(w, step, scratch, policy, executor=ex, env=ctx.env)
        phase(w.name, "trials")
        yield contexts
    finally:
        try:
            if rt.adapter:
                for c in reversed(contexts.ready):
                    rt.adapter.teardown(c)
            for ex in executors:
                shell_step(w, "teardown", scratch, policy, check=False, executor=ex, env=ctx.env)
        finally:
            if not keep_scratch:
                shutil.rmtree(scratch, ignore_errors=True)


def step_executors(rt: WorkloadRuntime, remote: Any = None) -> list[Executor]:
    """Where a workload's setup/prime/teardown commands run: on every host its variants use."""
    if not remote:
        return [execute_spec]
    found = {id(ex): ex for cs in rt.cells for ex in [remote.executor(cs.cell.variant) or execute_spec]}
    return list(found.values())


def shell_step(
    w: Workload,
    step: str,
    scratch: Path,
    policy: RunPolicy,
    check: bool = True,
    executor: Executor = execute_spec,
    env: dict[str, str] | None = None,
) -> None:
    spec = step_spec(w, step, scratch, policy, env)
    if spec is None:
        return
    res = executor(spec)
    if res.status != "ok" and check:
        tail = read_text(res.stderr_path, 2000) or read_text(res.stdout_path, 2000)
        raise FairmarkError(f"workload {w.name!r}: {step} command failed ({res.error}): {tail.strip()}")


def sweep_stale_scratch(tmp: str | None = None) -> list[str]:
    """Remove scratch directories of fairmark processes that no longer exist (a kill -9 leaves them), after
    stopping what those processes left running in them."""
    base = Path(tmp or tempfile.gettempdir())
    lines = _kill_orphans(base)
    for path in base.glob(f"{SCRATCH_PREFIX}*-*"):
        pid = _owner(path.name)
        if pid is not None and not pid_alive(pid) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            lines.append(f"removed {path}, left by fairmark process {pid}, which no longer runs")
    return lines


def _owner(name: str) -> int | None:
    """The fairmark PID in a scratch directory's name, unless it is this process."""
    pid = name[len(SCRATCH_PREFIX) :].split("-", 1)[0] if name.startswith(SCRATCH_PREFIX) else ""
    return int(pid) if pid.isdigit() and int(pid) != os.getpid() else None


def _kill_orphans(base: Path) -> list[str]:
    """A managed server (redis, PostgreSQL, MariaDB …) runs in its own session with its working directory in
    the scratch directory, so a SIGKILL of fairmark's process group does not reach it and nothing else would
    ever stop it: stop the process group of every process working in a dead fairmark's scratch directory (also
    one already removed, which the kernel shows as 'PATH (deleted)')."""
    import psutil

    lines = []
    for proc in psutil.process_iter(["pid", "cwd", "name"]):
        cwd = proc.info.get("cwd") or ""
        if not cwd.startswith(f"{base}/{SCRATCH_PREFIX}"):
            continue
        owner = _owner(Path(cwd.removesuffix(" (deleted)")).relative_to(base).parts[0])
        if owner is None or pid_alive(owner) or proc.pid == os.getpid():
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(proc.pid)
            if group == os.getpgrp():  # never our own group
                os.kill(proc.pid, signal.SIGKILL)
            else:
                kill_group(group, grace_s=5.0)  # the server's own clean shutdown first (shared memory, files)
            lines.append(f"stopped {proc.info['name']} (pid {proc.pid}), left by fairmark process {owner}")
    return lines
