"""Issue 39: the false-positive rate of A/A runs of a real command through the real harness holds.

A plan of two identical variants of a two-process pipeline (`head | gzip`, 2 warm-ups, 12 trials a side, 95%)
run again and again through the runner, the launch server, the monitors (on: `run`'s default) and the store
must be called different in at most 8% of its runs: a harness that treats the two cells differently (state kept
per cell, work landing on one side of the clock window, an order tied to something that varies) shows up here,
where no simulation of noise can see it. The runs are `calibrate`'s, in this process, without the environment
probe (the doctor's snapshot and gate before each run are not the trial path, and cost a second a run).

Two stages keep a harness at the nominal 5% from failing by chance: 100 runs pass with at most 8 claims; past
that, 100 more, and the test fails when the 200 have more than 16 (8%). At a true rate of 5% it fails 1.4% of
the time, at 10% 63%, at 12% 85% (binomial). About 2 minutes on an idle 2-CPU machine."""

from __future__ import annotations

from pathlib import Path

import pytest

PLAN = Path(__file__).resolve().parent.parent / "plans" / "aa-gzip.toml"  # bench/aa_rate.py's too
STAGE, LIMIT = 100, 0.08


def _claims(tmp_path: Path, runs: int, start: int) -> list[bool]:
    """Whether each of `runs` A/A runs of PLAN called the twin different (wall time, the primary metric)."""
    from fairmark.assemble import RunRequest
    from fairmark.cli.calibrate import aa_plan, aa_runs
    from fairmark.plan.load import LoadedPlan, load_plan
    from fairmark.store.db import Store

    loaded = load_plan(str(PLAN))
    aa = LoadedPlan(plan=aa_plan(loaded.plan, loaded.path), path=loaded.path, text=loaded.text)
    store = Store.open(f"sqlite:///{tmp_path / f'aa-{start}.db'}")

    def request(k: int) -> RunRequest:  # monitors on: `run`'s default
        return RunRequest(aa, accept_risk=True, allow_concurrent=True, hold_lock=False, probe=False)

    found, run_ids, _ = aa_runs(request, store, runs, note=lambda _: None)
    comps = found[("gz", "gz", "wall_s")]
    assert len(comps) == len(run_ids) == runs  # every run judged the pair
    assert all(c.get("design") == "paired by round" for c in comps)
    assert all(store.get_run(r).options["hooks"] == ["monitor.system"] for r in run_ids[:1])
    return [bool(c["significant"]) for c in comps]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_aa_runs_of_a_pipeline_hold_the_false_positive_rate(tmp_path: Path) -> None:
    claims = _claims(tmp_path, STAGE, 0)
    if sum(claims) <= LIMIT * STAGE:
        return
    claims += _claims(tmp_path, STAGE, STAGE)
    assert sum(claims) <= LIMIT * len(claims), (
        f"{sum(claims)} of {len(claims)} A/A runs called different (limit {LIMIT:.0%}): the harness treats "
        "the two cells differently"
    )
