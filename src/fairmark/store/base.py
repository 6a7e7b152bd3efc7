"""What a store needs before SQLAlchemy is imported: where it is, and which schema version this fairmark writes.
(`fairmark runs` on an SQLite store reads with the standard library alone: store/quick.py.)"""

from __future__ import annotations

import os
from pathlib import Path

SCHEMA_VERSION = 12  # store/schema.py: bumped with each appended migration

# The artifact kind of what a file-system tool's trial claims it read or written (Adapter.claimed_io), stored
# by the run (run.trials.trial) and held against the disks and the device by the report (report.pagecache).
CLAIMED_IO = "io.claimed"
# The artifact kind of a `loops = "auto"` cell's calibration (each calibration trial's loop count and wall time),
# stored by the run (run.trials.trial) with the cell's first trial and shown by the reports beside the cell's loop count.
LOOPS_CALIBRATION = "loops.calibration"
# The artifact kind of a finished `fairmark bisect`'s outcome (steps, answers, the first bad commit), stored with
# the bisect's first run by bisect.search and shown by report.publish; every step's run is tagged bisect.id.
BISECT_RESULT = "bisect.result"


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


# What a max_rss_kib stored before schema 9 is (TrialRecord.legacy_rss): said by history, reports and exports.
LEGACY_RSS = (
    "max_rss_kib was stored before fairmark measured the workload's own peak RSS: it is fairmark's own memory "
    "(the high-water mark fairmark's process handed to each trial), not the workload's"
)
