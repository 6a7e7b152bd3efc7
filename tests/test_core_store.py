"""The same store code on SQLite and on a real PostgreSQL server (started here on loopback, removed after)."""

from __future__ import annotations

import datetime as dt
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from doubles import MockExecutor, plan_text
from fairmark.errors import InputError, StoreError
from fairmark.plan.load import LoadedPlan, parse_plan
from fairmark.plan.metric import MetricSpec
from fairmark.report.load import load_report
from fairmark.run.loop.runner import Runner, RunOptions
from fairmark.store.db import Store, normalize_url
from fairmark.store.records import CellRecord, Sample, TrialRecord


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    from fairmark.run.workloads.servers import PG_BIN, PostgresServer

    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL server binaries not installed ({PG_BIN}); `make setup` installs them")
    # Not under pytest's basetemp: another pytest session resets that tree to 0700, locking the postgres user out.
    base = Path(tempfile.mkdtemp(prefix="fairmark-pgstore-"))
    server = PostgresServer(base / "pg", fsync=False)
    try:
        server.start()
        server.psql("CREATE DATABASE fairmark_test")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{server.port}/fairmark_test"
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "sqlite":
        return Store.open(f"sqlite:///{tmp_path / 'fm.db'}")
    return Store.open(request.getfixturevalue("postgres_url"))


def _run(store: Store, **extra: object) -> str:
    return store.create_run(
        plan_path="p.toml",
        plan_text="x",
        plan_sha256="0" * 64,
        seed=1,
        status="running",
        fairmark_version="test",
        options={"policy": {"confidence": 95}},
        **extra,
    )


@pytest.mark.slow
def test_runs_cells_trials_samples(store: Store) -> None:
    run_id = _run(store, env_before={"os": {"kernel": "6.1"}})
    cell = CellRecord("w/A", "w", "A", (), "wall_s", (MetricSpec("wall_s", "s", "lower", verdict=True),))
    ids = store.ensure_cells(run_id, [cell])
    assert store.ensure_cells(run_id, [cell]) == ids  # idempotent
    (stored,) = store.cells(run_id)
    assert stored == replace(cell, id=ids["w/A"], run_id=run_id)  # the record written is the record read
    trial = TrialRecord(
        run_id, ids["w/A"], 1, 0, False, "ok", dt.datetime.now(dt.UTC), wall_s=1.5, argv=("true",)
    )
    tid = store.add_trial(
        trial,
        [Sample(trial.id, ids["w/A"], "wall_s", 1.5, "s", "lower")],
        [
            {
                "cell_key": "w/A",
                "kind": "monitor",
                "name": "vmstat",
                "content_type": "application/json",
                "data": {"cpu": [1, 2]},
            }
        ],
    )
    assert tid == trial.id
    assert store.get_run(run_id[:8]).env_before == {"os": {"kernel": "6.1"}}
    assert store.get_run("last").id == run_id
    assert store.samples(run_id) == [Sample(tid, ids["w/A"], "wall_s", 1.5, "s", "lower")]
    (back,) = store.trials(run_id)
    assert back == replace(trial, started_at=back.started_at)  # the clock as the store gives it back
    assert back.started_at.replace(tzinfo=None) == trial.started_at.replace(tzinfo=None)
    assert store.artifacts(run_id, "monitor")[0]["data"] == {"cpu": [1, 2]}
    assert store.list_runs()[0]["trials_ok"] == 1
    store.add_findings(run_id, "before", [{"id": "x", "severity": "warn", "title": "t"}])
    assert store.findings(run_id)[0]["finding_id"] == "x"
    store.delete_run(run_id)
    with pytest.raises(InputError):
        store.get_run(run_id)


def test_whole_run_through_the_runner(store: Store) -> None:
    text = plan_text(["A", "B"], min_trials=3, max_trials=5)
    loaded = LoadedPlan(parse_plan(text), "plan.toml", text)
    run_id = Runner(loaded, store, RunOptions(probe=False), executor=MockExecutor({"B": 1.3}, 0.01)).start()
    report = load_report(store, run_id)
    assert report.run.status == "done"
    assert all(3 <= c.n_ok <= 5 for c in report.cells)
    assert report.verdicts[0].significant


