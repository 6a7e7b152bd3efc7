"""Screens that said something wrong or inconsistent (issue 34, "every screen right"), found after its second
round: one test (or more) per screen, each failing on the code before it (main at 8b769dd)."""

from __future__ import annotations

from typing import Any


def _calibration(mde: float, scale: str | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "runs": 2,
        "false_positives": 0,
        "false_positive_rate": 0.0,
        "false_positive_ci": [0.0, 0.84],
        "alpha": 0.05,
        "mde_percent": mde,
        "trials_per_side": [3, 3],
    }
    return data | ({"scale": scale} if scale else {})


def test_calibrate_says_a_log_scale_detectable_change_as_a_fall_or_a_rise() -> None:
    """`fairmark calibrate` printed "detects ±90%" for a wall_s calibration (log scale): a factor of 1.9 either
    way is +90% or -47% (100·90/190 = 47.4), as the run's own verdicts say it."""
    from fairmark.cli.calibrate import _line

    row = {"group": "spin", "metric": "wall_s", "data": _calibration(90.0, "log")}
    assert "detects -47% or +90% with 80% power" in _line(row)
    raw = {"group": "spin", "metric": "ratio", "data": _calibration(90.0, "raw")}
    assert "detects ±90% with 80% power" in _line(raw)  # a difference on the raw scale is symmetric
    old = {"group": "spin", "metric": "wall_s", "data": _calibration(90.0, None)}
    assert "detects ±90% with 80% power" in _line(old)  # stored before the scale was: not guessed


def test_calibration_summary_keeps_the_verdicts_scale() -> None:
    from fairmark.stats.calibration import summarize

    comps = [
        {"significant": False, "mde_percent": m, "scale": "log", "n_baseline": 3, "n_other": 3}
        for m in (5, 9)
    ]
    assert summarize(comps, confidence=95)["scale"] == "log"
    comps[0]["scale"] = "raw"
    assert summarize(comps, confidence=95)["scale"] == "raw"


def test_a_verdicts_calibration_clause_says_the_fall_and_the_rise() -> None:
    """A run's verdict quoted the calibration as "changes beyond ±500%" beside its own "-70% or +220%"; a rise of
    +500% is a fall of 100·500/600 = -83%, one significant digit as the verdict's own detectable change."""
    from fairmark.verdict.compare import _calibration_clause

    clause = _calibration_clause(_calibration(500.0, "log"))
    assert "this machine shows changes beyond -80% or +500% for this workload" in clause, clause


def test_the_decision_stops_first_table_names_its_columns_as_the_text_does() -> None:
    """docs/statistics.md, "Stopping when decided": the first table's last column was relabelled "the paired t
    alone (superseded by the switch …)" while the paragraph above still introduced its figures as "after"."""
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "statistics.md").read_text()
    intro, table = text.split("## Stopping when decided", 1)[1].split("\n| case |", 1)
    columns = [c.split(": rate")[0].strip() for c in table.split("\n", 1)[0].strip(" |").split("|")[1:]]
    labels = [c.split(" (superseded")[0] for c in columns]
    assert labels == ["before (precision)", "before (decision)", "the paired t alone"], columns
    assert '"after"' not in intro and all(f'"{label}"' in intro for label in labels)
