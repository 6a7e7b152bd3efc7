"""Issue 31 item 7: edges an independent simulation found, each held here."""

from __future__ import annotations

import math
import shutil
import subprocess

import pytest

from fairmark.cli.main import main
from fairmark.stats.paired import paired_by_round


def test_quantized_ticks_do_not_pass_the_zero_spread_guard() -> None:
    # One tick more in every round: the logs of the pairs' ratios vary only because the values do; the tick's
    # resolution allows 0.5-1.5 ticks, so no interval of ±0.015% and no p of 1e-10 — the sign test decides.
    a = [100.0, 101.0, 99.0, 100.0, 102.0, 98.0]
    test = paired_by_round(dict(enumerate(a)), {i: x + 1 for i, x in enumerate(a)}, confidence=95)
    assert test is not None
    assert test.constant and math.isnan(test.ratio_ci_low)
    assert test.p_value == 2 * 0.5**6
    # Values of 0.1 steps: the subtraction's rounding is no spread either.
    c = [0.3, 0.1, 0.2, 0.7, 0.4]
    test = paired_by_round(dict(enumerate(c)), {i: x + 0.1 for i, x in enumerate(c)}, confidence=95)
    assert test is not None and test.constant


@pytest.mark.skipif(shutil.which("ministat") is None, reason="ministat is not installed")
def test_ministat_compat_takes_values_past_1e300_as_ministat_does(tmp_path, capsys, monkeypatch):
    """ministat prints its table (nan where its sums overflow) for any finite double; --ministat-compat did
    refuse past 1e300. fairmark's own verdict is still refused there, said on stderr."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").write_text("1e301\n2e301\n3e301\n")
    (tmp_path / "b").write_text("-1.5e305\n-2.5e305\n-3.5e305\n5\n")
    (tmp_path / "c").write_text("1\n2\n3\n")
    for names in (["a", "b"], ["c", "b", "a"]):
        for opts in ([], ["-s"], ["-A"], ["-n"]):
            theirs = subprocess.run(["ministat", *opts, *names], capture_output=True, text=True).stdout
            assert main(["compare", "--ministat-compat", *opts, *names]) == 0
            out = capsys.readouterr()
            assert out.out == theirs, (names, opts)
            assert "larger in magnitude than 1e300" in out.err
    assert main(["compare", "a", "c"]) == 2  # fairmark's own view still refuses them


def test_mde_of_a_baseline_near_zero_is_in_the_unit() -> None:
    from fairmark.verdict.compare import compare

    a = [0.9, -1.2, 2.1, 0.4, -0.8, 1.7, 0.2, -0.5, 1.1, 0.1]  # a difference around 0.4 ms, spread 1.1 ms
    b = [x + 0.05 for x in reversed(a)]
    c = compare(a, b, confidence=95, unit="ms")
    said = c.sentence.split("would detect a change of ")[1]
    assert said.startswith("±") and " ms (the baseline's mean, " in said and "too near 0" in said, c.sentence
    assert "%" not in said.split(" with ")[0], c.sentence


def test_a_plan_whose_min_trials_cannot_reach_the_stated_power_is_warned_of() -> None:
    from fairmark.assemble import POWER_BY_MIN_TRIALS, RunRequest, power_notes
    from fairmark.plan.load import LoadedPlan, parse_plan

    def request(run: str, quick: bool = False) -> RunRequest:
        text = f'title = "p"\n[run]\n{run}\n[[workload]]\nname = "w"\ncommand = ["true"]\n'
        return RunRequest(LoadedPlan(plan=parse_plan(text), path="p.toml", text=text), quick=quick)

    (line,) = power_notes(request("min_trials = 3"))
    assert f"proven only {POWER_BY_MIN_TRIALS[3]} of the time" in line and "2 degrees of freedom" in line
    assert "3 degrees of freedom" in power_notes(request("min_trials = 4"))[0]
    assert power_notes(request("min_trials = 5")) == [] and power_notes(request("")) == []
    assert power_notes(request("min_trials = 3", quick=True)) == []  # --quick is a first look, said so


def _two_stage_run(regime: object) -> tuple[object, float, float]:
    """A paired test of 18 rounds whose first 6 were the first stage; (test, all rounds' se, Stein's se)."""
    import numpy as np

    rng = np.random.default_rng(7)
    a = 100 * (1 + 0.02 * rng.standard_normal(18))
    b = 100 * (1 + 0.02 * rng.standard_normal(18))
    test = paired_by_round(
        dict(enumerate(a)), dict(enumerate(b)), confidence=95, first_stage=6, length_planned=regime
    )
    d = np.log(b) - np.log(a)
    return test, float(np.std(d, ddof=1)) / math.sqrt(18), float(np.std(d[:6], ddof=1)) / math.sqrt(18)


def test_the_mde_of_a_run_comes_from_the_regime_it_ended_in() -> None:
    """Stopped at its planned length: the two-stage design's factor on all rounds' spread (a repeat needs both
    Stein's test and all rounds' to reject); cut at max_trials: a repeat under the same stopping rule; the
    regime unknown: each part's own MDE, the larger."""
    import numpy as np

    from fairmark.stats.power import capped_factor, mde_factor, two_stage_factor
    from fairmark.stats.stopping import Capped

    planned, se_all, se_first = _two_stage_run(True)
    assert planned.parts and planned.mde == pytest.approx(two_stage_factor(5, 17, 95.0) * se_all, rel=1e-12)
    rule = Capped(18, 1.0)
    capped, se_all, se_first = _two_stage_run(rule)
    rng = np.random.default_rng(7)
    a, b = 100 * (1 + 0.02 * rng.standard_normal(18)), 100 * (1 + 0.02 * rng.standard_normal(18))
    factor = capped_factor((np.log(a), np.log(b)), (1.0, 1.0), 6, rule, 95.0)
    assert capped.parts and capped.mde == pytest.approx(factor * se_all, rel=1e-12)
    assert _two_stage_run(rule)[0].mde == capped.mde  # the same run states the same MDE every time
    unknown, se_all, se_first = _two_stage_run(False)
    own = max(mde_factor(5, 95.0) * se_first, mde_factor(17, 95.0) * se_all)
    assert unknown.mde == pytest.approx(own, rel=1e-12)


