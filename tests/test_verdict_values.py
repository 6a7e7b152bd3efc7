"""The verdict module's pieces on records (issue 22): each value labelled with where it was measured, the one rule
by which a cell of one run is the same cell in another, pooled runs whose pairs never cross runs."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from fairmark.plan.metric import MetricSpec
from fairmark.store.records import CellRecord, TrialRecord
from fairmark.verdict.match import match_cells
from fairmark.verdict.pairs import ROUND_OFFSET, RunDesign, pooled_runs, within_run
from fairmark.verdict.values import measure

WALL = (MetricSpec("wall_s", "s", "lower", verdict=True),)
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def cell(
    variant: str, values: list[float], *, run: str = "r1", workload: str = "w", boot: str = "b1", point=()
):
    """A stored cell and its trials: a warm-up, a failed trial, then one measured trial per value."""
    record = CellRecord(
        f"{workload}/{variant}", workload, variant, point, "wall_s", WALL, id=hash(variant) % 1000
    )
    trials = [TrialRecord(run, record.id, 0, -1, True, "ok", T0, boot_id=boot, id=f"{run}{variant}w")]
    trials.append(TrialRecord(run, record.id, 1, 0, False, "failed", T0, boot_id=boot, id=f"{run}{variant}f"))
    samples = {trials[0].id: {"wall_s": 99.0}}
    for k, v in enumerate(values):
        t = TrialRecord(run, record.id, k + 2, k, False, "ok", T0, boot_id=boot, id=f"{run}{variant}{k}")
        trials.append(t)
        samples[t.id] = {"wall_s": v, "extra": 2 * v}
    return measure(record, trials, samples, host_id="host-1")


def test_values_carry_their_labels_and_leave_out_what_is_not_measured():
    c = cell("A", [1.0, 2.0, 3.0], run="run-7", boot="boot-3")
    lv = c.labelled("wall_s")
    assert lv.values == (1.0, 2.0, 3.0)  # not the warm-up's 99, not the failed trial
    assert lv.rounds == (0, 1, 2) and lv.runs == ("run-7",) * 3 and lv.boots == ("boot-3",) * 3
    assert lv.hosts == ("host-1",) * 3 and lv.level("boot") == lv.boots
    assert list(c.metrics) == ["wall_s", "extra"]  # declared first, then what the trials yielded
    assert len(c.trials) == 5 and c.samples[c.trials[0].id] == {"wall_s": 99.0}


def test_cells_match_on_workload_variant_and_point_and_single_variant_runs_on_workload_and_point():
    a = [cell("A", [1.0]), cell("B", [1.0]), cell("A", [1.0], workload="z")]
    b = [cell("B", [1.0]), cell("A", [1.0]), cell("C", [1.0])]
    assert [(x.cell.key, y.cell.key) for x, y in match_cells(a, b)] == [("w/A", "w/A"), ("w/B", "w/B")]
    # one run per kernel, each with its own variant name: the same workload and point are the same cell
    debug, nodebug = [cell("debug", [1.0])], [cell("nodebug", [1.0]), cell("nodebug", [1.0], workload="z")]
    assert [(x.cell.key, y.cell.key) for x, y in match_cells(debug, nodebug)] == [("w/debug", "w/nodebug")]
    # … but not when a side has several variants: then a variant name is part of what a cell is
    assert match_cells(debug, b) == []


def test_a_run_judges_each_variant_against_its_baseline():
    cells = (cell("A", [1.00, 1.01, 0.99, 1.00, 1.02, 0.98]), cell("B", [1.50, 1.52, 1.49, 1.51, 1.50, 1.48]))
    (v,) = [v for v in within_run(cells, RunDesign("A")) if v.metric == "wall_s"]
    assert (
        (v.baseline, v.variant, v.group) == ("A", "B", "w")
        and v.significant
        and v.comparison.change == "worse"
    )
    assert v.comparison.design.startswith("paired")  # interleaved rounds: paired by round


def test_pooled_runs_keep_their_rounds_apart():
    runs = [
        (cell("good", [1.0, 1.1, 0.9, 1.0], run=r), cell("candidate", [1.2, 1.3, 1.1, 1.25], run=r))
        for r in ("r1", "r2")
    ]
    verdicts = pooled_runs(runs, (("good", "candidate", ""),), confidence=95.0)
    (v,) = verdicts.values()
    assert list(verdicts) == ["w wall_s"] and v.comparison.n_baseline == 8 == v.comparison.n_other
    rounds = v.judgement.pair.rounds
    second = [ROUND_OFFSET + r for r in range(4)]
    assert rounds is not None and sorted(rounds[0]) == [0, 1, 2, 3, *second]


def _measure_by_trial(cell, trials, samples, host_id):
    """measure() as it was first written, a trial at a time: what the faster one must give."""
    columns = {m.name: ([], [], [], [], []) for m in cell.metrics}
    for t in trials:
        if not t.measured:
            continue
        for name, value in samples.get(t.id, {}).items():
            for column, label in zip(
                columns.setdefault(name, ([], [], [], [], [])),
                (value, t.round, t.run_id, t.boot_id, host_id),
                strict=True,
            ):
                column.append(label)
    return {name: tuple(map(tuple, cols)) for name, cols in columns.items()}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ok", "failed"]),
            st.booleans(),
            st.sampled_from(["b1", "b2", None]),
            st.one_of(st.none(), st.lists(st.sampled_from(["wall_s", "x", "y"]), unique=True)),
        ),
        max_size=8,
    ),
    st.booleans(),
)
def test_each_metric_is_labelled_as_a_trial_at_a_time_labels_it(rows, same_metrics) -> None:
    record = CellRecord("w/A", "w", "A", (), "wall_s", (*WALL, MetricSpec("y", "", "lower")), id=1)
    trials, samples = [], {}
    for k, (status, warmup, boot, names) in enumerate(rows):
        t = TrialRecord("r", 1, k, k - 1, warmup, status, T0, boot_id=boot, id=f"t{k}")
        trials.append(t)
        if same_metrics:
            names = ["x", "wall_s"]
        if names is not None:  # (None: the trial has no samples at all)
            samples[t.id] = {name: float(k + i) for i, name in enumerate(names)}
    got = measure(record, trials, samples, host_id="h")
    assert {
        name: (lv.values, lv.rounds, lv.runs, lv.boots, lv.hosts) for name, lv in got.metrics.items()
    } == _measure_by_trial(record, trials, samples, "h")
    assert list(got.metrics) == list(_measure_by_trial(record, trials, samples, "h"))
    assert got.samples == {t.id: samples.get(t.id, {}) for t in trials} and got.trials == tuple(trials)
