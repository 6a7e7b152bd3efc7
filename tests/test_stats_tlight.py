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
