"""Verdicts that hold under the noise real machines make (issue 23): one test per defect, each failing on the code
before it. Simulations here are small and seeded (bench/verdict_simulation.py runs the large ones for docs/statistics.md);
the whole file takes a few seconds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairmark.verdict.compare import compare
from fairmark.verdict.judge import Pair, judge

ROUNDS12 = (list(range(12)), list(range(12)))


def _interleaved(rng, n, cv=0.02):
    return 100 * (1 + cv * rng.standard_normal(n)), 100 * (1 + cv * rng.standard_normal(n))


# ---- item 1: the second stage's data enters the spread -----------------------------------------------------------


def test_an_outlier_after_the_first_stage_widens_the_interval():
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(300):
        a, b = _interleaved(rng, 18)
        b[int(rng.integers(6, 18))] *= 1.2  # one trial 20% slow, after the first stage of 6 rounds
        r = list(range(18))
        hits += compare(a, b, rounds=(r, r), first_stage=6).significant
    assert hits / 300 <= 0.08  # 5% allowed; the first stage's spread alone said "different" in 22–28%


def test_a_step_in_both_cells_mid_run_does_not_make_a_difference():
    rng = np.random.default_rng(2)
    hits = 0
    for _ in range(300):
        a, b = _interleaved(rng, 18)
        at = int(rng.integers(12, 36))  # a trial of the second stage, in the sequence A and B ran in
        seq_a, seq_b = 2 * np.arange(18), 2 * np.arange(18) + 1
        a[seq_a >= at] *= 1.15
        b[seq_b >= at] *= 1.15
        r = list(range(18))
        hits += compare(a, b, rounds=(r, r), first_stage=6).significant
    assert hits / 300 <= 0.08


def test_pooled_runs_keep_each_runs_first_stage():
    """A bisect step's runs pooled: each run's length was planned from its own first k rounds, so Stein's part
    takes the first k pairs of every run (df 2k − 1), not the first k of the first run nor none (without it 5.5%
    [4.9, 6.3] of A/A steps pooled over 2 runs were 'different' in bench/verdict_simulation.py)."""
    import math

    from scipy import stats

    from fairmark.stats.paired import STEIN, paired_by_round
    from fairmark.verdict.judge import Pair, judge

    rng = np.random.default_rng(4)
    keys = [(run, r) for run in ("r1", "r2") for r in range(10)]
    cv = np.where([r < 4 for _, r in keys], 0.04, 0.01)  # the first stages noisier: Stein's part decides
    a = {k: float(v) for k, v in zip(keys, 100 * (1 + cv * rng.standard_normal(20)), strict=True)}
    b = {k: float(v) for k, v in zip(keys, 101 * (1 + cv * rng.standard_normal(20)), strict=True)}
    test = paired_by_round(a, b, confidence=95, first_stage=4)
    d = np.log([b[k] for k in keys]) - np.log([a[k] for k in keys])
    first = np.r_[d[:4], d[10:14]]
    t_stein = d.mean() / (first.std(ddof=1) / math.sqrt(20))
    t_all = d.mean() / (d.std(ddof=1) / math.sqrt(20))
    assert test.parts == STEIN and 2 * stats.t.sf(abs(t_stein), 7) > 2 * stats.t.sf(abs(t_all), 19)
    assert test.p_value == pytest.approx(max(2 * stats.t.sf(abs(t_stein), 7), 2 * stats.t.sf(abs(t_all), 19)))
    runs = [k[0] for k in keys]
    rounds = [k[1] for k in keys]
    pair = Pair(
        [a[k] for k in keys],
        [b[k] for k in keys],
        rounds=(rounds, rounds),
        first_stage=4,
        labels={"run": (runs, runs)},
    )
    (judged,) = judge([pair])
    assert judged.comparison.p_value == pytest.approx(test.p_value)


# ---- item 2: zero spread proves nothing -------------------------------------------------------------------------


def test_a_first_stage_without_spread_gives_no_zero_width_interval():
    a = [128.0] * 12
    b = [129.0] * 6 + [
        129.0,
        130.0,
        129.0,
        129.0,
        129.0,
        129.0,
    ]  # equal differences in the first stage, one tick later
    c = compare(a, b, rounds=ROUNDS12, first_stage=6)
    assert (
        c.ratio_ci_low < c.ratio < c.ratio_ci_high
    )  # an interval from the spread of all rounds, not +0.78 to +0.78
    assert "+0.78% to +0.78%" not in c.sentence


def test_the_same_difference_in_every_round_is_said_with_a_sign_test():
    a = [100.0, 101.0, 102.0]
    c = compare(a, [x + 1e-9 * 0 for x in a], rounds=((0, 1, 2), (0, 1, 2)))
    assert not c.significant and "the same value in every trial" in c.sentence
    pairs = ([10.0] * 4, [11.0] * 4)
    c = compare(*pairs, rounds=((0, 1, 2, 3), (0, 1, 2, 3)))
    assert c.constant and not c.significant and math.isnan(c.ratio_ci_low)
    assert "no spread, so no t test and no interval; sign test p = 0.12" in c.sentence
    c = compare([10.0] * 6, [11.0] * 6, rounds=(range(6), range(6)))
    assert c.significant and "sign test p = 0.031" in c.sentence


# ---- item 3: runs are a level -------------------------------------------------------------------------------------


def test_two_runs_of_one_boot_make_no_claim():
    """compare-runs A B of two runs made one after the other: the run-to-run offset is unknown, so no difference is
    claimed, whatever the trials of the two runs say; the difference is shown with its within-run interval."""
    rng = np.random.default_rng(3)
    a = list(100 * (1 + 0.01 * rng.standard_normal(15)))
    b = list(95 * (1 + 0.01 * rng.standard_normal(15)))  # "-5%": far beyond the trials' spread
    labels = {"boot": (["b1"] * 15, ["b1"] * 15), "run": (["r1"] * 15, ["r2"] * 15)}
    (j,) = judge([Pair(a, b, labels=labels, unit="s")])
    c = j.comparison
    assert not c.significant and not c.claim and c.design == "one run per side" and math.isnan(c.p_value)
    assert "no difference claimed: the sides are different runs" in c.sentence
    assert "Within the run (a lower bound on the uncertainty, not a verdict)" in c.sentence
    assert c.levels.within_lower_bound.significant  # the trials alone would have "proven" it


@pytest.mark.slow
def test_runs_as_the_unit_with_several_runs_per_side():
    rng = np.random.default_rng(4)

    def side(tag, factor):
        values, runs = [], []
        for i in range(4):
            offset = rng.normal(0, 0.03)  # 3% from run to run, 0.5% inside a run
            values += list(100 * factor * (1 + offset) * (1 + 0.005 * rng.standard_normal(10)))
            runs += [f"{tag}{i}"] * 10
        return values, runs

    hits = 0
    for _ in range(200):
        (a, ra), (b, rb) = side("a", 1.0), side("b", 1.0)
        (j,) = judge([Pair(a, b, labels={"boot": (["x"] * 40, ["x"] * 40), "run": (ra, rb)})])
        hits += j.significant
        assert j.comparison.design == "runs as the unit"
    assert hits / 200 <= 0.08  # the trials pooled across runs: 58–67%


def test_runs_shared_by_both_sides_pair_by_run_and_round():
    """bisect pools the runs of a step: rounds pair only inside their own run."""
    rng = np.random.default_rng(5)
    a1, b1 = _interleaved(rng, 6)
    a2, b2 = _interleaved(rng, 6)
    a2, b2 = a2 * 1.3, b2 * 1.3  # the second run 30% slower for both: must cancel in the pairs
    rounds = list(range(6)) * 2
    runs = ["r1"] * 6 + ["r2"] * 6
    p = Pair([*a1, *a2], [*b1, *b2], rounds=(rounds, rounds), labels={"run": (runs, runs)})
    (j,) = judge([p])
    assert j.comparison.design == "paired by round" and j.comparison.n_pairs == 12


@pytest.mark.slow
def test_unequal_boots_weighed_by_their_trials():
    """2 boots × 2 trials against 6 boots × 40 (the pooled t on unweighted boot means: 25% false positives)."""
    rng = np.random.default_rng(6)
    hits = 0
    for _ in range(300):
        sides = []
        for tag, boots, trials in (("a", 2, 2), ("b", 6, 40)):
            values, units = [], []
            for k in range(boots):
                values += list(100 * (1 + rng.normal(0, 0.01)) * (1 + rng.normal(0, 0.05, trials)))
                units += [f"{tag}{k}"] * trials
            sides.append((values, units))
        (j,) = judge([Pair(sides[0][0], sides[1][0], units=(sides[0][1], sides[1][1]))])
        hits += j.significant
    assert hits / 300 <= 0.06


# ---- item 4: unequal spreads ----------------------------------------------------------------------------------------


def test_unequal_spreads_and_n_hold_the_level():
    rng = np.random.default_rng(7)
    hits = sum(
        compare(
            100 * (1 + 0.005 * rng.standard_normal(20)), 100 * (1 + 0.05 * rng.standard_normal(5))
        ).significant
        for _ in range(400)
    )
    assert hits / 400 <= 0.08  # pooled t: 37%
    c = compare([100, 100.1, 99.9] * 4, [90, 110, 100, 95, 105])
    assert c.design == "Welch" and c.ministat_note is None  # ministat's lines stay pooled Student t


# ---- item 5: the MDE is what a repeat detects 80% of the time ---------------------------------------------------------


@pytest.mark.slow
def test_the_stated_mde_is_detected_80_percent_of_the_time():
    rng = np.random.default_rng(8)
    detected = 0
    sims = 600
    for _ in range(sims):
        mde = compare(
            100 * (1 + 0.02 * rng.standard_normal(4)), 100 * (1 + 0.02 * rng.standard_normal(4))
        ).mde_percent
        a, b = (
            100 * (1 + 0.02 * rng.standard_normal(4)),
            100 * (1 + mde / 100) * (1 + 0.02 * rng.standard_normal(4)),
        )
        detected += compare(a, b).significant
    assert 0.74 <= detected / sims <= 0.86  # (t_α + t_0.8)·s: 62% at 4 + 4 values


def test_a_run_that_ran_to_its_planned_length_states_steins_detectable_change():
    """A run whose length was planned from its first k rounds and reached: its MDE is the two-stage design's
    (power.two_stage_factor on all rounds' se; issue 31 item 7: (t_α + t_0.8)·se of Stein's part alone was
    detected 76.7% of the time by a repeat); cut at max_trials it keeps each part's own factor, the larger."""
    import math

    from scipy import stats

    from fairmark.stats.paired import paired_by_round
    from fairmark.stats.power import mde_factor, two_stage_factor

    rng = np.random.default_rng(3)
    a = dict(enumerate(100 * (1 + 0.02 * rng.standard_normal(20))))
    b = dict(enumerate(100 * (1 + 0.02 * rng.standard_normal(20))))
    d = np.log([b[r] for r in range(20)]) - np.log([a[r] for r in range(20)])
    se_stein, se_all = d[:6].std(ddof=1) / math.sqrt(20), d.std(ddof=1) / math.sqrt(20)
    planned = paired_by_round(a, b, confidence=95, first_stage=6, length_planned=True)
    cut = paired_by_round(a, b, confidence=95, first_stage=6)
    stein = (stats.t.ppf(0.975, 5) + stats.t.ppf(0.8, 5)) * se_stein
    assert planned.mde == pytest.approx(two_stage_factor(5, 19, 95) * se_all)
    assert planned.mde > max(stein, mde_factor(19, 95) * se_all)  # a repeat must pass both parts
    assert cut.mde == pytest.approx(max(mde_factor(5, 95) * se_stein, mde_factor(19, 95) * se_all))
    from fairmark.stats.stopping import group_stop
    from fairmark.store.stopreason import length_was_planned, precision_reason

    values = [100, 102, 98, 101, 99, 100, 100, 104, 96, 103, 97, 100, 105, 95]
    reached = group_stop([values, values], confidence=95, target_ci_pct=1.0, min_trials=6, max_trials=14)
    short = group_stop([values[:8]] * 2, confidence=95, target_ci_pct=1.0, min_trials=6, max_trials=8)
    assert length_was_planned(precision_reason(reached)) and not length_was_planned(precision_reason(short))


