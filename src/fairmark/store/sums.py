"""What `history` needs of a cell, summed once when its run ends (store/schema.py's `cell_sums`, SQLite stores).

`history` of 200 runs of 300 samples per cell read every sample of the workload's cells to aggregate one metric:
the samples are indexed by their cell alone (schema v11 keeps a trial's write small), so each of 300 000 rows
was read to test its metric, ~750 M of the command's ~1700 M instructions (valgrind). A run's cells are summed
here when the run ends (`Store.update_run` to any status but "running", the migration to v12 for runs stored
before, a bundle's import): per cell, the points of store/history.query_history (host, metric, unit, better, n,
mean, mean of squares), the hosts whose max_rss_kib is fairmark's own memory (records.LEGACY_RSS) and every
metric its samples name. The means are SQLite's own avg() over the same samples in the same order as the query
over the samples (each cell's by its index, in insertion order), so a summed cell reads the very floats an
unsummed one does (tests/test_quickhistory.py compares both readings of every series with the full store's).

Nothing is added to a trial's write but a trigger: a trial inserted, a trial or sample changed or deleted, a cell
deleted or a run's hostname changed deletes the sums of the cells concerned, so a sum is never stale — a resumed
run's cells are read from their samples until the run ends again. A cell without sums is read from its samples, as before.
Only SQLite stores are summed: the sqlite3 reader is their `history`; PostgreSQL answers by its own query.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import sqlalchemy as sa

# A cell's sums: "points" [host, metric, unit, better, n, mean, mean_sq], "legacy_rss" hosts, "metrics" names
Doc: TypeAlias = dict[str, list[object]]

# The measured trials (as store/history.query_history reads them) and the host a point is on
HOST = "coalesce(trials.host, runs.hostname)"
OK = "trials.warmup IS 0 AND trials.profiled IS 0 AND trials.status = 'ok'"
_JOIN = (
    "FROM samples JOIN cells ON samples.cell_id = cells.id JOIN runs ON cells.run_id = runs.id "
    "JOIN trials ON samples.trial_id = trials.id"
)
# one run's points per cell, in query_history's terms (the group of a cell is one run and key: UNIQUE)
_POINTS = (
    f"SELECT samples.cell_id, {HOST} AS host, samples.metric, samples.unit, samples.better, count(*), "
    f"avg(samples.value), avg(samples.value * samples.value) {_JOIN} WHERE cells.run_id = ? AND {OK} "
    "AND (samples.metric != 'max_rss_kib' OR trials.max_rss_method IS NOT NULL) "
    f"GROUP BY samples.cell_id, {HOST}, samples.metric, samples.unit, samples.better"  # not `host`: trials.host
)
_LEGACY = (
    f"SELECT DISTINCT samples.cell_id, {HOST} {_JOIN} WHERE cells.run_id = ? AND {OK} "
    "AND samples.metric = 'max_rss_kib' AND trials.max_rss_method IS NULL"
)
_METRICS = (
    "SELECT DISTINCT samples.cell_id, samples.metric FROM samples JOIN cells ON samples.cell_id = cells.id "
    "WHERE cells.run_id = ?"
)
_OF_RUN = "SELECT id FROM cells WHERE run_id = ?"
# The run's trials that are not a measured trial of the controller's with the workload's own max_rss_kib: (id, ran
# on a host, left out, its max_rss_kib not the workload's). Few, unless it ran on hosts: then the join (_POINTS).
_ODD = (
    f"SELECT id, host IS NOT NULL, NOT ({OK}), max_rss_method IS NULL FROM trials "
    f"WHERE run_id = ? AND (host IS NOT NULL OR NOT ({OK}) OR max_rss_method IS NULL)"
)
# more trials to name than this: the join (SQLite takes up to 32 766 parameters); store/quickhistory's too
MAX_NAMED = 10_000
# _POINTS for such a run: each cell's samples by its index, grouped without the join to their trials
_LOCAL = (
    "SELECT samples.cell_id, samples.metric, samples.unit, samples.better, count(*), avg(samples.value), "
    "avg(samples.value * samples.value) FROM samples WHERE samples.cell_id IN (SELECT id FROM cells "
    "WHERE run_id = ?){out} GROUP BY samples.cell_id, samples.metric, samples.unit, samples.better"
)

# What makes a cell's sums wrong deletes them (SQLite; in C, inside the writer's own statement).
_GONE = "DELETE FROM cell_sums WHERE cell_id = {cell}"
# A sample is written with its trial (Store.add_trial, a bundle's import), so a trial's insert stands for its
# samples' too: a trigger per sample inserted cost ~5000 instructions each (~1.5 µs), five times per trial of `true`.
_WRITES = tuple(
    f"CREATE TRIGGER IF NOT EXISTS cell_sums_{table}_{event.lower()} AFTER {event} ON {table} "
    f"BEGIN {_GONE.format(cell=cell)}; END"
    for table, event, cell in (
        ("trials", "INSERT", "NEW.cell_id"),
        ("trials", "DELETE", "OLD.cell_id"),
        ("trials", "UPDATE", "OLD.cell_id"),
        ("samples", "DELETE", "OLD.cell_id"),
        ("samples", "UPDATE", "OLD.cell_id"),
    )
)
TRIGGERS = (
    *_WRITES,
    # a trial or sample moved to another cell (never by fairmark): that cell's too
    "CREATE TRIGGER IF NOT EXISTS cell_sums_trials_moved AFTER UPDATE OF cell_id ON trials "
    f"BEGIN {_GONE.format(cell='NEW.cell_id')}; END",
    "CREATE TRIGGER IF NOT EXISTS cell_sums_samples_moved AFTER UPDATE OF cell_id ON samples "
    f"BEGIN {_GONE.format(cell='NEW.cell_id')}; END",
    "CREATE TRIGGER IF NOT EXISTS cell_sums_cells_delete AFTER DELETE ON cells "
    f"BEGIN {_GONE.format(cell='OLD.id')}; END",
    "CREATE TRIGGER IF NOT EXISTS cell_sums_runs_hostname AFTER UPDATE OF hostname ON runs "
    "BEGIN DELETE FROM cell_sums WHERE cell_id IN (SELECT id FROM cells WHERE run_id = NEW.id); END",
)


def write(conn: sa.Connection, run_id: str) -> None:
    """Sum every cell of the run (replacing its sums), in the caller's transaction; SQLite stores only."""
    if conn.dialect.name != "sqlite":
        return
    docs: dict[int, Doc] = {
        cell: {"points": [], "legacy_rss": [], "metrics": []}
        for (cell,) in conn.exec_driver_sql(_OF_RUN, (run_id,))
    }
    odd = conn.exec_driver_sql(_ODD, (run_id,)).fetchall()
    if any(remote or (legacy and not out) for _, remote, out, legacy in odd) or len(odd) > MAX_NAMED:
        _joined(conn, run_id, docs)
    else:
        _local(conn, run_id, docs, [t for t, _, out, _ in odd if out])
    conn.exec_driver_sql(f"DELETE FROM cell_sums WHERE cell_id IN ({_OF_RUN})", (run_id,))
    if docs:  # json: a float as its repr, read back as the same float (NaN and infinities too)
        rows = [(cell, json.dumps(doc)) for cell, doc in docs.items()]
        conn.exec_driver_sql("INSERT INTO cell_sums (cell_id, sums) VALUES (?, ?)", rows)


