"""The plain progress log (stderr not a terminal): a line per trial, at most one per PLAIN_EVERY_S — a trial whose
line is held back is counted and its line shown if it is the last before a note, a cell's stop or the end; a
failure is always shown. The clock is the test's own (a fake `time.monotonic`), so nothing depends on speed."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest

from fairmark.cli import _progress
from fairmark.cli._progress import PLAIN_EVERY_S, TerminalProgress
from fairmark.plan.model import RunPolicy


def _event(n: int, status: str = "ok") -> dict[str, Any]:
    return {
        "cell": "w/a",
        "warmup": False,
        "status": status,
        "error": None if status == "ok" else "exit status 1",
        "unit": "s",
        "value": 0.001 * n if status == "ok" else None,
        "n": n,
        "max_trials": 100,
        "failures": 0 if status == "ok" else 1,
        "max_failures": 5,
        "mean": None,
        "ci_half_width": None,
    }


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(_progress.time, "monotonic", lambda: now[0])
    return now


def _lines(feed: Any) -> list[str]:
    from fairmark.console import console

    console.configure()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        p = TerminalProgress()
        p.started("r1", 1, RunPolicy(min_trials=3, max_trials=100))
        feed(p)
    return [line for line in err.getvalue().splitlines() if line.startswith("[")]


def test_fast_trials_are_counted_and_the_last_one_shown_before_the_stop(clock: list[float]) -> None:
    def feed(p: TerminalProgress) -> None:
        for n in range(1, 51):  # 50 trials within one interval
            clock[0] += PLAIN_EVERY_S / 100
            p.trial(_event(n))
        p.cell_stopped("w/a", "done", "max_trials reached")
        p.finished()

    lines = _lines(feed)
    assert [line.split("]")[0] for line in lines] == ["[   1", "[  50"]
    assert "trial 50/100" in lines[-1]


def test_a_failure_is_always_shown_and_slow_trials_get_a_line_each(clock: list[float]) -> None:
    def feed(p: TerminalProgress) -> None:
        p.trial(_event(1))
        clock[0] += PLAIN_EVERY_S / 10
        p.trial(_event(2))  # held
        clock[0] += PLAIN_EVERY_S / 10
        p.trial(_event(2, status="failed"))  # shown at once; the held line is not needed ([3] counts it)
        for n in range(3, 6):
            clock[0] += 2 * PLAIN_EVERY_S  # trials further apart than the limit: a line each
            p.trial(_event(n))
        p.finished()

    numbers = [int(line[1:5]) for line in _lines(feed)]
    assert numbers == [1, 3, 4, 5, 6]


def test_a_held_line_comes_before_a_note(clock: list[float]) -> None:
    err = io.StringIO()
    from fairmark.console import console

    console.configure()
    with contextlib.redirect_stderr(err):
        p = TerminalProgress()
        p.started("r1", 1, RunPolicy(min_trials=3, max_trials=100))
        p.trial(_event(1))
        p.trial(_event(2))  # the same instant: held
        p.note("between rounds: a neighbour started")
        p.finished()
    text = err.getvalue()
    assert text.index("[   2]") < text.index("a neighbour started")
    assert text.count("[   2]") == 1


def test_each_cells_last_held_line_is_shown_in_order(clock: list[float]) -> None:
    def feed(p: TerminalProgress) -> None:
        for n in range(1, 11):  # A B A B …, all within one interval after the first
            for cell in ("w/a", "w/b"):
                clock[0] += PLAIN_EVERY_S / 100
                p.trial(_event(n) | {"cell": cell})
        p.cell_stopped("w/a", "done", "max_trials reached")
        p.cell_stopped("w/b", "done", "max_trials reached")
        p.finished()

    lines = _lines(feed)
    assert [line[:12] for line in lines] == ["[   1] w/a  ", "[  19] w/a  ", "[  20] w/b  "]
    assert "trial 10/100" in lines[1] and "trial 10/100" in lines[2]
