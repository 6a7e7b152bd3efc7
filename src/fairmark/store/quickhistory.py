"""`fairmark history` on an SQLite store with the standard library's sqlite3 alone (as store/quick.py does for
`runs`).

Importing SQLAlchemy cost ~0.3 s of CPU here, a fifth of `history` of 200 runs (bench/read_cost.py). An SQLite
store of this fairmark's schema version is read directly, with the SQL SQLAlchemy compiles for store/history.py's
queries (the same text, so the same rows in the same order: tests/test_quickhistory.py compares the two);
anything else — no file, another schema version, PostgreSQL, an error — answers None and the caller opens the
full store.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sqlite3
from collections.abc import Iterator
from typing import TYPE_CHECKING, TypeAlias, cast

from fairmark.store.readonly import readonly
from fairmark.store.sums import HOST as _HOST
from fairmark.store.sums import MAX_NAMED as _MAX_NAMED
from fairmark.store.sums import OK as _OK
from fairmark.store.sums import Doc

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONObject

# A point of store/history.query_history: run id, started_at, host, cell key, metric, unit, better, n, mean, and
# the mean of the squares
PointRow: TypeAlias = tuple[str, dt.datetime, str, str, str, str, str, int, float, float]

# The same as the query gives it, started_at as its text
_TextRow: TypeAlias = tuple[str, str, str, str, str, str, str, int, float, float]

_JOIN = (
    "FROM samples JOIN cells ON samples.cell_id = cells.id JOIN runs ON cells.run_id = runs.id "
    "JOIN trials ON samples.trial_id = trials.id"
)
# The cells read from their samples: those without sums (store/sums.py: an ended run's cells have them)
_UNSUMMED = "cells.id NOT IN (SELECT cell_id FROM cell_sums)"
# a point per group, ties of a run's start broken as its groups sort (the order is the query's, not the plan's)
_ORDER = 'runs.started_at, runs.id, host, cells."key", samples.metric, samples.unit, samples.better'
_POINTS = (
    f'SELECT runs.id, runs.started_at, {_HOST} AS host, cells."key", samples.metric, samples.unit, '
    "samples.better, count(*) AS n, avg(samples.value) AS mean, avg(samples.value * samples.value) AS mean_sq "
    f"{_JOIN} WHERE cells.workload = ? AND {_UNSUMMED} AND {_OK} "
    "AND (samples.metric != 'max_rss_kib' OR trials.max_rss_method IS NOT NULL){more} "
    f'GROUP BY runs.id, runs.started_at, {_HOST}, cells."key", samples.metric, samples.unit, samples.better '
    f"ORDER BY {_ORDER}"
)
_LEGACY = (
    f'SELECT DISTINCT runs.id, runs.started_at, {_HOST} AS host, cells."key" {_JOIN} '
    f"WHERE cells.workload = ? AND {_UNSUMMED} AND samples.metric = 'max_rss_kib' "
    "AND trials.max_rss_method IS NULL "
    f"AND {_OK}{{more}} ORDER BY runs.started_at"
)
_TAG = 'EXISTS (SELECT * FROM run_tags AS tag{i} WHERE tag{i}.run_id = runs.id AND tag{i}."key" = ? AND tag{i}.value = ?)'
# The points when every trial of the workload ran on the controller (no `host`): the same rows, in the same order,
# without the join of each sample to its trial — a lookup by a 36-character id that was 60% of the query (bench/
# read_cost.py: 0.10 of 0.16 s). The trials left out (warm-up, profiled, failed) and those whose max_rss_kib is
# not the workload's are named instead: few, read once by _ODD. (A sample's trial is always one of its cell's:
# both are written from the one trial record, under the store's foreign keys.) The samples are aggregated per
# cell before the join to its run: a cell is one (run, key) (UNIQUE), so the groups are _POINTS' groups, but
# their keys are an integer instead of two ids, the key and the metric's texts — sorting 60 000 samples by those
# was a third of the query's instructions (of 200 runs × 300 samples; valgrind). ORDER BY is _POINTS' own.
_LOCAL = (
    'SELECT runs.id, runs.started_at, runs.hostname AS host, cells."key", s.metric, s.unit, s.better, s.n, '
    "s.mean, s.mean_sq FROM (SELECT samples.cell_id, samples.metric, samples.unit, samples.better, "
    "count(*) AS n, avg(samples.value) AS mean, avg(samples.value * samples.value) AS mean_sq FROM samples "
    "WHERE samples.cell_id IN (SELECT cells.id FROM cells JOIN runs ON cells.run_id = runs.id "
    f"WHERE cells.workload = ? AND {_UNSUMMED}{{of_runs}}) AND samples.trial_id NOT IN ({{out}}) "
    "AND (samples.metric != 'max_rss_kib' OR samples.trial_id NOT IN ({rss})){of_samples} "
    "GROUP BY samples.cell_id, samples.metric, samples.unit, samples.better) AS s "
    "JOIN cells ON s.cell_id = cells.id JOIN runs ON cells.run_id = runs.id "
    f"ORDER BY {_ORDER.replace('samples.', 's.')}"
)
# The workload's trials that are not a measured trial of the controller's, or ({rss}) have no max_rss_method: (id,
# ran on a host, left out, its max_rss_kib not the workload's)
_ODD = (
    f"SELECT trials.id, trials.host IS NOT NULL, NOT ({_OK}), trials.max_rss_method IS NULL "
    "FROM cells JOIN trials ON trials.run_id = cells.run_id AND trials.cell_id = cells.id "
    f"WHERE cells.workload = ? AND {_UNSUMMED} AND (trials.host IS NOT NULL OR NOT ({_OK}){{rss}})"
)
# The workload's summed cells (in runs with tags: {of_runs}): run id, started_at, cell key, sums (store/sums.py)
_SUMMED = (
    'SELECT runs.id, runs.started_at, cells."key", cell_sums.sums FROM cells JOIN runs ON cells.run_id = runs.id '
    "JOIN cell_sums ON cell_sums.cell_id = cells.id WHERE cells.workload = ?{of_runs}"
)


class SqliteHistory:
    """What `history` reads, from an open read-only sqlite3 connection of a store of this schema version."""

    def __init__(self, conn: sqlite3.Connection, url: str):
        self.conn, self.url = conn, url
        self._docs: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[str, str, str, Doc]]] = {}

    def _filters(
        self, host: str | None, tags: dict[str, str] | None, metric: str | None = None, host_is: str = _HOST
    ) -> tuple[str, list[str]]:
        more, args = "", []
        if metric:
            more, args = " AND samples.metric = ?", [metric]
        if host:
            more, args = more + f" AND {host_is} = ?", [*args, host]
        if tags:
            where = " AND ".join(f"({_TAG.format(i=i)})" for i in range(len(tags)))
            more += f" AND runs.id IN (SELECT runs.id FROM runs WHERE {where})"
            args += [x for kv in tags.items() for x in kv]
        return more, args

    def points(
        self, workload: str, metric: str | None, host: str | None, tags: dict[str, str] | None
    ) -> list[PointRow]:
        """store/history.query_history's rows: (id, started_at, host, key, metric, unit, better, n, mean, mean_sq),
        of the summed cells from their sums, of the others from their samples, in the query's order."""
        rows = [
            _row(run_id, started, key, point)
            for run_id, started, key, doc in self._summed(workload, tags)
            for point in cast("list[list[str | int | float]]", doc["points"])
            if (not metric or point[1] == metric) and (not host or point[0] == host)
        ]
        rows.extend(self._sampled(workload, metric, host, tags))
        # _ORDER: texts all (SQLite's BINARY collation orders UTF-8 as str orders code points)
        rows.sort(key=lambda r: (r[1], r[0], r[2], r[3], r[4], r[5], r[6]))
        return [(r[0], _datetime(r[1]), *r[2:]) for r in rows]

    def _summed(self, workload: str, tags: dict[str, str] | None) -> list[tuple[str, str, str, Doc]]:
        """(run id, started_at, cell key, sums) of the workload's summed cells (in runs with `tags`)."""
        key = (workload, tuple(sorted((tags or {}).items())))
        if key not in self._docs:
            of_runs, args = self._filters(None, tags)
            got = self.conn.execute(_SUMMED.format(of_runs=of_runs), [workload, *args])
            self._docs[key] = [(run_id, started, k, json.loads(doc)) for run_id, started, k, doc in got]
        return self._docs[key]

    def _sampled(
        self, workload: str, metric: str | None, host: str | None, tags: dict[str, str] | None
    ) -> list[_TextRow]:
        """The points of the cells without sums, from their samples."""
        rss_too = metric in (None, "max_rss_kib")  # else no max_rss_kib sample is read
        odd = self.conn.execute(
            _ODD.format(rss=" OR trials.max_rss_method IS NULL" if rss_too else ""), [workload]
        ).fetchall()
        if any(remote for _, remote, _, _ in odd) or len(odd) > _MAX_NAMED:
            more, args = self._filters(host, tags, metric)
            return self.conn.execute(_POINTS.format(more=more), [workload, *args]).fetchall()
        # every trial on the controller: its host is the run's
        out = [t for t, _, left_out, _ in odd if left_out]
        rss = [t for t, _, left_out, legacy in odd if legacy and not left_out]
        of_runs, run_args = self._filters(host, tags, None, "runs.hostname")
        of_samples, sample_args = self._filters(None, None, metric)
        marks = {"out": ", ".join("?" * len(out)), "rss": ", ".join("?" * len(rss))}
        sql = _LOCAL.format(of_runs=of_runs, of_samples=of_samples, **marks)
        return self.conn.execute(sql, [workload, *run_args, *out, *rss, *sample_args]).fetchall()

    def legacy_rss(
        self, workload: str, host: str | None, tags: dict[str, str] | None
    ) -> list[tuple[str, ...]]:
        more, args = self._filters(host, tags)
        rows = self.conn.execute(_LEGACY.format(more=more), [workload, *args]).fetchall()
        rows += [
            (run_id, started, h, key)
            for run_id, started, key, doc in self._summed(workload, tags)
            for h in doc["legacy_rss"]
            if not host or h == host
        ]
        rows.sort(key=lambda r: r[1])  # the query's ORDER BY runs.started_at
        return [(r[0], r[2], r[3]) for r in rows]

    def tags(self, run_ids: list[str]) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {r: {} for r in run_ids}
        for chunk in (run_ids[i : i + 500] for i in range(0, len(run_ids), 500)):
            marks = ", ".join("?" * len(chunk))
            for run_id, key, value in self.conn.execute(
                f"SELECT run_id, key, value FROM run_tags WHERE run_id IN ({marks})", chunk
            ):
                out[run_id][key] = value
        return out

    def metrics_of(self, workload: str) -> tuple[str | None, list[str]]:
        newest = self.conn.execute(
            "SELECT primary_metric FROM cells WHERE workload = ? ORDER BY id DESC LIMIT 1", [workload]
        ).fetchone()
        names = {
            n
            for (n,) in self.conn.execute(
                "SELECT DISTINCT samples.metric FROM samples JOIN cells ON samples.cell_id = cells.id "
                f"WHERE cells.workload = ? AND {_UNSUMMED}",
                [workload],
            )
        }
        names.update(n for *_, doc in self._summed(workload, None) for n in doc["metrics"])
        return (newest[0] if newest else None), sorted(names)

    def options(self, run_ids: set[str]) -> dict[str, JSONObject | None]:
        """run id → its options (JSON), for the baseline of each series."""
        ids = sorted(run_ids)
        marks = ", ".join("?" * len(ids))
        rows = self.conn.execute(f"SELECT id, options FROM runs WHERE id IN ({marks})", ids) if ids else []
        return {run_id: json.loads(text) if text is not None else None for run_id, text in rows}


@contextlib.contextmanager
def opened(url: str) -> Iterator[SqliteHistory | None]:
    """The store at `url` read directly, or None (not an SQLite file of this schema version: the full store)."""
    with readonly(url) as conn:
        yield SqliteHistory(conn, url) if conn is not None else None


def _row(run_id: str, started: str, key: str, point: list[str | int | float]) -> _TextRow:
    """A point of a cell's sums ([host, metric, unit, better, n, mean, mean_sq]) as the query's row."""
    host, metric, unit, better, n, mean, mean_sq = point
    return (
        run_id,
        started,
        str(host),
        key,
        str(metric),
        str(unit),
        str(better),
        int(n),
        float(mean),
        float(mean_sq),
    )


def _datetime(text: str) -> dt.datetime:
    """SQLAlchemy's SQLite DateTime text ("2026-11-23 23:37:04.123456") as the naive datetime it reads back."""
    return dt.datetime.fromisoformat(text)
