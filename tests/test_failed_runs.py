"""A run whose trials all failed, or a cell with no successful trial, is a failed run (issue 25 item 4): exit 4
(ExitStatus.RUN_FAILED), status `failed` when nothing succeeded, and the failing command's first error lines in
`show` and every report (text, Markdown, HTML), not only in `--json`."""

from __future__ import annotations

import json
from pathlib import Path

from fairmark.errors import ExitStatus
from fairmark.report.failures import error_lines
from fairmark.store.db import now
from fairmark.store.records import TrialRecord

ERR = "boom: cannot open /nonexistent/input.dat"


def _plan(tmp_path: Path, *, b_fails_only: bool = False, measure: bool = False) -> Path:
    # variant b sets FAIL=1; without b_fails_only both variants fail
    cond = '[ "$FAIL" = 1 ]' if b_fails_only else "true"
    text = f"""
title = "failing"
[run]
warmup = 0
min_trials = 3
max_trials = 3
max_failures = 2
{'failures = "measure"' if measure else ""}
[[workload]]
name = "w"
command = 'if {cond}; then echo "starting up"; echo "{ERR}" >&2; echo "second line" >&2; exit 3; fi; true'
shell = true
[[variant]]
name = "a"
[[variant]]
name = "b"
env = {{ FAIL = "1" }}
"""
    path = tmp_path / "plan.toml"
    path.write_text(text)
    return path


def test_a_run_whose_every_trial_failed_exits_4_with_status_failed_and_the_error_everywhere(
    tmp_path: Path, fairmark_cli
) -> None:
    code, out, err = fairmark_cli("run", str(_plan(tmp_path)), "--no-monitors", "--accept-risk")
    assert code == ExitStatus.RUN_FAILED == 4, (out, err)
    assert "every trial failed" in err
    assert "FAILED" in out and ERR in out  # the end of `run` is `show`
    code, out, _ = fairmark_cli("runs", "--json")
    (run,) = json.loads(out)["runs"]
    assert run["status"] == "failed"
    code, out, _ = fairmark_cli("show", "last")
    assert code == 0 and ERR in out and "second line" in out and "status failed" in out
    for flag, name in (("--text", "r.txt"), ("--markdown", "r.md"), ("--html", "r.html")):
        target = tmp_path / name
        code, _, err = fairmark_cli("report", "last", flag, str(target))
        assert code == 0, err
        body = target.read_text()
        assert ERR in body and "every trial failed" in body, name
    code, out, _ = fairmark_cli("show", "last", "--json")
    doc = json.loads(out)
    assert doc["run_failure"] and {c["key"] for c in doc["failed_cells"]} == {"w/a", "w/b"}
    assert doc["failed_cells"][0]["error_lines"][0] == ERR
    code, _, err = fairmark_cli("resume", "last", "--no-monitors")
    assert code == 2 and "nothing to resume" in err


def test_one_cell_without_a_successful_trial_fails_the_run(tmp_path: Path, fairmark_cli) -> None:
    code, out, err = fairmark_cli(
        "run", str(_plan(tmp_path, b_fails_only=True)), "--no-monitors", "--accept-risk"
    )
    assert code == 4, (out, err)
    assert "1 of 2 cells have no successful trial (w/b)" in err
    assert ERR in out
    code, out, _ = fairmark_cli("show", "last", "--json")
    assert json.loads(out)["run"]["status"] == "done"  # the run finished; one of its cells measured nothing


def test_with_failures_measure_a_cell_that_always_failed_is_the_result(tmp_path: Path, fairmark_cli) -> None:
    plan = _plan(tmp_path, b_fails_only=True, measure=True)
    code, out, err = fairmark_cli("run", str(plan), "--no-monitors", "--accept-risk")
    assert code == 0, (out, err)
    assert ERR in out  # still shown: what made every trial of w/b fail


def test_error_lines_start_at_the_first_line_that_reads_like_an_error() -> None:
    def trial(stderr: str, stdout: str = "") -> TrialRecord:
        return TrialRecord("run", 1, 1, 0, False, "failed", now(), stderr_tail=stderr, stdout_tail=stdout)

    out = "iperf 3.12\nconnecting…\niperf3: error - unable to connect\nbye\nmore\nand more\n"
    assert error_lines(trial(out)) == ("iperf3: error - unable to connect", "bye", "more")
    assert error_lines(trial("", "only\nstdout\n")) == ("only", "stdout")
    assert error_lines(trial("x" * 500))[0].endswith("…")
