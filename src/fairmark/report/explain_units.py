"""Where a difference went across boots (issue 35 item 5): `compare-runs A1 A2 … --vs B1 B2 …` takes each run
(made in a boot of its own) as the verdict's unit, so the per-function differences take it as theirs too
(stats.attribution_diff.compare_units: each run's mean CPU time per function over its profiled trials is one
observation). For each significant comparison whose cells have CPU-profiled trials in at least 2 runs a side:
the sentence and the table of report/explain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fairmark.report.explain import table, where
from fairmark.stats.attribution_diff import AttributionDiff, ProfiledTrial, compare_units
from fairmark.verdict.match import match_cells

if TYPE_CHECKING:
    from fairmark.verdict.pairs import Side
    from fairmark.verdict.record import Verdict
    from fairmark.verdict.values import MeasuredCell


def _folded(store: Any, run_id: str, cache: dict[str, dict[str, str]]) -> dict[str, str]:
    if run_id not in cache:
        cache[run_id] = {
            a["trial_id"]: a["text"]
            for a in store.artifacts(run_id, "profile.cpu")
            if a["name"] == "folded" and a["text"] and a["trial_id"]
        }
    return cache[run_id]


def unit_trials(
    store: Any, side: Side, cell: MeasuredCell, cache: dict[str, dict[str, str]]
) -> list[list[ProfiledTrial]]:
    """The profiled trials of `cell` (a cell of the side's first run) in each run of the side: one list a run."""
    units = []
    for k, run in enumerate(side.runs):
        same = cell if k == 0 else next((theirs for _, theirs in match_cells([cell], run)), None)
        if same is None:
            continue
        unit = []
        for t in same.trials:
            if not t.profiled or t.status != "ok" or t.user_s is None:
                continue
            folded = _folded(store, t.run_id, cache).get(t.id)
            if folded:
                unit.append(ProfiledTrial(t.round, folded, t.user_s + (t.sys_s or 0.0)))
        units.append(unit)
    return units


def explanations(
    store: Any,
    pairs: Sequence[tuple[MeasuredCell, MeasuredCell]],
    sides: tuple[Side, Side],
    verdicts: Sequence[Verdict],
) -> list[dict[str, Any]]:
    """One per compared cell with a significant verdict (its first metric that is), boots as the unit."""
    cache: dict[str, dict[str, str]] = {}
    out = []
    for a, b in pairs:
        v = next(
            (
                v
                for v in verdicts
                if v.fdr_significant
                and (v.workload, v.point, v.variant) == (a.cell.workload, a.cell.point, a.cell.variant)
            ),
            None,
        )
        if v is None:
            continue
        d = compare_units(unit_trials(store, sides[0], a, cache), unit_trials(store, sides[1], b, cache))
        if d is not None:
            out.append({"verdict": v, "diff": d, "where": where(d)})
    return out


def to_json(e: dict[str, Any]) -> dict[str, Any]:
    v, d = e["verdict"], e["diff"]
    return {
        "workload": v.workload,
        "point": dict(v.point),
        "variant": v.variant,
        "metric": v.metric,
        "where": e["where"],
    } | d.to_dict(units="units")


def lines(e: dict[str, Any]) -> tuple[str, list[str]]:
    """The sentence (to wrap) and the 80-column table."""
    v, d = e["verdict"], e["diff"]
    diff: AttributionDiff = d
    return f"where it went ({v.workload}, boots as the unit): {e['where']}", table(diff)
