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
from fairmark.plan.schedule import Cell, Order
from fairmark.report.load import load_report
from fairmark.stats.sequential import (
    Design,
    group_decision,
    look,
    paired_look,
    spent,
    t_levels,
    takes_paired,
    tick,
    to_dict,
)


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


def test_levels_spend_alpha_as_simulated_t_tests_find() -> None:
    """The levels against an independent reference: 100 000 paths of raw normal pairs (not the sufficient
    statistics the levels were found on, another seed), each look's paired t against its level."""
    rng = np.random.default_rng(7)
    looks = tuple(range(5, 21))
    n = np.array(looks)
    d = rng.standard_normal((100_000, looks[-1]))
    cs, cq = np.cumsum(d, axis=1)[:, n - 1], np.cumsum(d * d, axis=1)[:, n - 1]
    t = np.abs(cs / n) / np.sqrt((cq - cs**2 / n) / (n - 1) / n)
    p = 2 * special.stdtr(n - 1, -t)
    for spending in ("hsd2m", "hsd3", "pocock"):
        crossed = p <= np.array(t_levels(looks, 0.05, spending))
        first = np.where(crossed.any(1), crossed.argmax(1), -1)
        want = np.diff(np.concatenate([[0.0], [spent(k / 20, 0.05, spending) for k in looks]]))
        assert abs((first >= 0).mean() - want.sum()) < 0.003
        got = np.array([(first == k).mean() for k in range(n.size)])
        assert np.max(np.abs(got - want)) < 0.002
    assert spent(1.0, 0.05, "hsd2m") == pytest.approx(0.045), "the margin: 90% of α by the last look"


def test_the_switch_spends_alpha_as_simulated_pairs_find() -> None:
    """The switch between the unpaired and the paired variance against an independent reference: 100 000 paths
    of raw normal pairs (another seed than switch_scale's), each look's branch chosen from the pairs' variances
    and its t tested at that branch's level; the looks first crossed sum to the α spent."""
    rng = np.random.default_rng(11)
    design = Design(5, 20)
    looks = np.array(design.looks)
    a, b = rng.standard_normal((2, 100_000, looks[-1]))
    first = np.full(a.shape[0], -1)
    for k, n in enumerate(looks):
        xa, xb = a[:, :n], b[:, :n]
        va, vb = xa.var(1, ddof=1), xb.var(1, ddof=1)
        vd, vs = (xb - xa).var(1, ddof=1), (xa + xb).var(1, ddof=1)
        est = (xb - xa).mean(1)
        paired = takes_paired(vd, vs, int(n))
        p_paired = 2 * special.stdtr(n - 1, -np.abs(est) / np.sqrt(vd / n))
        df = (va + vb) ** 2 / ((va * va + vb * vb) / (n - 1))
        p_welch = 2 * special.stdtr(df, -np.abs(est) / np.sqrt((va + vb) / n))
        crossed = np.where(
            paired,
            p_paired < design.level(int(n), 0.05, welch=False),
            p_welch < design.level(int(n), 0.05, welch=True),
        )
        first[(first < 0) & crossed] = k
    assert abs((first >= 0).mean() - spent(1.0, 0.05, design.spending)) < 0.003
    assert not takes_paired(np.ones(1), np.ones(1), 10).any(), "equal variances: the unpaired one"


def test_the_switch_takes_the_paired_t_where_the_round_is_correlated() -> None:
    """Independent trials: the unpaired variance (twice the df). A round effect shared by the two trials (a
    drift the pairing removes), or trials of a round negatively correlated (the unpaired variance would be too
    small): the paired t. `switch = False`: the paired t always."""
    rng = np.random.default_rng(3)
    design = Design(5, 30)
    za, zb = rng.standard_normal((2, 12))
    za, zb = za - za.mean(), zb - zb.mean()
    zb -= za * (za @ zb) / (za @ za)  # uncorrelated in this sample: Var(d) = Var(s)
    a, b = np.exp(0.01 * za), np.exp(0.01 * zb)
    assert paired_look(a, b, design).variance == "unpaired"
    drift = 0.05 * rng.standard_normal(12)
    assert paired_look(a + drift, b + drift, design).variance == "paired"
    tug = 0.03 * rng.standard_normal(12)  # one side gains what the other loses, round by round
    assert paired_look(a + tug, b - tug, design).variance == "paired"
    assert paired_look(a, b, Design(5, 30, switch=False)).variance == "paired"
    assert paired_look(a, b, design).df > 11, "Welch's df: more than the pairs' n − 1"


