"""stop = "decision" (issue 36): a group-sequential test that spends α over its looks stops a run as soon as its
A/B answer is decided — a difference, or equivalence within equivalence_pct — or at max_trials; the verdict is that
design's test at the last look, with the repeated (sequential) interval. The runner's scheduling is made
deterministic by the scheduler tests' fake executor; plan, runner, store and statistics are the real ones."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import special

from doubles import MockExecutor, plan_text, run_fake
from fairmark.errors import PlanError
from fairmark.plan.load import load_plan, parse_plan
from fairmark.report.load import load_report
from fairmark.stats.sequential import Design, look, nominal_levels, paired_look, spent, tick


def decision_plan(variants: list[str], **kw: object) -> str:
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in kw.items())
    return plan_text(variants, min_trials=5, max_trials=20).replace(
        "[run]\n", "[run]\nstop = 'decision'\n" + extra
    )


def primary(report):  # the wall_s verdict of B against A
    (v,) = [v for v in report.verdicts if v.metric == "wall_s"]
    return v


@pytest.mark.parametrize(
    ("line", "message"),
    [("stop = 'decide'", "'precision' or 'decision'"), ("equivalence_pct = 0", "greater than 0")],
)
def test_bad_stop_keys_name_file_line_key(tmp_path: Path, line: str, message: str) -> None:
    plan = tmp_path / "bad.toml"
    plan.write_text(f"[run]\nmin_trials = 5\n{line}\n[[workload]]\nname='a'\ncommand=['true']\n")
    with pytest.raises(PlanError) as err:
        load_plan(plan)
    assert (err.value.path, err.value.line) == (str(plan), 3)
    assert f"run.{line.split()[0]}" in (err.value.key or "")
    assert message in str(err.value)


def test_precision_stays_the_default_and_bisect_steps_default_to_decision() -> None:
    plan = parse_plan(plan_text(["A", "B"]))
    assert plan.run.stop == "precision"
    assert plan.with_decision_stop().run.stop == "decision"
    chosen = parse_plan(plan_text(["A", "B"]).replace("[run]\n", "[run]\nstop = 'precision'\n"))
    assert chosen.with_decision_stop().run.stop == "precision", "a plan's own choice is kept"


def test_a_clear_difference_stops_early_with_the_sequential_interval(tmp_path: Path) -> None:
    store, run_id = run_fake(tmp_path, decision_plan(["A", "B"]), MockExecutor({"A": 1.0, "B": 1.1}, sd=0.02))
    report = load_report(store, run_id)
    n = {c.n_ok for c in report.cells}
    assert len(n) == 1 and n.pop() < 20, "the cells stopped together, before max_trials"
    assert all(c.stop_reason.startswith("decided after") for c in report.cells)
    v = primary(report)
    assert v.sentence.startswith("decided after") and "B is slower than A" in v.sentence
    assert "95% CI, sequential:" in v.sentence
    assert v.comparison.sequential["decision"] == "different"
    assert v.comparison.ratio_ci_low > 1.0
    assert json.loads(json.dumps(v.to_dict()))["sequential"]["decision"] == "different"


def test_an_aa_run_stops_on_proven_equivalence(tmp_path: Path) -> None:
    store, run_id = run_fake(
        tmp_path, decision_plan(["A", "B"]), MockExecutor({"A": 1.0, "B": 1.0}, sd=0.004)
    )
    report = load_report(store, run_id)
    v = primary(report)
    assert v.comparison.sequential["decision"] == "equivalent"
    assert v.sentence.startswith("equivalent within ±2% after")
    assert not v.significant
    low, high = v.comparison.sequential["tost_ratio_low"], v.comparison.sequential["tost_ratio_high"]
    assert 0.98 < low <= high < 1.02


def test_noise_too_large_for_either_answer_is_undecided_at_max_trials(tmp_path: Path) -> None:
    store, run_id = run_fake(tmp_path, decision_plan(["A", "B"]), MockExecutor({"A": 1.0, "B": 1.0}, sd=0.1))
    report = load_report(store, run_id)
    assert all(c.n_ok == 20 for c in report.cells)
    assert all(c.stop_reason.startswith("undecided after 20 rounds") for c in report.cells)
    assert primary(report).sentence.startswith("undecided after 20 rounds")


def test_the_equivalence_margin_is_the_plans(tmp_path: Path) -> None:
    # 1% apart, little noise: not within ±0.5%, so a difference; within ±5%, so equivalent at once
    fake = MockExecutor({"A": 1.0, "B": 1.01}, sd=0.001)
    store, run_id = run_fake(tmp_path / "wide", decision_plan(["A", "B"], equivalence_pct=5.0), fake)
    v = primary(load_report(store, run_id))
    assert v.comparison.sequential["decision"] in ("equivalent", "different")
    assert v.comparison.sequential["equivalence_pct"] == 5.0


def test_boundaries_spend_alpha_as_monte_carlo_finds() -> None:
    """The recursion's boundaries against an independent reference: 200 000 simulated Brownian paths."""
    rng = np.random.default_rng(7)
    looks = tuple(range(5, 21))
    for spending in ("hsd2", "pocock", "obf"):
        c = -special.ndtri(np.array(nominal_levels(looks, 0.05, spending)) / 2)
        n = np.array(looks)
        inc = np.diff(np.concatenate([[0], n]))
        s = np.cumsum(rng.standard_normal((200_000, n.size)) * np.sqrt(inc), axis=1)
        crossed = np.abs(s) / np.sqrt(n) > c
        first = np.where(crossed.any(1), crossed.argmax(1), -1)
        assert abs((first >= 0).mean() - 0.05) < 0.003
        want = np.diff(np.concatenate([[0.0], [spent(k / 20, 0.05, spending) for k in looks]]))
        got = np.array([(first == k).mean() for k in range(n.size)])
        assert np.max(np.abs(got - want)) < 0.0025


def test_one_outlier_pair_cannot_make_the_proof() -> None:
    design = Design(5, 20)
    d = np.array([0.004, -0.003, 0.002, -0.004, 0.003, -0.002, 0.001, 0.0, 0.3])  # one round 35% off
    vetoed = look(d, design)
    assert vetoed.decision != "different"
    assert vetoed.low <= 0 <= vetoed.high, (
        "the interval shown reaches no change when no difference is decided"
    )
    assert look(d[:-1] + 0.03, design).decision == "different"  # a real 3% change in every round is


def test_integer_values_never_claim_equivalence_below_their_resolution() -> None:
    design = Design(5, 20)
    a = [10.0] * 12
    assert tick(a) == 10.0
    assert paired_look(a, a, design).decision != "equivalent"  # all 10: 10.4 and 9.6 would read the same
    a = [100.0, 101, 99, 100, 102, 98, 100, 101]
    b = [v + 1 for v in a]  # one tick in every round: proven, but the interval is as wide as a tick allows
    test = paired_look(a, b, design)
    assert tick(a + b) == 1.0
    assert test.decision == "different"
    assert np.exp(test.high) - 1 > 0.012


def test_a_plan_of_one_variant_takes_the_precision_stops_length(tmp_path: Path) -> None:
    store, run_id = run_fake(tmp_path, decision_plan(["A"]), MockExecutor({"A": 1.0}, sd=0.0005))
    (cell,) = load_report(store, run_id).cells
    assert cell.n_ok == 5 and cell.stop_reason.startswith("planned length 5")
