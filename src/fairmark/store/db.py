"""The store: SQLite by default (WAL, busy timeout), PostgreSQL with the same code. Every finished trial is
committed at once, so `kill -9` loses at most the trial that was running."""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import math
import os
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import sqlalchemy as sa

from fairmark.errors import InputError, StoreError, StoreFailed
from fairmark.store import schema as S
from fairmark.store.base import normalize_url as normalize_url  # where callers have imported it from
from fairmark.store.lean import SqliteInserts
from fairmark.store.leanread import SqliteSelects, collector_paused
from fairmark.store.owner import controller_gone
from fairmark.store.records import (
    SAMPLE_COLUMNS,
    TRIAL_COLUMNS,
    ArtifactRow,
    CellRecord,
    FindingRow,
    RunListing,
    Sample,
    TrialRecord,
    sample_row_values,
    values_by_trial,
)
from fairmark.store.records import RunRecord as RunRecord  # where callers have imported it from
from fairmark.store.records import jsonable_row as jsonable_row
from fairmark.store.sums import create_triggers
from fairmark.store.sums import write as write_sums

if TYPE_CHECKING:
    from sqlalchemy.engine.interfaces import DBAPIConnection, ExceptionContext
    from sqlalchemy.pool import ConnectionPoolEntry

    from fairmark.jsonvalue import JSONObject, JSONValue
    from fairmark.store.lean import Rows, SqliteInserts
    from fairmark.store.leanread import SqliteSelects


_FLOAT = "__float__"  # {"__float__": "nan"}: a non-finite float inside a PostgreSQL JSON value


def _encode_floats(obj: object) -> object:
    if isinstance(obj, float) and not math.isfinite(obj):
        return {_FLOAT: repr(obj)}
    if isinstance(obj, dict):
        return {k: _encode_floats(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_encode_floats(v) for v in obj]
    return obj


def pg_json_dumps(obj: object) -> str:
    """PostgreSQL's json type refuses NaN and Infinity (a verdict's undefined CI bound is NaN): they are stored
    as {"__float__": "nan"} and read back as floats, so both stores give readers the same values."""
    return json.dumps(_encode_floats(obj), allow_nan=False)


def pg_json_loads(text: str | bytes) -> JSONValue:
    value: JSONValue = json.loads(text, object_hook=_decode_float)
    return value


def _decode_float(d: dict[str, JSONValue]) -> JSONValue:
    return float(str(d[_FLOAT])) if d.keys() == {_FLOAT} else d


SYNC_MODES = ("normal", "full")
RECONNECT_S = 60.0  # how long a write waits for a PostgreSQL store that restarts


def sqlite_sync() -> str:
    """SQLite's `synchronous` for the store. NORMAL (the default): in WAL mode a commit is durable against a
    crash or kill -9 of fairmark, but a power cut or kernel crash can lose the last commits since the last
    WAL checkpoint (the file stays consistent). FULL (`FAIRMARK_STORE_SYNC=full`) fsyncs every commit, so a
    power cut loses at most the trial that was running, at ~0.5 ms more per trial."""
    mode = os.environ.get("FAIRMARK_STORE_SYNC", "normal").strip().lower() or "normal"
    if mode not in SYNC_MODES:
        raise StoreError(f"FAIRMARK_STORE_SYNC={mode!r}: expected one of {', '.join(SYNC_MODES)}")
    return mode.upper()


_FULL = ("database or disk is full", "disk i/o error")
_READONLY = ("readonly database", "unable to open database file", "read-only file system")
_CORRUPT = ("malformed", "file is not a database", "not a database")


def sqlite_failure(url: str, exc: BaseException) -> StoreFailed | None:
    """A store failure in words that name the store and what the user can do (None: not one of those)."""
    path = url.split("///", 1)[-1]
    msg = str(exc).lower()
    resume = "the trials committed before are kept; `fairmark resume RUN` continues once it is fixed"
    if any(m in msg for m in _FULL):
        return StoreFailed(f"store {path}: cannot write, the file system is full ({exc}); {resume}")
    if any(m in msg for m in _READONLY):
        return StoreFailed(f"store {path}: cannot write, it is read-only or not reachable ({exc}); {resume}")
    if any(m in msg for m in _CORRUPT):
        return StoreFailed(
            f"store {path} is corrupted ({exc}); PRAGMA integrity_check says: {integrity_check(path)}",
            hint="restore it from a copy, or export what still reads (`sqlite3 FILE .recover`)",
        )
    return None


def integrity_check(path: str) -> str:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as conn:
            rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchmany(5)]
    except sqlite3.Error as exc:
        return f"cannot run it ({exc})"
    return "; ".join(rows) or "nothing"


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _dicts(result: sa.CursorResult[*tuple[object, ...]]) -> list[dict[str, object]]:
    """The rows as dicts: the column names once, zipped with each row (a third faster than `.mappings()`, which
    builds a mapping object per row; a report reads every sample of a run)."""
    keys = list(result.keys())
    return [dict(zip(keys, row, strict=True)) for row in result]


