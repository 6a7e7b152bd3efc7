"""How many CPU-profiled trials a workload takes (issue 35 item 3, run/loop/profiled.py): more rounds until the top
contributor's interval is decided — its difference proven, or bounded near 0 — and with --explain, profiled
trials only for a workload whose measured trials ended with a significant difference."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from fairmark.plan.metric import MetricSpec
from fairmark.plan.schedule import Cell
from fairmark.run.loop import profiled
from fairmark.run.loop.options import RunOptions
from fairmark.run.trials.prepare import CellState
from fairmark.stats.attribution_diff import AttributionDiff, FunctionDiff
from test_report_explain import _stored


def _diff(low: float, high: float, claimed: bool) -> AttributionDiff:
    top = FunctionDiff(
        "f", "user", "self", 0.5, 0.5 + (low + high) / 2, (low + high) / 2, low, high, 0.5, 0.5, claimed
    )
    return AttributionDiff("paired", 5, 5, 1.0, 1.0, 0.05, 1, (top,))


def test_the_top_contributor_is_decided_when_proven_or_bounded_near_zero() -> None:
    assert profiled.top_decided(_diff(0.02, 0.05, claimed=True))
    assert profiled.top_decided(_diff(-0.004, 0.009, claimed=False))  # within ±1% of 1 s per trial
    assert not profiled.top_decided(_diff(-0.004, 0.03, claimed=False))  # could still be 3%
    assert not profiled.top_decided(None)  # fewer than 2 trials a side
    few = _diff(0.02, 0.05, claimed=True)
    assert not profiled.top_decided(replace(few, n_a=3, n_b=3))  # a claim on 3 a side is not yet a stop


def _cells(store, run_id: str) -> list[CellState]:
    a, b = sorted({t.cell_id for t in store.trials(run_id)})  # A's cell was made first
    return [CellState(Cell("w0", "A"), a, status="done"), CellState(Cell("w0", "B"), b, status="done")]


def test_decided_reads_the_profiled_trials_stored_so_far(tmp_path) -> None:
    store, run_id = _stored(tmp_path, planted=True)  # 8 profiled rounds a side, B with a planted function
    trials = profiled.cell_trials(store, run_id, {cs.id for cs in _cells(store, run_id)})
    assert sorted(len(t) for t in trials.values()) == [8, 8]
    assert profiled.decided(store, run_id, _cells(store, run_id), "A")
    assert profiled.decided(
        store, run_id, _cells(store, run_id)[:1], "A"
    )  # nothing compared: nothing to wait for


class _Hook:
    def __init__(self, name: str) -> None:
        self.name, self.unavailable = name, None


def _runtime(b_values: list[float]) -> SimpleNamespace:
    a = CellState(
        Cell("w", "A"), 1, status="done", values=[1.0, 1.01, 0.99, 1.0, 1.02], value_rounds=[0, 1, 2, 3, 4]
    )
    b = CellState(Cell("w", "B"), 2, status="done", values=b_values, value_rounds=[0, 1, 2, 3, 4])
    return SimpleNamespace(
        cells=[a, b], metric_specs={"wall_s": MetricSpec("wall_s", "s", "lower")}, primary="wall_s"
    )


def test_explain_profiles_only_a_workload_with_a_significant_difference() -> None:
    from fairmark.plan.model import RunPolicy

    policy = RunPolicy()
    cpu, locks = _Hook("profile.cpu"), _Hook("profile.locks")
    opts = RunOptions(hooks=(cpu, locks), explain=True)
    same = _runtime([1.0, 1.02, 0.99, 1.01, 1.0])
    slower = _runtime([1.2, 1.23, 1.18, 1.2, 1.21])
    assert profiled.profilers(opts, same, policy, "A") == [locks]  # type: ignore[arg-type]
    assert profiled.profilers(opts, slower, policy, "A") == [cpu, locks]  # type: ignore[arg-type]
    # without --explain, --profile cpu profiles every workload
    assert profiled.profilers(RunOptions(hooks=(cpu,)), same, policy, "A") == [cpu]  # type: ignore[arg-type]
