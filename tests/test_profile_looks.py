"""The adaptive CPU-profiled rounds look on a schedule and split α over the looks (stats/profile_looks.py): the
stop and the report claim at their look's share of α, so that an A/A run ends with a false claim in at most α of
runs; a run recorded before the schedule is reported at the level its look after every round earned, a boot run
at α."""

from __future__ import annotations

import random

import pytest

from fairmark.plan.model import RunPolicy
from fairmark.report.explain import explanations, run_looks, table
from fairmark.report.load import load_report
from fairmark.run.loop import profiled
from fairmark.run.loop.options import RunOptions
from fairmark.stats.attribution_diff import ProfiledTrial, compare_profiles
from fairmark.stats.profile_looks import legacy_looks, look_alpha, look_alphas, looks
from test_report_explain import _stored


@pytest.mark.parametrize(
    ("profiled_trials", "max_profiled", "expected"),
    [
        (2, 20, (5, 10, 20)),  # the plan's defaults
        (3, 16, (5, 10, 16)),  # the tests' plans: the last look is max_profiled, not 20
        (7, 40, (7, 14, 28, 40)),
        (5, 10, (5, 10)),
        (20, 20, (20,)),  # fixed: one look
        (30, 20, (30,)),
        (2, 3, (3,)),  # fewer than MIN_DECIDE at most: one look, at the end
    ],
)
def test_looks_double_from_the_first_and_end_at_the_span(profiled_trials, max_profiled, expected) -> None:
    assert looks(profiled_trials, max_profiled) == expected


def test_alpha_is_split_over_the_looks_in_proportion_to_their_rounds() -> None:
    assert look_alphas((5, 10, 20)) == pytest.approx((0.05 / 7, 0.1 / 7, 0.2 / 7))
    assert sum(look_alphas(tuple(range(5, 21)))) == pytest.approx(0.05)
    assert look_alpha((5, 10, 20), 10) == pytest.approx(0.1 / 7)
    # a round whose trial failed: 9 trials after 10 rounds is read as look 2 all the same; 4 as look 1
    assert look_alpha((5, 10, 20), 9) == look_alpha((5, 10, 20), 10)
    assert look_alpha((5, 10, 20), 4) == look_alpha((5, 10, 20), 5)
    assert look_alpha((20,), 20) == look_alpha((), 7) == 0.05
    assert look_alpha((5, 15), 15, alpha=0.1) == pytest.approx(0.075)


def test_an_old_run_is_reported_at_the_level_of_a_look_after_every_round() -> None:
    assert legacy_looks(2, 20) == tuple(range(5, 21))  # 16 looks: 5 … 19, and 20
    assert len(legacy_looks(3, 16)) == 12
    assert legacy_looks(20, 20) == (20,)
    old = {"policy": {"profiled_trials": 2, "max_profiled": 20}, "variants": {"A": {"boot": None}}}
    assert run_looks(old) == tuple(range(5, 21))
    assert run_looks(old | {"profile_looks": [5, 10, 20]}) == (5, 10, 20)
    # before max_profiled, and in a boot run (fixed profiled trials per boot): one comparison at α
    assert run_looks({"policy": {"profiled_trials": 3}}) == ()
    assert run_looks(old | {"variants": {"A": {"boot": None}, "B": {"boot": {"kernel": "x"}}}}) == ()
    assert run_looks(None) == ()


class _Hook:
    def __init__(self, name: str) -> None:
        self.name, self.unavailable = name, None