class Store:
    def __init__(self, engine: sa.Engine, url: str):
        self.engine, self.url = engine, url
        self._lean: SqliteInserts | None = None
        self._selects: SqliteSelects | None = None
        if url.startswith("sqlite"):
            self._lean = SqliteInserts(engine, url, sqlite_failure)
            self._selects = SqliteSelects(engine, url, sqlite_failure)

    @classmethod
    def open(cls, url: str | None = None) -> Store:
        url = normalize_url(url)
        kwargs: dict[str, object] = {}
        if url.startswith("sqlite"):
            path = url.split("///", 1)[1] if "///" in url else ""
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"timeout": 30}
        else:
            kwargs["pool_pre_ping"] = True  # a restarted server's dead connections are replaced at checkout
            kwargs |= {"json_serializer": pg_json_dumps, "json_deserializer": pg_json_loads}
        try:
            engine = sa.create_engine(url, future=True, **kwargs)
        except (sa.exc.ArgumentError, ImportError) as exc:
            raise StoreError(f"cannot use store {url!r}: {exc}") from None
        if url.startswith("sqlite"):
            sync = sqlite_sync()

            @sa.event.listens_for(engine, "connect")
            def _pragmas(dbapi_conn: DBAPIConnection, _: ConnectionPoolEntry) -> None:
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute(f"PRAGMA synchronous={sync}")
                cur.execute("PRAGMA busy_timeout=30000")
                cur.execute("PRAGMA foreign_keys=ON")
                cur.close()

            @sa.event.listens_for(engine, "handle_error")
            def _failed(ctx: ExceptionContext) -> None:
                failure = sqlite_failure(url, ctx.original_exception)
                if failure is not None:
                    raise failure

        else:

            @sa.event.listens_for(engine, "handle_error")
            def _lost(ctx: ExceptionContext) -> None:
                # a pre-ping failing, or a connect refused, is retried by _connect; this is a connection
                # lost in the middle of a statement or commit
                if ctx.is_disconnect and not ctx.is_pre_ping and ctx.connection is not None:
                    raise StoreFailed(
                        f"store {sa.engine.make_url(url).render_as_string(hide_password=True)}: the connection "
                        f"to the database server was lost ({str(ctx.original_exception).strip()}); trials "
                        "committed before are kept; `fairmark resume RUN` continues"
                    )

        store = cls(engine, url)
        store._migrate()
        return store

    @contextlib.contextmanager
    def _begin(self) -> Iterator[sa.Connection]:
        """One write transaction, on a connection that works: a PostgreSQL server restarted between two
        commits (pre-ping notices) is waited for up to RECONNECT_S; one lost during a commit stops the run
        cleanly (StoreFailed, exit 3) — what was committed is kept and `fairmark resume` continues."""
        with self._connect() as conn, conn.begin():
            yield conn

    def _connect(self) -> sa.Connection:
        deadline = time.monotonic() + RECONNECT_S
        while True:
            try:
                return self.engine.connect()
            except sa.exc.OperationalError as exc:
                if self.url.startswith("sqlite"):
                    raise
                if time.monotonic() > deadline:
                    raise StoreFailed(
                        f"store {self.safe_url}: the database server did not answer for {RECONNECT_S:g} s "
                        f"({str(exc.orig).strip()}); trials committed before are kept; `fairmark resume RUN` "
                        "continues"
                    ) from None
                time.sleep(0.5)

    @property
    def safe_url(self) -> str:
        return sa.engine.make_url(self.url).render_as_string(hide_password=True)

    def _migrate(self) -> None:
        # Two processes opening a fresh SQLite store at once can both find no table and both create it: the
        # loser's CREATE TABLE fails with "already exists" once the winner committed; it then opens the store
        # the winner made (PostgreSQL takes an advisory lock instead).
        # The same race can end at the version row instead: both saw none, the winner inserted it, and the
        # loser's insert breaks its unique key (a fresh-clone test run hit it once in six). Or the loser's read
        # transaction cannot become a write while the winner writes: SQLite answers "database is locked" at once,
        # without waiting out the busy timeout (tests/test_store_concurrency.py hit it once in four).
        races = ("already exists", "UNIQUE constraint failed: fairmark_meta", "database is locked")
        for attempt in range(5):
            try:
                return self._migrate_once()
            except (sa.exc.OperationalError, sa.exc.IntegrityError) as exc:
                why = str(exc.orig)
                lost = any(r in why for r in races)
                if not lost or attempt == 4:
                    raise StoreError(f"cannot open store {self.url}: {exc.orig}") from None
                time.sleep(0.1 * (attempt + 1))

    def _migrate_once(self) -> None:
        with self._begin() as conn:
            if conn.dialect.name == "postgresql":  # concurrent first opens would race on CREATE TABLE
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(7274001)"))
            S.metadata.create_all(conn, tables=[S.meta])
            row = conn.execute(sa.select(S.meta.c.value).where(S.meta.c.key == "schema_version")).first()
            if row is None:
                S.metadata.create_all(conn)
                create_triggers(conn)
                conn.execute(sa.insert(S.meta).values(key="schema_version", value=str(S.SCHEMA_VERSION)))
                return
            version = int(row[0])
            if version > S.SCHEMA_VERSION:
                raise StoreError(
                    f"store schema version {version} is newer than this fairmark "
                    f"({S.SCHEMA_VERSION}); upgrade fairmark"
                )
            for v in range(version + 1, S.SCHEMA_VERSION + 1):
                S.MIGRATIONS[v](conn)
            conn.execute(
                sa.update(S.meta).where(S.meta.c.key == "schema_version").values(value=str(S.SCHEMA_VERSION))
            )

    # -- runs -------------------------------------------------------------------------------------------
    def create_run(
        self,
        *,
        id: str | None = None,
        started_at: dt.datetime | None = None,
        tags: Mapping[str, str] | None = None,
        **values: object,
    ) -> str:
        """A new run; `values`: the runs table's other columns (store/schema.py), its defaults for those left out."""
        run_id = id or str(uuid.uuid4())
        tags = tags or {}
        with self._begin() as conn:
            conn.execute(sa.insert(S.runs).values(id=run_id, started_at=started_at or now(), **values))
            if tags:  # in the same transaction: a run is never seen without its tags
                conn.execute(
                    sa.insert(S.run_tags), [{"run_id": run_id, "key": k, "value": v} for k, v in tags.items()]
                )
        return run_id

    def tags(self, run_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """run id → its tags."""
        out: dict[str, dict[str, str]] = {r: {} for r in run_ids}
        with self.engine.connect() as conn:
            for chunk in (list(run_ids)[i : i + 500] for i in range(0, len(run_ids), 500)):
                q = sa.select(S.run_tags).where(S.run_tags.c.run_id.in_(chunk))
                for row in conn.execute(q):
                    out[row.run_id][row.key] = row.value
        return out

    def tagged(self, tags: dict[str, str]) -> sa.Select[str]:
        """The ids of the runs carrying every one of `tags` (a subquery for other queries)."""
        q = sa.select(S.runs.c.id)
        for i, (k, v) in enumerate(tags.items()):
            t = S.run_tags.alias(f"tag{i}")
            q = q.where(sa.exists().where(t.c.run_id == S.runs.c.id, t.c.key == k, t.c.value == v))
        return q

    def baseline_runs(
        self,
        tags: dict[str, str],
        *,
        host_id: str | None,
        last: int,
        exclude: str | None = None,
        before: dt.datetime | None = None,
    ) -> list[str]:
        """A baseline is a query: the last `last` finished runs with these tags on this host, newest first;
        `before`: only runs started before then (a checked run's baseline is what existed when it started, so a
        re-run of the check gives the same answer after later runs land)."""
        q = sa.select(S.runs.c.id).where(S.runs.c.id.in_(self.tagged(tags)), S.runs.c.status == "done")
        if host_id is not None:
            q = q.where(S.runs.c.host_id == host_id)
        if exclude:
            q = q.where(S.runs.c.id != exclude)
        if before is not None:
            q = q.where(S.runs.c.started_at < before)
        with self.engine.connect() as conn:
            return list(conn.scalars(q.order_by(S.runs.c.started_at.desc()).limit(last)))

    def commits_measured(self, plan_sha256: str, hostname: str, commits: Sequence[str]) -> set[str]:
        """Which of `commits` have a finished run of this plan (its text's sha256) on this host, tagged
        commit=SHA (a backfill skips them)."""
        t = S.run_tags
        q = (
            sa.select(t.c.value)
            .join(S.runs, S.runs.c.id == t.c.run_id)
            .where(
                t.c.key == "commit",
                t.c.value.in_(list(commits)),
                S.runs.c.plan_sha256 == plan_sha256,
                S.runs.c.hostname == hostname,
                S.runs.c.status == "done",
            )
        )
        with self.engine.connect() as conn:
            return set(conn.scalars(q))

    def update_run(self, run_id: str, **values: object) -> None:
        """Set columns of a run; a run that ends (any status but "running") has its cells summed for `history`
        in the same transaction (store/sums.py)."""
        with self._begin() as conn:
            conn.execute(sa.update(S.runs).where(S.runs.c.id == run_id).values(**values))
            if values.get("status", "running") != "running":
                write_sums(conn, run_id)

    def get_run(self, ref: str) -> RunRecord:
        """A run by full id, unique prefix, or 'last'."""
        with self.engine.connect() as conn:
            if ref in ("last", "latest"):
                q = sa.select(S.runs).order_by(S.runs.c.started_at.desc()).limit(1)
            elif len(ref) == 36:  # a whole id: by the primary key (LIKE reads every run)
                q = sa.select(S.runs).where(S.runs.c.id == ref)
            else:
                q = sa.select(S.runs).where(S.runs.c.id.like(ref.replace("%", "") + "%")).limit(2)
            rows = conn.execute(q).mappings().all()
        if not rows:
            raise InputError(f"no run {ref!r} in store {self.url} (`fairmark runs` lists them)")
        if len(rows) > 1:
            raise InputError(f"run id prefix {ref!r} is ambiguous; give more characters")
        return RunRecord(**dict(rows[0]))

    def list_runs(
        self, limit: int = 50, *, host: str | None = None, tags: dict[str, str] | None = None
    ) -> list[RunListing]:
        """Newest first; `host`: only runs that ran trials on that [hosts.NAME] (options.hosts); `tags`: only
        runs carrying all of them."""
        t, c = S.trials, S.cells
        n_ok = (
            sa.select(sa.func.count()).where(t.c.run_id == S.runs.c.id, t.c.status == "ok").scalar_subquery()
        )
        n_all = sa.select(sa.func.count()).where(t.c.run_id == S.runs.c.id).scalar_subquery()
        n_cells = sa.select(sa.func.count()).where(c.c.run_id == S.runs.c.id).scalar_subquery()
        q = (
            sa.select(
                S.runs.c.id,
                S.runs.c.title,
                S.runs.c.plan_path,
                S.runs.c.started_at,
                S.runs.c.ended_at,
                S.runs.c.status,
                S.runs.c.hostname,
                S.runs.c.accept_risk,
                S.runs.c.options,
                n_cells.label("cells"),
                n_all.label("trials"),
                n_ok.label("trials_ok"),
            )
            .order_by(S.runs.c.started_at.desc())
            .limit(None if host else limit)
        )
        if tags:
            q = q.where(S.runs.c.id.in_(self.tagged(tags)))
        with self.engine.connect() as conn:
            found = conn.execute(q).all()
        all_tags = self.tags([r.id for r in found])
        rows = [
            RunListing(
                id=r.id,
                title=r.title,
                plan_path=r.plan_path,
                started_at=r.started_at,
                ended_at=r.ended_at,
                status=r.status,
                hostname=r.hostname,
                accept_risk=r.accept_risk,
                cells=r.cells,
                trials=r.trials,
                trials_ok=r.trials_ok,
                hosts=sorted((r.options or {}).get("hosts") or {}),
                tags=all_tags[r.id],
                controller_gone=controller_gone(r.status, r.options),
            )
            for r in found
        ]
        return [r for r in rows if host is None or host in r["hosts"]][:limit]

    # -- cells ------------------------------------------------------------------------------------------
    def ensure_cells(self, run_id: str, cells: Iterable[CellRecord]) -> dict[str, int]:
        """Insert cells not yet stored; return key → cell id (also for resume)."""
        with self._begin() as conn:
            existing = {
                r.key: r.id
                for r in conn.execute(
                    sa.select(S.cells.c.key, S.cells.c.id).where(S.cells.c.run_id == run_id)
                )
            }
            for cell in cells:
                if cell.key not in existing:
                    res = conn.execute(sa.insert(S.cells).values(run_id=run_id, **cell.row()))
                    assert res.inserted_primary_key is not None  # a single-row INSERT has one
                    existing[cell.key] = res.inserted_primary_key[0]
        return existing

    def update_cell(
        self,
        cell_id: int,
        *,
        status: str | None = None,
        stop_reason: str | None = None,
        params: Mapping[str, JSONValue] | None = None,
        loops: int | None = None,
    ) -> None:
        """A stored cell's end (status and why), its parameters as they really were, or its calibrated loop
        count; None: left as it is."""
        given = {
            "status": status,
            "stop_reason": stop_reason,
            "params": dict(params) if params is not None else None,
            "loops": loops,
        }
        values = {k: v for k, v in given.items() if v is not None}
        if values:
            with self._begin() as conn:
                conn.execute(sa.update(S.cells).where(S.cells.c.id == cell_id).values(**values))

    def cells(self, run_id: str) -> list[CellRecord]:
        q = sa.select(S.cells).where(S.cells.c.run_id == run_id).order_by(S.cells.c.id)
        with self.engine.connect() as conn:
            return [CellRecord.from_row(r) for r in conn.execute(q).mappings()]

    # -- trials and samples -----------------------------------------------------------------------------
    def add_trial(
        self,
        trial: TrialRecord,
        samples: Sequence[Sample] = (),
        artifacts: Sequence[Mapping[str, object]] = (),
    ) -> str:
        """One transaction per finished trial: the trial, its samples and artifacts, or nothing."""
        run_id = trial.run_id
        # SQLite: the same rows without SQLAlchemy's per-statement cost (store/lean.py)
        if self._lean is not None:
            rows: list[Rows] = [
                (S.trials, TRIAL_COLUMNS, (trial.values(),)),
                (S.samples, SAMPLE_COLUMNS, [(run_id, *sample_row_values(s)) for s in samples]),
            ]
            for a in artifacts:
                rows.append((S.artifacts, (*a, "run_id", "trial_id"), ((*a.values(), run_id, trial.id),)))
            self._lean.insert(rows)
            return trial.id
        dicts: list[tuple[sa.Table, list[Mapping[str, object]]]] = [
            (S.trials, [trial.row()]),
            (S.samples, [s.row(run_id) for s in samples]),
            (S.artifacts, [{**a, "run_id": run_id, "trial_id": trial.id} for a in artifacts]),
        ]
        with self._begin() as conn:
            # Values as parameters, not baked into the statement: one compiled INSERT serves every trial.
            for table, table_rows in dicts:
                if table_rows:
                    conn.execute(sa.insert(table), table_rows)
        return trial.id

    def trials(self, run_id: str) -> list[TrialRecord]:
        """The run's trials in the order they ran."""
        if self._selects is not None:  # SQLite: the same records without SQLAlchemy's per-row cost
            q = sa.select(*(S.trials.c[name] for name in TRIAL_COLUMNS)).where(
                S.trials.c.run_id == sa.bindparam("run_id")
            )

            with collector_paused():
                cols = self._selects.columns("trials", q.order_by(S.trials.c.seq), {"run_id": run_id})
                return TrialRecord.from_columns(cols)
        q = sa.select(S.trials).where(S.trials.c.run_id == run_id).order_by(S.trials.c.seq)
        with self.engine.connect() as conn:
            return [TrialRecord.from_row(r) for r in conn.execute(q).mappings()]

    def samples(self, run_id: str) -> list[Sample]:
        """The run's samples in the order their trials ran."""
        q = _samples_query(
            S.samples.c.trial_id,
            S.samples.c.cell_id,
            S.samples.c.metric,
            S.samples.c.value,
            S.samples.c.unit,
            S.samples.c.better,
        )
        if self._selects is not None:
            cols = self._selects.columns("samples", q, {"run_id": run_id})
            return list(itertools.starmap(Sample, zip(*cols, strict=True)))
        with self.engine.connect() as conn:
            return list(itertools.starmap(Sample, conn.execute(q, {"run_id": run_id})))

    def sample_values(self, run_id: str) -> dict[str, dict[str, float]]:
        """trial id → metric → value: the run's samples as the verdicts read them (`samples` without a record
        per value: a run of `true` stores five a trial), each trial's in the order they were stored."""
        out: dict[str, dict[str, float]] = {}
        if self._selects is None:
            for s in self.samples(run_id):
                out.setdefault(s.trial_id, {})[s.metric] = s.value
            return out
        # In the order they were stored (by cell, as the cells' index holds them: no join, no sort): each trial's
        # samples are in the order `samples` gives them, and which trial comes first does not matter to a dict.
        q = (
            sa.select(S.samples.c.trial_id, S.samples.c.metric, S.samples.c.value)
            .where(*_of_run(S.samples, sa.bindparam("run_id")))
            .order_by(S.samples.c.cell_id, S.samples.c.id)
        )

        with collector_paused():
            trial_ids, metrics, values = cast(
                tuple[list[str], list[str], list[float]],
                self._selects.columns("sample_values", q, {"run_id": run_id}),
            )
            return values_by_trial(trial_ids, metrics, values)

    # -- findings and artifacts ------------------------------------------------------------------------
    def add_findings(self, run_id: str, phase: str, items: Iterable[Mapping[str, object]]) -> None:
        rows = [
            {
                "run_id": run_id,
                "phase": phase,
                "finding_id": f["id"],
                "severity": f["severity"],
                "title": f.get("title", ""),
                "evidence": f.get("evidence", ""),
                "why": f.get("why", ""),
                "fix": f.get("fix", ""),
            }
            for f in items
        ]
        if rows:
            with self._begin() as conn:
                conn.execute(sa.insert(S.findings), rows)

    def findings(self, run_id: str) -> list[FindingRow]:
        q = sa.select(S.findings).where(S.findings.c.run_id == run_id).order_by(S.findings.c.id)
        with self.engine.connect() as conn:
            return [
                FindingRow(
                    id=r.id,
                    run_id=r.run_id,
                    phase=r.phase,
                    finding_id=r.finding_id,
                    severity=r.severity,
                    title=r.title,
                    evidence=r.evidence,
                    why=r.why,
                    fix=r.fix,
                )
                for r in conn.execute(q)
            ]

    def add_artifact(
        self,
        run_id: str,
        *,
        kind: str,
        name: str,
        content_type: str,
        data: JSONValue = None,
        text: str | None = None,
        trial_id: str | None = None,
        cell_key: str | None = None,
    ) -> None:
        with self._begin() as conn:
            conn.execute(
                sa.insert(S.artifacts).values(
                    run_id=run_id,
                    trial_id=trial_id,
                    cell_key=cell_key,
                    kind=kind,
                    name=name,
                    content_type=content_type,
                    data=data,
                    text=text,
                )
            )

    def artifacts(self, run_id: str, kind: str | None = None) -> list[ArtifactRow]:
        q = sa.select(S.artifacts).where(S.artifacts.c.run_id == run_id)
        if kind:
            q = q.where(S.artifacts.c.kind == kind)
        with self.engine.connect() as conn:
            return [_artifact(r) for r in conn.execute(q.order_by(S.artifacts.c.id))]

    def iter_artifacts(self, run_id: str, kind: str) -> Iterator[ArtifactRow]:
        """The run's artifacts of one kind, one row at a time (a reader that keeps a part of each holds no more)."""
        q = sa.select(S.artifacts).where(S.artifacts.c.run_id == run_id, S.artifacts.c.kind == kind)
        with self.engine.connect() as conn:
            for row in conn.execute(q.order_by(S.artifacts.c.id)):
                yield _artifact(row)

    # -- bundles ----------------------------------------------------------------------------------------
    def export_rows(self, table: sa.Table, run_id: str) -> list[dict[str, object]]:
        """Every row of `table` that belongs to the run, as the database holds it, in insertion order where the
        table has one: the raw rows a bundle carries (cli/bundle.py). Readers of cells, trials and samples get
        their records from `cells`, `trials` and `samples`."""
        return self._rows(table, run_id)

    def _rows(self, table: sa.Table, run_id: str) -> list[dict[str, object]]:
        q = sa.select(table).where(*_of_run(table, run_id))
        if table is S.run_tags:
            q = q.order_by(table.c.key)
        elif table is not S.runs and isinstance(table.c.id.type, sa.Integer):
            q = q.order_by(table.c.id)
        with self.engine.connect() as conn:
            return _dicts(conn.execute(q))

    def insert_rows(self, rows_by_table: Mapping[sa.Table, Sequence[Mapping[str, object]]]) -> None:
        """Rows of whole runs (a bundle's import): the cells of those that have ended are summed (store/sums.py)."""
        with self._begin() as conn:
            for table, rows in rows_by_table.items():
                if rows:
                    conn.execute(sa.insert(table), rows)
            for run in rows_by_table.get(S.runs, ()):
                if run.get("status") != "running":
                    write_sums(conn, str(run["id"]))

    # -- calibrations (fairmark calibrate) ---------------------------------------------------------------
    def add_calibrations(self, rows: Sequence[Mapping[str, object]]) -> None:
        with self.engine.begin() as conn:
            for row in rows:
                conn.execute(sa.insert(S.calibrations).values(created_at=now(), **row))

    def calibrations(self, host_id: str) -> dict[tuple[str, str], JSONObject]:
        """What the latest calibration of each (group, metric) on this host measured (stats.calibration)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(S.calibrations.c.group, S.calibrations.c.metric, S.calibrations.c.data)
                .where(S.calibrations.c.host_id == host_id)
                .order_by(S.calibrations.c.id)
            )
            return {(r.group, r.metric): r.data for r in rows}

    def delete_run(self, run_id: str) -> None:
        with self._begin() as conn:
            for table in (S.artifacts, S.findings, S.samples, S.trials, S.cells, S.run_tags, S.runs):
                conn.execute(sa.delete(table).where(*_of_run(table, run_id)))


def _of_run(table: sa.Table, run_id: str | sa.BindParameter[str]) -> tuple[sa.ColumnElement[bool], ...]:
    """The rows of `table` that belong to the run. Samples are indexed by their cell only (schema v11): a run's
    are found through its cells (each sample's cell is one of its run's)."""
    if table is S.runs:
        return (S.runs.c.id == run_id,)
    if table is S.samples:
        cells = sa.select(S.cells.c.id).where(S.cells.c.run_id == run_id)
        return (S.samples.c.cell_id.in_(cells), S.samples.c.run_id == run_id)
    return (table.c.run_id == run_id,)


def _samples_query(*columns: sa.Column[object]) -> sa.Select[*tuple[object, ...]]:
    """The run's samples (parameter `run_id`) in the order their trials ran, then as they were stored."""
    return (
        sa.select(*columns)
        .join(S.trials, S.trials.c.id == S.samples.c.trial_id)
        .where(*_of_run(S.samples, sa.bindparam("run_id")))
        .order_by(S.trials.c.seq, S.samples.c.id)
    )


def _artifact(r: sa.Row[*tuple[object, ...]]) -> ArtifactRow:
    """An artifacts row as its record (the columns of store/schema.py, in their order)."""
    m = r._mapping
    return ArtifactRow(
        id=m["id"],
        run_id=m["run_id"],
        trial_id=m["trial_id"],
        cell_key=m["cell_key"],
        kind=m["kind"],
        name=m["name"],
        content_type=m["content_type"],
        data=m["data"],
        text=m["text"],
    )
