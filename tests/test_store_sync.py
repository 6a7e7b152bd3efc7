"""The SQLite store's durability setting: WAL + synchronous=NORMAL by default (a commit survives a crash of
fairmark), FULL on request (a commit also survives a power cut), anything else refused with the name."""

from __future__ import annotations

import pytest

from fairmark.errors import StoreError
from fairmark.store.db import Store


def synchronous(store: Store) -> tuple[str, int]:
    with store.engine.connect() as conn:
        mode = conn.exec_driver_sql("PRAGMA journal_mode").scalar()
        return mode, conn.exec_driver_sql("PRAGMA synchronous").scalar()


def test_default_is_wal_with_synchronous_normal(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("FAIRMARK_STORE_SYNC", raising=False)
    assert synchronous(Store.open(str(tmp_path / "s.db"))) == ("wal", 1)


def test_strict_mode_fsyncs_every_commit(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FAIRMARK_STORE_SYNC", "full")
    assert synchronous(Store.open(str(tmp_path / "s.db"))) == ("wal", 2)


def test_an_unknown_mode_is_refused_naming_the_variable(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FAIRMARK_STORE_SYNC", "sometimes")
    with pytest.raises(StoreError, match="FAIRMARK_STORE_SYNC='sometimes': expected one of normal, full"):
        Store.open(str(tmp_path / "s.db"))
