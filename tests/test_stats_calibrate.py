"""`fairmark calibrate` (issue 10, item 6): K real interleaved A/A runs, stored per host and workload, shown by
later verdicts on this host; and the regression gate uses the Benjamini-Hochberg decision. ~15 s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairmark.errors import GateTripped
from fairmark.verdict.compare import detectable_text

PLAN = """
[run]
warmup = 0
min_trials = 3
max_trials = 3
[[workload]]
name = "spin"
shell = true
command = 'i=0; while [ $i -lt $N ]; do i=$((i+1)); done'
[[variant]]
name = "A"
env = { N = "20000" }
[[variant]]
name = "B"
env = { N = "20000" }
"""


@pytest.mark.slow
def test_calibrate_stores_rate_and_mde_and_later_verdicts_show_them(tmp_path: Path, fairmark_cli) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN)
    code, out, err = fairmark_cli("calibrate", str(plan), "--runs", "3", "--accept-risk", "--json")
    assert code == 0, err
    (cal,) = json.loads(out)["calibrations"]
    assert (cal["workload"], cal["metric"], cal["runs"]) == ("spin", "wall_s", 3)
    data = cal["data"]
    assert 0 <= data["false_positives"] <= 3 and len(data["run_ids"]) == 3
    low, high = data["false_positive_ci"]
    assert 0 <= low <= data["false_positive_rate"] <= high <= 1  # exact binomial CI, wide at K = 3
    assert data["mde_percent"] > 0 and data["trials_per_side"] == [3, 3]
    fall = 100 * data["mde_percent"] / (100 + data["mde_percent"])  # ×(1 + m) one way, ÷(1 + m) the other
    assert _hooks_of(data["run_ids"]) == [["monitor.system"]] * 3  # the monitors `run` has (issue 39)
    code, out, err = fairmark_cli("run", str(plan), "--json", "--no-monitors", "--accept-risk")
    assert code == 0, err
    (verdict,) = json.loads(out)["verdicts"]
    # the calibration's change as the verdict's own: a factor either way on the log scale ("-47% or +90%"), in
    # the one text every screen gives a detectable change (its digits: tests/test_screens_digits.py) — not
    # recomputed here: near -100% ("-99.7%") two significant digits of the fall said "-100%"
    size = detectable_text(data["mde_percent"], True)
    if " or " in size:  # "-X% or +Y%": the fall and the rise, each to its shown digits (hand check)
        down, up = (float(p.strip("-+%")) for p in size.split(" or "))
        assert abs(down - fall) <= 0.06 * fall and abs(up - data["mde_percent"]) <= 0.06 * data["mde_percent"]
    assert (
        data["scale"] == "log"
        and f"calibration: this machine shows changes beyond {size}" in verdict["sentence"]
    )
    assert "false positives in 3 A/A runs" in verdict["sentence"]


def _hooks_of(run_ids: list[str]) -> list[list[str]]:
    """The trial hooks each stored run measured with."""
    import os

    from fairmark.store.db import Store

    store = Store.open(os.environ["FAIRMARK_STORE"])
    return [list(store.get_run(r).options["hooks"]) for r in run_ids]


@pytest.mark.slow
def test_calibrate_without_monitors_calibrates_runs_made_without_them(tmp_path: Path, fairmark_cli) -> None:
    """Each A/A run measures with the hooks `run` would: none with --no-monitors (issue 39: calibrate had no
    monitors while `run` had them by default, so it calibrated a harness the runs did not use)."""
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN)
    code, out, err = fairmark_cli(
        "calibrate", str(plan), "--runs", "2", "--no-monitors", "--accept-risk", "--json"
    )
    assert code == 0, err
    (cal,) = json.loads(out)["calibrations"]
    assert _hooks_of(cal["data"]["run_ids"]) == [[], []]


def test_regression_gate_uses_the_fdr_decision():
    from types import SimpleNamespace

    from fairmark.cli.run import _gate

    def verdict(
        fdr: bool, low: float, high: float
    ) -> SimpleNamespace:  # 9% slower, the ratio's CI [low, high]
        c = SimpleNamespace(
            change="worse",
            significant=True,
            percent=9.0,
            better="lower",
            ratio_ci_low=low,
            ratio_ci_high=high,
        )
        return SimpleNamespace(
            group="g", metric="m", variant="B", sentence="B is slower", fdr_significant=fdr, comparison=c
        )

    v = verdict(False, 1.07, 1.11)
    _gate(SimpleNamespace(verdicts=[v]), 5.0)  # significant alone, not after Benjamini-Hochberg: no trip
    tripped = verdict(True, 1.07, 1.11)
    with pytest.raises(GateTripped, match="regression proven beyond 5%"):  # the adjusted decision trips it
        _gate(SimpleNamespace(verdicts=[v, tripped]), 5.0)
    _gate(SimpleNamespace(verdicts=[tripped]), 10.0)  # a proven 9% regression is under a 10% gate
    _gate(
        SimpleNamespace(verdicts=[verdict(True, 1.04, 1.14)]), 5.0
    )  # 9% past 5%, its CI reaching inside: passes
