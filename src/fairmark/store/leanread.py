"""A run's trials and samples read from an SQLite store without SQLAlchemy's per-row machinery.

The end of a run reads every trial and sample of it once (its verdicts, its report, its --json document).
Through `Connection.execute` every row went through SQLAlchemy's result machinery (a Row and a RowMapping per
row, a dict and a keyword call per record): at 2000 trials of `true` the two reads took ~40 µs a trial, a third
of what the end of the run costs per trial (bench/trial_cpu.py). Here the SELECT that SQLAlchemy compiles for the
SQLite dialect runs on the sqlite3 connection itself, and each column is converted by SQLAlchemy's own result
processor for its type (DateTime, JSON, Boolean) — a column at a time — so the values are exactly those a
SQLAlchemy read gives (tests/test_store_leanread.py). Errors are mapped as the engine's `handle_error` maps them
(full, read-only, corrupted: `StoreFailed`); any other is raised as it is.
"""

from __future__ import annotations

import contextlib
import gc
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from typing import TypeAlias

import sqlalchemy as sa

from fairmark.errors import StoreFailed

_Convert: TypeAlias = Callable[[object], object]  # SQLAlchemy's result processor of a column's type
# A SELECT compiled once: its SQL, the names of its parameters in order, and each column's processor (None: the
# value as sqlite3 gives it).
_Compiled: TypeAlias = tuple[str, tuple[str, ...], tuple[_Convert | None, ...]]


class SqliteSelects:
    def __init__(
        self, engine: sa.Engine, url: str, failure: Callable[[str, BaseException], StoreFailed | None]
    ):
        self.engine, self.url, self.failure = engine, url, failure
        self._compiled: dict[str, _Compiled] = {}

    def _compile(self, name: str, stmt: sa.Select[*tuple[object, ...]]) -> _Compiled:
        found = self._compiled.get(name)
        if found is None:
            dialect = self.engine.dialect
            compiled = stmt.compile(dialect=dialect)
            procs = tuple(
                _remembering(proc) if proc is not None and isinstance(c.type, sa.JSON) else proc
                for c in stmt.selected_columns
                for proc in [c.type.dialect_impl(dialect).result_processor(dialect, None)]
            )
            found = self._compiled[name] = (str(compiled), tuple(compiled.positiontup or ()), procs)
        return found

    def columns(
        self, name: str, stmt: sa.Select[*tuple[object, ...]], params: Mapping[str, object]
    ) -> list[list[object]]:
        """The result of `stmt` (compiled once under `name`; its parameters bound by name, none converted) as
        one list per selected column, each value converted as SQLAlchemy converts it."""
        sql, names, procs = self._compile(name, stmt)
        raw = self.engine.raw_connection()  # the pool's connection, given back as SQLAlchemy gives it back
        try:
            conn = raw.driver_connection
            assert isinstance(conn, sqlite3.Connection)
            rows = conn.execute(sql, tuple(params[n] for n in names)).fetchall()
        except sqlite3.Error as exc:
            failure = self.failure(self.url, exc)
            if failure is None:
                raise
            raise failure from exc
        finally:
            with contextlib.suppress(sqlite3.Error):
                raw.close()
        columns: list[list[object]] = [list(c) for c in zip(*rows, strict=True)] or [[] for _ in procs]
        for i, proc in enumerate(procs):
            if proc is not None:
                columns[i] = list(map(proc, columns[i]))
        return columns


def _remembering(proc: _Convert) -> _Convert:
    """A JSON column's conversion that remembers what a text became when it is a short list of strings: every
    trial of a cell has the same argv, and json.loads of it was a tenth of the trials' read. A copy each time (the
    reader may change its list); anything else is converted each time."""
    memo: dict[str, list[str]] = {}

    def convert(text: object) -> object:
        found = memo.get(text) if type(text) is str else None
        if found is not None:
            return found.copy()
        value = proc(text)
        if (
            type(value) is list
            and len(value) <= 64
            and all(type(v) is str for v in value)
            and len(memo) < 1024
        ):
            memo[text] = value.copy()  # type: ignore[index]
        return value

    return convert


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a run's rows become records: they hold no cycles, and the collector's
    passes over the objects made so far (one every 700 allocations) were ~1.5 µs a trial of the two reads of a
    2000-trial run. As it was after (a collector already off stays off)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
