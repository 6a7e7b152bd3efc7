"""Store schema (SQLAlchemy Core), one version number, and forward migrations.

Every row knows its run; samples know their trial and cell, so nothing assumes one host or one store file.
Add a migration by appending to MIGRATIONS and bumping SCHEMA_VERSION (store/base.py); never edit a released step.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

from fairmark.store.base import BISECT_RESULT as BISECT_RESULT
from fairmark.store.base import CLAIMED_IO as CLAIMED_IO
from fairmark.store.base import LOOPS_CALIBRATION as LOOPS_CALIBRATION
from fairmark.store.base import SCHEMA_VERSION as SCHEMA_VERSION  # lives there: readable without SQLAlchemy
from fairmark.store.sums import create_triggers, write_ended

metadata = sa.MetaData()

meta = sa.Table(
    "fairmark_meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),  # UUID
    sa.Column("plan_path", sa.Text, nullable=False),
    sa.Column("plan_text", sa.Text, nullable=False),
    sa.Column("plan_sha256", sa.String(64), nullable=False),
    sa.Column("title", sa.Text, nullable=False, default=""),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("host_id", sa.String(64), nullable=False, default=""),
    sa.Column("hostname", sa.Text, nullable=False, default=""),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("ended_at", sa.DateTime(timezone=True)),
    sa.Column("status", sa.String(16), nullable=False),  # running, done, interrupted, failed
    sa.Column("command_line", sa.Text, nullable=False, default=""),
    sa.Column("fairmark_version", sa.String(32), nullable=False),
    sa.Column("accept_risk", sa.Boolean, nullable=False, default=False),
    sa.Column("options", sa.JSON, nullable=False, default=dict),
    sa.Column("env_before", sa.JSON),
    sa.Column("env_after", sa.JSON),
    sa.Column("notes", sa.JSON, nullable=False, default=list),
)

cells = sa.Table(
    "cells",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("key", sa.Text, nullable=False),
    sa.Column("workload", sa.Text, nullable=False),
    sa.Column("variant", sa.Text, nullable=False),
    sa.Column("point", sa.JSON, nullable=False, default=list),  # [[param, value], ...]
    sa.Column("primary_metric", sa.Text, nullable=False),
    sa.Column("metrics", sa.JSON, nullable=False, default=list),  # [{name, unit, better}]
    sa.Column("status", sa.String(16), nullable=False, default="active"),  # active, done, abandoned
    sa.Column("stop_reason", sa.Text),
    sa.Column("command", sa.JSON),  # argv as run (for the report's "how to reproduce")
    sa.Column("params", sa.JSON),  # a tool cell's resolved parameters (defaults ⊕ plan ⊕ variant ⊕ sweep)
    sa.Column("labels", sa.JSON),  # what a report must state beside the numbers (e.g. PostgreSQL fsync)
    sa.Column(
        "loops", sa.BigInteger
    ),  # the loop count each trial was handed (a workload's `loops`), else NULL
    sa.UniqueConstraint("run_id", "key"),
)

trials = sa.Table(
    "trials",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("cell_id", sa.Integer, sa.ForeignKey("cells.id", ondelete="CASCADE"), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),  # global order in the run
    sa.Column("round", sa.Integer, nullable=False),  # warm-up rounds are negative
    sa.Column("warmup", sa.Boolean, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # ok, failed, timeout
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("wall_s", sa.Float),
    sa.Column("user_s", sa.Float),
    sa.Column("sys_s", sa.Float),
    sa.Column("max_rss_kib", sa.BigInteger),
    # how max_rss_kib was measured ("launcher": the workload's own peak); NULL on trials stored before v9, whose
    # peak was fairmark's own memory (records.TrialRecord.legacy_rss): history leaves them out, exports say so
    sa.Column("max_rss_method", sa.String(16)),
    sa.Column("exit_code", sa.Integer),
    sa.Column("signal", sa.Integer),
    sa.Column("error", sa.Text),
    sa.Column("stdout_tail", sa.Text, nullable=False, default=""),
    sa.Column("stderr_tail", sa.Text, nullable=False, default=""),
    sa.Column("argv", sa.JSON),
    sa.Column("host", sa.Text),  # the [hosts.NAME] the trial ran on; None: the controller itself
    sa.Column("boot_id", sa.Text),  # that host's boot (Linux boot_id, FreeBSD kern.boottime)
    # an extra trial with profilers attached (--profile): kept apart, never in statistics (warmup is true too)
    sa.Column("profiled", sa.Boolean, nullable=False, default=False),
    sa.Index("ix_trials_run_cell", "run_id", "cell_id"),
)

samples = sa.Table(
    "samples",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("cell_id", sa.Integer, sa.ForeignKey("cells.id", ondelete="CASCADE"), nullable=False),
    sa.Column("trial_id", sa.String(36), sa.ForeignKey("trials.id", ondelete="CASCADE"), nullable=False),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("value", sa.Float, nullable=False),
    sa.Column("unit", sa.Text, nullable=False, default=""),
    sa.Column("better", sa.String(8), nullable=False),
    # Samples are found by their cell (v11): a run's through its cells (cells.run_id), a history's through the
    # workload's cells. A trial's samples land at the end of one leaf of this index; the (cell_id, metric) index
    # it replaces put a trial of five metrics into five leaves, and (run_id, cell_id) repeated the 36 characters of
    # the run id in every entry: together two thirds of the pages a trial's commit wrote (13 to ~6; the WAL frames
    # of `Store.add_trial`, counted per b-tree).
    sa.Index("ix_samples_cell", "cell_id"),
)

findings = sa.Table(
    "findings",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("phase", sa.String(16), nullable=False),  # before, between, after
    sa.Column("finding_id", sa.Text, nullable=False),
    sa.Column("severity", sa.String(8), nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("evidence", sa.Text, nullable=False, default=""),
    sa.Column("why", sa.Text, nullable=False, default=""),
    sa.Column("fix", sa.Text, nullable=False, default=""),
    sa.Index("ix_findings_run", "run_id"),
)

# Verdicts were stored with each run until schema 8 (issue 22): written by every run and read by no product code,
# and a stale copy once the verdict rule changes. They are computed from the stored samples (fairmark.verdict);
# the table exists only for the migrations that knew it (v7 indexed it, v8 drops it).
_legacy = sa.MetaData()
_verdicts_v7 = sa.Table(
    "verdicts",
    _legacy,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(36), nullable=False),
    sa.Index("ix_verdicts_run", "run_id"),
)

artifacts = sa.Table(
    "artifacts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("trial_id", sa.String(36)),
    sa.Column("cell_key", sa.Text),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("content_type", sa.String(64), nullable=False),
    sa.Column("data", sa.JSON),  # JSON documents
    sa.Column("text", sa.Text),  # everything else (SVG, folded stacks, tables)
    sa.Index("ix_artifacts_run", "run_id", "kind"),
)
# The artifact kinds live in store/base.py (readable without SQLAlchemy: `show` on SQLite, store/quickrun.py).


calibrations = sa.Table(
    "calibrations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("host_id", sa.Text, nullable=False),
    sa.Column("hostname", sa.Text, nullable=False, default=""),
    sa.Column("workload", sa.Text, nullable=False),
    sa.Column("group", sa.Text, nullable=False),  # workload[sweep point]
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("plan_path", sa.Text, nullable=False, default=""),
    sa.Column("confidence", sa.Float, nullable=False),
    sa.Column("runs", sa.Integer, nullable=False),  # A/A runs measured
    sa.Column("false_positives", sa.Integer, nullable=False),
    sa.Column(
        "data", sa.JSON, nullable=False
    ),  # rate, its CI, MDE, trial counts, run ids (stats.calibration)
    sa.Index("ix_calibrations_host", "host_id", "workload"),
)


run_tags = sa.Table(
    "run_tags",
    metadata,
    sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("key", sa.String(128), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    sa.Index("ix_run_tags_key_value", "key", "value"),
)

# What `fairmark history` reads of a cell of an ended run instead of its samples (store/sums.py: when it is written,
# and the triggers that delete it when the cell's trials or samples change). SQLite stores only: PostgreSQL's stays
# empty. `sums` is a JSON document: {"points": [[host, metric, unit, better, n, mean, mean_sq], ...],
# "legacy_rss": [host, ...], "metrics": [name, ...]}.
cell_sums = sa.Table(
    "cell_sums",
    metadata,
    sa.Column("cell_id", sa.Integer, sa.ForeignKey("cells.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("sums", sa.Text, nullable=False),
)

# what `fairmark history` reads: a workload's cells, then their samples by cell (and metric until v11)
_HISTORY_INDEXES = (
    sa.Index("ix_cells_workload", cells.c.workload),
    sa.Index("ix_runs_started", runs.c.started_at),
)
# The samples' indexes before v11, for the migrations that made them (v6 its (cell_id, metric) one).
_samples_v10 = sa.Table(
    "samples",
    _legacy,
    sa.Column("run_id", sa.String(36)),
    sa.Column("cell_id", sa.Integer),
    sa.Column("metric", sa.Text),
    sa.Index("ix_samples_run", "run_id", "cell_id"),
    sa.Index("ix_samples_cell_metric", "cell_id", "metric"),
)


def _v2_cell_params(conn: sa.Connection) -> None:
    """v2: cells record their tool parameters and report labels."""
    for column in ("params", "labels"):
        conn.execute(sa.text(f"ALTER TABLE cells ADD COLUMN {column} JSON"))


def _v3_trial_host(conn: sa.Connection) -> None:
    """v3: trials record the host they ran on and its boot."""
    have = {c["name"] for c in sa.inspect(conn).get_columns("trials")}
    for column in ("host", "boot_id"):
        if column not in have:
            conn.execute(sa.text(f"ALTER TABLE trials ADD COLUMN {column} TEXT"))


def _v4_calibrations(conn: sa.Connection) -> None:
    """v4: A/A calibrations per host and workload (`fairmark calibrate`)."""
    metadata.create_all(conn, tables=[calibrations])


def _v5_trial_profiled(conn: sa.Connection) -> None:
    """v5: trials with profilers attached are extra trials, flagged apart from the measured ones."""
    have = {c["name"] for c in sa.inspect(conn).get_columns("trials")}
    if "profiled" not in have:
        conn.execute(sa.text("ALTER TABLE trials ADD COLUMN profiled BOOLEAN NOT NULL DEFAULT FALSE"))


def _v6_tags_history(conn: sa.Connection) -> None:
    """v6: runs carry tags (`run --tag k=v`), and indexes for `fairmark history`."""
    metadata.create_all(conn, tables=[run_tags])
    v6 = next(i for i in _samples_v10.indexes if i.name == "ix_samples_cell_metric")
    for index in (*_HISTORY_INDEXES, v6):
        index.create(conn, checkfirst=True)


def _v7_run_indexes(conn: sa.Connection) -> None:
    """v7: a run's findings and verdicts by index (a report of one run read every finding of the store: 7 ms a
    run in a store of 10 000 runs, the larger part of a published site's run pages)."""
    have = set(sa.inspect(conn).get_table_names())
    for table, name in ((findings, "ix_findings_run"), (_verdicts_v7, "ix_verdicts_run")):
        if table.name in have:  # (a store made after v8 never had the verdicts table)
            next(i for i in table.indexes if i.name == name).create(conn, checkfirst=True)


