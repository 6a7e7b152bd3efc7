"""How many profiled trials a workload's CPU profiles take (issue 35 item 3), and whether `--explain` takes any.

`--profile cpu` takes the plan's `profiled_trials` rounds of profiled trials (interleaved by round like the
measured ones, apart from them), then one round more at a time. At a few numbers of rounds only — the looks of
stats.profile_looks: max(MIN_DECIDE, profiled_trials), doubling, and `max_profiled` the last — it asks whether,
for every variant compared with the baseline, the top contributor's interval is decided: its function's
difference B - A proven (the interval excludes 0), or bounded within ±EQUIVALENT_SHARE of the CPU time per
trial (nothing that large to find). Each look compares at α / L for L looks, as the report then does: a look
after every round, at α each, ended three times as many A/A runs with a false claim. The rounds are stopped on
the profiles alone (stats.attribution_diff, the report's own test), never on the measured trials, whose verdict
the profiles do not touch.

`--explain` profiles only a workload whose measured trials ended with a significant difference from the
baseline on the primary metric: the same adaptive CPU profiling, after the measured rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fairmark.stats import profile_looks
from fairmark.stats.attribution_diff import AttributionDiff, ProfiledTrial, compare_profiles
from fairmark.stats.compare import tested
from fairmark.stats.profile_looks import MIN_DECIDE

if TYPE_CHECKING:
    from fairmark.plan.model import RunPolicy
    from fairmark.run.loop.options import RunOptions
    from fairmark.run.trials.prepare import CellState, WorkloadRuntime
    from fairmark.run.trials.trial import TrialHook
    from fairmark.store.db import Store

EQUIVALENT_SHARE = 0.01  # a top contributor bounded within ±1% of the CPU time per trial: nothing to find


def adaptive(profiler: TrialHook) -> bool:
    """The CPU profiler's trials are compared per function; the lock and syscall profiles are not."""
    return profiler.name == "profile.cpu"


def span(policy: RunPolicy) -> int:
    """The rounds each profiler has (fixed, so that resume finds the rounds already run)."""
    return profile_looks.span(policy.profiled_trials, policy.max_profiled)


def looks(policy: RunPolicy) -> tuple[int, ...]:
    """The numbers of rounds after which the CPU profiler's rounds may stop (the last: all of them)."""
    return profile_looks.looks(policy.profiled_trials, policy.max_profiled)


def may_stop(profiler: TrialHook, policy: RunPolicy, done: int) -> bool:
    """Whether the stop is asked after `done` rounds: the CPU profiler's at its looks only (each look is one
    more chance to stop on a chance claim), the others' once the plan's `profiled_trials` are done."""
    if adaptive(profiler):
        return done in looks(policy)
    return done >= policy.profiled_trials


def stored_looks(options: RunOptions, policy: RunPolicy, boots: bool) -> dict[str, list[int]]:
    """The run options' "profile_looks" with the CPU profiler: the looks its rounds take, so that the report
    claims at the level the run earned (a boot run takes a fixed `profiled_trials` per boot: one look)."""
    if not any(adaptive(h) for h in options.hooks):
        return {}
    return {"profile_looks": [policy.profiled_trials] if boots else list(looks(policy))}


def top_decided(d: AttributionDiff | None) -> bool:
    """The self-time function with the largest difference: proven, or bounded near 0."""
    if d is None or min(d.n_a, d.n_b) < MIN_DECIDE:
        return False
    rows = [f for f in d.functions if f.mode == "self"]
    if not rows:
        return True  # nothing sampled above the floor: more trials of the same will not name anything
    top = rows[0]  # sorted by |difference|, largest first
    bound = EQUIVALENT_SHARE * (d.cpu_a_s + d.cpu_b_s) / 2
    return top.claimed or (-bound <= top.low_s and top.high_s <= bound)


