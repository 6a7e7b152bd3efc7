"""fairmark.assemble: the one function every command runs a plan through (issue 33 item 6) — a frozen request
in, the run's id and verdicts out; the host lock taken for the run unless its caller holds it. The trials run
through a seeded fake executor (determinism); plan, runner, store, probe and verdicts are the real ones."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from doubles import MockExecutor, plan_text
from fairmark.assemble import RunRequest, execute_run, host_lock
from fairmark.errors import EnvironmentRefused
from fairmark.plan.load import LoadedPlan, parse_plan
from fairmark.store.db import Store
from fairmark.verdict.run import run_verdicts


def _request(**kw: object) -> RunRequest:
    text = plan_text(["A", "B"], min_trials=4, max_trials=4)
    return RunRequest(LoadedPlan(parse_plan(text), "plan.toml", text), accept_risk=True, monitors=False, **kw)


def test_a_run_comes_back_with_its_id_and_verdicts(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    fake = MockExecutor({"A": 1.0, "B": 2.0}, sd=0.01)
    result = execute_run(_request(tags={"commit": "abc"}, seed=5), store, executor=fake)
    run = store.get_run(result.run_id)
    assert (run.status, run.seed) == ("done", 5)
    assert store.tags([run.id]) == {run.id: {"commit": "abc"}}
    assert result.hosts == ()
    (verdict,) = result.verdicts.verdicts
    assert (verdict.variant, verdict.significant) == ("B", True)
    assert result.verdicts == run_verdicts(store, result.run_id)  # what every reader computes from the store


def test_the_request_and_result_are_frozen() -> None:
    tags = {"commit": "abc"}
    request = _request(tags=tags)
    tags["commit"] = "changed"  # the caller's dict is copied, not kept
    assert request.tags == {"commit": "abc"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.quick = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        request.tags["x"] = "y"  # type: ignore[index]


def test_the_host_lock_is_taken_unless_the_caller_holds_it(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    fake = MockExecutor({}, sd=0.01)
    with host_lock("other.toml", "r-1"):
        with pytest.raises(EnvironmentRefused, match="another fairmark run holds the host lock"):
            execute_run(_request(), store, executor=fake)
        assert fake.calls == []
        notes: list[str] = []
        execute_run(_request(allow_concurrent=True), store, executor=fake, warn=notes.append)
        assert notes and "running concurrently as asked" in notes[0]
        assert execute_run(_request(hold_lock=False), store, executor=fake).run_id
