"""One stored run read from an SQLite store with the standard library's sqlite3 alone: what `fairmark show`
reads (verdict/run.run_verdicts, report/load.load_report and the sections' artifacts), as store/quick.py does
for `runs` and store/quickhistory.py for `history`.

Importing SQLAlchemy cost ~0.35 s of CPU, a third of `show` of a 300-trial run (bench/read_cost.py). Each read
here runs the SQL SQLAlchemy compiles for the Store's method of the same name, and each column is converted as
SQLAlchemy's SQLite dialect converts it (DateTime text → the naive datetime `fromisoformat` gives, JSON text →
`json.loads`, a Boolean's 0/1 → bool), so the records are equal to the Store's: tests/test_quickrun.py compares
the two readers record by record and `show`'s output byte by byte. Anything but an SQLite file of this schema
version (store/readonly.py) answers None, and `show` opens the full store.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, cast

from fairmark.errors import InputError
from fairmark.store.readonly import readonly
from fairmark.store.records import (
    TRIAL_COLUMNS,
    ArtifactRow,
    CellRecord,
    FindingRow,
    RunRecord,
    TrialRecord,
    values_by_trial,
)

if TYPE_CHECKING:
    from sqlalchemy import RowMapping  # the type CellRecord.from_row is written for; a dict reads alike

    from fairmark.jsonvalue import JSONObject, JSONValue

_RUN_DATES = ("started_at", "ended_at")
_RUN_JSON = ("options", "env_before", "env_after", "notes")
_CELL_JSON = ("point", "metrics", "command", "params", "labels")
_FINDING = ("id", "run_id", "phase", "finding_id", "severity", "title", "evidence", "why", "fix")
_ARTIFACT = ("id", "run_id", "trial_id", "cell_key", "kind", "name", "content_type", "data", "text")


def _when(value: object) -> dt.datetime | None:
    """SQLAlchemy's SQLite DateTime ("2026-11-23 23:37:04.123456") as it reads it back: naive."""
    return None if value is None else dt.datetime.fromisoformat(cast(str, value))


def _json(value: object) -> JSONValue:
    """SQLAlchemy's SQLite JSON as it reads it back (a number stored bare is given as it is)."""
    if value is None or isinstance(value, int | float):
        return value
    return cast("JSONValue", json.loads(cast(str, value)))


def _bool(value: object) -> bool | None:
    return None if value is None else bool(value)


class SqliteRun:
    """The reads of one run that `show` makes, from an open read-only sqlite3 connection of a store of this
    schema version; the Store's methods of the same names give the same records."""

    def __init__(self, conn: sqlite3.Connection, url: str):
        self.conn, self.url = conn, url

    def _dicts(self, sql: str, args: Sequence[object]) -> list[dict[str, object]]:
        cur = self.conn.execute(sql, args)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur]

    def get_run(self, ref: str) -> RunRecord:
        """A run by full id, unique prefix, or 'last' (`Store.get_run`)."""
        if ref in ("last", "latest"):
            sql, args = "SELECT * FROM runs ORDER BY runs.started_at DESC LIMIT 1", []
        elif len(ref) == 36:
            sql, args = "SELECT * FROM runs WHERE runs.id = ?", [ref]
        else:
            sql, args = "SELECT * FROM runs WHERE runs.id LIKE ? LIMIT 2", [ref.replace("%", "") + "%"]
        rows = self._dicts(sql, args)
        if not rows:
            raise InputError(f"no run {ref!r} in store {self.url} (`fairmark runs` lists them)")
        if len(rows) > 1:
            raise InputError(f"run id prefix {ref!r} is ambiguous; give more characters")
        row = rows[0]
        row |= {k: _when(row[k]) for k in _RUN_DATES} | {k: _json(row[k]) for k in _RUN_JSON}
        row["accept_risk"] = _bool(row["accept_risk"])
        return RunRecord(**row)  # type: ignore[arg-type]

    def calibrations(self, host_id: str) -> dict[tuple[str, str], JSONObject]:
        rows = self.conn.execute(
            'SELECT "group", metric, data FROM calibrations WHERE host_id = ? ORDER BY id', [host_id]
        )
        return {(g, m): cast("JSONObject", _json(data)) for g, m, data in rows}

    def cells(self, run_id: str) -> list[CellRecord]:
        rows = self._dicts("SELECT * FROM cells WHERE run_id = ? ORDER BY id", [run_id])
        rows = [r | {k: _json(r[k]) for k in _CELL_JSON} for r in rows]
        return [CellRecord.from_row(cast("RowMapping", r)) for r in rows]

    def trials(self, run_id: str) -> list[TrialRecord]:
        """The run's trials in the order they ran."""
        names = ", ".join(f'"{c}"' for c in TRIAL_COLUMNS)
        rows = self.conn.execute(f"SELECT {names} FROM trials WHERE run_id = ? ORDER BY seq", [run_id])
        columns = [list(c) for c in zip(*rows.fetchall(), strict=True)] or [[] for _ in TRIAL_COLUMNS]
        convert: dict[str, Callable[[object], object]] = {
            "started_at": _when,
            "warmup": _bool,
            "profiled": _bool,
            "argv": _json,
        }
        for i, name in enumerate(TRIAL_COLUMNS):
            if name in convert:
                columns[i] = list(map(convert[name], columns[i]))
        return TrialRecord.from_columns(columns)

    def sample_values(self, run_id: str) -> dict[str, dict[str, float]]:
        """trial id → metric → value (`Store.sample_values`: its query, in the order the samples were stored)."""
        rows = self.conn.execute(
            "SELECT trial_id, metric, value FROM samples WHERE samples.cell_id IN "
            "(SELECT cells.id FROM cells WHERE cells.run_id = ?) AND samples.run_id = ? "
            "ORDER BY samples.cell_id, samples.id",
            [run_id, run_id],
        ).fetchall()
        trial_ids, metrics, values = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [])
        return values_by_trial(trial_ids, metrics, values)

    def findings(self, run_id: str) -> list[FindingRow]:
        sql = f"SELECT {', '.join(_FINDING)} FROM findings WHERE run_id = ? ORDER BY id"
        return [
            cast(FindingRow, dict(zip(_FINDING, r, strict=True))) for r in self.conn.execute(sql, [run_id])
        ]

    def artifacts(self, run_id: str, kind: str | None = None) -> list[ArtifactRow]:
        return list(self._artifacts(run_id, kind))

    def iter_artifacts(self, run_id: str, kind: str) -> Iterator[ArtifactRow]:
        """The run's artifacts of one kind, one row at a time."""
        return self._artifacts(run_id, kind)

    def _artifacts(self, run_id: str, kind: str | None) -> Iterator[ArtifactRow]:
        sql = f"SELECT {', '.join(_ARTIFACT)} FROM artifacts WHERE run_id = ?"
        args = [run_id]
        if kind:
            sql, args = sql + " AND kind = ?", [run_id, kind]
        for row in self.conn.execute(sql + " ORDER BY id", args):
            out = dict(zip(_ARTIFACT, row, strict=True))
            out["data"] = _json(out["data"])
            yield cast(ArtifactRow, out)


@contextlib.contextmanager
def opened(url: str) -> Iterator[SqliteRun | None]:
    """The store at `url` read directly, or None (not an SQLite file of this schema version: the full store)."""
    with readonly(url) as conn:
        yield SqliteRun(conn, url) if conn is not None else None
