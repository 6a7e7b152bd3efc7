"""`history` on an SQLite store without SQLAlchemy (store/quickhistory.py) reads what the full store reads: the
same series, points, tags, metrics, left-out runs and change points, for every workload, metric, host and tag
filter of tests/screens_store.py's ten runs (one run's max_rss_kib made legacy, one run tagged apart); and it
declines what it does not know (no file, another schema version), where `history` opens the full store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import screens_store
from fairmark.report.history import HistoryOptions, build_history
from fairmark.store import quickrun
from fairmark.store.db import Store
from fairmark.store.history import legacy_rss_runs, metrics_of, query_history
from fairmark.store.quickhistory import opened


@pytest.fixture(
    scope="module",
    params=[(where, sums) for where in ("local", "remote") for sums in ("samples", "sums", "some sums")],
    ids=lambda p: "-".join(p),
)
def store_path(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """The screens store with trials of every kind the query leaves out (warm-up, profiled, timed out); "remote":
    some also ran on hosts (one named as the controller is), which the quick reader reads by the join. Its runs'
    cells are read from their samples, or from the sums the runs' ends write (store/sums.py), or half each way:
    the full store's reader, which reads the samples, is the reference."""
    where, sums = request.param
    path = tmp_path_factory.mktemp("quickhistory") / "s.db"
    store = screens_store.build(path)
    store.engine.dispose()
    conn = sqlite3.connect(path)
    runs = screens_store.RUN_IDS
    with conn:
        conn.execute("UPDATE trials SET max_rss_method = NULL WHERE run_id = ?", [runs[2]])
        conn.execute(
            "UPDATE run_tags SET value = 'topic' WHERE key = 'branch' AND run_id = ?",
            [runs[7]],
        )
        conn.execute("UPDATE trials SET warmup = 1 WHERE run_id = ? AND round = 0", [runs[5]])
        conn.execute("UPDATE trials SET profiled = 1, warmup = 1 WHERE run_id = ? AND seq = 3", [runs[6]])
        conn.execute("UPDATE trials SET status = 'timeout' WHERE run_id = ? AND seq = 5", [runs[6]])
        if where == "remote":
            conn.execute("UPDATE trials SET host = 'h2' WHERE run_id = ? AND round < 4", [runs[3]])
            conn.execute(
                "UPDATE trials SET host = ? WHERE run_id = ? AND seq = 2", [screens_store.HOST, runs[4]]
            )
    conn.close()
    if sums != "samples":  # as each run's end sums its cells, after its trials are what the UPDATEs made them
        store = Store.open(f"sqlite:///{path}")
        for run_id in runs[:: 1 if sums == "sums" else 2]:
            store.update_run(run_id, status="done")
        store.engine.dispose()
    return path


FILTERS = [
    {},
    {"metric": "max_rss_kib"},
    {"metric": "wall_s", "tags": {"branch": "main"}},
    {"tags": {"branch": "topic"}},
    {"host": screens_store.HOST},
    {"host": "elsewhere"},
    {"tags": {"branch": "main", "commit": screens_store.COMMITS[3]}},
]


@pytest.mark.parametrize("workload", ["alloc", "crypto", "oltp", "nothing"])
@pytest.mark.parametrize("filters", FILTERS)
def test_the_quick_reader_reads_what_the_store_reads(store_path: Path, workload: str, filters: dict) -> None:
    url = f"sqlite:///{store_path}"
    store = Store.open(url)
    with opened(url) as quick:
        assert quick is not None
        # repr: exact for floats (it round-trips), and a NaN (the sd of a one-trial point) equals a NaN
        assert repr(query_history(quick, workload, **filters)) == repr(
            query_history(store, workload, **filters)
        )
        args = {k: v for k, v in filters.items() if k != "metric"}
        assert legacy_rss_runs(quick, workload, **args) == legacy_rss_runs(store, workload, **args)
        assert metrics_of(quick, workload) == metrics_of(store, workload)
        opts = HistoryOptions(workload, filters.get("metric"), filters.get("host"), filters.get("tags"))
        assert repr(build_history(quick, opts)) == repr(build_history(store, opts))
    store.engine.dispose()


def test_a_store_of_the_controllers_trials_is_read_without_the_join(
    store_path: Path, request: pytest.FixtureRequest
) -> None:
    """Its points without joining each sample to its trial (quickhistory._LOCAL); a store with trials on hosts
    by the join the full store's query makes; a summed cell by its sums, not its samples."""
    with opened(f"sqlite:///{store_path}") as quick:
        assert quick is not None
        sql: list[str] = []
        quick.conn.set_trace_callback(sql.append)
        assert quick.points("alloc", "wall_s", None, None)
        unsummed = "cell_id NOT IN (SELECT cell_id FROM cell_sums)"
        on_hosts = quick.conn.execute(
            f"SELECT 1 FROM trials WHERE host IS NOT NULL AND {unsummed}"
        ).fetchall()
        assert any("JOIN trials ON samples.trial_id" in s for s in sql) == (on_hosts != [])
        summed = len(quick._summed("alloc", None))
        assert (
            summed
            == {"samples": 0, "sums": 20, "some sums": 10}[request.node.callspec.params["store_path"][1]]
        )


def test_the_legacy_run_is_there_to_be_left_out(store_path: Path) -> None:
    with opened(f"sqlite:///{store_path}") as quick:
        assert quick is not None
        assert any(screens_store.RUN_IDS[2] in runs for runs in legacy_rss_runs(quick, "alloc").values())


@pytest.mark.parametrize("reader", [opened, quickrun.opened], ids=["history", "show"])
def test_what_it_does_not_know_goes_to_the_full_store(tmp_path: Path, store_path: Path, reader) -> None:
    """Both sqlite3 readers (history's and show's, over store.readonly) give way to the full store."""
    with reader(f"sqlite:///{tmp_path / 'none.db'}") as quick:
        assert quick is None
    with reader("postgresql+psycopg://u@localhost/db") as quick:
        assert quick is None
    old = tmp_path / "old.db"
    old.write_bytes(store_path.read_bytes())
    conn = sqlite3.connect(old)
    with conn:
        conn.execute("UPDATE fairmark_meta SET value = '3' WHERE key = 'schema_version'")
    conn.close()
    with reader(f"sqlite:///{old}") as quick:
        assert quick is None
    (tmp_path / "junk.db").write_text("not a database")
    with reader(f"sqlite:///{tmp_path / 'junk.db'}") as quick:
        assert quick is None