def test_one_outlier_pair_cannot_make_the_proof() -> None:
    design = Design(5, 20)
    d = np.array([0.004, -0.003, 0.002, -0.004, 0.003, -0.002, 0.001, 0.0, 0.3])  # one round 35% off
    vetoed = look(d, design)
    assert vetoed.decision != "different"
    assert vetoed.low <= 0 <= vetoed.high, (
        "the interval shown reaches no change when no difference is decided"
    )
    assert look(d[:-1] + 0.03, design).decision == "different"  # a real 3% change in every round is


def test_rounds_go_in_twos_each_variant_at_each_place_once() -> None:
    cells = [Cell("w", v) for v in "ABC"]
    for seed in range(1, 30):
        order = Order(seed)
        for k in range(4):
            first, second = order.round("w", 2 * k, cells), order.round("w", 2 * k + 1, cells)
            assert second == first[::-1]
            assert sorted(c.variant for c in first) == ["A", "B", "C"]
    assert len({tuple(c.variant for c in Order(s).round("w", 0, cells)) for s in range(1, 60)}) == 6


def test_an_order_effect_inside_the_round_is_no_difference() -> None:
    """A = B, and a round's second trial 6% slower (caches, heat). Each round shuffled on its own let the first
    rounds share one order by chance (5 rounds: 1 in 16), and the decision stop claimed the order effect as a
    difference; in twos, the order cancels from the paired mean every two rounds."""
    cells, design = [Cell("w", "A"), Cell("w", "B")], Design(5, 20)
    rng = np.random.default_rng(36)
    claims = 0
    for seed in range(1, 81):
        values: dict[str, dict[int, float]] = {"A": {}, "B": {}}
        for r in range(20):
            for place, c in enumerate(Order(seed).round("w", r, cells)):
                values[c.variant][r] = 100.0 * (1.0 + 0.06 * place) * (1.0 + 0.001 * rng.standard_normal())
            if r >= 4:
                d = group_decision(values, [("A", "B")], design)
                claims += d.decided.get(("A", "B")) == "different"
                if d.stop:
                    break
    assert claims == 0


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


def test_equivalence_is_tested_from_the_eighth_pair() -> None:
    """EQ_FIRST: before 8 pairs no equivalence is claimed (its α is kept for the looks that can use it), and the
    JSON's TOST bounds are null, not infinite."""
    design = Design(5, 30)
    d = 0.001 * np.array([1, -1, 2, -2, 1, -1, 0.5, -0.5, 1, -1])
    early = look(d[:7], design)
    assert early.decision == "continue"
    assert to_dict(early, design, True)["tost_ratio_low"] is None
    assert look(d[:8], design).decision == "equivalent"
    assert Design(3, 6).eq_looks == (6,), "a --quick design tests equivalence at its last look"


def test_a_gates_threshold_decides_only_beyond_it() -> None:
    """`ab --fail-on 3%`: a change proven but not proven beyond 3% does not stop the run (the gate could not
    answer from it); one proven beyond it does, and so does equivalence within it."""
    rng = np.random.default_rng(4)
    d = np.log(1.06) + 0.02 * rng.standard_normal(5)  # +6%: proven, its interval (+1.3% to +10.8%) below 3%
    assert look(d, Design(5, 30)).decision == "different"
    gate = Design(5, 30, equivalence_pct=3.0, beyond_pct=3.0)
    test = look(d, gate)
    assert test.decision == "continue" and test.low < np.log(1.03)
    sure = np.log(1.10) + 0.005 * rng.standard_normal(5)
    assert look(sure, gate).decision == "different" and look(sure, gate).low > np.log(1.03)
    plan = parse_plan(plan_text(["A", "B"])).with_decision_stop(3.0)
    assert (plan.run.stop, plan.run.beyond_pct, plan.run.equivalence_pct) == ("decision", 3.0, 3.0)
    own = parse_plan(plan_text(["A", "B"]).replace("[run]\n", "[run]\nequivalence_pct = 1.0\n"))
    assert own.with_decision_stop(3.0).run.equivalence_pct == 1.0, "a plan's own margin is kept"
