"""The scipy-free pieces of a run's end (issue 34 item 15): Student t's tail and quantile (stats/tlight.py) and the
median's order-statistic rank (stats/describe.median_rank), each against scipy's own result; and a one-cell run
that, with them, loads no scipy at all."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import special

from fairmark.stats.describe import EXACT_RANK_MAX_N, _median_rank_float, median_rank
from fairmark.stats.tlight import t_isf, t_sf

DFS = [
    0.7,
    1,
    2,
    2.5,
    3,
    4,
    5,
    7,
    10,
    15,
    29,
    30,
    50,
    99,
    100,
    101,
    150,
    300,
    1000,
    1198,
    2000,
    5000,
    20000,
    1e5,
]


@pytest.mark.parametrize("df", DFS)
def test_t_tail_is_scipys(df: float) -> None:
    for t in [0, 0.01, 0.5, 1, 1.96, 2.5, 3, 4, 5, 6, 8, 10, 20, 50, 100, 1e3]:
        for sign in (1, -1):
            ours, ref = t_sf(df, sign * t), float(special.stdtr(df, -sign * t))
            assert ours == pytest.approx(ref, rel=1e-9, abs=1e-300), (df, sign * t)


@pytest.mark.parametrize("df", DFS)
def test_t_quantile_is_scipys(df: float) -> None:
    # scipy's lower quantile of q, not stdtrit(df, 1 − q): 1 − 1e-12 rounds away the digits asked for
    for q in [
        0.5,
        0.4,
        0.25,
        0.1,
        0.05,
        0.025,
        0.01,
        0.005,
        1e-3,
        1e-4,
        1e-5,
        1e-6,
        1e-8,
        1e-10,
        1e-12,
        0.9,
        0.99,
    ]:
        assert t_isf(df, q) == pytest.approx(-float(special.stdtrit(df, q)), rel=1e-9, abs=1e-12), (df, q)


def test_t_edges() -> None:
    assert math.isnan(t_sf(0, 1.0)) and math.isnan(t_sf(3, math.nan)) and math.isnan(t_isf(3, 0.0))
    assert t_sf(3, math.inf) == 0.0 and t_sf(3, -math.inf) == 1.0 and t_isf(3, 0.5) == 0.0


def _scipy_rank(n: int, confidence: float) -> int:
    """describe.median_ci's rank as it was computed with scipy.special.bdtr."""
    j = np.arange(1, n // 2 + 1)
    covers = 1.0 - 2.0 * special.bdtr(j - 1, n, 0.5) >= confidence / 100.0
    return int(covers.size if covers.all() else np.argmin(covers))


@pytest.mark.parametrize("confidence", [50.0, 80.0, 90.0, 95.0, 97.5, 98.0, 99.0, 99.5, 99.9])
def test_median_rank_is_scipys(confidence: float) -> None:
    for n in range(1, 1300):
        assert median_rank(n, confidence) == _scipy_rank(n, confidence), (n, confidence)
    for n in (1301, 2999, EXACT_RANK_MAX_N):  # the float sum agrees with the exact one where both apply
        assert _median_rank_float(n, confidence) == median_rank(n, confidence) == _scipy_rank(n, confidence)
    for n in (EXACT_RANK_MAX_N + 1, 20000, 100_000):
        assert median_rank(n, confidence) == _scipy_rank(n, confidence), (n, confidence)


def test_a_one_cell_run_loads_no_scipy(tmp_path: Path) -> None:
    """Its end (summary, median CI, outliers, drift) needs no scipy: 17 MB of a 1200-trial run's peak RSS."""
    plan = tmp_path / "p.toml"
    plan.write_text(
        "[run]\nwarmup = 0\nmin_trials = 12\nmax_trials = 12\n[[workload]]\nname = 'w'\n"
        "command = ['sh', '-c', 'case $(date +%N) in *[05]) sleep 0.03;; esac']\n"  # outlier candidates
    )
    probe = (
        "import sys; from fairmark.cli.main import main; code = main(sys.argv[1:]); "
        "print('LOADED', code, 'scipy' in sys.modules, file=sys.stderr)"
    )
    env = os.environ | {
        "FAIRMARK_STORE": str(tmp_path / "s.db"),
        "FAIRMARK_STATE_DIR": str(tmp_path / "state"),
        "FAIRMARK_LOCK_PATH": str(tmp_path / "lock"),
        "NO_COLOR": "1",
    }
    for extra in (["--json"], []):
        res = subprocess.run(
            [sys.executable, "-c", probe, "run", str(plan), *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        last = [line for line in res.stderr.splitlines() if line.startswith("LOADED")]
        assert last == ["LOADED 0 False"], res.stderr[-3000:]


def test_the_shipped_mde_factors_are_what_scipy_computes() -> None:
    """stats/mde_factors.npy holds `_factor`'s own results (scripts/mde_table.py): some keys recomputed."""
    from fairmark.stats import power

    keys = power.shipped_keys()
    shipped = power._shipped()
    assert sorted(shipped) == keys
    for key in [1.0, 1.05, 2.5, 7.35, 29.0, 199.95, 200.0, 1230.0, 20000.0, *keys[:: len(keys) // 12]]:
        assert shipped[key] == power._factor(key, power.SHIPPED_LEVEL, power.POWER), key
    assert power.mde_factor(57.31, 95.0) == power._factor(57.3, 95.0, 0.8)  # Welch's df, by its key
    # Above the table: interpolated in 1/df to the normal limit, within the bisection's width of its result
    assert shipped[float(power.SHIPPED_UP_TO)] == power.FACTOR_AT_TOP
    for df in (20_001.0, 30_000.0, 100_000.0, 199_980.0, 1e6, 1e9):
        key = min(power.df_key(df), 1e6)
        assert power.mde_factor(df, 95.0) == pytest.approx(power._factor(key, 95.0, 0.8), rel=1e-5), df
    assert power.mde_factor(57.31, 99.0) == power._factor(57.3, 99.0, 0.8)  # another level: computed


@pytest.mark.parametrize("confidence", [80.0, 95.0, 97.5, 99.5])
def test_exact_t_and_p_values_are_scipys(confidence: float) -> None:
    from fairmark.stats.paired import two_sided_p
    from fairmark.stats.tdist import exact_t

    for df in [1, 3.7, 30, 101, 2500, 1e6]:
        ref = float(special.stdtrit(df, 1.0 - (1.0 - confidence / 100.0) / 2.0))
        assert exact_t(confidence, df) == pytest.approx(ref, rel=1e-9)
        for t in (0.0, 0.7, 2.1, 9.0):
            assert two_sided_p(t, df) == pytest.approx(float(2 * special.stdtr(df, -t)), rel=1e-9)


def test_bh_and_welch_p_are_scipys() -> None:
    """stats/fdr._bh is scipy's false_discovery_control step for step (equal floats); scaling.welch_p its Welch
    ttest_ind by tlight (a relative 1e-9)."""
    from scipy import stats

    from fairmark.stats.fdr import _bh
    from fairmark.stats.scaling import welch_p

    rng = np.random.default_rng(34)
    for m in [1, 2, 3, 5, 10, 40, 200]:
        for _ in range(50):
            p = rng.random(m) ** rng.uniform(0.3, 3)
            p[rng.integers(0, m)] = p[0]  # a tie
            assert (_bh(p.copy()) == stats.false_discovery_control(p, method="bh")).all()
    for _ in range(300):
        na, nb = rng.integers(2, 40, 2)
        a = rng.normal(0, rng.uniform(0.1, 3), na)
        b = rng.normal(rng.uniform(-2, 2), rng.uniform(0.1, 3), nb)
        ref = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
        assert welch_p(list(a), list(b)) == pytest.approx(ref, rel=1e-9, abs=1e-300)


def test_wilson_is_scipys() -> None:
    from scipy.stats import binomtest

    from fairmark.report.failures import wilson

    for n in (1, 2, 3, 7, 20, 150, 1200):
        for k in sorted({0, 1, n // 3, n - 1, n}):
            for confidence in (90.0, 95.0, 99.0):
                ci = binomtest(k, n).proportion_ci(confidence / 100.0, method="wilson")
                low, high = wilson(k, n, confidence)
                assert low == pytest.approx(ci.low, rel=1e-12, abs=1e-15)
                assert high == pytest.approx(ci.high, rel=1e-12, abs=1e-15)