@pytest.mark.parametrize(("first", "cap"), [(6, 30), (5, 12), (3, 20)])
def test_a_repeat_that_is_always_cut_is_the_two_stage_design(first: int, cap: int) -> None:
    """Where every repeat's first stage asks for more than max_trials (CV 20% against a ±0.1% target), the
    simulated repeat runs max_trials rounds: its factor is the two-stage quadrature's at that length, within the
    Monte Carlo's error."""
    import numpy as np

    from fairmark.stats.power import capped_factor, two_stage_factor
    from fairmark.stats.stopping import Capped

    rng = np.random.default_rng(first)
    cells = (0.2 * rng.standard_normal(cap), 0.2 * rng.standard_normal(cap))
    factor = capped_factor(cells, (1.0, 1.0), first, Capped(cap, 0.1), 95.0)
    assert factor == pytest.approx(two_stage_factor(first - 1, cap - 1, 95.0), rel=0.02)


def test_the_regime_is_read_from_the_stop_reasons() -> None:
    import numpy as np

    from fairmark.stats.stopping import Capped, group_stop
    from fairmark.store.stopreason import length_regime, precision_reason

    rng = np.random.default_rng(3)
    noisy = [list(100 + 5 * rng.standard_normal(6)) for _ in range(2)]
    cut = precision_reason(group_stop(noisy, confidence=95, target_ci_pct=0.25, min_trials=6, max_trials=6))
    assert length_regime([cut, cut]) == Capped(6, 0.25)
    quiet = [list(100 + 0.01 * rng.standard_normal(6)) for _ in range(2)]
    planned = precision_reason(
        group_stop(quiet, confidence=95, target_ci_pct=1.5, min_trials=6, max_trials=30)
    )
    assert length_regime([planned, planned]) is True
    assert length_regime([planned, cut]) is False and length_regime([None, None]) is False


