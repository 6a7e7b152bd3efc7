"""bench/changepoint_bound.py's bounds on the goal's own score (issue 38 item 3): the step's direction density
against its closed form and its normalization, which reports a score counts, and the structure of a small run
(docs/statistics.md prints the full runs; nothing here depends on speed)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from scipy.special import gammaln, pbdv

BENCH = Path(__file__).resolve().parent.parent / "bench" / "changepoint_bound.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("changepoint_bound", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cb = _load()


def test_the_profile_is_its_closed_form() -> None:
    """h(a) = log ∫ r^(k-1) e^(-r²/2 + ra) dr = log Γ(k) + a²/4 + log D_-k(-a) (D: the parabolic cylinder
    function), over every a two steps of 3.33 sd reach (|a| ≤ |m| ≤ 14); and the table interpolates it."""
    a = np.linspace(-14, 14, 57)
    closed = gammaln(cb.K) + a * a / 4 + np.log(pbdv(-cb.K, -a)[0])
    assert np.max(np.abs(cb.log_profile(a) - closed)) < 1e-9
    fine = np.random.default_rng(1).uniform(-14, 14, 5000)
    assert np.max(np.abs(cb.Profile(14.0)(fine) - cb.log_profile(fine))) < 1e-6


def test_the_profile_gives_the_single_step_density() -> None:
    """The table's density of a step equals step_density's (its own radius grid) where both apply."""
    q = cb.contrasts()
    _, means = cb.single_steps(2.5)
    x = means[7] + np.random.default_rng(2).standard_normal((300, cb.N))
    z = cb._direction(x, q)
    m = q.T @ means[7]
    table = cb.Profile(float(np.linalg.norm(m)))(z @ m) - 0.5 * m @ m
    assert np.max(np.abs(table - cb.step_density(z, m))) < 1e-6


@pytest.mark.parametrize("two", [False, True])
def test_the_step_density_integrates_to_one(two: bool) -> None:
    """A small step's (or pair's) density over the null's at φ 0 (the uniform direction) has mean 1 over
    uniform directions: both densities carry the same constants. 40 000 directions; the ratio's sd is ~1.3."""
    q = cb.contrasts()
    _, means = (cb.step_pairs if two else cb.single_steps)(0.3 if two else 0.5)
    x = np.random.default_rng(3).standard_normal((40_000, cb.N))
    steps, nulls = cb.log_parts(
        x, q, means[:3], cb.Profile(float(np.linalg.norm(means[:3] @ q, axis=1).max()))
    )
    ratio = np.exp(steps - nulls[:, :1])
    assert np.all(np.abs(ratio.mean(axis=0) - 1) < 4 * ratio.std(axis=0) / math.sqrt(len(x)))


def test_a_report_finds_a_step_within_one_run() -> None:
    """One step: the run reported within ±1 of it; two: both runs of the pair, each within ±1 of its step."""
    places, _ = cb.single_steps(2.5)
    cov = cb.cover(places, "within1")
    reports = list(range(1, cb.N))
    assert [places[i][0] for i in np.flatnonzero(cov[reports.index(10)])] == [9, 10, 11]
    assert cb.cover(places, "reject").tolist() == [[1.0] * 15]
    pairs, _ = cb.step_pairs(10 / 3)
    assert len(pairs) == 78 and (6, 13) in pairs and min(b - a for a, b in pairs) == 3
    cov = cb.cover(pairs, "within1")
    pair_reports = [(k1, k2) for k1 in range(1, cb.N) for k2 in range(k1 + 1, cb.N)]
    found = {pairs[i] for i in np.flatnonzero(cov[pair_reports.index((6, 13))])}
    assert found == {(a, b) for a in (5, 6, 7) for b in (12, 13, 14)}


@pytest.mark.parametrize("two", [False, True])
def test_a_small_run_bounds_the_told_place_above_the_fair_one(two: bool) -> None:
    """A small run's rows: every bound a percentage with a half-width, false alarms at the three φ, and the
    bound told the place (10, or (6, 13)) at least the bound of a test that treats every place alike; the least
    favourable prior is a prior over the places."""
    rng = np.random.default_rng(4)
    q = cb.contrasts()
    places, means = (cb.step_pairs if two else cb.single_steps)(2.5)
    prof = cb.Profile(float(np.linalg.norm(means @ q, axis=1).max()))
    told = places.index((6, 13) if two else (10,))
    counts = np.full(len(places), 20 if two else 150)
    counts[told] = 600
    fit, ev = cb.draw(rng, q, means, prof, counts), cb.draw(rng, q, means, prof, counts)
    nulls = cb.draw_nulls(rng, q, means, prof, 500)
    one = np.where(np.arange(len(places)) == told, 0.0, -np.inf)
    alike = np.full(len(places), -math.log(len(places)))
    for key in ("reject", "within1"):
        rows = [
            cb.within_row(fit, ev, nulls, lw, cb.cover(places, key), np.array([0.01, 0.02, 0.02]))
            for lw in (one, alike)
        ]
        for row in rows:
            assert 0 <= row["bound"] <= 101 and row["half"] >= 0 and len(row["alarms"]) == 3
        assert rows[0]["bound"] >= rows[1]["bound"]
        assert list(rows[0]["power"]) == [told] and len(rows[1]["power"]) == len(places)
    least = cb.least_favourable(fit, cb.cover(places, "within1"), np.array([0.01, 0.02, 0.02]), rounds=3)
    assert least.shape == (len(places),) and math.isclose(np.exp(least).sum(), 1)