def test_zero_mean_mde_is_one_number():
    c = compare([-1.0, 0.0, 1.0, -0.5, 0.5], [-1.1, 0.1, 1.0, -0.4, 0.6], unit="ms")
    assert " ± " not in c.sentence.split("would detect a change of ")[1]


# ---- item 10: edges -------------------------------------------------------------------------------------------------


def test_tiny_values_keep_their_spread():
    c = compare([1e-300, 2e-300, 3e-300], [1e-300, 2.5e-300, 3e-300])
    assert not any("zero spread" in w for w in c.warnings) and c.baseline.stddev == pytest.approx(1e-300)


def test_huge_values_are_compared(tmp_path, capsys):
    from fairmark.cli.main import main

    (tmp_path / "a").write_text("1e300\n5e299\n3e299\n")
    (tmp_path / "b").write_text("1e150\n2e150\n3e150\n")
    assert main(["compare", "--json", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    capsys.readouterr()
    (tmp_path / "c").write_text("1\n2\n1e400\n")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "c")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "'1e400' is beyond the largest double" in err and "1e+150" not in err


def test_aa_twin_warning_is_not_a_statement_of_fact():
    from fairmark.verdict.judge import AA_BIASED

    assert "one of the 5% of A/A comparisons that differ by chance" in AA_BIASED


# ---- item 11: the log scale where the effect is multiplicative ----------------------------------------------------


def test_five_to_25_times_slower_in_every_round_is_proven():
    """dbench default vs -o sync: 5–25× slower in every one of 3 rounds ended 'no difference proven'."""
    a = [441.3, 269.8, 251.4]
    b = [a[0] / 5, a[1] / 25, a[2] / 11]
    c = compare(a, b, better="higher", unit="MB/s", rounds=((0, 1, 2), (0, 1, 2)))
    assert c.significant and c.change == "worse" and c.scale == "log"


def test_no_ratio_interval_below_zero_for_a_positive_quantity():
    a, b = [10.0, 11.0, 30.0], [1.0, 12.0, 2.0]  # --quick: 3 rounds, wild spread
    c = compare(a, b, rounds=((0, 1, 2), (0, 1, 2)))
    assert c.ratio_ci_low > 0
    assert "-2" not in c.sentence.split("CI")[1][:8]  # never "-230%"


# ---- item 12 ----------------------------------------------------------------------------------------------------------


def test_a_significant_bound_never_rounds_to_zero():
    from fairmark.verdict.compare import percent_texts

    texts = percent_texts(0.9880, 0.9764, 0.99996, True)
    assert texts[2] not in ("+0.0%", "-0.0%", "0.0%") and texts[2].startswith("-")


def test_signed_rank_with_ties_is_exact():
    from itertools import product

    from fairmark.stats.ranks import signed_rank

    d = np.array([1, 1, 2, 2, 2, -1, 3, 3, 1, 2, -2, 4])
    from fairmark.stats.ranks import midranks

    ranks = midranks(np.abs(d).astype(float))
    w = ranks[d > 0].sum()
    centre = ranks.sum() / 2
    sums = [
        sum(r for r, s in zip(ranks, signs, strict=True) if s) for signs in product((0, 1), repeat=d.size)
    ]
    exact = np.mean([abs(s - centre) >= abs(w - centre) - 1e-9 for s in sums])
    assert signed_rank(d)["p_value"] == pytest.approx(exact)


def test_minus_n_is_ministats_no_test(tmp_path, capsys):
    from fairmark.cli.main import main

    (tmp_path / "a").write_text("1\n2\n3\n")
    (tmp_path / "b").write_text("4\n5\n6\n")
    assert main(["compare", "-n", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "Difference" not in out and "+---" not in out and "fairmark (" not in out
    assert main(["compare", "-A", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "Difference at 95.0% confidence" in out and "+---" not in out


def test_non_adaptive_runs_take_the_spread_of_all_rounds():
    from fairmark.store.stopreason import first_stage_of

    assert first_stage_of("planned length 18 (from the first 6 trials' spread, CI target ±1%)") == 6
    assert (
        first_stage_of("precision reached: 12 trials, set from the first 6 trials' spread (CI target ±1%)")
        == 6
    )
    assert first_stage_of("trial budget (30) used; failures = 'measure'") is None


# ---- item 7: the stop reason says what it is ----------------------------------------------------------------------


def test_stop_reason_is_a_planned_length_with_the_interval_achieved():
    from fairmark.stats.stopping import group_stop
    from fairmark.store.stopreason import precision_reason

    first = [100, 102, 98, 101, 99, 100]
    rest = [100, 104, 96, 103, 97, 100, 105, 95]
    s = group_stop(
        [first + rest, first + rest], confidence=95, target_ci_pct=1.0, min_trials=6, max_trials=14
    )
    reason = precision_reason(s)
    assert s.stop and "precision reached" not in reason
    assert reason.startswith("planned length 11 (from the first 6 trials' spread, CI target ±1%)")
    assert "CI achieved ±" in reason


def test_stop_reason_says_a_wide_interval_without_an_exponent():
    """'CI achieved ±120%', not '±1.2e+02%' (a 4-trial run of a noisy command, seen in a resumed run's lines)."""
    from fairmark.stats.stopping import group_stop
    from fairmark.store.stopreason import precision_reason

    values = [0.55, 0.82, 2.0, 0.4]
    reason = precision_reason(
        group_stop([values, values], confidence=95, target_ci_pct=1.0, min_trials=4, max_trials=4)
    )
    assert "e+" not in reason and "CI achieved ±120%" in reason, reason


# ---- item 8: change points and autocorrelated runs -------------------------------------------------------------------


def test_change_points_hold_their_level_on_drifting_runs():
    from fairmark.stats.changepoints import detect

    rng = np.random.default_rng(9)
    alarms = 0
    for _ in range(150):
        e = rng.standard_normal(70)
        z = np.zeros(70)
        for t in range(1, 70):
            z[t] = 0.6 * z[t - 1] + 0.8 * e[t]
        alarms += bool(detect(100 * (1 + 0.03 * z[50:]), alpha=0.01))
    assert alarms / 150 <= 0.05  # plain permutations: 22%


def test_show_prints_each_verdicts_warnings_and_the_deciding_interval(tmp_path, capsys):
    """Item 11: the warnings of a verdict (rank test disagreeing, an A/A twin that differed) are in `run`/`show`,
    not only in --text and --json; item 6: the table's change is the verdict's interval, not ministat's ±."""
    from dataclasses import replace

    from fairmark.report import terminal
    from fairmark.report.load import load_report
    from test_report_fixture import open_store, synthetic_run

    store = open_store(tmp_path / "s.db")
    report = load_report(store, synthetic_run(store, workloads=1, trials=8, seed=3))
    v = report.verdicts[0]
    warned = replace(v.comparison, warnings=("Student's t (paired) and Wilcoxon disagree (x)",))
    flagged = replace(v, judgement=replace(v.judgement, comparison=warned))
    terminal.render(replace(report, verdicts=(flagged, *report.verdicts[1:])))
    out = capsys.readouterr().out
    assert "warning Student's t (paired) and Wilcoxon disagree (x)" in " ".join(out.split())
    assert v.comparison.interval.split(" (")[0] in out


def test_hosts_are_a_level_only_when_a_side_has_several():
    from fairmark.stats.levels import unit_level

    one_each = {
        "host": (["x"] * 3, ["y"] * 3),
        "boot": (["b1"] * 3, ["b1"] * 3),
        "run": (["r"] * 3, ["r"] * 3),
    }
    assert (
        unit_level(one_each) is None
    )  # this machine against that one, interleaved in one run: what is compared
    assert unit_level({"host": (["x", "z"], ["y", "y"])}) == "host"  # the hosts of a side are replicates
    assert unit_level({"host": (["x"] * 2, ["y"] * 2), "run": (["r1"] * 2, ["r2"] * 2)}) == "run"
