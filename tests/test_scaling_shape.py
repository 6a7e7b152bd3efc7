"""Scaling verdicts see declines (issue 25 items 2 and 10): every pair of points is compared with Holm's
step-down, a best last point "rises to the end of the sweep", seed 002's and seed 004's curves are read the way
their authors read them, a curve without any difference is called flat no more often than the confidence
allows, and efficiency is given only for CPU/thread sweeps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fairmark.report.shape import shape_summary
from fairmark.stats.scaling import curve_shape, efficiency_applies, holm


def _exact(means_sds: list[tuple[float, float]], n: int = 6) -> list[list[float]]:
    """Points with exactly these means and standard deviations."""
    grid = np.linspace(-1.3, 1.3, n)
    return [list(m + s * grid / grid.std(ddof=1)) for m, s in means_sds]


def _noisy(means: list[float], cv: float, n: int, seed: int) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    return [list(m * (1 + cv * rng.standard_normal(n))) for m in means]


def _words(points: list[list[float]], parameter: str, xs: list[object], higher: bool = True) -> str:
    shape = curve_shape(points, higher=higher)
    return shape_summary(shape, parameter, xs, [float(np.mean(p)) for p in points])


def test_a_decline_in_small_steps_is_a_decline_not_flat() -> None:
    # 93 000 ± 10 000 → 45 000 ± 14 000 req/s (95% CI half-widths of 6 trials) in steps no neighbour test sees:
    # the "flat within ±60%"
    sd = 2.449 / 2.571  # half-width → sd for n = 6
    halves = [(93000, 10000), (85000, 11000), (74000, 12000), (60000, 13000), (45000, 14000)]
    points = _exact([(m, h * sd) for m, h in halves])
    shape = curve_shape(points, higher=True)
    assert shape.flat_pct is None and shape.declines_after_peak and shape.decline_to == 4
    words = _words(points, "connections", [1000, 1500, 2000, 2500, 3000])
    assert "flat" not in words and "declines after it: -52% at connections = 3000" in words


def test_the_last_point_is_never_a_peak_it_rises_to_the_end() -> None:
    points = _noisy([10.0, 19.0], 0.02, 6, seed=1)
    shape = curve_shape(points, higher=True)
    assert shape.peak is None and shape.rises_to_end
    assert _words(points, "cpus", [1, 2]).startswith("rises to the end of the sweep: best at cpus = 2")


def test_seed_002_dragonfly_peaks_at_two_threads_then_drops_below_up() -> None:
    # "peak SMP performance of only 15% better than UP performance, and drops to about 50% below UP performance
    # at higher loads" (seed 002; transactions/s, 8 trials per point, CV 3%)
    xs = [1, 2, 4, 8, 16, 32]
    points = _noisy([100, 115, 110, 90, 60, 50], 0.03, 8, seed=2)
    shape = curve_shape(points, higher=True)
    assert shape.peak == 1 and shape.declines_after_peak and shape.decline_to == 5
    words = _words(points, "threads", xs)
    assert words.startswith(
        "peak at threads = 2: better than threads = 1 before it, and declines after it: -5"
    )
    # FreeBSD 7.0 on the same benchmark "scales to 8 CPUs"
    freebsd = _noisy([100, 195, 380, 700], 0.03, 8, seed=3)
    assert curve_shape(freebsd, higher=True).rises_to_end


def test_seed_004_peaks_at_1000_to_1500_sends_then_declines() -> None:
    # "peaked at 1000 to 1500 simultaneous sends, and then steadily declined" (seed 004)
    xs = [500, 1000, 1500, 2000, 2500, 3000]
    points = _noisy([80, 100, 100, 90, 80, 70], 0.03, 8, seed=4)
    shape = curve_shape(points, higher=True)
    assert shape.peak in (1, 2) and shape.declines_after_peak and shape.decline_to == 5
    other = 2 if shape.peak == 1 else 1
    assert other in shape.tied  # the two are not told apart, and the words say so
    words = _words(points, "connections", xs)
    assert f"connections = {xs[other]} not proven worse" in words and "declines after it" in words


def test_lower_is_better_curves_read_the_same_way() -> None:
    points = _noisy([10.0, 8.0, 7.0, 9.0, 12.0], 0.02, 8, seed=5)  # latency: best (lowest) at the third point
    shape = curve_shape(points, higher=False)
    assert shape.peak == 2 and shape.decline_to == 4


def test_holm_step_down() -> None:
    assert holm([0.01, 0.04, 0.03], 0.05) == [True, False, False]  # 0.01 ≤ 0.05/3; 0.03 > 0.05/2
    assert holm([0.01, 0.02, 0.03], 0.05) == [True, True, True]
    assert holm([float("nan"), 0.001], 0.05) == [False, True]


@pytest.mark.slow
def test_a_curve_without_any_difference_is_rarely_given_a_shape() -> None:
    """Null curves (6 points of one lognormal distribution, 6 trials each): how often is any rise, decline or peak
    claimed at 95%? Holm across all 15 pairs holds it at ≤ 5%: 3.0% of 2000 curves of this seed (Wilson 95% CI
    2.3-3.8%), and 3.0% (15) of the first 500, which the suite runs (1.8-4.9%; each curve costs ~50 ms of
    SciPy). The 2000 curves read before issue 25 (neighbours only): 19.2% [17.5, 20.9]; the data-chosen best
    tested against each other point with Holm over those 5 alone: 7.0% [5.9, 8.1] — the selection needs the
    whole family."""
    rng = np.random.default_rng(25)
    claims = 0
    runs = 500
    for _ in range(runs):
        points = [list(rng.lognormal(0.0, 0.1, 6)) for _ in range(6)]
        shape = curve_shape(points, higher=True)
        claims += shape.flat_pct is None
    assert claims / runs <= 0.05


def test_efficiency_only_for_cpu_and_thread_sweeps() -> None:
    assert efficiency_applies("cpus") and efficiency_applies("threads") and efficiency_applies("jobs")
    assert not efficiency_applies("connections") and not efficiency_applies("clients")


@pytest.mark.parametrize(("parameter", "has_efficiency"), [("connections", False), ("threads", True)])
def test_a_load_sweep_has_no_efficiency_column(
    tmp_path: Path, fairmark_cli, parameter: str, has_efficiency: bool
) -> None:
    plan = tmp_path / "sweep.toml"
    env = "$FAIRMARK_SWEEP_" + parameter.upper()
    plan.write_text(f"""
[run]
warmup = 0
min_trials = 3
max_trials = 3
[[workload]]
name = "w"
command = 'echo "rate $(( 1000 / {env} ))"'
shell = true
sweep = {{ {parameter} = [1, 2, 4] }}
metrics = [{{ name = "rate", regex = 'rate (\\d+)', better = "higher", unit = "req/s" }}]
""")
    code, out, err = fairmark_cli("run", str(plan), "--no-monitors", "--accept-risk", "--json")
    assert code == 0, err
    (curve,) = json.loads(out)["scaling"]
    assert all((p["efficiency"] is not None) == has_efficiency for p in curve["points"])
    _, text, _ = fairmark_cli("report", "last", "--text")
    assert ("effic." in text) == has_efficiency
    _, shown, _ = fairmark_cli("show", "last")
    assert ("efficiency" in shown) == has_efficiency