@pytest.mark.parametrize(("first_df", "all_df"), [(5, 17), (2, 5), (4, 29)])
def test_the_two_stage_factor_is_80_percent_power_in_its_own_model(first_df: int, all_df: int) -> None:
    """Monte Carlo of the model the factor solves (not its quadrature): a run's all-rounds spread s gives the
    stated change c·s; a repeat rejects when |d̄| exceeds both t(first_df)·v and t(all_df)·w, v and w its two
    spreads; 400 000 draws, 80% within ±0.5 points."""
    import numpy as np
    from scipy import stats

    from fairmark.stats.power import two_stage_factor

    rng = np.random.default_rng(31)
    c = two_stage_factor(first_df, all_df, 95.0)
    draws = 400_000
    s = np.sqrt(rng.chisquare(all_df, draws) / all_df)  # the run's spread over σ
    v = np.sqrt(rng.chisquare(first_df, draws) / first_df)  # the repeat's first stage
    w = np.sqrt(rng.chisquare(all_df, draws) / all_df)  # the repeat's all rounds
    mean = c * s + rng.standard_normal(draws)  # the repeat's mean difference, in units of σ/√n
    reach = np.maximum(stats.t.ppf(0.975, first_df) * v, stats.t.ppf(0.975, all_df) * w)
    assert float(np.mean(np.abs(mean) > reach)) == pytest.approx(0.80, abs=0.005)


def _scipy_two_stage(first_df: float, all_df: float, confidence: float) -> float:
    """power._two_stage as it was computed with scipy.special (stdtrit, chdtri, ndtr): the same bins, the same
    bisection on the mean power itself (not the root replayed)."""
    import numpy as np
    from scipy import special as sp

    q = 1.0 - (1.0 - confidence / 100.0) / 2.0
    t_first, t_all = float(sp.stdtrit(first_df, q)), float(sp.stdtrit(all_df, q))
    mid = (np.arange(32) + 0.5) / 32
    v, w = np.sqrt(sp.chdtri(first_df, mid) / first_df), np.sqrt(sp.chdtri(all_df, mid) / all_df)
    reach = np.maximum(t_first * v[:, None], t_all * w[None, :]).ravel()
    root_u = np.sqrt(sp.chdtri(all_df, (np.arange(96) + 0.5) / 96) / all_df)[:, None]

    def mean_power(c: float) -> float:
        return float(np.mean(sp.ndtr(c * root_u - reach) + sp.ndtr(-c * root_u - reach)))

    low, high = 0.0, t_first + 1.0
    while mean_power(high) < 0.8:
        low, high = high, high * 2.0
    while high - low > 1e-5 * high:
        m = (low + high) / 2.0
        low, high = (m, high) if mean_power(m) < 0.8 else (low, m)
    return high


@pytest.mark.parametrize("confidence", [80.0, 95.0, 99.0])
def test_the_two_stage_factor_is_what_scipy_computes(confidence: float) -> None:
    """Without scipy (tlight's t, special's χ² quantiles, a tabulated Φ): scipy's factor to 1e-9."""
    from fairmark.stats.power import two_stage_factor

    for first_df, all_df in [(1, 3), (2, 2), (2, 5), (4, 29), (5, 17), (9, 200), (29, 29), (5, 2000)]:
        ours = two_stage_factor(first_df, all_df, confidence)
        assert ours == pytest.approx(_scipy_two_stage(first_df, all_df, confidence), rel=1e-9)


def test_the_verdict_of_a_run_at_its_planned_length_loads_no_scipy() -> None:
    """`show` of such a run loaded scipy.special for the two-stage factor alone (issue 34 item 15)."""
    import sys

    probe = (
        "import sys, numpy as np\n"
        "from fairmark.stats.paired import paired_by_round\n"
        "rng = np.random.default_rng(7)\n"
        "a, b = 100 + 2 * rng.standard_normal(18), 100 + 2 * rng.standard_normal(18)\n"
        "t = paired_by_round(dict(enumerate(a)), dict(enumerate(b)), confidence=95, first_stage=6,\n"
        "                    length_planned=True)\n"
        "print(bool(t.parts), math.isfinite(t.mde), 'scipy' in sys.modules)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", "import math\n" + probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert res.stdout.split() == ["True", "True", "False"], res.stderr


@pytest.mark.parametrize("confidence", [80.0, 95.0, 99.0])
def test_the_t_of_every_repeat_length_is_scipys(confidence: float) -> None:
    """capped_factor's t at each length a repeat can run: exact to df 400, Cornish–Fisher above (1e-12)."""
    import numpy as np
    from scipy import special as sp

    from fairmark.stats.power import _t_by_df

    t = _t_by_df(30_000, confidence, False)
    df = np.arange(1, 30_001)
    ref = sp.stdtrit(df, 1.0 - (1.0 - confidence / 100.0) / 2.0)
    assert math.isnan(t[0]) and np.max(np.abs(t[1:] / ref - 1.0)) < 1e-12