def enough(
    profiler: TrialHook,
    store: Store,
    run_id: str,
    cells: Sequence[CellState],
    baseline: str,
    policy: RunPolicy,
) -> bool:
    """Whether a profiler's rounds may stop (asked where `may_stop` says): the CPU profiler's once `decided` at
    the looks' level; the others' at once."""
    return not adaptive(profiler) or decided(store, run_id, cells, baseline, looks(policy))


def cell_trials(store: Store, run_id: str, cell_ids: set[int]) -> dict[int, list[ProfiledTrial]]:
    """Each cell's profiled trials so far that left folded stacks, with their round and CPU time."""
    trials = {
        t.id: t
        for t in store.trials(run_id)
        if t.cell_id in cell_ids and t.profiled and t.status == "ok" and t.user_s is not None
    }
    out: dict[int, list[ProfiledTrial]] = {c: [] for c in cell_ids}
    for a in store.artifacts(run_id, "profile.cpu"):
        t = trials.get(a["trial_id"] or "")
        if t is None or a["name"] != "folded" or not a["text"]:
            continue
        out[t.cell_id].append(ProfiledTrial(t.round, a["text"], (t.user_s or 0.0) + (t.sys_s or 0.0)))
    return out


def pairs(cells: Sequence[CellState], baseline: str) -> list[tuple[CellState, CellState]]:
    """(baseline cell, other cell) of each group: what the report compares."""
    base = {cs.cell.group: cs for cs in cells if cs.cell.variant == baseline}
    return [
        (base[cs.cell.group], cs) for cs in cells if cs.cell.variant != baseline and cs.cell.group in base
    ]


def decided(
    store: Store, run_id: str, cells: Sequence[CellState], baseline: str, schedule: tuple[int, ...] = ()
) -> bool:
    """Every compared pair's top contributor decided (a workload of one variant: nothing to decide), compared
    at α split over `schedule`'s looks (stats.profile_looks), the level the report then claims at."""
    compared = pairs(cells, baseline)
    if not compared:
        return True
    trials = cell_trials(store, run_id, {cs.id for pair in compared for cs in pair})
    return all(top_decided(compare_profiles(trials[a.id], trials[b.id], looks=schedule)) for a, b in compared)


def significant(rt: WorkloadRuntime, policy: RunPolicy, baseline: str) -> bool:
    """A cell whose measured values differ significantly from its baseline's on the primary metric (the paired
    or Welch test of stats.compare, as the verdict's, before the false-discovery-rate correction)."""
    spec = rt.metric_specs[rt.primary]
    for a, b in pairs([cs for cs in rt.cells if cs.status == "done"], baseline):
        if len(a.values) < 3 or len(b.values) < 3:
            continue
        rounds = (a.value_rounds, b.value_rounds)
        t = tested(a.values, b.values, confidence=policy.confidence, better=spec.better, rounds=rounds)
        if t.test.significant:
            return True
    return False


def profilers(options: RunOptions, rt: WorkloadRuntime, policy: RunPolicy, baseline: str) -> list[TrialHook]:
    """The profilers of this workload's profiled rounds, in order: with --explain, the CPU profiler only when
    the measured trials ended with a significant difference."""
    from fairmark.run.trials.trial import is_profiler

    hooks = [h for h in options.hooks if is_profiler(h)]
    if options.explain and any(adaptive(h) for h in hooks) and not significant(rt, policy, baseline):
        return [h for h in hooks if not adaptive(h)]
    return hooks


def boot_profilers(options: RunOptions) -> list[TrialHook]:
    """A boot run's profilers: each takes `profiled_trials` in every boot, --explain's CPU profiler included
    (run.loop.bootrun: the boot run's verdict is known only after its last boot). No adaptive stop: with boots as
    the unit, more boots, not more profiled trials in one, narrow where the difference went."""
    from fairmark.run.trials.trial import is_profiler

    return [h for h in options.hooks if is_profiler(h)]
