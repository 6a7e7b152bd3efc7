"""The runner's scheduling, stopping and failure rules, made deterministic with a fake executor (doubles.py).

The fake replaces only the process execution (what determinism needs); plan, runner, store and statistics are
the real ones."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

from doubles import MockExecutor, plan_text, run_fake
from fairmark.plan.load import LoadedPlan, parse_plan
from fairmark.report.load import load_report
from fairmark.run.launch.executor import ExecResult
from fairmark.run.loop.runner import Runner, RunOptions
from fairmark.run.spec import TrialSpec
from fairmark.store.db import Store


def test_rounds_interleave_every_cell_once(tmp_path: Path) -> None:
    fake = MockExecutor({"A": 1.0, "B": 1.0, "C": 1.0}, sd=0.3)
    store, run_id = run_fake(tmp_path, plan_text(["A", "B", "C"], min_trials=4, max_trials=4), fake)
    trials = store.trials(run_id)
    variant = {c.id: c.variant for c in store.cells(run_id)}
    for r in range(-1, 4):
        in_round = [variant[t.cell_id] for t in trials if t.round == r]
        assert sorted(in_round) == ["A", "B", "C"]
    # Consecutive rounds are shuffled, not a fixed A B C rotation.
    orders = {tuple(variant[t.cell_id] for t in trials if t.round == r) for r in range(-1, 4)}
    assert len(orders) > 1


def test_same_seed_same_order_other_seed_other_order(tmp_path: Path) -> None:
    text = plan_text(["A", "B", "C", "D"], min_trials=5, max_trials=5)
    a, b, c = MockExecutor({}, 0.01), MockExecutor({}, 0.01), MockExecutor({}, 0.01)
    run_fake(tmp_path / "1", text, a, seed=7)
    run_fake(tmp_path / "2", text, b, seed=7)
    run_fake(tmp_path / "3", text, c, seed=8)
    assert a.calls == b.calls
    assert a.calls != c.calls


def test_seed_is_recorded(tmp_path: Path) -> None:
    store, run_id = run_fake(
        tmp_path, plan_text(["A"], min_trials=3, max_trials=3), MockExecutor({}, 0.01), seed=99
    )
    assert store.get_run(run_id).seed == 99


def test_precise_cells_stop_early_noisy_cells_run_to_max(tmp_path: Path) -> None:
    fake = MockExecutor({"A": 1.0, "B": 1.0}, sd=0.0005)
    store, run_id = run_fake(tmp_path, plan_text(["A", "B"], min_trials=5, max_trials=30, target=1.0), fake)
    report = load_report(store, run_id)
    for cell in report.cells:
        assert cell.n_ok == 5, "the first stage's spread asked for no more than min_trials"
        assert cell.stop_reason.startswith("planned length 5 (from the first 5 trials' spread")
        assert "CI achieved ±" in cell.stop_reason

    noisy = MockExecutor({"A": 1.0, "B": 1.0}, sd=0.5)
    store, run_id = run_fake(
        tmp_path / "n", plan_text(["A", "B"], min_trials=5, max_trials=9, target=0.1), noisy
    )
    for cell in load_report(store, run_id).cells:
        assert cell.n_ok == 9
        assert cell.stop_reason.startswith("max_trials (9) reached")


def test_never_stops_because_significant(tmp_path: Path) -> None:
    # B is 50% slower (obviously significant after 3 trials) but noisy: both cells still run to precision/max.
    fake = MockExecutor({"A": 1.0, "B": 1.5}, sd=0.2)
    store, run_id = run_fake(tmp_path, plan_text(["A", "B"], min_trials=5, max_trials=10, target=0.5), fake)
    report = load_report(store, run_id)
    assert all(c.n_ok == 10 for c in report.cells)
    (verdict,) = [v for v in report.verdicts if v.metric == "wall_s"]
    assert verdict.significant and verdict.comparison.change == "worse"


def test_failures_abandon_cell_and_plan_continues(tmp_path: Path) -> None:
    fake = MockExecutor({"A": 1.0, "B": 1.0}, sd=0.001, fail={"B"})
    store, run_id = run_fake(
        tmp_path, plan_text(["A", "B"], min_trials=4, max_trials=6, max_failures=2), fake
    )
    report = load_report(store, run_id)
    cells = {c.variant: c for c in report.cells}
    assert cells["B"].status == "abandoned"
    assert "2 failed trials" in cells["B"].stop_reason
    assert cells["B"].n_failed == 2 and cells["B"].values["wall_s"] == []
    assert cells["A"].status == "done" and cells["A"].n_ok >= 4
    failed = [t for t in cells["B"].trials if t.status == "failed"]
    assert all(t.error == "exit status 1" and cells["B"].samples[t.id] == {} for t in failed)
    assert store.get_run(run_id).status == "done"


def test_timeouts_are_recorded_not_measured(tmp_path: Path) -> None:
    fake = MockExecutor({"A": 1.0}, sd=0.001, timeout={"T"})
    store, run_id = run_fake(
        tmp_path, plan_text(["A", "T"], min_trials=3, max_trials=3, max_failures=2), fake
    )
    cells = {c.variant: c for c in load_report(store, run_id).cells}
    statuses = Counter(t.status for t in cells["T"].trials)
    assert statuses == Counter({"timeout": 2})
    assert cells["T"].status == "abandoned"


def test_warmups_are_stored_flagged_and_excluded(tmp_path: Path) -> None:
    fake = MockExecutor({"A": 1.0}, sd=0.01)
    store, run_id = run_fake(tmp_path, plan_text(["A"], min_trials=3, max_trials=3, warmup=2), fake)
    (cell,) = load_report(store, run_id).cells
    warm = [t for t in cell.trials if t.warmup]
    assert len(warm) == 2 and all(t.round < 0 for t in warm)
    assert len(cell.values["wall_s"]) == 3 == cell.summaries["wall_s"]["n"]


def test_unparseable_metric_is_a_failed_trial_with_raw_output(tmp_path: Path) -> None:
    text = plan_text(["A"], min_trials=3, max_trials=3, max_failures=3).replace(
        "command = ['true']\n",
        "command = ['true']\n[[workload.metrics]]\nname = 'rate'\nregex = 'rate: ([0-9.]+)'\nbetter = 'higher'\n",
    )
    store, run_id = run_fake(tmp_path, text, MockExecutor({"A": 1.0}, 0.01))
    (cell,) = load_report(store, run_id).cells
    assert cell.status == "abandoned"
    t = cell.trials[0]
    assert t.status == "failed" and "did not parse" in (t.error or "") and "result: 1" in t.stdout_tail


def test_calibrate_adds_an_interleaved_aa_twin_of_the_baseline(tmp_path: Path) -> None:
    text = plan_text(["A", "B"], min_trials=6, max_trials=6)
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    loaded = LoadedPlan(parse_plan(text), "plan.toml", text)
    fake = MockExecutor({"A": 1.0, "B": 1.5}, sd=0.01)
    run_id = Runner(loaded, store, RunOptions(probe=False, calibrate=True), executor=fake).start()
    report = load_report(store, run_id)
    assert [c.variant for c in report.cells] == ["A", "A.aa", "B"]
    rounds = {t.round for c in report.cells for t in c.trials}
    for r in rounds:  # the twin runs in every round, interleaved like any variant
        assert sorted(c.variant for c in report.cells for t in c.trials if t.round == r) == [
            "A",
            "A.aa",
            "B",
        ]
    by_variant = {v.variant: v for v in report.verdicts if v.metric == "wall_s"}
    assert by_variant["A.aa"].calibration and by_variant["A.aa"].to_dict()["calibration"] is True
    assert not by_variant["B"].calibration and "calibration" not in by_variant["B"].to_dict()
    assert by_variant["B"].significant
    assert store.get_run(run_id).options["calibrate"] is True


def test_variant_params_reach_the_tool_and_are_stored(tmp_path: Path) -> None:
    """A variant may change a tool's parameters; each cell's resolved params (and report labels) are stored."""
    fixtures = Path(__file__).parent / "fixtures" / "tools" / "openssl"

    class OpensslOutput(MockExecutor):
        def __call__(self, spec: TrialSpec) -> ExecResult:
            self.calls.append(" ".join(spec.argv))
            res = super().__call__(replace(spec, env={}))
            fixture = "sha256.txt" if "sha256" in spec.argv else "aes-256-gcm.txt"
            Path(res.stdout_path).write_text((fixtures / fixture).read_text())
            return res

    text = (
        "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n"
        "[[workload]]\nname = 'crypto'\ntool = 'openssl'\nparams = { seconds = 1 }\n"
        "[[variant]]\nname = 'aes'\n"
        "[[variant]]\nname = 'sha'\nparams = { crypto = { algorithm = 'sha256' } }\n"
    )
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    fake = OpensslOutput({}, 0.01)
    run_id = Runner(
        LoadedPlan(parse_plan(text), "p.toml", text), store, RunOptions(probe=False), executor=fake
    ).start()
    cells = {c.variant: c for c in store.cells(run_id)}
    assert cells["aes"].params["algorithm"] == "aes-256-gcm"
    assert cells["sha"].params == {"algorithm": "sha256", "seconds": 1, "bytes": 0}
    assert sum("sha256" in call for call in fake.calls) == 3
    assert all(c.n_ok == 3 for c in load_report(store, run_id).cells)


def test_variant_params_for_a_command_workload_is_a_plan_error() -> None:
    import pytest

    from fairmark.errors import PlanError

    with pytest.raises(PlanError, match="non-tool workload"):
        parse_plan(plan_text(["A"]) + "params = { w = { x = 1 } }\n")
