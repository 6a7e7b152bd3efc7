"""`fairmark runs` on an SQLite store with the standard library's sqlite3 alone.

Importing SQLAlchemy takes ~0.2 s here, most of a command that lists a few rows, so `runs` reads an SQLite store
of this fairmark's schema version directly and gives exactly the rows `Store.list_runs` gives (tested against it).
Anything else — no file yet, another schema version (the full store migrates it), PostgreSQL, an error — answers
None, and the caller opens the full store, which also words the errors.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from fairmark.store.base import SCHEMA_VERSION
from fairmark.store.owner import controller_gone

if (
    TYPE_CHECKING
):  # `fairmark runs` loads no more than it needs (tests/test_cli_imports.py): the rows are dicts
    from fairmark.store.records import RunListing

_RUNS = """
SELECT r.id, r.title, r.plan_path, r.started_at, r.ended_at, r.status, r.hostname, r.accept_risk, r.options,
       (SELECT count(*) FROM cells c WHERE c.run_id = r.id) AS cells,
       (SELECT count(*) FROM trials t WHERE t.run_id = r.id) AS trials,
       (SELECT count(*) FROM trials t WHERE t.run_id = r.id AND t.status = 'ok') AS trials_ok
FROM runs r {where} ORDER BY r.started_at DESC {limit}
"""
_TAGGED = "EXISTS (SELECT 1 FROM run_tags g WHERE g.run_id = r.id AND g.key = ? AND g.value = ?)"


def list_runs(
    url: str, limit: int = 50, *, host: str | None = None, tags: dict[str, str] | None = None
) -> list[RunListing] | None:
    """`Store.list_runs` of an SQLite store, or None (open the full store then)."""
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else ""
    if not path or path == ":memory:" or not Path(path).is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error:
        return None
    try:
        return _list_runs(conn, limit, host, tags or {})
    except (sqlite3.Error, ValueError):
        return None
    finally:
        conn.close()


def _list_runs(
    conn: sqlite3.Connection, limit: int, host: str | None, tags: dict[str, str]
) -> list[RunListing] | None:
    version = conn.execute("SELECT value FROM fairmark_meta WHERE key = 'schema_version'").fetchone()
    if version is None or int(version[0]) != SCHEMA_VERSION:
        return None
    where = ("WHERE " + " AND ".join([_TAGGED] * len(tags))) if tags else ""
    args: list[str | int] = [x for kv in tags.items() for x in kv]
    sql = _RUNS.format(where=where, limit="" if host else "LIMIT ?")
    found = conn.execute(sql, args if host else [*args, limit]).fetchall()
    all_tags: dict[str, dict[str, str]] = {row[0]: {} for row in found}
    ids = list(all_tags)
    for chunk in (
        ids[i : i + 500] for i in range(0, len(ids), 500)
    ):  # the listed runs' tags, not the table's
        marks = ", ".join("?" * len(chunk))
        for run_id, key, value in conn.execute(
            f"SELECT run_id, key, value FROM run_tags WHERE run_id IN ({marks})", chunk
        ):
            all_tags[run_id][key] = value
    rows: list[RunListing] = [
        {
            "id": run_id,
            "title": title,
            "plan_path": plan_path,
            "started_at": dt.datetime.fromisoformat(started_at),  # NOT NULL
            "ended_at": _datetime(ended_at),
            "status": status,
            "hostname": hostname,
            "accept_risk": bool(accept_risk),
            "cells": cells,
            "trials": trials,
            "trials_ok": trials_ok,
            "hosts": sorted((json.loads(options or "null") or {}).get("hosts") or {}),
            "tags": all_tags[run_id],
            "controller_gone": controller_gone(status, json.loads(options or "null")),
        }
        for (
            run_id,
            title,
            plan_path,
            started_at,
            ended_at,
            status,
            hostname,
            accept_risk,
            options,
            cells,
            trials,
            trials_ok,
        ) in found
    ]
    return [r for r in rows if host is None or host in r["hosts"]][:limit]


def _datetime(text: str | None) -> dt.datetime | None:
    """SQLAlchemy's SQLite DateTime text ("2026-11-23 23:37:04.123456") as the naive datetime it reads back."""
    return None if text is None else dt.datetime.fromisoformat(text)