def test_unknown_run_and_ambiguity(store: Store) -> None:
    with pytest.raises(InputError, match="no run"):
        store.get_run(str(uuid.uuid4()))


def test_urls() -> None:
    assert normalize_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_url("/tmp/x.db") == "sqlite:////tmp/x.db"
    with pytest.raises(StoreError):
        Store.open("nosuchdialect://x")


def test_v1_store_is_migrated_forward(tmp_path: Path) -> None:
    import sqlalchemy as sa

    from fairmark.store import schema

    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = Store.open(url)
    with store.engine.begin() as conn:  # make it a version 1 store: no cell params/labels yet
        conn.execute(sa.text("ALTER TABLE cells DROP COLUMN params"))
        conn.execute(sa.text("ALTER TABLE cells DROP COLUMN labels"))
        conn.execute(sa.text("UPDATE fairmark_meta SET value = '1' WHERE key = 'schema_version'"))
    store.engine.dispose()
    migrated = Store.open(url)
    with migrated.engine.connect() as conn:
        version = conn.execute(
            sa.text("SELECT value FROM fairmark_meta WHERE key = 'schema_version'")
        ).scalar()
        columns = {c["name"] for c in sa.inspect(conn).get_columns("cells")}
    assert int(version) == schema.SCHEMA_VERSION
    assert {"params", "labels"} <= columns


