"""One trial's path: activate the variant → build its `TrialSpec` → execute → parse → record.

The runner decides which cell runs when; this module runs one trial of it and returns what happened
(`Outcome`), having committed the trial, its samples and its hooks' artifacts to the store in one transaction.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from fairmark.plan.model import Plan, RunPolicy, Variant, Workload
from fairmark.plan.schedule import Cell
from fairmark.run.hooks import Artifact, HookContext, TrialHook
from fairmark.run.launch.executor import forks_to_place, read_outputs, read_text
from fairmark.run.spec import RAW_BYTES, TAIL_BYTES, Executor, Measured, TrialSpec
from fairmark.run.trials import metrics as M
from fairmark.run.trials.build import before_trial_spec, trial_spec
from fairmark.run.trials.loops import CalibrationFailed, calibrate
from fairmark.run.trials.prepare import CellState, WorkloadRuntime
from fairmark.run.variants.basic import command_for
from fairmark.run.variants.cpus import CpuSet
from fairmark.run.variants.driver import Prepared
from fairmark.run.workloads.base import ParseError, RawOutput, TrialContext, WorkloadContext
from fairmark.store.db import Store, now
from fairmark.store.records import Sample, TrialRecord, loops_text
from fairmark.store.schema import CLAIMED_IO, LOOPS_CALIBRATION

if TYPE_CHECKING:
    from fairmark.run.machine.host import Host, Hosts
    from fairmark.run.trials.secrets import Scrubber

Wrapper = Callable[[list[str]], list[str]]


class SpecBuilder(Protocol):
    """A cell's trial spec builder (run.trials.build.trial_spec with all but these bound): its hooks' wrappers and the
    loop count vary between the trials of a cell and its calibration."""

    def __call__(self, *, wrappers: Sequence[Wrapper] = (), loops: int | None = None) -> TrialSpec: ...


def _claimed_io(
    rt: WorkloadRuntime, tctx: TrialContext, status: str, values: dict[str, float]
) -> list[Artifact]:
    """What a file-system tool's trial claims it read or wrote (Adapter.claimed_io), stored with the trial:
    the report holds it against what reached the disks and what the device can do (report.pagecache) without
    asking the adapter again."""
    if not rt.adapter or status != "ok":
        return []
    claimed = rt.adapter.claimed_io(tctx.params, values)
    return [Artifact(CLAIMED_IO, rt.workload.name, "application/json", claimed)] if claimed else []


def is_profiler(hook: TrialHook) -> bool:
    return hook.name.startswith("profile.")


@dataclass
class Contexts:
    """A workload's adapter contexts: the shared one (key None) and one per variant with its own scratch
    file system; `ready` lists those whose setup has started, in order, for teardown."""

    base: WorkloadContext
    by_key: dict[str | None, WorkloadContext] = field(default_factory=dict)
    ready: list[WorkloadContext] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    status: str  # "ok", "failed", "timeout"
    error: str | None  # scrubbed, as stored
    values: dict[str, float]  # metric → value (empty unless ok)
    # a failure's last lines of output (stderr, else stdout): what the log shows of it, once per cell
    last_lines: tuple[str, ...] = ()


@dataclass
class TrialPath:
    """What every trial of a run shares: where it is recorded, how it executes, what wraps it."""

    plan: Plan
    policy: RunPolicy
    store: Store
    run_id: str
    hosts: Hosts  # where each variant runs: this machine, or a [hosts.NAME] (run.machine.host)
    scrub: Scrubber
    note: Callable[[str], None]
    hooks: tuple[TrialHook, ...] = ()
    keep_trial_dirs: bool = False  # `run --keep-scratch`: every trial's output in a directory of its own
    # the plain commands' trial-output dir of each scratch dir, made once (Path arithmetic at every trial cost more)
    _shared_dirs: dict[Path, Path] = field(default_factory=dict)
    _specs: dict[str, tuple[tuple[object, ...], TrialSpec]] = field(
        default_factory=dict
    )  # each cell's last (`_spec`)
    # each cell's last measured trial, by cell key: where a hook's end-of-run artifacts go (`store_finished`)
    _last_measured: dict[str, str] = field(default_factory=dict)

    def run(
        self,
        rt: WorkloadRuntime,
        contexts: Contexts,
        cs: CellState,
        r: int,
        seq: int,
        profiler: TrialHook | None = None,
    ) -> Outcome:
        """Trial number `seq` of cell `cs` (a runner CellState of workload runtime `rt`) in round `r`. A
        measured trial runs without profilers (they change the numbers they are attached to); a profiled one
        runs with one `profiler` alone and is stored apart (warmup and profiled: never in statistics)."""
        profiled = profiler is not None
        cell, w = cs.cell, rt.workload
        variant = self.plan.variant_named(cell.variant)
        self.hosts.activate(variant)
        prepared = self.hosts.prepare(variant)
        wctx, extra = self._adapter_context(rt, contexts, cell.variant, prepared.workdir)
        host = self.hosts.runs(cell.variant, w.name)  # its client host, else the variant's machine
        hooks = self._hooks_for(host, profiler, servers=not self.hosts.client_of(cell.variant, w.name))
        # a tool's adapter and the profilers write files of their own beside the output
        trial_dir = self._trial_dir(wctx.scratch, seq, own=bool(rt.adapter) or any(map(is_profiler, hooks)))
        tctx, command = self._trial_context(rt, cs, wctx, trial_dir, extra, r, variant)
        tid, warm = f"{self.run_id}:{seq}", r < 0
        hctx = HookContext(
            self.run_id, cell.key, w.name, cell.variant, tid, str(trial_dir), warm, prepared.cgroup
        )
        build = self._builder(w, variant, cell, command, prepared, wctx.env, trial_dir, host.local)
        if w.loops == "auto" and cs.loop_start_s is None:  # the group's first trial: its loop count first
            failed_calibration = self._group_loops(rt, cs, build, host.execute)
            if failed_calibration is not None:
                return self._record(rt, cs, r, seq, now(), *failed_calibration, [])
        inputs = (list(command), prepared, dict(wctx.env), trial_dir, host.local, cs.loops)
        spec = self._spec(cs, build, hooks, hctx, inputs)
        failed = self._before_trial(w, spec, host.execute)
        if failed is not None:
            before, why = failed
            return self._record(rt, cs, r, seq, now(), spec, before, ("failed", why, {}), [])
        started = now()
        result, artifacts = self._execute_hooked(hooks, hctx, spec, host)
        try:
            status, error, values = self._measure(rt, tctx, result, spec.loops, cs.loop_start_s or 0.0)
        finally:
            if rt.adapter:
                rt.adapter.after_trial(tctx)
        artifacts += _claimed_io(rt, tctx, status, values)
        return self._record(
            rt, cs, r, seq, started, spec, result, (status, error, values), artifacts, profiled
        )

    def _spec(
        self,
        cs: CellState,
        build: SpecBuilder,
        hooks: tuple[TrialHook, ...],
        hctx: HookContext,
        inputs: tuple[object, ...],
    ) -> TrialSpec:
        """The trial's spec. Hooks that wrap the command are handed the trial's context; without one, the spec
        built from the same `inputs` (what varies between a cell's trials) as the cell's last one is that spec
        (frozen): building it again, its environment merged and copied, was a tenth of the Python time of a
        trial of `true`, and the launch server is sent an environment only when it is another object."""
        wrapping = [h for h in hooks if type(h).wrap is not TrialHook.wrap]  # (the others return argv as is)
        if wrapping:
            wrappers: list[Wrapper] = [functools.partial(_wrap, h, hctx) for h in wrapping]
            return build(wrappers=wrappers, loops=cs.loops)
        last = self._specs.get(cs.cell.key)
        if last is not None and last[0] == inputs:
            return last[1]
        spec = build(wrappers=[], loops=cs.loops)
        self._specs[cs.cell.key] = (inputs, spec)
        return spec

    def _builder(
        self,
        w: Workload,
        variant: Variant,
        cell: Cell,
        command: list[str],
        prepared: Prepared,
        workload_env: dict[str, str],
        trial_dir: Path,
        launcher_places: bool,
    ) -> SpecBuilder:
        """The trial's spec builder (run.trials.build.trial_spec) with everything but its hooks' wrappers and its loop
        count, which calibration trials and the trial give."""
        return functools.partial(
            trial_spec,
            workload=w,
            variant=variant,
            cell=cell,
            command=command,
            prepared=prepared,
            workload_env=workload_env,
            trial_dir=trial_dir,
            policy=self.policy,
            launcher_places=launcher_places,
            fork_places=self.fork_places,
            base_env=self.base_env,
        )

    def _group_loops(
        self, rt: WorkloadRuntime, cs: CellState, build: SpecBuilder, execute: Executor
    ) -> tuple[TrialSpec, Measured, tuple[str, str, dict[str, float]]] | None:
        """A `loops = "auto"` cell's count and calibrated start: its group's when a cell of the group has them
        (one calibration per group: every cell the same count), the stored calibration's on resume, else
        calibrated now on this cell for the whole group."""
        group = [o for o in rt.cells if o.cell.group == cs.cell.group]
        known = next((o for o in group if o.loop_start_s is not None), None)
        if known is not None:
            cs.loops, cs.loop_start_s = known.loops, known.loop_start_s
            return None
        arts = self.store.artifacts(self.run_id, LOOPS_CALIBRATION)
        stored = {a["cell_key"]: a["data"] for a in arts if isinstance(a["data"], dict)}
        done = next((o for o in group if o.loops is not None and o.cell.key in stored), None)
        if (
            done is not None
        ):  # a resumed run: the group's count as calibrated, its start from the same calibration
            for o in group:
                if o.loops is None:
                    o.loops = done.loops
                    self.store.update_cell(o.id, loops=done.loops)
                start = stored.get(o.cell.key, stored[done.cell.key]).get("start_s")
                o.loop_start_s = float(start) if isinstance(start, (int, float)) else 0.0
            return None
        return self._calibrate(rt.workload, cs, group, build, execute)

    def _calibrate(
        self,
        w: Workload,
        cs: CellState,
        group: list[CellState],
        build: SpecBuilder,
        execute: Executor,
    ) -> tuple[TrialSpec, Measured, tuple[str, str, dict[str, float]]] | None:
        """`loops = "auto"` (run.trials.loops): calibration trials of the cell — its before_trial step each time, no
        hooks, not stored — until their loops take long enough; the count is its group's from now on, stored with
        each of its cells after the calibration (an artifact of each: a kill between the two calibrates again on
        resume, and the reports read the last). When it fails: the failed calibration trial, recorded as this
        trial."""
        tried: list[TrialSpec] = []

        def run_with(n: int) -> Measured:
            tried.append(build(loops=n))
            failed = self._before_trial(w, tried[-1], execute)
            return failed[0] if failed else execute(tried[-1])

        try:
            cal = calibrate(run_with)
        except CalibrationFailed as exc:
            return tried[-1], exc.measured, ("failed", f'loops = "auto": {exc}', {})
        doc = cal.to_dict() | {"calibrated_on": cs.cell.key}
        for o in group:
            self.store.add_artifact(
                self.run_id,
                kind=LOOPS_CALIBRATION,
                name=w.name,
                content_type="application/json",
                data=doc,
                cell_key=o.cell.key,
            )
            o.loops, o.loop_start_s = cal.loops, cal.start_s
            self.store.update_cell(o.id, loops=cal.loops)
        cells = f"its {len(group)} cells" if len(group) > 1 else "its cell"
        self.note(f"{cs.cell.group}: {loops_text(cal.loops, doc)}; on {cs.cell.variant}, for {cells}")
        return None

    def _trial_context(
        self,
        rt: WorkloadRuntime,
        cs: CellState,
        wctx: WorkloadContext,
        trial_dir: Path,
        extra: dict[str, str],
        r: int,
        variant: Variant,
    ) -> tuple[TrialContext, list[str]]:
        """The adapter's view of the trial (the cell's parameters, with where its data really is) and its
        command, after the adapter's untimed before-trial step."""
        if extra and any(cs.params.get(k) != v for k, v in extra.items()):
            cs.params = cs.params | extra  # the report states where the data really was
            self.store.update_cell(cs.id, params=cs.params)
        params = (cs.params or rt.params) | extra
        tctx = TrialContext(
            workload=wctx, params=params, trial_dir=trial_dir, variant=cs.cell.variant, warmup=r < 0
        )
        if not rt.adapter:
            return tctx, command_for(rt.workload, variant) or []
        rt.adapter.before_trial(tctx)
        return tctx, rt.adapter.command(tctx)

    def _execute_hooked(
        self, hooks: tuple[TrialHook, ...], hctx: HookContext, spec: TrialSpec, host: Host
    ) -> tuple[Measured, list[Artifact]]:
        """Execute the spec on `host` between its hooks' start and stop; the result and the artifacts."""
        for hook in hooks:
            hook.start(hctx)
        result = host.execute(spec)
        artifacts = host.take_artifacts()
        for hook in hooks:
            artifacts += hook.stop(hctx, result)
        return result, artifacts

    def _hooks_for(
        self, host: Host, profiler: TrialHook | None, servers: bool = True
    ) -> tuple[TrialHook, ...]:
        """A profiled trial's hook is its one profiler, taken where its command runs (on a host, by its agent:
        Host.profiled; `servers`: the workload's servers run there too); a measured one's, every hook but the
        profilers. On a host its agent samples its own monitor."""
        if profiler:
            return (host.profiled(profiler, servers),)
        if not host.local:
            return ()
        return tuple(h for h in self.hooks if not is_profiler(h))

    def _trial_dir(self, scratch: Path, seq: int, own: bool) -> Path:
        """Where the trial's output goes. A tool's adapter and the profilers put files of their own there, and
        --keep-scratch keeps each trial's: a fresh directory per trial. A plain command's stdout and stderr are
        stored (their tails) before the next trial starts, so its trials share one directory and one pair of
        files, which the executor truncates and writes again: a directory per trial cost ~0.2 ms of CPU per
        trial on ext4, and new files each trial ~0.2 ms more (ext4's inode allocator skips every recently
        deleted inode of its group, and a run of short trials deletes two per trial; bench/harness_cost.py) —
        more than the whole trial of a short command. Nothing else writes there: the command is not told the
        directory, and its process group is gone before the next trial starts (a leftover is killed)."""
        if own or self.keep_trial_dirs:
            trial_dir = scratch / f"trial-{seq:05d}"
            trial_dir.mkdir()
            return trial_dir
        shared = self._shared_dirs.get(scratch)
        if shared is None:
            shared = scratch / "trial-output"
            shared.mkdir(exist_ok=True)
            self._shared_dirs[scratch] = shared
        return shared

    @functools.cached_property
    def base_env(self) -> dict[str, str]:
        """fairmark's environment, copied once for the run: every trial's environment is built on it, and
        os.environ decodes each variable again on every read (~40 µs a trial)."""
        return dict(os.environ)

    @functools.cached_property
    def fork_places(self) -> bool:
        """Whether every local trial of this run starts through fork with a placement step in the child
        (`executor.forks_to_place`): decided once for the run, so that all its sides start the same way."""
        found = (r.change("cpus") for r in self.hosts.local.system.variants.values())
        cpusets = [c for c in found if isinstance(c, CpuSet)]
        cpus = any(not c.use_cgroup for c in cpusets) or any("cpus" in w.sweep for w in self.plan.workload)
        if any(c.use_cgroup and c.version == 2 for c in cpusets):  # v2 moves whole processes only: no thread
            return True  # of the controller joins it, so every trial starts by fork and places itself
        return forks_to_place(any(c.use_cgroup for c in cpusets), cpus)

    def _adapter_context(
        self, rt: WorkloadRuntime, contexts: Contexts, variant: str, workdir: str | None
    ) -> tuple[WorkloadContext, dict[str, str]]:
        """The adapter's context for a trial of `variant`, set up on first use (after the variant's system
        changes are active). A variant with its own scratch file system gets its own context whose data
        directory lives there — the data set must be on the file system under test, not beside it."""
        adapter = rt.adapter
        own = bool(
            adapter
            and workdir
            and "directory" in {p.name for p in adapter.params}
            and not rt.params.get("directory")
        )
        key = variant if own else None
        if key not in contexts.by_key:
            base = contexts.base
            ctx = base
            if own:
                ctx = WorkloadContext(
                    name=base.name,
                    params=base.params | {"directory": str(workdir)},
                    scratch=base.scratch / f"variant-{variant}",
                    cache=base.cache,
                    is_root=base.is_root,
                    env=dict(base.env),
                )
                ctx.scratch.mkdir()
                self.note(f"workload {base.name}: preparing its data for variant {variant} on {workdir}")
            if adapter:
                contexts.ready.append(ctx)  # torn down even if setup fails halfway
                adapter.setup(ctx)
                adapter.prime(ctx)
            contexts.by_key[key] = ctx
        extra = {"directory": str(workdir)} if own else {}
        return contexts.by_key[key], extra

    def _before_trial(self, w: Workload, spec: TrialSpec, execute: Executor) -> tuple[Measured, str] | None:
        """Run the workload's untimed before_trial command; (its result, why) when it failed."""
        before = before_trial_spec(w, spec)
        if before is None:
            return None
        done = execute(before)
        if done.status == "ok":
            return None
        tail = (read_text(done.stderr_path, 2000) or read_text(done.stdout_path, 2000)).strip()
        return done, f"before_trial failed ({done.error}): {tail}"

    def _measure(
        self,
        rt: WorkloadRuntime,
        tctx: TrialContext,
        result: Measured,
        loops: int | None = None,
        start_s: float = 0.0,
    ) -> tuple[str, str | None, dict[str, float]]:
        if result.status != "ok":
            return result.status, result.error, {}
        stdout = stderr = ""  # only built-in metrics (wall time, rusage): nothing to read
        if rt.adapter or not M.measured_only(rt.workload.metrics):
            stdout, stderr = read_outputs(result)
        try:
            if rt.adapter:
                files = {name: read_text(p) for name, p in rt.adapter.output_files(tctx).items()}
                parsed = rt.adapter.parse(RawOutput(stdout, stderr, result.exit_code, files))
                values = M.builtin_values(result) | parsed
            else:
                values = M.command_metrics(rt.workload.metrics, result, stdout, stderr, loops, start_s)
            if rt.primary not in values:
                raise ParseError(f"the output yielded no value for the primary metric {rt.primary!r}")
        except ParseError as exc:
            return "failed", f"output did not parse: {exc.message}", {}
        return "ok", None, values

    def _record(
        self,
        rt: WorkloadRuntime,
        cs: CellState,
        r: int,
        seq: int,
        started: dt.datetime,
        spec: TrialSpec,
        result: Measured,
        measured: tuple[str, str | None, dict[str, float]],
        artifacts: list[Artifact],
        profiled: bool = False,
    ) -> Outcome:
        status, error, values = measured
        keep = TAIL_BYTES if status == "ok" else RAW_BYTES  # a failure keeps its raw output as evidence
        if result.leftovers_killed and status == "ok":
            error = "background processes outlived the trial and were killed"
        stdout_tail, stderr_tail = read_outputs(result, keep)
        trial = TrialRecord(
            run_id=self.run_id,
            cell_id=cs.id,
            seq=seq,
            round=r,
            warmup=r < 0 or profiled,
            profiled=profiled,
            status=status,
            started_at=started,
            wall_s=result.wall_s,
            user_s=result.user_s,
            sys_s=result.sys_s,
            max_rss_kib=result.max_rss_kib if result.max_rss_method else None,  # else fairmark's own memory
            max_rss_method=result.max_rss_method,
            exit_code=result.exit_code,
            signal=result.signal,
            error=self.scrub(error) if error else None,
            stdout_tail=self.scrub(stdout_tail),
            stderr_tail=self.scrub(stderr_tail),
            argv=self.scrub.argv(spec.argv),
            host=self.hosts.host_of(cs.cell.variant),
            boot_id=self._boot_id(cs.cell.variant),
        )
        specs = rt.metric_specs
        samples = [
            Sample(trial.id, cs.id, k, float(v), specs[k].unit, specs[k].better)
            for k, v in values.items()
            if k in specs
        ]
        self.store.add_trial(trial, samples, [self._artifact(cs.cell.key, a) for a in artifacts])
        if not trial.warmup:
            self._last_measured[cs.cell.key] = trial.id
        return Outcome(status, trial.error, values, _last_lines(trial) if status != "ok" else ())

    def _boot_id(self, variant: str) -> str | None:
        """The boot the trial ran in: its machine's. A variant on the controller in a run on hosts records
        none, as it did before the hosts were one interface (the verdict's levels read these labels)."""
        machine = self.hosts.of(variant)
        if machine.local and self.hosts.remote:
            return None
        return machine.boot_id()

    def store_finished(self, hook: TrialHook) -> None:
        """The hook's end-of-run artifacts (TrialHook.end_of_run), each with its cell's last measured trial (a cell
        that has none gets nothing: no report reads a warm-up's series)."""
        for cell_key, a in hook.end_of_run():
            trial_id = self._last_measured.get(cell_key)
            if trial_id is not None:
                row = self._artifact(cell_key, a)
                self.store.add_artifact(
                    self.run_id,
                    kind=a.kind,
                    name=a.name,
                    content_type=a.content_type,
                    data=row["data"],  # type: ignore[arg-type]
                    text=row["text"],  # type: ignore[arg-type]
                    trial_id=trial_id,
                    cell_key=cell_key,
                )

    def _artifact(self, cell_key: str, a: Artifact) -> dict[str, object]:
        json_data = a.content_type == "application/json"
        return {
            "cell_key": cell_key,
            "kind": a.kind,
            "name": a.name,
            "content_type": a.content_type,
            "data": (a.data if a.numbers_only else self.scrub.json(a.data)) if json_data else None,
            "text": None if json_data else self.scrub(str(a.data)),
        }


def close_hooks(path: TrialPath | None, hooks: Sequence[TrialHook], note: Callable[[str], None]) -> None:
    """The run's end: each hook's end-of-run artifacts stored (`path`: the run's trials, None when none ran),
    then the hook closed."""
    for hook in hooks:
        try:  # before close: the system monitor's last claims need its reader
            if path is not None:
                path.store_finished(hook)
        except Exception as exc:  # not the run's own error: say so, keep the run's outcome
            note(f"{hook.name}: its last artifacts were not stored: {exc}")
        finally:
            hook.close()


def _wrap(hook: TrialHook, hctx: HookContext, argv: list[str]) -> list[str]:
    return hook.wrap(argv, hctx)


def _last_lines(trial: TrialRecord, limit: int = 3) -> tuple[str, ...]:
    """The last non-blank lines of a failed trial's stderr (of its stdout when stderr is empty), each cut at 200
    characters: where a shell or a program says why it stopped ("lz4: not found")."""
    for text in (trial.stderr_tail, trial.stdout_tail):
        found = [line.rstrip() for line in (text or "").splitlines() if line.strip()]
        if found:
            return tuple(line if len(line) <= 200 else line[:199] + "…" for line in found[-limit:])
    return ()
