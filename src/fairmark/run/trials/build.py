"""One trial's `TrialSpec`, built once from the plan's workload, the variant, the sweep point and what the
variant's system state prepared: the whole command line (wrappers outside in: the variant's `wrap`, the system
state's wrapper, the `cpus` placement, then the tool's or plan's command; trial hooks wrap all of it), the
complete environment (later layers win), the working directory and the time limit."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from fairmark.plan.model import RunPolicy, Variant, Workload
from fairmark.plan.schedule import Cell
from fairmark.run.spec import TrialSpec
from fairmark.run.variants.basic import apply_env
from fairmark.run.variants.cpus import parse_cpu_list
from fairmark.run.variants.driver import Prepared

NON_NAME = re.compile(r"\W")
LOOPS_FIELD = "{loops}"  # where a command workload with loops takes its loop count in its argv


def cpuset_of(cell: Cell) -> str | None:
    """The CPU list a `cpus` sweep point pins the trial to (an int n means CPUs 0…n-1)."""
    cpus = dict(cell.point).get("cpus")
    if cpus is None:
        return None
    if isinstance(cpus, int):
        return f"0-{cpus - 1}" if cpus > 1 else "0"
    return str(cpus)


def cpus_wrap(cell: Cell) -> list[str]:
    """A `cpus` sweep point runs the whole trial tree under a CPU set (sched affinity, inherited)."""
    cpuset = cpuset_of(cell)
    return ["taskset", "-c", cpuset] if cpuset is not None else []


def trial_spec(
    *,
    workload: Workload,
    variant: Variant,
    cell: Cell,
    command: Sequence[str],
    prepared: Prepared,
    workload_env: Mapping[str, str],
    trial_dir: Path,
    policy: RunPolicy,
    wrappers: Sequence[Callable[[list[str]], list[str]]] = (),
    launcher_places: bool = True,
    fork_places: bool = False,
    base_env: Mapping[str, str] | None = None,
    loops: int | None = None,
) -> TrialSpec:
    """`prepared` is what the variant's system state made ready for this trial (`SystemState.prepare`:
    placement, env, workdir); `wrappers` are the trial hooks' `wrap`, applied in order. The CPU placement
    (the variant's `cpus`, a `cpus` sweep point) is applied by the launcher (`launcher_places`; an agent on
    another host still gets the sweep's taskset wrapper). `base_env` is fairmark's own environment (os.environ,
    or a run's copy of it taken once). `loops` is handed to the command (a workload with loops): `{loops}` in its
    argv, `$FAIRMARK_LOOPS` in its environment."""
    if loops is not None:
        command = [a.replace(LOOPS_FIELD, str(loops)) for a in command]
    place_cgroup, place_cpus = prepared.cgroup, prepared.cpus
    sweep_cpus = cpuset_of(cell)
    if sweep_cpus is not None and launcher_places:
        place_cpus = tuple(parse_cpu_list(sweep_cpus))
    place_wrap = [] if launcher_places else cpus_wrap(cell)
    argv = list(variant.wrap or []) + place_wrap + list(command)
    for wrap in wrappers:
        argv = wrap(argv)
    base = os.environ if base_env is None else base_env
    env = apply_env(base, workload.env, workload_env, variant.env, prepared.env)
    # A command workload learns its sweep point from the environment (a tool's adapter gets it as params).
    env |= {"FAIRMARK_SWEEP_" + NON_NAME.sub("_", k).upper(): str(v) for k, v in cell.point}
    if prepared.workdir:
        env["FAIRMARK_WORKDIR"] = prepared.workdir
    if loops is not None:
        env["FAIRMARK_LOOPS"] = str(loops)
    return TrialSpec(
        argv=tuple(argv),
        out_dir=str(trial_dir),
        name="trial",
        env=env,
        cwd=prepared.workdir or workload.cwd or None,
        timeout_s=workload.timeout_s or policy.timeout_s,
        grace_s=policy.kill_grace_s,
        cpuset=sweep_cpus,
        place_cgroup=place_cgroup,
        place_cpus=place_cpus,
        fork_places=fork_places and launcher_places,
        loops=loops,
    )


def before_trial_spec(workload: Workload, trial: TrialSpec) -> TrialSpec | None:
    """The workload's untimed `before_trial` command for this trial: the trial's environment and directory,
    its own output files, no CPU placement (None when the plan has none)."""
    cmd = workload.before_trial
    if cmd is None:
        return None
    argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
    return dataclasses.replace(
        trial, argv=tuple(argv), name="before_trial", cpuset=None, files=(), loops=None
    )


def step_spec(
    workload: Workload,
    step: str,
    scratch: Path,
    policy: RunPolicy,
    extra_env: Mapping[str, str] | None = None,
) -> TrialSpec | None:
    """A workload's setup / prime / teardown command (None when the plan has none); `extra_env` is what
    fairmark gives the workload (its scratch directory, a free port)."""
    cmd = getattr(workload, step)
    if cmd is None:
        return None
    argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
    return TrialSpec(
        argv=tuple(argv),
        out_dir=str(scratch),
        name=step,
        env=apply_env(os.environ, workload.env, {"FAIRMARK_SCRATCH": str(scratch), **(extra_env or {})}),
        cwd=workload.cwd,
        timeout_s=workload.timeout_s or policy.timeout_s,
        grace_s=policy.kill_grace_s,
    )