def test_a_v10_store_is_migrated_to_the_samples_index_a_new_store_has(store: Store) -> None:
    """Schema 11: samples are indexed by their cell alone. A store made before (the (run_id, cell_id) and
    (cell_id, metric) indexes) ends up with the indexes of a new store, its samples read as before, by run and
    by history."""
    import sqlalchemy as sa

    from fairmark.store import schema
    from fairmark.store.history import query_history

    def indexes() -> list[tuple[str, tuple[str | None, ...], bool]]:
        with store.engine.connect() as conn:
            found = sa.inspect(conn).get_indexes("samples")
        return sorted((i["name"] or "", tuple(i["column_names"]), bool(i["unique"])) for i in found)

    new = indexes()
    assert new == [("ix_samples_cell", ("cell_id",), False)]
    run_id = _run(store)
    ids = store.ensure_cells(run_id, [CellRecord("w/A", "w", "A", (), "wall_s", ())])
    for seq in range(3):
        trial = TrialRecord(run_id, ids["w/A"], seq, seq, False, "ok", dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
        store.add_trial(trial, [Sample(trial.id, ids["w/A"], m, seq + 0.5, "s", "lower") for m in ("a", "b")])
    before = (store.samples(run_id), store.export_rows(schema.samples, run_id))
    with store.engine.begin() as conn:  # back to a version 10 store
        conn.execute(sa.text("DROP INDEX ix_samples_cell"))
        conn.execute(sa.text("CREATE INDEX ix_samples_run ON samples (run_id, cell_id)"))
        conn.execute(sa.text("CREATE INDEX ix_samples_cell_metric ON samples (cell_id, metric)"))
        conn.execute(sa.text("UPDATE fairmark_meta SET value = '10' WHERE key = 'schema_version'"))
    assert len(indexes()) == 2
    store.engine.dispose()
    store = Store.open(store.url)
    assert indexes() == new
    assert (store.samples(run_id), store.export_rows(schema.samples, run_id)) == before
    (series,) = query_history(store, "w", metric="b")
    assert [(p.run_id, p.n, p.mean) for p in series.points] == [(run_id, 3, 1.5)]
    store.delete_run(run_id)
    assert store.samples(run_id) == [] and store.export_rows(schema.samples, run_id) == []


def test_verdicts_are_not_stored_and_an_older_stores_table_goes(tmp_path: Path) -> None:
    """Schema 8 (issue 22): verdicts are computed from the samples by every reader, never stored; a store made
    before keeps opening, its verdicts table dropped, its runs intact."""
    import sqlalchemy as sa

    from fairmark.store import schema

    assert "verdicts" not in schema.metadata.tables and not hasattr(Store, "verdicts")
    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = Store.open(url)
    run_id = _run(store)
    with store.engine.begin() as conn:  # a version 7 store, with the table every run wrote then
        conn.execute(sa.text("CREATE TABLE verdicts (id INTEGER PRIMARY KEY, run_id VARCHAR(36) NOT NULL)"))
        conn.execute(sa.text("CREATE INDEX ix_verdicts_run ON verdicts (run_id)"))
        conn.execute(sa.text(f"INSERT INTO verdicts (run_id) VALUES ('{run_id}')"))
        conn.execute(sa.text("UPDATE fairmark_meta SET value = '7' WHERE key = 'schema_version'"))
    store.engine.dispose()
    migrated = Store.open(url)
    with migrated.engine.connect() as conn:
        assert "verdicts" not in sa.inspect(conn).get_table_names()
        version = conn.execute(
            sa.text("SELECT value FROM fairmark_meta WHERE key = 'schema_version'")
        ).scalar()
    assert int(version) == schema.SCHEMA_VERSION >= 8 and migrated.get_run(run_id).id == run_id


def _summed(store: Store) -> dict[int, str]:
    """cell id → its sums (store/sums.py)."""
    import sqlalchemy as sa

    with store.engine.connect() as conn:
        return dict(conn.execute(sa.text("SELECT cell_id, sums FROM cell_sums")).all())


def _two_cells(store: Store, trials: int = 6) -> tuple[str, dict[str, int]]:
    run_id = _run(store)
    # a workload of its own: the PostgreSQL store is the module's, and other tests store `w`
    ids = store.ensure_cells(run_id, [CellRecord(f"sums/{v}", "sums", v, (), "wall_s", ()) for v in "AB"])
    for seq in range(trials):
        _trial(store, run_id, ids["sums/" + "AB"[seq % 2]], seq)
    return run_id, ids


def _trial(store: Store, run_id: str, cell: int, seq: int, status: str = "ok") -> None:
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    trial = TrialRecord(run_id, cell, seq, seq, False, status, when, max_rss_method="launcher")
    store.add_trial(
        trial, [Sample(trial.id, cell, m, 1.0 + seq / 7, "s", "lower") for m in ("wall_s", "cpu_s")]
    )


def test_an_ended_runs_cells_are_summed_and_a_later_trial_clears_its_cells(store: Store) -> None:
    """Schema 12 (store/sums.py): a run that ends (done, interrupted, failed) has its cells summed for `history`
    in the same transaction; a trial stored after (a resumed run) deletes its own cell's sums, not the others';
    the points read through the sums are those of the samples. PostgreSQL keeps no sums (its history is its own
    query) and works as before."""
    from fairmark.store.history import query_history
    from fairmark.store.quickhistory import opened

    run_id, ids = _two_cells(store)
    _trial(
        store, run_id, ids["sums/B"], 6, status="failed"
    )  # left out of the points, its metrics still named
    sqlite = store.url.startswith("sqlite")
    assert _summed(store) == {}  # running
    store.update_run(run_id, status="interrupted", ended_at=dt.datetime(2026, 1, 1, 1, tzinfo=dt.UTC))
    assert set(_summed(store)) == (set(ids.values()) if sqlite else set())
    full = repr(query_history(store, "sums"))
    assert "n=3" in full and full.count("Point(") == 4
    _trial(store, run_id, ids["sums/A"], 7)  # resumed: sums/A has a new trial
    assert set(_summed(store)) == ({ids["sums/B"]} if sqlite else set())
    store.update_run(run_id, status="running", ended_at=None)
    assert set(_summed(store)) == ({ids["sums/B"]} if sqlite else set())
    store.update_run(run_id, status="done")
    assert set(_summed(store)) == (set(ids.values()) if sqlite else set())
    if sqlite:
        with opened(store.url) as quick:
            assert quick is not None and len(quick._summed("sums", None)) == 2
            assert repr(query_history(quick, "sums")) == repr(query_history(store, "sums"))
    store.delete_run(run_id)
    assert _summed(store) == {} and query_history(store, "sums") == []


def test_a_v11_store_gets_the_sums_of_its_ended_runs(tmp_path: Path) -> None:
    """The migration to 12 sums every run stored before that is not running, as its end would have; a running
    run's cells are read from their samples; the triggers are those of a new store."""
    import sqlalchemy as sa

    from fairmark.store import schema

    store = Store.open(f"sqlite:///{tmp_path / 'old.db'}")
    ended, _ = _two_cells(store)
    running, _ = _two_cells(store)
    store.update_run(ended, status="done")
    sums = _summed(store)
    triggers = "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name"
    with store.engine.begin() as conn:
        made = conn.execute(sa.text(triggers)).all()
        assert len(made) == 9
        for name, _ in made:
            conn.execute(sa.text(f"DROP TRIGGER {name}"))
        conn.execute(sa.text("DROP TABLE cell_sums"))
        conn.execute(sa.text("UPDATE fairmark_meta SET value = '11' WHERE key = 'schema_version'"))
    store.engine.dispose()
    store = Store.open(store.url)
    assert _summed(store) == sums and len(sums) == 2 and schema.SCHEMA_VERSION == 12
    with store.engine.connect() as conn:
        assert conn.execute(sa.text(triggers)).all() == made
    assert store.get_run(running).status == "running"


def test_an_imported_runs_cells_are_summed(tmp_path: Path) -> None:
    from fairmark.cli.bundle import bundle_of, import_bundle

    store = Store.open(f"sqlite:///{tmp_path / 'a.db'}")
    run_id, _ = _two_cells(store)
    store.update_run(run_id, status="done")
    other = Store.open(f"sqlite:///{tmp_path / 'b.db'}")
    import_bundle(other, bundle_of(store, run_id), "run.json")
    assert sorted(_summed(other).values()) == sorted(_summed(store).values())
    store.engine.dispose()
    other.engine.dispose()


def test_newer_store_is_refused(tmp_path: Path) -> None:
    import sqlalchemy as sa

    url = f"sqlite:///{tmp_path / 'new.db'}"
    store = Store.open(url)
    with store.engine.begin() as conn:
        conn.execute(sa.text("UPDATE fairmark_meta SET value = '999' WHERE key = 'schema_version'"))
    with pytest.raises(StoreError, match="newer than this fairmark"):
        Store.open(url)


def test_non_finite_floats_round_trip_on_postgresql(postgres_url: str) -> None:
    """A verdict whose CI bound is undefined (NaN) is stored on PostgreSQL too, and read back as NaN."""
    import math

    store = Store.open(postgres_url)
    run_id = store.create_run(
        plan_path="p.toml",
        plan_text="x",
        plan_sha256="0" * 64,
        seed=1,
        status="running",
        fairmark_version="test",
        options={"x": float("nan"), "y": [float("-inf"), 1.5]},
    )
    got = store.get_run(run_id).options
    assert math.isnan(got["x"]) and got["y"] == [float("-inf"), 1.5]


def test_the_lean_sqlite_trial_write_stores_what_sqlalchemy_stores(tmp_path: Path) -> None:
    """add_trial on SQLite bypasses SQLAlchemy's execution (store/lean.py) with SQLAlchemy's own converters:
    the rows read back are the same as through Connection.execute (JSON, tz-aware time, booleans, None, the
    columns' defaults), and a failed write leaves nothing."""
    store = Store.open(f"sqlite:///{tmp_path / 'fm.db'}")
    rows = {}
    for lean in (True, False):
        if not lean:
            store._lean = None  # the SQLAlchemy path, as on PostgreSQL
        run_id = _run(store)
        ids = store.ensure_cells(run_id, [CellRecord("w/A", "w", "A", (), "wall_s", ())])
        trial = TrialRecord(
            run_id,
            ids["w/A"],
            1,
            -1,
            True,
            "ok",
            dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC),
            wall_s=0.25,
            argv=("sh", "-c", "echo 'ä'"),
        )
        store.add_trial(
            trial,
            [Sample(trial.id, ids["w/A"], m, v, "s", "lower") for m, v in (("wall_s", 0.25), ("x", 2.0))],
            [
                {
                    "cell_key": "w/A",
                    "kind": "monitor",
                    "name": "vm",
                    "content_type": "application/json",
                    "data": {"cpu": [1.5, None]},
                    "text": None,
                },
                {
                    "cell_key": "w/A",
                    "kind": "profile",
                    "name": "p",
                    "content_type": "text/plain",
                    "data": None,
                    "text": "x;y 3",
                },
            ],
        )
        drop = {"id", "run_id", "cell_id", "trial_id"}
        rows[lean] = (
            [replace(t, id="", run_id="", cell_id=0) for t in store.trials(run_id)],
            [replace(s, trial_id="", cell_id=0) for s in store.samples(run_id)],
            [{k: v for k, v in r.items() if k not in drop} for r in store.artifacts(run_id)],
        )
    assert rows[True] == rows[False]
    (t,) = rows[True][0]
    assert (t.profiled, t.stdout_tail, t.warmup, t.argv) == (False, "", True, ("sh", "-c", "echo 'ä'"))
    assert t.started_at.replace(tzinfo=None) == dt.datetime(2026, 1, 2, 3, 4, 5, 678901)
    # one transaction: a sample that breaks a constraint takes its trial with it
    store = Store.open(f"sqlite:///{tmp_path / 'fm.db'}")
    run_id = _run(store)
    with pytest.raises(sqlite3.IntegrityError):
        broken = replace(trial, run_id=run_id, id="t-broken")
        store.add_trial(broken, [Sample(broken.id, broken.cell_id, "m", None, "s", "lower")])  # type: ignore[arg-type]
    assert store.trials(run_id) == []