def _joined(conn: sa.Connection, run_id: str, docs: dict[int, Doc]) -> None:
    """A run with trials on hosts or legacy max_rss_kib: each sample joined to its trial."""
    for cell, *point in conn.exec_driver_sql(_POINTS, (run_id,)):
        docs[cell]["points"].append(point)
    for cell, host in conn.exec_driver_sql(_LEGACY, (run_id,)):
        docs[cell]["legacy_rss"].append(host)
    for cell, metric in conn.exec_driver_sql(_METRICS, (run_id,)):
        docs[cell]["metrics"].append(metric)


def _local(conn: sa.Connection, run_id: str, docs: dict[int, Doc], out: list[str]) -> None:
    """A run whose trials all ran on the controller: its samples without their trials (the trials left out named,
    as store/quickhistory._LOCAL does), which at the run's end costs ~8 µs a trial of five samples, not ~19."""
    (host,) = conn.exec_driver_sql("SELECT hostname FROM runs WHERE id = ?", (run_id,)).one()
    sql = _LOCAL.format(out=f" AND samples.trial_id NOT IN ({', '.join('?' * len(out))})" if out else "")
    for cell, metric, *rest in conn.exec_driver_sql(sql, (run_id, *out)):
        docs[cell]["points"].append([host, metric, *rest])
        docs[cell]["metrics"].append(metric)
    if out:  # a metric only the trials left out have is named too
        for doc in docs.values():
            doc["metrics"].clear()
        for cell, metric in conn.exec_driver_sql(_METRICS, (run_id,)):
            docs[cell]["metrics"].append(metric)
    for doc in docs.values():
        doc["metrics"] = [*sorted({str(m) for m in doc["metrics"]})]


def write_ended(conn: sa.Connection) -> None:
    """Sum the cells of every run that is not running (the migration to v12)."""
    if conn.dialect.name == "sqlite":
        for (run_id,) in conn.exec_driver_sql("SELECT id FROM runs WHERE status != 'running'").fetchall():
            write(conn, run_id)


def create_triggers(conn: sa.Connection) -> None:
    if conn.dialect.name == "sqlite":
        for ddl in TRIGGERS:
            conn.exec_driver_sql(ddl)
