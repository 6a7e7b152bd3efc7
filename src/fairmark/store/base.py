"""What a store needs before SQLAlchemy is imported: where it is, and which schema version this fairmark writes.
(`fairmark runs` on an SQLite store reads with the standard library alone: store/quick.py.)"""

from __future__ import annotations

import os
from pathlib import Path

SCHEMA_VERSION = 11  # store/schema.py: bumped with each appended migration


def default_url() -> str:
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{base / 'fairmark' / 'fairmark.db'}"


def normalize_url(url: str | None) -> str:
    if not url:
        return default_url()
    if "://" not in url:  # a plain path means an SQLite file
        return f"sqlite:///{Path(url).expanduser().resolve()}"
    if url.startswith("postgresql://"):
        return "postgresql+psycopg://" + url.removeprefix("postgresql://")
    return url
