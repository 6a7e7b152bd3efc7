"""An SQLite store of this fairmark's schema version opened read-only with the standard library's sqlite3: what
the readers without SQLAlchemy share (`history`: store/quickhistory.py, `show`: store/quickrun.py)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from fairmark.store.base import SCHEMA_VERSION


@contextlib.contextmanager
def readonly(url: str) -> Iterator[sqlite3.Connection | None]:
    """The store at `url`, read-only, or None when it is not an SQLite file of this schema version (no file yet,
    in memory, another version the full store migrates, PostgreSQL, an error): the caller opens the full store."""
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else ""
    if not path or path == ":memory:" or not Path(path).is_file():
        yield None
        return
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error:
        yield None
        return
    try:
        try:
            version = conn.execute("SELECT value FROM fairmark_meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.Error:
            version = None
        yield conn if version is not None and int(version[0]) == SCHEMA_VERSION else None
    finally:
        conn.close()
