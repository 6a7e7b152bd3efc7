"""A run's trials and samples read from an SQLite store on the sqlite3 connection (store/leanread.py) are the
records SQLAlchemy's read gives: the same values of the same types, in the same order."""

from __future__ import annotations

import datetime as dt
from dataclasses import FrozenInstanceError, fields, replace
from pathlib import Path

import pytest

from fairmark.store.db import Store
from fairmark.store.records import CellRecord, Sample, TrialRecord


def _typed(records: list[TrialRecord] | list[Sample]) -> list[list[tuple[type, object]]]:
    """Each field's type beside its value: True == 1 and an aware time is not a naive one."""
    return [[(type(getattr(r, f.name)), getattr(r, f.name)) for f in fields(r)] for r in records]


def _new_run(store: Store) -> str:
    return store.create_run(
        plan_path="p.toml",
        plan_text="x",
        plan_sha256="0" * 64,
        seed=1,
        status="running",
        fairmark_version="test",
    )


def _store_with_runs(path: Path) -> tuple[Store, list[str]]:
    store = Store.open(f"sqlite:///{path}")
    run_ids = []
    for n in range(2):  # two runs: each read gives its own run's rows only
        run_id = _new_run(store)
        ids = store.ensure_cells(
            run_id,
            [CellRecord(k, "w", k[-1], (), "wall_s", ()) for k in ("w/A", "w/B")],
        )
        # stored out of their order: the reads give them by seq
        for seq in (3, 1, 4, 2, 5):
            cell = ids["w/A" if seq % 2 else "w/B"]
            trial = TrialRecord(
                run_id,
                cell,
                seq,
                seq - 2,
                seq == 1,
                "failed" if seq == 4 else "ok",
                dt.datetime(2026, 1, 2, 3, 4, seq, 678901 * (seq != 2), tzinfo=dt.UTC),
                wall_s=None if seq == 4 else seq / 7,
                user_s=0.0,
                max_rss_kib=2**40 + seq,
                max_rss_method="launcher" if seq != 3 else None,
                exit_code=None if seq == 5 else seq,
                signal=9 if seq == 4 else None,
                error="exit 4: «boom»\n" if seq == 4 else None,
                stdout_tail="ä\x00b" if seq == 2 else "",
                argv=None if seq == 3 else ("sh", "-c", f"echo {n} 'ä'"),
                host="h1" if seq == 5 else None,
                boot_id="b" if seq != 5 else None,
                profiled=seq == 5,
            )
            metrics = [("wall_s", seq / 7), ("z_metric", -0.0), ("a_metric", float(seq))]
            if n == 0:  # the first run's trials each have their own metrics; the second's all the same
                metrics = metrics[: 1 + seq % 3]
            store.add_trial(trial, [Sample(trial.id, cell, m, v, "s", "lower") for m, v in metrics])
        run_ids.append(run_id)
    run_ids.append(_new_run(store))  # a run without trials
    return store, run_ids


def test_the_lean_reads_give_what_sqlalchemys_reads_give(tmp_path: Path) -> None:
    lean, run_ids = _store_with_runs(tmp_path / "fm.db")
    full = Store(lean.engine, lean.url)
    full._selects = None  # the SQLAlchemy path, as on PostgreSQL
    for run_id in run_ids:
        trials, samples = lean.trials(run_id), lean.samples(run_id)
        assert _typed(trials) == _typed(full.trials(run_id))
        assert _typed(samples) == _typed(full.samples(run_id))
        # each trial's metrics in the order they were stored (which trial comes first is a dict's business)
        values = {t: list(m.items()) for t, m in lean.sample_values(run_id).items()}
        assert values == {t: list(m.items()) for t, m in full.sample_values(run_id).items()}
        by_trial: dict[str, list[tuple[str, float]]] = {}
        for s in samples:
            by_trial.setdefault(s.trial_id, []).append((s.metric, s.value))
        assert values == by_trial
    trials = lean.trials(run_ids[0])
    made = full.trials(run_ids[0])  # by __init__, one at a time
    assert [(repr(t), hash(t)) for t in trials] == [(repr(t), hash(t)) for t in made]
    assert [replace(t, seq=0) for t in trials] == [replace(t, seq=0) for t in made]
    with pytest.raises(FrozenInstanceError):
        trials[0].seq = 9  # type: ignore[misc]
    assert [t.seq for t in trials] == [1, 2, 3, 4, 5]
    assert [t.argv for t in trials][:3] == [("sh", "-c", "echo 0 'ä'"), ("sh", "-c", "echo 0 'ä'"), None]
    assert [(t.warmup, t.profiled) for t in trials] == [(True, False)] + [(False, False)] * 3 + [
        (False, True)
    ]
    assert trials[1].started_at == dt.datetime(2026, 1, 2, 3, 4, 2)  # SQLite keeps no zone: a naive time
    assert list(lean.sample_values(run_ids[0])[trials[2].id]) == ["wall_s"]
    assert list(lean.sample_values(run_ids[0])[trials[1].id]) == ["wall_s", "z_metric", "a_metric"]
    assert lean.trials(run_ids[2]) == [] and lean.samples(run_ids[2]) == []
    assert lean.sample_values(run_ids[2]) == {}
