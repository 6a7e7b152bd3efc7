"""`fairmark ab`: a change (head) against its base, decided in one run.

Both commits are checked out in worktrees of their own and built with bisect's machinery (bisect.git.Repo:
signal-safe, the repository left exactly as found, what a killed predecessor left undone first), then measured
in ONE run whose two variants are the two builds — `base` (the baseline) and `head`, each workload finding its
build in `$FAIRMARK_CHECKOUT` — interleaved in the run's seeded random order and stopped when decided (`stop =
"decision"`, issue 36, unless the plan's [run] chose a stop). Both
sides see the same machine at the same moments, so a shared CI runner's load is in both: the verdict is the
run's own, paired by round, which is the strongest evidence fairmark has. The gate is `check --against
variant`'s (report.check: the one regression rule of run, check and bisect), a metric's own `fail_on_pct`
taking the place of the threshold where the plan gives one. The run is tagged with both commits (`ab.base`,
`ab.head`; `commit` is the head's).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from fairmark.assemble import execute_run
from fairmark.bisect.search import Bisect, BisectOptions, step_plan
from fairmark.plan.model import metric_thresholds
from fairmark.run.guard.signals import unwinding

BASE, HEAD = "base", "head"  # the run's two variants; base first: the baseline


@dataclass(frozen=True)
class ABResult:
    base: str  # full commit ids
    head: str
    run_id: str
    thresholds: dict[tuple[str, str], float] = field(default_factory=dict)  # (workload, metric): fail_on_pct
    cleanup_problems: tuple[str, ...] = ()


class AB(Bisect):
    """bisect's checkouts, builds and clean-up; one run of the two builds instead of a search."""

    def __init__(self, opts: BisectOptions, store, *, seed: int | None = None, **kwargs):
        super().__init__(opts, store, **kwargs)
        self.seed = seed

    def run(self) -> ABResult:  # type: ignore[override]
        """Build both, run once, put the repository back (also on SIGTERM/SIGHUP: run.guard.signals)."""
        with unwinding():
            return self._ab()

    def _ab(self) -> ABResult:
        repo = self.repo
        base, head = repo.rev(self.opts.good), repo.rev(self.opts.bad)
        before = repo.head_state()
        for line in repo.claim():
            self.warn(line)
        try:
            run_id, thresholds = self._measure_both(base, head)
        finally:
            problems = repo.close()
            if repo.head_state() != before:
                problems.append(f"HEAD was {before}, is now {repo.head_state()}")
        return ABResult(base, head, run_id, thresholds, tuple(problems))

    def _measure_both(self, base: str, head: str) -> tuple[str, dict[tuple[str, str], float]]:
        base_dir, head_dir = self._built(base, BASE), self._built(head, HEAD)
        loaded = step_plan(self.text, self.opts.plan_path, {BASE: base_dir, HEAD: head_dir})
        # the question is the gate's, "is head slower beyond --fail-on": stop when that is decided (a change
        # proven beyond it either way, or proven within it), unless the plan chose a stop
        loaded = replace(loaded, plan=loaded.plan.with_decision_stop(self.opts.threshold_pct))
        tags = {"commit": head, "ab.base": base, "ab.head": head}
        request = self.opts.request(loaded, tags, seed=self.seed)
        run_id = execute_run(request, self.store, progress=self.progress(), warn=self._warn_once).run_id
        self._warn_environment(run_id)
        return run_id, metric_thresholds(loaded.plan)
