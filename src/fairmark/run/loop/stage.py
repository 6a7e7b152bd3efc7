"""A workload's stage: its private scratch directory and adapter contexts, the plan's setup/prime commands
before its trials and teardown after them (always, on every host its variants use), and the removal of the
scratch directories a killed fairmark process left behind."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from fairmark.cachedir import cache_dir
from fairmark.errors import FairmarkError
from fairmark.plan.model import RunPolicy, Workload
from fairmark.run.guard import scratch
from fairmark.run.guard.scratch import Scratch
from fairmark.run.launch.executor import execute_spec, read_text
from fairmark.run.launch.launcher import launcher
from fairmark.run.profiles.base import sweep_stale_profiles
from fairmark.run.spec import Executor
from fairmark.run.trials.build import step_spec
from fairmark.run.trials.prepare import WorkloadRuntime
from fairmark.run.trials.trial import Contexts
from fairmark.run.workloads.base import WorkloadContext
from fairmark.run.workloads.servers import free_port

if TYPE_CHECKING:
    from fairmark.run.machine.host import Hosts


@contextmanager
def workload_stage(
    rt: WorkloadRuntime,
    policy: RunPolicy,
    *,
    hosts: Hosts | None = None,
    phase: Callable[[str, str], None] = lambda name, phase: None,
    keep_scratch: bool = False,
    note: Callable[[str], None] = lambda message: None,
) -> Iterator[Contexts]:
    """Set the workload up (its setup and prime commands), yield its contexts for the trials, tear it down."""
    w = rt.workload
    # Held (locked) until removed: a sweep by another fairmark removes it only once its lock is free.
    held = Scratch(w.name)
    scratch = held.path
    ctx = WorkloadContext(
        name=w.name,
        params=rt.params,
        scratch=scratch,
        cache=cache_dir() / (w.tool or "command"),
        is_root=os.geteuid() == 0,
    )
    ctx.cache.mkdir(parents=True, exist_ok=True)
    # Plain command workloads find their private scratch directory (removed after the workload) here.
    ctx.env["FAIRMARK_SCRATCH"] = str(scratch)
    # ... and a TCP port free on loopback when the workload starts, for a server its setup starts (plans
    # hard-coding ports collide with each other and with whatever else runs)

    ctx.env["FAIRMARK_PORT"] = str(free_port())
    contexts = Contexts(ctx)
    executors = step_executors(rt, hosts)
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
            if keep_scratch:
                note(f"workload {w.name!r}: scratch directory kept in {held.keep()}")
            else:
                held.remove()


def step_executors(rt: WorkloadRuntime, hosts: Hosts | None = None) -> list[Executor]:
    """Where a workload's setup/prime/teardown commands run: on every machine its variants use (here always
    through execute_spec: a test's stand-in executor runs trials only)."""
    if not hosts:
        return [execute_spec]
    machines = {id(m): m for cs in rt.cells for m in [hosts.of(cs.cell.variant)]}
    return [execute_spec if m.local else m.execute for m in machines.values()]


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
    """Remove the scratch directories killed fairmark processes left, and stop what runs in them."""
    return scratch.sweep(tmp)


def startup_notes() -> list[str]:
    """What a run says before it starts: the scratch directories killed fairmark processes left (removed, what
    ran in them stopped), then what their profiled trials left (an empty cgroup, perf's FIFOs); and that this host records
    no peak RSS when no launcher can be built for it (`fairmark.run.launch.launcher`)."""

    lines = sweep_stale_scratch() + sweep_stale_profiles()
    why = launcher()[1]
    return lines + ([f"max_rss_kib is not measured on this host: {why}"] if why else [])