def test_the_quick_runs_listing_gives_the_full_stores_rows(tmp_path: Path) -> None:
    """`fairmark runs` reads an SQLite store without SQLAlchemy (store/quick.py): the same rows as
    Store.list_runs for every filter, and None — the full store then — for what it cannot read."""
    from fairmark.store import quick

    url = f"sqlite:///{tmp_path / 'fm.db'}"
    store = Store.open(url)
    base = dt.datetime(2026, 11, 23, 12, 0, 0, 123456, tzinfo=dt.UTC)
    for i in range(4):
        run_id = store.create_run(
            plan_path=f"p{i}.toml",
            plan_text="x",
            plan_sha256="0" * 64,
            seed=1,
            status="done",
            fairmark_version="t",
            started_at=base + dt.timedelta(minutes=i),
            title="" if i % 2 else f"run {i}",
            accept_risk=i == 3,
            options={"hosts": {"b": {}, "a": {}}} if i in (1, 2) else {},
            tags={"ci": "yes", "branch": f"b{i % 2}"} if i else {},
        )
        ids = store.ensure_cells(run_id, [CellRecord("w/A", "w", "A", (), "wall_s", ())])
        for seq in range(i):
            store.add_trial(
                TrialRecord(run_id, ids["w/A"], seq, seq, False, "ok" if seq % 2 == 0 else "failed", base)
            )
    store.update_run(run_id, ended_at=base + dt.timedelta(hours=1))
    cases = [
        (50, None, None),
        (2, None, None),
        (50, "a", None),
        (1, "b", None),
        (50, "z", None),
        (50, None, {"ci": "yes"}),
        (50, None, {"ci": "yes", "branch": "b1"}),
        (50, "a", {"branch": "b0"}),
    ]
    for limit, host, tags in cases:
        assert quick.list_runs(url, limit, host=host, tags=tags) == store.list_runs(
            limit, host=host, tags=tags
        )
    assert quick.list_runs(f"sqlite:///{tmp_path / 'none.db'}") is None  # not there: the full store says so
    assert quick.list_runs("postgresql+psycopg://u@h/db") is None
    with store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE fairmark_meta SET value = '1' WHERE key = 'schema_version'")
    assert quick.list_runs(url) is None  # an older schema: the full store migrates it first


def test_new_ids_are_version_4_uuid_texts() -> None:
    import uuid

    from fairmark.store.records import new_id

    ids = [new_id() for _ in range(500)]
    assert len(set(ids)) == 500
    for text in ids:
        u = uuid.UUID(text)
        assert str(u) == text and u.version == 4 and u.variant == uuid.RFC_4122