def test_the_cpu_profiler_stops_only_at_a_look_and_the_run_stores_its_looks() -> None:
    policy = RunPolicy()
    cpu, locks = _Hook("profile.cpu"), _Hook("profile.locks")
    may = [k for k in range(20) if profiled.may_stop(cpu, policy, k)]  # type: ignore[arg-type]
    assert may == [5, 10]  # the 20th round is the last in any case
    assert [k for k in range(20) if profiled.may_stop(locks, policy, k)] == list(range(2, 20))  # type: ignore[arg-type]
    stored = profiled.stored_looks(RunOptions(hooks=(cpu, locks)), policy, boots=False)  # type: ignore[arg-type]
    assert stored == {"profile_looks": [5, 10, 20]}
    assert profiled.stored_looks(RunOptions(hooks=(cpu,)), policy, boots=True) == {"profile_looks": [2]}  # type: ignore[arg-type]
    assert profiled.stored_looks(RunOptions(hooks=(locks,)), policy, boots=False) == {}  # type: ignore[arg-type]


def _side(rng: random.Random, n: int, shift: float) -> list[ProfiledTrial]:
    out = []
    for r in range(n):
        f = 500 + rng.randint(-15, 15) + shift
        folded = f"p;main;f {round(f)}\np;main;g {500 + rng.randint(-15, 15)}\n"
        out.append(ProfiledTrial(r, folded, 1.0))
    return out


def test_compare_profiles_claims_at_its_looks_share_of_alpha() -> None:
    rng = random.Random(7)
    a, b = _side(rng, 10, 0), _side(rng, 10, 12)
    d = compare_profiles(a, b, looks=(5, 10, 20))
    assert d is not None and d.look == 1
    assert d.alpha == pytest.approx(0.1 / 7) and d.alpha_in_all == 0.05
    assert all(f.claimed == (f.q_value <= 0.1 / 7) for f in d.functions)
    assert {k: d.to_dict()[k] for k in ("looks", "look", "alpha_in_all")} == {
        "looks": [5, 10, 20],
        "look": 2,
        "alpha_in_all": 0.05,
    }
    one = compare_profiles(a, b)
    assert one is not None and one.alpha == 0.05 and one.looks == ()


def test_the_report_says_the_level_at_each_look_and_in_all(tmp_path) -> None:
    store, run_id = _stored(tmp_path, planted=True)
    options = {"policy": {"profiled_trials": 2, "max_profiled": 20}, "profile_looks": [5, 10, 20]}
    store.update_run(run_id, options=options)  # type: ignore[attr-defined]
    (e,) = explanations(load_report(store, run_id))  # type: ignore[arg-type]
    assert e["diff"].alpha == pytest.approx(0.1 / 7)  # 8 profiled rounds a side: read as look 2 (10 rounds)
    lines = table(e["diff"])
    foot = "\n".join(lines[-2:])
    assert "FDR 1.4% over" in foot and "functions at look 2 of 3 (5% in all)" in foot, lines
    assert all(len("    " + line) <= 80 for line in lines), lines
    # a run recorded before the looks were stored: a look after every round, the 4th of 16 (5, 6, 7, 8 …)
    store.update_run(run_id, options={"policy": options["policy"]})  # type: ignore[attr-defined]
    (e,) = explanations(load_report(store, run_id))  # type: ignore[arg-type]
    assert e["diff"].looks == tuple(range(5, 21))
    assert "at look 4 of 16 (5% in all)" in "\n".join(table(e["diff"]))


def test_a_boot_verdict_keeps_alpha(monkeypatch) -> None:
    """Boots as the unit: a fixed number of profiled trials in every boot, no adaptive stop — α, whatever the
    run's options say."""
    from types import SimpleNamespace

    from fairmark.report import explain

    rng = random.Random(5)
    boots = {"A": [_side(rng, 3, 0) for _ in range(3)], "B": [_side(rng, 3, 0) for _ in range(3)]}
    monkeypatch.setattr(explain, "profiled_boots", lambda _report, cell: boots[cell])
    report = SimpleNamespace(run=SimpleNamespace(options={"profile_looks": [5, 10, 20]}))
    verdict = SimpleNamespace(comparison=SimpleNamespace(design=explain.BOOTS))
    d = explain._compared(report, verdict, "A", "B")  # type: ignore[arg-type]
    assert d is not None and d.design == "units" and d.alpha == 0.05 and d.looks == ()
    assert "look" not in "\n".join(table(d))
