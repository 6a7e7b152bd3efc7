"""When a workload's cells stop, after each round (the runner asks): the failure-rate budget, the precision stop
(stats.stopping: a length planned from the first stage) or the decision stop (stats.sequential: as soon as the A/B
answer is decided, α spent over the looks). The cells compared with each other (one group) stop together: every
round holds every side to the end."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from fairmark.plan.model import RunPolicy
from fairmark.run.trials.prepare import CellState, WorkloadRuntime
from fairmark.stats.sequential import (
    Design,
    GroupDecision,
    Look,
    after_fdr,
    boot_looks,
    group_decision,
    welch_look,
)
from fairmark.stats.stopping import group_stop
from fairmark.store.stopreason import own_ci, precision_reason

# which (baseline, other) variant pairs the decision stop decides, and whether one proven difference is enough
# (a bisect step: the candidate proven slower than good, or faster than bad, answers it); () = every variant
# against the baseline, all decided
Decide = tuple[tuple[tuple[str, str], ...], bool]


def design_of(policy: RunPolicy) -> Design:
    """The looks of a decision stop: every round from min_trials to max_trials (stats.sequential)."""
    return Design(
        policy.min_trials,
        policy.max_trials,
        confidence=policy.confidence,
        equivalence_pct=policy.equivalence_pct,
        beyond_pct=policy.beyond_pct,
    )


def stops(
    rt: WorkloadRuntime, policy: RunPolicy, baseline: str, decide: Decide = ((), False)
) -> Iterator[tuple[CellState, str]]:
    """The active cells that stop after this round, each with its reason."""
    if policy.failures == "measure":  # the failure rate needs the whole budget: no stop on precision
        for cs in rt.cells:
            if cs.status == "active" and len([r for r in cs.rounds_done if r >= 0]) >= policy.max_trials:
                yield cs, f"trial budget ({policy.max_trials}) used; failures = 'measure'"
        return
    groups: dict[str, list[CellState]] = {}
    for cs in rt.cells:
        if cs.status in ("active", "done"):  # an abandoned cell no longer holds its group back
            groups.setdefault(cs.cell.group, []).append(cs)
    for members in groups.values():
        if not any(cs.status == "active" for cs in members):
            continue
        # a group of one variant has nothing to decide: it takes the precision stop's length
        deciding = policy.stop == "decision" and len({cs.cell.variant for cs in members}) > 1
        reason = _decided(members, policy, baseline, decide) if deciding else None
        if not deciding:
            decision = group_stop(
                [cs.values for cs in members],
                confidence=policy.confidence,
                target_ci_pct=policy.target_ci_pct,
                min_trials=policy.min_trials,
                max_trials=policy.max_trials,
            )
            reason = precision_reason(decision) if decision.stop else None
        if reason:
            yield from (
                (cs, own_ci(reason, cs.values, policy.confidence)) for cs in members if cs.status == "active"
            )


def _decided(members: Sequence[CellState], policy: RunPolicy, baseline: str, decide: Decide) -> str | None:
    """The decision stop's reason to stop the group now, or None to go on."""
    by_variant = {cs.cell.variant: dict(zip(cs.value_rounds, cs.values, strict=True)) for cs in members}
    pairs, any_different = decide
    pairs = tuple(p for p in pairs if p[0] in by_variant and p[1] in by_variant)
    if not pairs:
        base = baseline if baseline in by_variant else members[0].cell.variant
        pairs = tuple((base, v) for v in by_variant if v != base)
        any_different = False
    if not pairs:  # no variant left to compare (stops() gives one variant the precision stop)
        return None
    design = design_of(policy)
    decision = group_decision(by_variant, pairs, design, any_different=any_different)
    return decision_reason(decision, pairs, design) if decision.stop else None


def decision_reason(d: GroupDecision, pairs: Sequence[tuple[str, str]], design: Design) -> str:
    """The decision stop's reason, as the cells store it: each pair's answer, at which look, the α spent."""
    words = ", ".join(f"{other} vs {base} {_word(d.decided[(base, other)], design)}" for base, other in pairs)
    head = f"decided after {d.rounds} rounds" if d.done else f"undecided after {d.rounds} rounds (max_trials)"
    what = (
        f"α {100 * design.alpha:g}% spent over looks at {design.looks[0]}…{design.looks[-1]} rounds; "
        "the compared cells stopped together"
    )
    return f"{head}: {words} (stop = 'decision', {what})"


def boot_design(policy: RunPolicy) -> Design:
    """The looks of boots = "auto" (stats.sequential.boot_looks)."""
    return boot_looks(
        policy.min_boots,
        policy.max_boots,
        confidence=policy.confidence,
        equivalence_pct=policy.equivalence_pct,
    )


def boot_decision(
    runtimes: Sequence[WorkloadRuntime], policy: RunPolicy, baseline: str, per_boot: int, boots: int
) -> str | None:
    """After `boots` boots per variant: the reason the run stops (every group's variants against its baseline
    decided on the boot means of the primary metric — a difference, or equivalence — or max_boots), or None."""
    design = boot_design(policy)
    if boots < design.looks[0]:
        return None
    looks: dict[tuple[str, str], Look] = {}
    for rt in runtimes:
        groups: dict[str, dict[str, list[float]]] = {}
        for cs in rt.cells:
            groups.setdefault(cs.cell.group, {})[cs.cell.variant] = _boot_means(cs, per_boot)
        for group, means in groups.items():
            base = baseline if baseline in means else next(iter(means))
            for variant, mb in means.items():
                ma = means[base]
                if variant != base and len(ma) >= 2 and len(mb) >= 2:
                    looks[(f"{rt.workload.name} {group}", variant)] = welch_look(
                        np.array(ma), np.array(mb), design
                    )
    decided = after_fdr(looks, design.alpha)
    done = bool(decided) and all(d in ("different", "equivalent") for d in decided.values())
    if not done and boots < design.looks[-1]:
        return None
    words = "; ".join(f"{group}: {v} vs {baseline} {_word(d, design)}" for (group, v), d in decided.items())
    head = (
        f"boots = 'auto': decided after {boots} boots per variant"
        if done
        else (f"boots = 'auto': undecided after {boots} boots per variant (max_boots)")
    )
    return f"{head} × {per_boot} trials per boot (A B B A …): {words or 'nothing to compare'}"


def _word(decision: str, design: Design) -> str:
    return {"different": "different", "equivalent": f"within ±{design.equivalence_pct:g}%"}.get(
        decision, "undecided"
    )


def _boot_means(cs: CellState, per_boot: int) -> list[float]:
    """The mean logarithm of each boot's measured values of the cell's primary metric (a boot's rounds:
    k·per_boot …), as stats.levels takes a unit's mean on the log scale; boots with a value ≤ 0 left out."""
    boots: dict[int, list[float]] = {}
    for r, v in zip(cs.value_rounds, cs.values, strict=True):
        boots.setdefault(r // per_boot, []).append(v)
    return [float(np.mean(np.log(v))) for _, v in sorted(boots.items()) if min(v) > 0]
