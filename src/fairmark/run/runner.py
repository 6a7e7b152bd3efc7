"""Plan → trials → store. Interleaved, seeded, adaptive, crash-safe.

Per workload (so that one workload's servers never run during another's trials):
    adapter setup → prime → warm-up rounds → measured rounds → teardown (always)
Each round runs every still-active cell of the workload once, in a seeded random order (or in A B B A variant
blocks when a variant changes the system). After each round a cell stops when its CI half-width is within
target_ci_pct of its mean (never because an A/B test became significant), at max_trials, or after
max_failures failed trials (abandoned, with the reason). Each finished trial is committed at once; resume
continues from what the store holds, re-running the interrupted trial.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairmark import __version__
from fairmark.errors import EnvironmentRefused, FairmarkError, PlanError
from fairmark.plan.load import LoadedPlan
from fairmark.plan.model import BUILTIN_METRICS, RunPolicy, Workload
from fairmark.plan.schedule import Cell, Order, cells_of, new_seed
from fairmark.run import devicebase, wrapcost
from fairmark.run.build import step_spec
from fairmark.run.executor import execute_spec, read_text
from fairmark.run.hooks import TrialHook
from fairmark.run.lock import pid_alive
from fairmark.run.trial import Contexts, Executor, Outcome, TrialPath, is_profiler
from fairmark.run.variants.basic import command_for
from fairmark.run.variants.journal import default_state_dir
from fairmark.run.variants.system import SystemState
from fairmark.run.workloads import adapter_for, data_set_info, versions_to_record
from fairmark.run.workloads.base import Adapter, WorkloadContext
from fairmark.stats import RunningMean
from fairmark.stats.stopping import group_stop
from fairmark.store.db import Store, now

SCRATCH_PREFIX = "fairmark-"
PROFILED_TRIALS = 2  # extra trials per cell with profilers attached (--profile), after the measured rounds
VOLATILE_EVERY_S = 10.0  # the volatile probe samples for ~0.2 s; keep it off the hot path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fairmark"


@dataclass
class RunOptions:
    quick: bool = False
    seed: int | None = None
    accept_risk: bool = False
    probe: bool = True  # environment snapshots and the doctor gate (off only in scheduler tests)
    command_line: str = ""
    hooks: Sequence[TrialHook] = ()
    keep_scratch: bool = False
    calibrate: bool = False  # add an A/A twin of the baseline variant (see Plan.with_aa_twin)
    allow_concurrent: bool = False  # another run may use the same host (a host's lock, as the local HostLock)
    tags: dict[str, str] = field(default_factory=dict)  # `run --tag k=v`: stored with the run, queried later


class Progress:
    """What the runner tells the user; the CLI plugs in a rich or plain implementation."""

    def started(self, run_id: str, cells: int, policy: RunPolicy) -> None: ...
    def workload(self, name: str, phase: str) -> None: ...
    def trial(self, event: dict[str, Any]) -> None: ...
    def cell_stopped(self, key: str, status: str, reason: str) -> None: ...
    def note(self, message: str) -> None: ...
    def finished(self) -> None: ...


@dataclass
class CellState:
    cell: Cell
    id: int
    status: str = "active"
    reason: str | None = None
    values: list[float] = field(default_factory=list)  # primary metric, measured ok trials, in order
    failures: int = 0
    rounds_done: set[int] = field(default_factory=set)
    params: dict[str, Any] = field(default_factory=dict)  # a tool cell's resolved parameters


@dataclass
class WorkloadRuntime:
    workload: Workload
    adapter: Adapter | None
    params: dict[str, Any]
    metric_specs: dict[str, tuple[str, str]]  # name → (unit, better); the first is primary
    cells: list[CellState]
    declared: list[str]  # the plan's or adapter's metrics (built-ins only when declared): they get verdicts

    @property
    def primary(self) -> str:
        return next(iter(self.metric_specs))


class Runner:
    def __init__(
        self,
        loaded: LoadedPlan,
        store: Store,
        options: RunOptions | None = None,
        *,
        executor: Executor = execute_spec,
        progress: Progress | None = None,
    ):
        self.options = options or RunOptions()
        self.loaded, self.store = loaded, store
        self.plan = loaded.plan.with_aa_twin() if self.options.calibrate else loaded.plan
        self.execute = executor
        self.progress = progress or Progress()
        self.policy = self.plan.policy(self.options.quick)
        self.remote = None
        if self.plan.remote:  # variants on other hosts: their trials and system changes happen there
            from fairmark.remote.hosts import RemoteHosts, local_part

            self.remote = RemoteHosts(self.plan, loaded.path, hooks=self.options.hooks,
                                      allow_concurrent=self.options.allow_concurrent)  # fmt: skip
        local = local_part(self.plan) if self.remote else self.plan
        self.system = SystemState(local, state_dir=default_state_dir())
        self.run_id = ""
        self.seq = 0
        self.secrets = _secret_values(os.environ)
        self._last_volatile = 0.0
        self._noticed: set[str] = set()
        self._env_before: dict[str, Any] | None = None
        self._trial_path: TrialPath | None = None
        self._running: dict[str, RunningMean] = {}  # each cell's mean ± CI for the progress line
        self.report: Any = None  # the finished run's RunReport, so the caller need not compute it again

    # -- preparation (nothing is written before all of this passed) ---------------------------------------
    def _runtimes(self, stored: dict[str, int] | None = None) -> list[WorkloadRuntime]:
        cells = cells_of(self.plan)
        out = []
        for w in self.plan.workload:
            adapter, params = None, {}
            if w.tool:
                adapter = adapter_for(w.tool)
                if self.remote and any(v.host for v in self.plan.variant):
                    from fairmark.remote.tooling import remote_adapter

                    adapter = remote_adapter(adapter, self.remote, w.name, self.loaded.path)
                base = dict(w.params) | (self.plan.quick.params.get(w.name, {}) if self.options.quick else {})
                sweep_keys = [k for k in w.sweep if k != "cpus"]
                try:
                    params = adapter.resolve(base | {k: _first(w, k) for k in sweep_keys})
                except PlanError as exc:
                    raise PlanError(
                        exc.message, path=self.loaded.path, key=f"workload {w.name!r} params"
                    ) from None
                missing = adapter.missing_executables()
                if missing:
                    pkgs = ", ".join(adapter.packages.get("debian", ())) or "its package"
                    raise EnvironmentRefused(
                        f"workload {w.name!r}: tool {w.tool!r} needs {', '.join(missing)} (Debian: {pkgs})",
                        hint=f"run `fairmark setup {self.loaded.path}` to install what the plan needs",
                    )
                specs = {m.name: (m.unit, m.better) for m in adapter.metrics}
            else:
                specs = {m.name: (m.unit_name, m.direction) for m in w.metrics}
            declared = list(specs) or ["wall_s"]  # verdicts are given for these; built-ins are also kept
            for name, (unit, better) in BUILTIN_METRICS.items():
                specs.setdefault(name, (unit, better))
            own = [c for c in cells if c.workload == w.name]
            cell_params = {c.key: self._cell_params(adapter, params, c) for c in own} if adapter else {}
            out.append(
                WorkloadRuntime(
                    w,
                    adapter,
                    params,
                    specs,
                    [
                        CellState(c, (stored or {}).get(c.key, -1), params=cell_params.get(c.key, {}))
                        for c in own
                    ],
                    declared,
                )
            )
        return out

    def _cell_params(self, adapter: Adapter, params: dict[str, Any], cell: Cell) -> dict[str, Any]:
        """Workload params ⊕ the variant's params for this workload ⊕ the sweep point, checked by the adapter."""
        own = self.plan.variant_named(cell.variant).params.get(cell.workload, {})
        try:
            return adapter.resolve(params | own | {k: v for k, v in cell.point if k != "cpus"})
        except PlanError as exc:
            raise PlanError(exc.message, path=self.loaded.path, key=f"cell {cell.key} params") from None

    def _cell_rows(self, rt: WorkloadRuntime) -> list[dict[str, Any]]:
        return [
            {
                "key": cs.cell.key,
                "workload": cs.cell.workload,
                "variant": cs.cell.variant,
                "point": [list(p) for p in cs.cell.point],
                "primary_metric": rt.primary,
                "metrics": [
                    {"name": n, "unit": u, "better": b, "verdict": n in rt.declared}
                    for n, (u, b) in rt.metric_specs.items()
                ],
                "command": [
                    self._scrub(a)
                    for a in command_for(rt.workload, self.plan.variant_named(cs.cell.variant)) or []
                ]
                or None,
                "params": cs.params or None,
                "labels": (_labels(rt.adapter, cs.params) or {})
                | (self.remote.labels(cs.cell.variant, rt.workload.name) if self.remote else {})
                or None,
            }
            for cs in rt.cells
        ]

    def _gate(self, runtimes: list[WorkloadRuntime]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        if self.remote:
            self.remote.connect()
            for line in self.remote.recovered:
                self.progress.note(line)
        if not self.options.probe:
            return None, []
        if self.remote:
            from fairmark.remote.hosts import gate_hosts

            return gate_hosts(self, runtimes)
        from fairmark.probe import diagnose, take_snapshot
        from fairmark.run.variants.basic import intended_env

        self._programs = versions_to_record((rt.workload, rt.adapter, rt.params) for rt in runtimes)
        snap = take_snapshot("/", tools=self._programs, workdir=os.getcwd())
        found = [
            f.to_dict()
            for f in diagnose(
                snap, intended_env=intended_env(self.plan.variant), workloads=_workload_info(runtimes)
            )
        ]
        errors = [f for f in found if f["severity"] == "error"]
        if errors and not self.options.accept_risk:
            lines = "; ".join(f"{f['title']} ({f['evidence']})" for f in errors)
            raise EnvironmentRefused(
                f"the environment would invalidate this benchmark: {lines}",
                hint="fix it (see `fairmark doctor`), or pass --accept-risk to run anyway; "
                "every report of the run will then say so",
            )
        return snap, found

    # -- entry points ------------------------------------------------------------------------------------
    def start(self) -> str:
        runtimes = self._runtimes()
        for line in sweep_stale_scratch():
            self.progress.note(line)
        try:
            snap, found = self._gate(runtimes)
        except BaseException:
            if self.remote:
                self.remote.close()  # refused before any trial: end the hosts' sessions (and their locks)
            raise
        self._env_before = snap
        # a variant's own wrap is inside its measured time only: its cost here is shown beside the verdicts
        wrap_costs = wrapcost.measure(self.plan.variant) if self.options.probe else {}
        # what the disk under a file-system workload can do: a result beyond it measured the page cache
        devices = devicebase.for_runtimes(runtimes) if self.options.probe and not self.remote else {}
        self._noticed = {f["id"] for f in found}  # between rounds, report only what is new
        seed = self.options.seed if self.options.seed is not None else (self.plan.run.seed or new_seed())
        self.run_id = self.store.create_run(
            plan_path=self.loaded.path,
            plan_text=self._scrub(self.loaded.text),
            plan_sha256=self.loaded.sha256,
            title=self.plan.title,
            seed=seed,
            host_id=_host_id(snap),
            hostname=_hostname(snap),
            status="running",
            command_line=self._scrub(self.options.command_line),
            fairmark_version=__version__,
            accept_risk=self.options.accept_risk,
            env_before=snap,
            options={
                "quick": self.options.quick,
                "calibrate": self.options.calibrate,
                "policy": self.policy.model_dump(),
                # resolved once here, so that reports never parse the plan again
                "baseline": self.plan.baseline,
                "variants": {v.name: v.model_dump(mode="json") for v in self.plan.variant},
                "hooks": [h.name for h in self.options.hooks],
                "wrap_costs": wrap_costs,
                "device_baselines": devices,
                **({"hosts": self.remote.describe()} if self.remote else {}),
            },
            notes=[],
            tags=self.options.tags,
        )
        self.store.add_findings(self.run_id, "before", found)
        if self.remote:
            self.remote.store_snapshots(self.store, self.run_id)
        return self._execute(runtimes, seed)

    def resume(self, run_id: str) -> str:
        run = self.store.get_run(run_id)
        for line in sweep_stale_scratch():
            self.progress.note(line)
        if run.status == "done":
            raise FairmarkError(f"run {run.id} is already complete; nothing to resume")
        self.run_id = run.id
        stored = {c["key"]: c["id"] for c in self.store.cells(run.id)}
        runtimes = self._runtimes(stored)
        self._load_progress(runtimes)
        if self.remote:
            self.remote.connect()
        self.store.update_run(run.id, status="running", ended_at=None)
        self.progress.note(f"resuming run {run.id}: {self.seq} trial(s) already stored are kept")
        return self._execute(runtimes, run.seed)

    def _load_progress(self, runtimes: list[WorkloadRuntime]) -> None:
        by_id = {cs.id: (rt, cs) for rt in runtimes for cs in rt.cells}
        values = {(s["trial_id"], s["metric"]): s["value"] for s in self.store.samples(self.run_id)}
        for t in self.store.trials(self.run_id):
            rt, cs = by_id[t["cell_id"]]
            cs.rounds_done.add(t["round"])
            self.seq = max(self.seq, t["seq"])
            if t["status"] != "ok":
                cs.failures += 1
            elif not t["warmup"] and (t["id"], rt.primary) in values:
                cs.values.append(values[(t["id"], rt.primary)])
        for c in self.store.cells(self.run_id):
            if c["status"] != "active":
                _, cs = by_id[c["id"]]
                cs.status, cs.reason = c["status"], c["stop_reason"]

    # -- the loop ----------------------------------------------------------------------------------------
    def _execute(self, runtimes: list[WorkloadRuntime], seed: int) -> str:
        # The programs whose versions the snapshot after the run records (a resumed run has no gate).
        self._programs = versions_to_record((rt.workload, rt.adapter, rt.params) for rt in runtimes)
        ids = {}
        for rt in runtimes:
            ids |= self.store.ensure_cells(self.run_id, self._cell_rows(rt))
        for rt in runtimes:
            for cs in rt.cells:
                cs.id = ids[cs.cell.key]
        self.progress.started(self.run_id, sum(len(rt.cells) for rt in runtimes), self.policy)
        order = Order(seed)
        status = "interrupted"
        try:
            if any(v.boot for v in self.plan.variant):  # kernels: one boot per block, A B B A … (run.bootrun)
                from fairmark.run.bootrun import BootRun

                BootRun(self).execute(runtimes, order)  # it leaves no cell active
            for rt in runtimes:
                if any(cs.status == "active" for cs in rt.cells):
                    self._workload(rt, order)
            status = "done"
        except FairmarkError as exc:
            status = "interrupted" if getattr(exc, "resumable", False) else "failed"
            raise
        finally:
            try:
                self.system.close()
                if self.remote:
                    self.remote.close()  # each agent restores the system changes it made on its host
            finally:
                for hook in self.options.hooks:
                    hook.close()
                self._finish(status)
        return self.run_id

    def _finish(self, status: str) -> None:
        env_after = None
        if self.options.probe and status == "done" and not self.remote:
            from fairmark.probe import take_snapshot

            env_after = take_snapshot("/", tools=self._programs)
        self.store.update_run(self.run_id, status=status, ended_at=now(), env_after=env_after)
        if status == "done":
            from fairmark.report.data import store_verdicts

            self.report = store_verdicts(self.store, self.run_id)
        self.progress.finished()

    def _workload(self, rt: WorkloadRuntime, order: Order) -> None:
        w = rt.workload
        # The PID in the name lets a later run remove what a killed one left (see sweep_stale_scratch).
        scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-{w.name}-"))
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
        from fairmark.run.servers import free_port

        ctx.env["FAIRMARK_PORT"] = str(free_port())
        contexts = Contexts(ctx)
        try:
            self.progress.workload(w.name, "setup")
            for step in ("setup", "prime"):
                for ex in self._step_executors(rt):
                    self._shell_step(w, step, scratch, executor=ex, env=ctx.env)
            self.progress.workload(w.name, "trials")
            for r in range(-self.policy.warmup, self.policy.max_trials + self.policy.max_failures):
                active = [cs for cs in rt.cells if cs.status == "active"]
                if not active:
                    break
                for cs in self._round_order(order, w.name, r, active):
                    if r not in cs.rounds_done:
                        self._trial(rt, contexts, cs, r)
                if r >= 0:
                    self._stop_rule(rt)
                self._between_rounds()
            for cs in rt.cells:  # the loop bound was reached
                if cs.status == "active":
                    self._stop(cs, "done", f"max_trials ({self.policy.max_trials}) reached")
            self._profiled_rounds(rt, contexts, order)
        finally:
            try:
                if rt.adapter:
                    for c in reversed(contexts.ready):
                        rt.adapter.teardown(c)
                for ex in self._step_executors(rt):
                    self._shell_step(w, "teardown", scratch, check=False, executor=ex, env=ctx.env)
            finally:
                if not self.options.keep_scratch:
                    shutil.rmtree(scratch, ignore_errors=True)

    def _round_order(self, order: Order, workload: str, r: int, active: list[CellState]) -> list[CellState]:
        by_cell = {cs.cell: cs for cs in active}
        cells = order.round(workload, r, list(by_cell))
        if self.system.changes_system or (self.remote and self.remote.changes_system):
            # A B | B A | A B …: blocks cancel drift without flipping system state on every trial.
            names = [v.name for v in self.plan.variant]
            names = names if r % 2 == 0 else names[::-1]
            cells = sorted(cells, key=lambda c: names.index(c.variant))
        return [by_cell[c] for c in cells]

    def _step_executors(self, rt: WorkloadRuntime) -> list[Executor]:
        """Where a workload's setup/prime/teardown commands run: on every host its variants use."""
        if not self.remote:
            return [execute_spec]
        found = {
            id(ex): ex for cs in rt.cells for ex in [self.remote.executor(cs.cell.variant) or execute_spec]
        }
        return list(found.values())

    def _shell_step(
        self,
        w: Workload,
        step: str,
        scratch: Path,
        check: bool = True,
        executor: Executor = execute_spec,
        env: dict[str, str] | None = None,
    ) -> None:
        spec = step_spec(w, step, scratch, self.policy, env)
        if spec is None:
            return
        res = executor(spec)
        if res.status != "ok" and check:
            tail = read_text(res.stderr_path, 2000) or read_text(res.stdout_path, 2000)
            raise FairmarkError(f"workload {w.name!r}: {step} command failed ({res.error}): {tail.strip()}")

    def _between_rounds(self) -> None:
        """Between rounds (at most every VOLATILE_EVERY_S), sample the cheap, volatile environment: a
        neighbour that starts using the CPU, steal time, swapping, a changed governor — each noticed once and
        stored as a finding of phase "between"."""
        if not self.options.probe or time.monotonic() - self._last_volatile < VOLATILE_EVERY_S:
            return
        from fairmark.probe.doctor import diagnose_volatile
        from fairmark.probe.snapshot import volatile_part, volatile_snapshot

        snap = volatile_snapshot()
        self._last_volatile = time.monotonic()
        self.store.add_artifact(
            self.run_id,
            kind="env.volatile",
            name=str(snap.get("taken_at", "")),
            content_type="application/json",
            data=snap,
        )
        baseline = volatile_part(self._env_before) if self._env_before else None
        new = [f.to_dict() for f in diagnose_volatile(snap, baseline)]
        new = [f for f in new if f["severity"] != "info" and f["id"] not in self._noticed]
        for f in new:
            self._noticed.add(f["id"])
            self.progress.note(f"between rounds: {f['title']}: {f['evidence']}")
        self.store.add_findings(self.run_id, "between", new)

    def _profiled_rounds(self, rt: WorkloadRuntime, contexts: Contexts, order: Order) -> None:
        """With --profile: PROFILED_TRIALS extra rounds after the measured ones, profilers attached, every
        cell that finished. They are stored apart (profiled, and warm-up for every statistic): perf and
        strace slow what they watch, so their times never reach a verdict or the regression gate."""
        if not any(is_profiler(h) for h in self.options.hooks):
            return
        first = self.policy.max_trials + self.policy.max_failures
        done = [cs for cs in rt.cells if cs.status == "done"]
        for r in range(first, first + PROFILED_TRIALS):
            for cs in self._round_order(order, rt.workload.name, r, done):
                if r not in cs.rounds_done:
                    self.seq += 1
                    out = self._path().run(rt, contexts, cs, r, self.seq, profiled=True)
                    cs.rounds_done.add(r)
                    self.progress.trial(self._event(rt, cs, r, out) | {"profiled": True})

    def _trial(self, rt: WorkloadRuntime, contexts: Contexts, cs: CellState, r: int) -> None:
        self.seq += 1
        out = self._path().run(rt, contexts, cs, r, self.seq)
        cs.rounds_done.add(r)
        if out.status != "ok":
            cs.failures += 1
            if self.policy.failures == "abandon" and cs.failures >= self.policy.max_failures:
                self._stop(cs, "abandoned", f"{cs.failures} failed trials (last: {out.error})")
        elif r >= 0:
            cs.values.append(out.values[rt.primary])
        self.progress.trial(self._event(rt, cs, r, out))

    def _path(self) -> TrialPath:
        if self._trial_path is None or self._trial_path.run_id != self.run_id:
            self._trial_path = TrialPath(
                plan=self.plan, policy=self.policy, store=self.store, run_id=self.run_id, system=self.system,
                execute=self.execute, scrub=self._scrub, note=self.progress.note,
                hooks=tuple(self.options.hooks), remote=self.remote, keep_trial_dirs=self.options.keep_scratch,
            )  # fmt: skip
        return self._trial_path

    def _event(self, rt: WorkloadRuntime, cs: CellState, r: int, out: Outcome) -> dict[str, Any]:
        # the mean and its CI, updated in O(1) per trial (describe() would sort and search order statistics)
        est = self._running.setdefault(cs.cell.key, RunningMean()).update(cs.values)
        mean, half = (est.mean, est.ci_half_width(self.policy.confidence)) if est.n >= 2 else (None, None)
        return {
            "seq": self.seq,
            "cell": cs.cell.key,
            "round": r,
            "warmup": r < 0,
            "status": out.status,
            "error": out.error,
            "metric": rt.primary,
            "unit": rt.metric_specs[rt.primary][0],
            "value": out.values.get(rt.primary),
            "n": len(cs.values),
            "max_trials": self.policy.max_trials,
            "failures": cs.failures,
            "max_failures": self.policy.max_failures,
            "mean": mean,
            "ci_half_width": half,
            "wall_s": out.values.get("wall_s"),
        }

    def _stop_rule(self, rt: WorkloadRuntime) -> None:
        """The cells compared with each other (one group) stop together, at a length set by their first stage
        (stats.stopping.group_stop): every round holds every side to the end."""
        p = self.policy
        if p.failures == "measure":  # the failure rate needs the whole budget: no stop on precision
            for cs in rt.cells:
                if cs.status == "active" and len([r for r in cs.rounds_done if r >= 0]) >= p.max_trials:
                    self._stop(cs, "done", f"trial budget ({p.max_trials}) used; failures = 'measure'")
            return
        groups: dict[str, list[CellState]] = {}
        for cs in rt.cells:
            if cs.status in ("active", "done"):  # an abandoned cell no longer holds its group back
                groups.setdefault(cs.cell.group, []).append(cs)
        for members in groups.values():
            if not any(cs.status == "active" for cs in members):
                continue
            decision = group_stop(
                [cs.values for cs in members], confidence=p.confidence, target_ci_pct=p.target_ci_pct,
                min_trials=p.min_trials, max_trials=p.max_trials,
            )  # fmt: skip
            if decision.stop:
                for cs in members:
                    if cs.status == "active":
                        self._stop(cs, "done", decision.reason)

    def _stop(self, cs: CellState, status: str, reason: str) -> None:
        cs.status, cs.reason = status, reason
        self.store.update_cell(cs.id, status=status, stop_reason=reason)
        self.progress.cell_stopped(cs.cell.key, status, reason)

    def _scrub(self, text: str) -> str:
        """The environment's secret values, then whatever looks like a credential (tokens, keys, passwords in
        URLs or `--password=`): a tool's output or a plan's command can carry secrets the environment does not."""
        from fairmark.probe.redact import redact_text

        for secret in self.secrets:
            text = text.replace(secret, "<redacted>")
        return redact_text(text)


def _workload_info(runtimes: list[WorkloadRuntime]) -> list[dict[str, Any]]:
    """What the doctor needs to judge a workload's test size and directory (the adapters already resolved)."""
    info = []
    for rt in runtimes:
        item: dict[str, Any] = {
            "name": rt.workload.name,
            "measures": list(rt.adapter.measures) if rt.adapter else [],
        }
        info.append(item | data_set_info(rt.workload, rt.adapter, rt.params))
    return info


def sweep_stale_scratch(tmp: str | None = None) -> list[str]:
    """Remove scratch directories of fairmark processes that no longer exist (a kill -9 leaves them)."""
    lines = []
    for path in Path(tmp or tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        pid = path.name[len(SCRATCH_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            lines.append(f"removed {path}, left by fairmark process {pid}, which no longer runs")
    return lines


def _labels(adapter: Adapter | None, params: dict[str, Any]) -> dict[str, str] | None:
    """What a report must state beside this cell's numbers (e.g. whether PostgreSQL ran with fsync)."""
    labels = getattr(adapter, "labels", None)
    return dict(labels(params)) if adapter and labels and params else None


def _first(w: Workload, key: str) -> Any:
    from fairmark.plan.schedule import expand_sweep_values

    return expand_sweep_values(key, w.sweep[key])[0]


def _secret_values(env: dict[str, str] | os._Environ) -> list[str]:
    try:
        from fairmark.probe import redact_env
    except ImportError:
        return []
    redacted = redact_env(dict(env))
    return sorted({v for k, v in env.items() if redacted.get(k) != v and len(v) >= 4}, key=len, reverse=True)


def _host_id(snap: dict[str, Any] | None) -> str:
    if not snap:
        return ""
    from fairmark.probe import host_identity

    return host_identity(snap)


def _hostname(snap: dict[str, Any] | None) -> str:
    if not snap:
        return ""
    host = snap.get("host", {})
    return str(host.get("hostname", "")) if isinstance(host, dict) else ""
