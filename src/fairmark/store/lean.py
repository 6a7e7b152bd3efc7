"""The per-trial write on a SQLite store without SQLAlchemy's per-statement machinery.

Every finished trial is one transaction (the trial, its samples, its artifacts). Through `Connection.execute`
that transaction spent most of its time in SQLAlchemy (cache keys, parameter construction, execution contexts,
pool checkout) rather than in SQLite — about as much as starting the trial's process (py-spy of 1000 trials of
`true`; bench/harness_cost.py measures the whole). Here the same INSERTs run on the sqlite3 connection itself,
with each value converted by SQLAlchemy's own bind processor for its column type (JSON, DateTime, Boolean), so
the rows are exactly those SQLAlchemy would have written and every reader sees them alike. Errors are mapped as
the engine's `handle_error` maps them (full, read-only, corrupted: `StoreFailed`, exit 3); any other error is
raised as it is.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import TypeAlias

import sqlalchemy as sa
from sqlalchemy.sql.schema import ScalarElementColumnDefault

from fairmark.errors import StoreFailed

# A table, the keys of its rows (in the order of each row's values), and the rows' values as the records hold
# them: converted here, by the bind processor of each column's type.
Rows: TypeAlias = tuple[sa.Table, tuple[str, ...], Sequence[Sequence[object]]]
_Bind: TypeAlias = Callable[[object], object]  # SQLAlchemy's conversion of a value for its column type
# An INSERT compiled for one table and set of keys: its SQL and the conversion of a row's values into its
# parameters (each value by its column's bind processor, then the scalar defaults of the columns left out).
_Insert: TypeAlias = tuple[str, Callable[[Sequence[object]], Sequence[object]]]

# Frames the trial writer's WAL collects before SQLite checkpoints it into the database (its default: 1000). A
# checkpoint fsyncs the WAL and the database file; a trial of `true` wrote ~13 frames (its row, five samples and
# their indexes; ~6.3 since schema 11), so the default checkpointed every ~80 trials, and those fsyncs took
# ~0.1-0.2 ms of each trial's wall time here (strace -T). At 4000 (16 MiB of WAL) a page changed by many trials
# is copied once per checkpoint, and the fsyncs come four times less often. A commit survives a crash of fairmark
# either way (synchronous=NORMAL); what a power cut can lose is what was committed since the last checkpoint.
WAL_AUTOCHECKPOINT = 4000

# Incremented in a forked child: a connection held before the fork is the parent's, never used by the child.
_forks = 0


def _forked() -> None:
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_forked)


class SqliteInserts:
    def __init__(
        self, engine: sa.Engine, url: str, failure: Callable[[str, BaseException], StoreFailed | None]
    ):
        self.engine, self.url, self.failure = engine, url, failure
        self._statements: dict[tuple[str, tuple[str, ...]], _Insert] = {}
        self._held = threading.local()

    def _connection(self) -> tuple[sqlite3.Connection, sqlite3.Cursor]:
        """The sqlite3 connection this thread writes on, and a cursor of it, taken from the pool once and kept:
        a checkout and return per trial (the pool's reset on return is a ROLLBACK) cost a third of the trial's
        write, and a new cursor per statement a few percent more. Kept per thread (sqlite3 connections stay on
        theirs) and per process (one inherited through fork is the parent's: never used here)."""
        held: tuple[int, object, sqlite3.Connection, sqlite3.Cursor] | None = getattr(self._held, "raw", None)
        if held is None or held[0] != _forks:
            raw = self.engine.raw_connection()
            conn = raw.driver_connection
            assert isinstance(conn, sqlite3.Connection)
            conn.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT}")
            held = self._held.raw = (_forks, raw, conn, conn.cursor())
        return held[2], held[3]

    def _statement(self, table: sa.Table, keys: tuple[str, ...]) -> _Insert:
        """INSERT of the given columns plus those with a scalar default the row leaves out (as SQLAlchemy's
        insert does); compiled once per table and set of keys."""
        found = self._statements.get((table.name, keys))
        if found is None:
            found = self._statements[(table.name, keys)] = _compile(self.engine.dialect, table, keys)
        return found

    def insert(self, rows_by_table: Sequence[Rows]) -> None:
        """All rows in one transaction: committed together, or none of them."""
        conn, cur = self._connection()
        try:
            for table, keys, rows in rows_by_table:
                if not rows:
                    continue
                sql, convert = self._statement(table, keys)
                if len(rows) == 1:
                    cur.execute(sql, convert(rows[0]))
                else:
                    cur.executemany(sql, [convert(row) for row in rows])
            conn.commit()
        except sqlite3.Error as exc:
            conn.rollback()
            failure = self.failure(self.url, exc)
            if failure is None:
                raise  # not the environment's doing (a constraint broken): a bug to show as it is
            raise failure from exc


def _compile(dialect: sa.Dialect, table: sa.Table, keys: tuple[str, ...]) -> _Insert:
    defaults = [
        c.key for c in table.columns if c.key not in keys and c.default is not None and c.default.is_scalar
    ]
    quote = dialect.identifier_preparer.quote
    names = [*keys, *defaults]
    sql = (
        f"INSERT INTO {quote(table.name)} ({', '.join(quote(table.c[k].name) for k in names)}) "
        f"VALUES ({', '.join('?' * len(names))})"
    )

    def bind(key: str) -> _Bind | None:
        proc = table.c[key].type.dialect_impl(dialect).bind_processor(dialect)
        return _remembering(proc) if proc and isinstance(table.c[key].type, sa.JSON) else proc

    fixed = []
    for key in defaults:
        proc, value = bind(key), _scalar_default(table.c[key])
        fixed.append(proc(value) if proc is not None else value)
    binds = tuple((i, proc) for i, proc in enumerate(map(bind, keys)) if proc is not None)
    tail = tuple(fixed)
    # A row whose only converted value is a float column's float (a sample's value) is its own parameters:
    # SQLAlchemy's conversion of a float to a float gives the float itself.
    only_float = binds[0][0] if len(binds) == 1 and not tail and _keeps_floats(binds[0][1]) else -1

    def convert(values: Sequence[object]) -> Sequence[object]:
        if only_float >= 0 and type(values[only_float]) is float:
            return values
        out = list(values)
        for i, proc in binds:
            out[i] = proc(out[i])
        if tail:
            out.extend(tail)
        return out

    return sql, convert


def _keeps_floats(proc: _Bind) -> bool:
    """Whether a conversion gives a float itself back (SQLAlchemy's Float: float(value))."""
    return all(proc(x) is x for x in (0.1, -2.5e-300, float("inf")))


def _remembering(proc: _Bind) -> _Bind:
    """A JSON column's conversion that remembers what a short list (or tuple: JSON has only arrays) of strings
    became: a trial's argv is the same at every trial of its cell, and json.dumps of it was ~5% of the Python time
    of a trial of `true` (py-spy). Anything else is converted each time; the text is the conversion's own either
    way."""
    memo: dict[tuple[str, ...], object] = {}

    def convert(value: object) -> object:
        if type(value) is tuple:  # remembered as it is (only tuples of strings are)
            try:
                found = memo.get(value)
            except TypeError:  # (a tuple of lists cannot be a key)
                found = None
            if found is not None:
                return found
        if not isinstance(value, list | tuple) or len(value) > 64 or not all(type(v) is str for v in value):
            return proc(value)
        key = tuple(value)
        found = memo.get(key)
        if found is None:
            found = proc(value)
            if len(memo) < 1024:
                memo[key] = found
        return found

    return convert


def _scalar_default(column: sa.Column[object]) -> object:
    """The value of a column's scalar default (`_statement` adds only columns that have one)."""
    assert isinstance(column.default, ScalarElementColumnDefault)
    return column.default.arg
