"""Plan → trials → store. Interleaved, seeded, adaptive, crash-safe.

Per workload (one workload's servers never run during another's): setup → prime → warm-up → measured → teardown.
Each round runs every still-active cell of the workload once, in a seeded random order (or in A B B A variant
blocks when a variant changes the system). After each round a cell stops when its CI half-width is within
target_ci_pct of its mean (never because an A/B test became significant), at max_trials, or after
max_failures failed trials (abandoned, with the reason). Each finished trial is committed at once; resume
continues from what the store holds, re-running the interrupted trial.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from fairmark import __version__
from fairmark.errors import FairmarkError
from fairmark.plan.load import LoadedPlan
from fairmark.plan.schedule import Order, new_seed
from fairmark.run.guard.lock import announce_run
from fairmark.run.launch.executor import execute_spec
from fairmark.run.launch.launch_server import serving
from fairmark.run.loop import profiled
from fairmark.run.loop.bootrun import BootRun
from fairmark.run.loop.gate import Gate, VolatileWatch, host_id, hostname
from fairmark.run.loop.options import Progress, RunOptions, trial_event
from fairmark.run.loop.stage import startup_notes, workload_stage
from fairmark.run.loop.stoprule import stops
from fairmark.run.machine.host import Host, Hosts
from fairmark.run.spec import Executor
from fairmark.run.trials.prepare import CellState, WorkloadRuntime, build_runtimes, cell_rows
from fairmark.run.trials.secrets import Scrubber
from fairmark.run.trials.trial import Contexts, TrialHook, TrialPath, close_hooks
from fairmark.store.db import Store, now
from fairmark.store.owner import controller

if TYPE_CHECKING:
    from fairmark.stats import RunningMean


class Runner:
    def __init__(
        self,
        loaded: LoadedPlan,
        store: Store,
        options: RunOptions | None = None,
        *,
        executor: Executor = execute_spec,
        progress: Progress | None = None,
        hosts: Mapping[str, Host] | None = None,
    ):
        """`hosts`: the [hosts.NAME] the plan's variants run on, built by assemble.py (remote.hosts.hosts_for);
        `executor` runs the trials on this machine (a test's stands in for execute_spec)."""
        self.options = options or RunOptions()
        self.loaded, self.store = loaded, store
        self.plan = loaded.plan.with_aa_twin() if self.options.calibrate else loaded.plan
        self.progress = progress or Progress()
        self.policy = self.plan.policy(self.options.quick)
        self.hosts = Hosts(self.plan, hosts, execute=executor)  # this machine, and the variants' hosts
        self.run_id = ""
        self.seq = 0
        self._scrub = Scrubber()
        self.gate = Gate(self.plan, self.options, self.hosts)
        self.watch = VolatileWatch(enabled=self.options.probe, scrub=self._scrub.json)
        self._trial_path: TrialPath | None = None
        self._running: dict[str, RunningMean] = {}  # each cell's mean ± CI for the progress line

    # -- entry points ------------------------------------------------------------------------------------
    def _runtimes(self, stored: dict[str, int] | None = None) -> list[WorkloadRuntime]:
        """Preparation (run.trials.prepare): nothing is written before all of it passed."""
        return build_runtimes(
            self.plan,
            self.loaded.path,
            quick=self.options.quick,
            hosts=self.hosts,
            stored=stored,
            text=self.loaded.text,
        )

    def start(self) -> str:
        runtimes = self._runtimes()
        for line in startup_notes():
            self.progress.note(line)
        try:
            for line in self.hosts.connect():
                self.progress.note(line)
            snap, found = self.gate.check(runtimes)
        except BaseException:
            self.hosts.close()  # refused before any trial: end the hosts' sessions (and their locks)
            raise
        self.watch.env_before = snap
        self.watch.noticed = {f["id"] for f in found}  # between rounds, report only what is new
        self.watch.follow(self.hosts)
        seed = self.options.seed if self.options.seed is not None else (self.plan.run.seed or new_seed())
        self.run_id = self.store.create_run(
            plan_path=self.loaded.path,
            plan_text=self._scrub(self.loaded.text),
            plan_sha256=self.loaded.sha256,
            title=self.plan.title,
            seed=seed,
            host_id=host_id(snap),
            hostname=hostname(snap),
            status="running",
            command_line=self._scrub(self.options.command_line),
            fairmark_version=__version__,
            accept_risk=self.options.accept_risk,
            env_before=snap,
            options=self._scrub.json(  # a variant's env (a URL's password) hidden, as in the plan text
                {
                    "quick": self.options.quick,
                    "calibrate": self.options.calibrate,
                    "policy": self.policy.model_dump(),
                    # resolved once here, so that reports never parse the plan again
                    "baseline": self.plan.baseline,
                    "variants": {v.name: v.model_dump(mode="json") for v in self.plan.variant},
                    "tuning": {name: t.model_dump(mode="json") for name, t in self.plan.tuning.items()},
                    "hooks": [h.name for h in self.options.hooks],
                    **profiled.stored_looks(
                        self.options, self.policy, boots=any(v.boot for v in self.plan.variant)
                    ),
                    "controller": controller(),  # a kill -9 leaves "running": show tells it is gone
                    **self.gate.baselines(runtimes),  # wrap_costs, device_baselines
                    **({"hosts": self.hosts.describe()} if self.hosts.remote else {}),
                    **(
                        {"placement": placement}
                        if (placement := self.hosts.placement(self.progress.note))
                        else {}
                    ),
                    **({"rerun_of": self.options.rerun_of} if self.options.rerun_of else {}),
                }
            ),
            notes=[],
            tags=self._scrub.json(self.options.tags),
        )
        announce_run(self.run_id)  # the host lock says which run holds it
        self.store.add_findings(self.run_id, "before", self._scrub.json(found))
        self.hosts.store_snapshots(self.store, self.run_id)
        return self._execute(runtimes, seed)

    def resume(self, run_id: str) -> str:
        run = self.store.get_run(run_id)
        for line in startup_notes():
            self.progress.note(line)
        if run.status == "done":
            raise FairmarkError(f"run {run.id} is already complete; nothing to resume")
        self.run_id = run.id
        announce_run(run.id)
        cells = self.store.cells(run.id)
        if run.status == "failed" and not any(c.status == "active" for c in cells):
            raise FairmarkError(
                f"run {run.id} failed: none of its trials succeeded and every cell has stopped; nothing to resume",
                hint=f"`fairmark show {run.id[:8]}` shows the first error lines; fix the cause and run the plan again",
            )
        stored = {c.key: c.id for c in cells}
        runtimes = self._runtimes(stored)
        self._load_progress(runtimes)
        for line in self.hosts.connect():  # what a dead run's agents left on its hosts, undone now
            self.progress.note(line)
        options = dict(run.options or {}) | {"controller": controller()}
        self.store.update_run(run.id, status="running", ended_at=None, options=options)
        self.progress.note(f"resuming run {run.id}: {self.seq} trial(s) already stored are kept")
        return self._execute(runtimes, run.seed)

    def _load_progress(self, runtimes: list[WorkloadRuntime]) -> None:
        by_id = {cs.id: (rt, cs) for rt in runtimes for cs in rt.cells}
        values = {(s.trial_id, s.metric): s.value for s in self.store.samples(self.run_id)}
        for t in self.store.trials(self.run_id):
            rt, cs = by_id[t.cell_id]
            cs.rounds_done.add(t.round)
            self.seq = max(self.seq, t.seq)
            if t.status != "ok":
                cs.failures += 1
            elif not t.warmup and (t.id, rt.primary) in values:
                cs.values.append(values[(t.id, rt.primary)])
                cs.value_rounds.append(t.round)
        for c in self.store.cells(self.run_id):
            _, cs = by_id[c.id]
            cs.loops = (
                c.loops if c.loops is not None else cs.loops
            )  # a calibrated count is the cell's for the run
            if c.status != "active":
                cs.status, cs.reason = c.status, c.stop_reason

    # -- the loop ----------------------------------------------------------------------------------------
    def _execute(self, runtimes: list[WorkloadRuntime], seed: int) -> str:
        self.gate.record_programs(runtimes)  # for the snapshot after the run (a resumed run has no gate)
        ids: dict[str, int] = {}
        for rt in runtimes:
            ids |= self.store.ensure_cells(self.run_id, cell_rows(self.plan, rt, self._scrub, self.hosts))
        for rt in runtimes:
            for cs in rt.cells:
                cs.id = ids[cs.cell.key]
        self.progress.started(self.run_id, sum(len(rt.cells) for rt in runtimes), self.policy, done=self.seq)
        # What fairmark built so far (plan, modules, snapshot) lives for the whole run: frozen, the collector's
        # full passes between trials no longer walk it again (~5% of a short trial's harness CPU).
        gc.freeze()
        order = Order(seed)
        status = "interrupted"
        try:
            if any(
                v.boot for v in self.plan.variant
            ):  # kernels: one boot per block, A B B A … (run.loop.bootrun)
                BootRun(self).execute(runtimes, order)  # it leaves no cell active
            for rt in runtimes:
                if any(cs.status == "active" for cs in rt.cells):
                    self._workload(rt, order)
            # a run in which no trial succeeded measured nothing: it failed (the CLI exits RUN_FAILED)
            status = "done" if any(cs.values for rt in runtimes for cs in rt.cells) else "failed"
        except FairmarkError as exc:
            status = "interrupted" if getattr(exc, "resumable", False) else "failed"
            raise
        finally:
            try:
                self.hosts.close()  # here, then each agent restores the system changes it made on its host
            finally:
                close_hooks(self._trial_path, self.options.hooks, self.progress.note)
                gc.unfreeze()  # an embedding process (tests, a notebook) gets its collector back
                self._finish(status)
        return self.run_id

    def _finish(self, status: str) -> None:
        try:
            env_after = self.gate.after(status)
            self.store.update_run(self.run_id, status=status, ended_at=now(), env_after=env_after)
        finally:  # a store that failed (full, gone) still gets the log's last trial line and the bar stopped
            self.progress.finished()

    def _workload(self, rt: WorkloadRuntime, order: Order) -> None:
        """Setup → warm-up rounds → measured rounds → profiled rounds → teardown (run.loop.stage, always)."""
        with (
            self.stage(rt) as contexts,
            serving(),
        ):  # its trials start through one server (run.launch.launch_server)
            for r in range(-self.policy.warmup, self.policy.max_trials + self.policy.max_failures):
                active = [cs for cs in rt.cells if cs.status == "active"]
                if not active:
                    break
                for cs in self._round_order(order, rt.workload.name, r, active):
                    if r not in cs.rounds_done:
                        self.trial(rt, contexts, cs, r)
                if r >= 0:
                    self._stop_rule(rt)
                self.between_rounds()
            for cs in rt.cells:  # the loop bound was reached
                if cs.status == "active":
                    self.stop(cs, "done", f"max_trials ({self.policy.max_trials}) reached")
            self._profiled_rounds(rt, contexts, order)

    def _round_order(self, order: Order, workload: str, r: int, active: list[CellState]) -> list[CellState]:
        by_cell = {cs.cell: cs for cs in active}
        cells = order.round(workload, r, list(by_cell))
        if self.hosts.changes_system:
            # A B | B A | A B …: blocks cancel drift without flipping system state on every trial.
            names = [v.name for v in self.plan.variant]
            names = names if r % 2 == 0 else names[::-1]
            cells = sorted(cells, key=lambda c: names.index(c.variant))
        return [by_cell[c] for c in cells]

    def _profiled_rounds(self, rt: WorkloadRuntime, contexts: Contexts, order: Order) -> None:
        """With --profile: `profiled_trials` extra rounds per profiler after the measured ones, every cell that
        finished, one profiler per trial (two profile each other: strace's ptrace stops topped the lock table);
        the CPU profiler's go on a round at a time until run.loop.profiled says decided at a look (each spends
        part of α; --explain: only a workload with a significant difference, CPU only). Stored apart (profiled,
        warm-up for every statistic): perf and strace slow what they watch, so their times reach no verdict."""
        done = [cs for cs in rt.cells if cs.status == "done"]
        first = self.policy.max_trials + self.policy.max_failures
        for i, profiler in enumerate(profiled.profilers(self.options, rt, self.policy, self.plan.baseline)):
            start = first + i * profiled.span(self.policy)  # fixed per profiler: resume skips what ran
            # a profiler that cannot work here is in a run on hosts for theirs: this machine's cells go without
            cells = [cs for cs in done if not (profiler.unavailable and self._runs_here(rt, cs))]
            for r in range(start, start + profiled.span(self.policy)):
                if profiled.may_stop(profiler, self.policy, r - start) and profiled.enough(
                    profiler, self.store, self.run_id, cells, self.plan.baseline, self.policy
                ):
                    break
                for cs in self._round_order(order, rt.workload.name, r, cells):
                    if r not in cs.rounds_done:
                        self.profiled_trial(rt, contexts, cs, r, profiler)

    def _runs_here(self, rt: WorkloadRuntime, cs: CellState) -> bool:
        return self.hosts.runs(cs.cell.variant, rt.workload.name).local

    # -- the trial loop's steps (public: run.loop.bootrun shares them) ------------------------------------------
    def stage(self, rt: WorkloadRuntime) -> AbstractContextManager[Contexts]:
        """The workload's stage: its scratch and setup before its trials, its teardown after (run.loop.stage)."""
        return workload_stage(
            rt,
            self.policy,
            hosts=self.hosts,
            phase=self.progress.workload,
            keep_scratch=self.options.keep_scratch,
            note=self.progress.note,
        )

    def trial(self, rt: WorkloadRuntime, contexts: Contexts, cs: CellState, r: int) -> None:
        """One trial of cell `cs` in round `r`: run, stored, counted, its cell abandoned after too many failures."""
        self.seq += 1
        out = self._path().run(rt, contexts, cs, r, self.seq)
        cs.rounds_done.add(r)
        failed = out.status != "ok"
        cs.failures += failed
        if not failed and r >= 0:
            cs.values.append(out.values[rt.primary])
            cs.value_rounds.append(r)
        self.progress.trial(trial_event(self.seq, self._running, self.policy, rt, cs, r, out))
        if failed and self.policy.failures == "abandon" and cs.failures >= self.policy.max_failures:
            self.stop(cs, "abandoned", f"{cs.failures} failed trials (last: {out.error})")  # after its line

    def profiled_trial(
        self, rt: WorkloadRuntime, contexts: Contexts, cs: CellState, r: int, profiler: TrialHook
    ) -> None:
        """One profiled trial of cell `cs` in round `r`, with `profiler` attached: stored apart, never a value."""
        self.seq += 1
        out = self._path().run(rt, contexts, cs, r, self.seq, profiler=profiler)
        cs.rounds_done.add(r)
        event = trial_event(self.seq, self._running, self.policy, rt, cs, r, out)
        self.progress.trial(event | {"profiled": True})

    def _path(self) -> TrialPath:
        if self._trial_path is None or self._trial_path.run_id != self.run_id:
            self._trial_path = TrialPath(
                plan=self.plan,
                policy=self.policy,
                store=self.store,
                run_id=self.run_id,
                hosts=self.hosts,
                scrub=self._scrub,
                note=self.progress.note,
                hooks=tuple(self.options.hooks),
                keep_trial_dirs=self.options.keep_scratch,
            )
        return self._trial_path

    def _stop_rule(self, rt: WorkloadRuntime) -> None:
        """The cells compared with each other (one group) stop together (run.loop.stoprule): at a length set by their
        first stage (stop = "precision"), or once their A/B answer is decided (stop = "decision")."""
        for cs, reason in stops(rt, self.policy, self.plan.baseline, self.options.decide):
            self.stop(cs, "done", reason)

    def stop(self, cs: CellState, status: str, reason: str) -> None:
        """Cell `cs` stops (done or abandoned) for `reason`: stored, and told."""
        cs.status, cs.reason = status, reason
        self.store.update_cell(cs.id, status=status, stop_reason=reason)
        self.progress.cell_stopped(cs.cell.key, status, reason)

    def between_rounds(self) -> None:
        """The volatile probe's sample between rounds (run.loop.gate.VolatileWatch)."""
        self.watch.sample(self.store, self.run_id, self.progress.note)
