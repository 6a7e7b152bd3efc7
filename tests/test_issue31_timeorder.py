"""Runs in time order (issue 31 item 6): where runs are the verdict's unit (`compare-runs --vs`, `check --against`),
their start times say whether the sides were interleaved or measured in blocks; in blocks, the lag-1
autocorrelation of the run means in time order widens the interval (a slowly drifting machine moves a block as a
whole). The rates are bench/verdict_simulation.py's (docs/statistics.md); here the mechanism, on fixed values."""

from __future__ import annotations

import json

import numpy as np

from fairmark.stats.timeorder import inflation, phi_allowed, time_order
from fairmark.verdict.pairs import Side, across_runs, against_runs
from fairmark.verdict.values import Labelled, MeasuredCell
from helpers import api_runs


def cell(run: str, mean: float, start: float | None) -> MeasuredCell:
    from fairmark.plan.metric import MetricSpec
    from fairmark.store.records import CellRecord

    values = tuple(mean * (1 + d) for d in (-0.01, 0.0, 0.01, -0.005, 0.005))
    record = CellRecord("w/A", "w", "A", (), "wall_s", (MetricSpec("wall_s", "s", "lower"),), status="done")
    labelled = Labelled(values, tuple(range(5)), (run,) * 5, ("boot0",) * 5, ("h",) * 5)
    return MeasuredCell(record, (), {}, {"wall_s": labelled}, {run: start} if start is not None else {})


def verdict(order: str, means: list[float], timed: bool):
    sides: dict[str, list] = {"A": [], "B": []}
    for k, (side, mean) in enumerate(zip(order, means, strict=True)):
        sides[side].append([cell(f"{side}{k}", mean, 3600.0 * k if timed else None)])
    a, b = Side(sides["A"], "A0"), Side(sides["B"], "B")
    (v,) = across_runs([(a.runs[0][0], b.runs[0][0])], (a, b), (), all_metrics=False, confidence=95.0)
    return v.comparison


DRIFT = [100.0, 100.6, 101.1, 101.8, 102.3, 102.9, 103.4, 104.1]  # a machine slowing down, no change at all


def test_blocks_on_a_drifting_machine_are_widened_until_no_claim() -> None:
    blind = verdict("AAAABBBB", DRIFT, timed=False)
    assert blind.significant  # today's verdict: the drift between the blocks read as a change
    seen = verdict("AAAABBBB", DRIFT, timed=True)
    assert not seen.significant
    assert seen.ratio_ci_high - seen.ratio_ci_low > 2 * (blind.ratio_ci_high - blind.ratio_ci_low)
    assert "measured in blocks (AAAABBBB in time order)" in seen.sentence
    assert "widened ×" in seen.sentence and "drift" in seen.sentence


def test_interleaved_sides_are_left_as_they_are() -> None:
    means = [100.0, 103.0, 100.5, 103.4, 99.8, 102.9, 100.2, 103.1]  # ABAB…: B 3% slower in every pair
    blind, seen = verdict("ABABABAB", means, timed=False), verdict("ABABABAB", means, timed=True)
    assert seen.significant and blind.significant
    assert (seen.ratio_ci_low, seen.ratio_ci_high) == (blind.ratio_ci_low, blind.ratio_ci_high)
    assert "measured interleaved (ABABABAB in time order)" in seen.sentence and "widened" not in seen.sentence


def test_check_against_runs_made_before_is_a_block() -> None:
    base = [[cell(f"base{k}", DRIFT[k] - 2, 3600.0 * k)] for k in range(7)]
    mine = cell("mine", DRIFT[7] - 2 + 0.5, 3600.0 * 7)
    (checked,), _ = against_runs([mine], base, name="mine", confidence=95.0)
    assert checked.verdict is not None
    assert "measured in blocks (AAAAAAAB in time order)" in checked.verdict.comparison.sentence


def test_the_inflation_of_blocks_and_of_alternation() -> None:
    blocks = inflation(np.arange(4), np.arange(4, 8), 0.6)
    alternating = inflation(np.arange(0, 8, 2), np.arange(1, 8, 2), 0.6)
    assert 3.0 < blocks < 3.1 and alternating < 1.0  # Var(diff)/E[its estimate]: 3.05 and 0.40 at φ 0.6
    assert inflation(np.arange(4), np.arange(4, 8), 0.0) == 1.0
    assert phi_allowed(0.0, 8) > 0.5 and phi_allowed(0.9, 8) == 0.95  # 8 units cannot rule out φ 0.5
    assert time_order(["a"], [1.0], ["b"], [1.0], {"a": 0.0}) is None  # a start unknown: nothing said


def test_compare_runs_says_how_stored_runs_were_arranged(fairmark_cli) -> None:
    a = api_runs([0.1] * 3, {"side": "a"}, seed=1)
    b = api_runs([0.1] * 3, {"side": "b"}, start_h=3, seed=2)
    code, out, err = fairmark_cli(
        "compare-runs", *a, "--vs", *b, "--because", "a test of the order", "--json"
    )
    assert code == 0, err
    text = json.dumps(json.loads(out))
    assert "measured in blocks (AAABBB in time order)" in text, text[:3000]
