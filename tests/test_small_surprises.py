"""Smaller surprises (issue 25 item 10), each met by a user following the README: `report RUN --text FILE`,
calibration runs among ordinary ones, `restore` without a dry run, "at most about 0%", "±0 ± 0 IO/s", and
`history W` printing every metric's table. (Efficiency for load sweeps: tests/test_scaling_shape.py.)"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

PLAN = """title = "tiny"
[run]
warmup = 0
min_trials = 3
max_trials = 3
[[workload]]
name = "w"
command = 'echo "rate 7"'
shell = true
metrics = [{ name = "rate", regex = 'rate (\\d+)', better = "higher", unit = "req/s" }]
"""


def _plan(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(PLAN)
    return path


def test_report_text_and_markdown_write_the_file_they_are_given(tmp_path: Path, fairmark_cli) -> None:
    code, _, err = fairmark_cli("run", str(_plan(tmp_path)), "--no-monitors", "--accept-risk")
    assert code == 0, err
    text, md = tmp_path / "r.txt", tmp_path / "r.md"
    code, out, err = fairmark_cli("report", "last", "--text", str(text))  # was: "no run 'r.txt'"
    assert code == 0, err
    assert "Verdicts" in text.read_text() and "Verdicts" not in out and f"wrote {text}" in err
    code, _, err = fairmark_cli("report", "last", "--markdown", str(md))
    assert code == 0 and md.read_text().startswith("## fairmark run"), err
    code, out, _ = fairmark_cli("report", "last", "--text")  # no FILE: stdout, as before
    assert code == 0 and "Verdicts" in out


@pytest.mark.slow
def test_calibration_runs_are_marked_as_such(tmp_path: Path, fairmark_cli) -> None:
    code, _, err = fairmark_cli("calibrate", str(_plan(tmp_path)), "--runs", "2", "--accept-risk")
    assert code == 0, err
    code, out, _ = fairmark_cli("run", str(_plan(tmp_path)), "--no-monitors", "--accept-risk")
    code, out, _ = fairmark_cli("runs", "--json")
    runs = json.loads(out)["runs"]
    calibration = [r for r in runs if r["tags"].get("calibration")]
    assert sorted(r["tags"]["calibration"] for r in calibration) == ["1/2", "2/2"]
    assert all(r["title"] == "A/A calibration: tiny" for r in calibration)
    (ordinary,) = [r for r in runs if r not in calibration]
    assert ordinary["title"] == "tiny" and ordinary["tags"] == {}


def test_restore_dry_run_says_what_it_would_put_back_and_changes_nothing(
    tmp_path: Path, fairmark_cli
) -> None:
    state = Path(os.environ["FAIRMARK_STATE_DIR"])
    target = tmp_path / "setting"
    target.write_text("changed\n")
    (state / "journal").mkdir(parents=True, exist_ok=True)
    entry = {"id": "e1", "type": "file", "path": str(target), "original": "original", "label": "setting x"}
    journal = {"format": 1, "pid": 999999999, "start": 1.0, "created": 0, "host": "h", "entries": [entry]}
    path = state / "journal" / "999999999-1000.json"
    path.write_text(json.dumps(journal))
    code, out, err = fairmark_cli("restore", "--dry-run")
    assert code == 0, err
    assert (
        "would restore" in out and "setting x (original 'original')" in out and "nothing was changed" in out
    )
    assert target.read_text() == "changed\n" and path.exists()
    code, out, _ = fairmark_cli("restore", "--dry-run", "--json")
    assert json.loads(out)["dry_run"] is True
    code, out, err = fairmark_cli("restore")
    assert code == 0 and target.read_text().strip() == "original" and not path.exists(), out + err


def test_a_small_kernel_share_is_never_about_zero_percent() -> None:
    from fairmark.report.attribution import can_move, describe

    sentence = describe("zstd", 99.6, 0.4, None, "rusage")
    assert "99.6% user time" in sentence and "can move at most about 0.4% of it" in sentence  # was "about 0%"
    assert can_move(0.03) == "can move less than 0.1% of it"
    assert "0.0% kernel time recorded" in can_move(0.0)


def test_a_detectable_change_is_a_size_not_a_value_with_a_plus_minus() -> None:
    from fairmark.verdict.compare import compare

    zero = compare([0, 0, 0, 0, 0], [0, 0, 0, 0, 0], unit="IO/s")  # a write counter of a read-only test
    assert (
        zero.sentence == "B vs A: the same value in every trial (no variation to test)"
    )  # was "±0 ± 0 IO/s"
    around_zero = compare([-1, 1, -1, 1, 0, 0], [-2, 2, -1, 1, 1, -1], unit="IO/s")
    # a size, not "±2.3 ± 2.3" (2.6 since issue 23: Welch and the noncentral t, no longer (t_α + t_0.8)·s)
    assert "would detect a change of ±2.6 IO/s with 80% power" in around_zero.sentence


def test_history_of_a_workload_shows_its_primary_metric_and_names_the_others(
    tmp_path: Path, fairmark_cli
) -> None:
    code, _, err = fairmark_cli("run", str(_plan(tmp_path)), "--no-monitors", "--accept-risk")
    assert code == 0, err
    code, out, err = fairmark_cli("history", "w", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["metric"] == "rate" and {s["metric"] for s in doc["series"]} == {"rate"}
    assert "wall_s" in doc["other_metrics"] and "rate" not in doc["other_metrics"]
    code, out, _ = fairmark_cli("history", "w")
    assert out.count("#  run") == 1  # one table (its title: "w/default rate in req/s on HOST")
    assert "rate is w's primary metric; also stored: " in out and "`fairmark history w:METRIC`" in out
    code, out, _ = fairmark_cli("history", "w:wall_s", "--json")
    assert {s["metric"] for s in json.loads(out)["series"]} == {"wall_s"}


CONSTANT = """title = "constants"
[run]
warmup = 0
min_trials = 6
max_trials = 6
[[workload]]
name = "w"
command = 'echo "t 0.1"; echo "r 3.3"'
shell = true
metrics = [
  { name = "t", regex = 't ([0-9.]+)', better = "lower", unit = "s" },
  { name = "r", regex = 'r ([0-9.]+)', better = "higher", unit = "" },
]
[[variant]]
name = "A"
[[variant]]
name = "B"
"""


def test_a_constant_metric_is_said_constant_in_every_view(tmp_path: Path, fairmark_cli) -> None:
    """A metric whose every value is 0.1 (a summed mean of it is 0.10000000000000002): '100 ± 0 ms', no plot
    over a span of rounding noise and no 'CI achieved ±1.6e-14%' in the terminal, text, Markdown and HTML."""
    plan = tmp_path / "constant.toml"
    plan.write_text(CONSTANT)
    code, run_out, err = fairmark_cli("run", str(plan), "--no-monitors", "--accept-risk")
    assert code == 0, err
    html = tmp_path / "r.html"
    views = {"run": run_out + err, "show": "".join(fairmark_cli("show", "last")[1:])}
    for kind in ("--text", "--markdown"):
        views[kind] = fairmark_cli("report", "last", kind)[1]
    assert fairmark_cli("report", "last", "--html", str(html))[0] == 0
    views["html"] = html.read_text()
    for name, text in views.items():
        assert "100 ± 0" in text, name
        assert "span is zero width" in text and "|*" not in text and "*|" not in text, name
        assert "CI achieved ±0%" in text or name in ("show", "--text", "--markdown"), name
        # no number in e-notation (1.6e-14); run ids and anchors are hex and may read "…96e-1": left out first
        plain = re.sub(r"\b[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\b|\b[0-9a-f]{8}\b", "", text)
        assert not re.search(r"\d(\.\d+)?e-\d", plain) and "0.0000" not in text, name
        assert "the same value in every trial (no variation to test)" in text, name


def test_the_mean_of_equal_values_is_that_value() -> None:
    from fairmark.report.ministat import ascii_plot
    from fairmark.stats.describe import describe

    s = describe([0.1, 0.1, 0.1])
    assert (s.mean, s.stddev, s.ci_half_width, s.cv) == (0.1, 0.0, 0.0, 0.0)
    assert ascii_plot([("a", [0.1] * 3), ("b", [0.1] * 3)]) == ["[no plot, span is zero width]"]