def _v8_no_stored_verdicts(conn: sa.Connection) -> None:
    """v8: verdicts are not stored: every reader computes them from the samples with the rule of its fairmark."""
    conn.execute(sa.text("DROP TABLE IF EXISTS verdicts"))


def _v9_trial_rss_method(conn: sa.Connection) -> None:
    """v9: a trial says how its peak RSS was measured. Every trial stored before has none: its max_rss_kib was
    the high-water mark fairmark's own process handed to the trial's (issue 25), and stays marked by that."""
    have = {c["name"] for c in sa.inspect(conn).get_columns("trials")}
    if "max_rss_method" not in have:
        conn.execute(sa.text("ALTER TABLE trials ADD COLUMN max_rss_method VARCHAR(16)"))


def _v10_cell_loops(conn: sa.Connection) -> None:
    """v10: a cell of a workload with `loops` records the loop count its trials were handed (issue 24)."""
    have = {c["name"] for c in sa.inspect(conn).get_columns("cells")}
    if "loops" not in have:
        conn.execute(sa.text("ALTER TABLE cells ADD COLUMN loops BIGINT"))


def _v11_samples_by_cell(conn: sa.Connection) -> None:
    """v11: samples are indexed by their cell alone (the comment at `samples` says why); the run's and the
    (cell, metric) indexes go."""
    for index in _samples_v10.indexes:
        index.drop(conn, checkfirst=True)
    next(i for i in samples.indexes if i.name == "ix_samples_cell").create(conn, checkfirst=True)


def _v12_cell_sums(conn: sa.Connection) -> None:
    """v12: an ended run's cells are summed for `history` (store/sums.py); the runs stored before are summed now."""
    metadata.create_all(conn, tables=[cell_sums])
    create_triggers(conn)
    write_ended(conn)


# version → function(connection) that upgrades from version-1 to version
MIGRATIONS: dict[int, Callable[[sa.Connection], None]] = {
    2: _v2_cell_params,
    3: _v3_trial_host,
    4: _v4_calibrations,
    5: _v5_trial_profiled,
    6: _v6_tags_history,
    7: _v7_run_indexes,
    8: _v8_no_stored_verdicts,
    9: _v9_trial_rss_method,
    10: _v10_cell_loops,
    11: _v11_samples_by_cell,
    12: _v12_cell_sums,
}
