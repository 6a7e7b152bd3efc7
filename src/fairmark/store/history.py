"""The history query: one point per run per cell and metric (n, mean, sd), aggregated in the database so a
store of a million samples answers in well under a second. Reads only the store."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from fairmark.store.quickhistory import SqliteHistory

if TYPE_CHECKING:
    from fairmark.store.db import Store
    from fairmark.store.quickhistory import PointRow, SqliteHistory


@dataclass(frozen=True)
class Point:
    run_id: str
    started_at: dt.datetime
    n: int
    mean: float
    sd: float
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class Series:
    """One workload cell's metric on one host, over runs: never mixes machines."""

    host: str
    cell: str
    metric: str
    unit: str
    better: str
    points: list[Point] = field(default_factory=list)
    # runs whose samples of this metric are left out: max_rss_kib stored before fairmark measured the workload's
    # own peak (schema 9), which was fairmark's own memory (records.LEGACY_RSS) — never a point beside the workload's
    left_out: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.host, self.cell, self.metric)


def query_history(
    store: Store | SqliteHistory,
    workload: str,
    *,
    metric: str | None = None,
    host: str | None = None,
    tags: dict[str, str] | None = None,
) -> list[Series]:
    """Every series of `workload` (optionally one metric, one host, runs with these tags), points in time order."""
    if isinstance(store, SqliteHistory):  # an SQLite store read without SQLAlchemy: the same rows
        rows = store.points(workload, metric, host, tags)
        run_tags = store.tags(sorted({row[0] for row in rows}))
    else:
        rows, run_tags = _points(store, workload, metric, host, tags)
    series: dict[tuple[str, str, str], Series] = {}
    for run_id, started_at, host_name, key, name, unit, better, n, mean, mean_sq in rows:
        one = series.setdefault((host_name, key, name), Series(host_name, key, name, unit, better))
        n = int(n)
        var = max(float(mean_sq) - float(mean) ** 2, 0.0) * n / (n - 1) if n > 1 else float("nan")
        one.points.append(Point(run_id, started_at, n, float(mean), var**0.5, run_tags[run_id]))
    if metric in (None, RSS_METRIC):
        for (host_name, cell), runs in legacy_rss_runs(store, workload, host=host, tags=tags).items():
            if (host_name, cell, RSS_METRIC) in series:
                series[(host_name, cell, RSS_METRIC)].left_out.extend(runs)
    return list(series.values())


def _points(
    store: Store, workload: str, metric: str | None, host: str | None, tags: dict[str, str] | None
) -> tuple[list[PointRow], dict[str, dict[str, str]]]:
    """query_history's rows through SQLAlchemy, and their runs' tags."""
    import sqlalchemy as sa

    from fairmark.store import schema as S

    s, c, r, t = S.samples, S.cells, S.runs, S.trials
    host_col = sa.func.coalesce(t.c.host, r.c.hostname).label("host")
    q = (
        sa.select(
            r.c.id,
            r.c.started_at,
            host_col,
            c.c.key,
            s.c.metric,
            s.c.unit,
            s.c.better,
            sa.func.count().label("n"),
            sa.func.avg(s.c.value).label("mean"),
            sa.func.avg(s.c.value * s.c.value).label("mean_sq"),
        )
        .select_from(
            s.join(c, s.c.cell_id == c.c.id).join(r, c.c.run_id == r.c.id).join(t, s.c.trial_id == t.c.id)
        )
        .where(c.c.workload == workload, t.c.warmup.is_(False), t.c.profiled.is_(False), t.c.status == "ok")
        .where(sa.or_(s.c.metric != RSS_METRIC, t.c.max_rss_method.is_not(None)))
        .group_by(r.c.id, r.c.started_at, host_col, c.c.key, s.c.metric, s.c.unit, s.c.better)
        .order_by(r.c.started_at, r.c.id, host_col, c.c.key, s.c.metric, s.c.unit, s.c.better)
    )
    if metric:
        q = q.where(s.c.metric == metric)
    if host:
        q = q.where(host_col == host)
    if tags:
        q = q.where(r.c.id.in_(store.tagged(tags)))
    with store.engine.connect() as conn:
        rows = [cast("PointRow", tuple(row)) for row in conn.execute(q)]
    return rows, store.tags(sorted({row[0] for row in rows}))


RSS_METRIC = "max_rss_kib"


def legacy_rss_runs(
    store: Store | SqliteHistory,
    workload: str,
    *,
    host: str | None = None,
    tags: dict[str, str] | None = None,
) -> dict[tuple[str, str], list[str]]:
    """(host, cell) → the runs, oldest first, whose measured max_rss_kib samples of `workload` are fairmark's own
    memory (their trials have no max_rss_method: `records.LEGACY_RSS`): what `query_history` leaves out."""
    out: dict[tuple[str, str], list[str]] = {}
    if isinstance(store, SqliteHistory):
        for run_id, host_name, key in store.legacy_rss(workload, host, tags):
            out.setdefault((host_name, key), []).append(run_id)
        return out
    import sqlalchemy as sa

    from fairmark.store import schema as S

    s, c, r, t = S.samples, S.cells, S.runs, S.trials
    host_col = sa.func.coalesce(t.c.host, r.c.hostname).label("host")
    q = (
        sa.select(r.c.id, r.c.started_at, host_col, c.c.key)
        .distinct()
        .select_from(
            s.join(c, s.c.cell_id == c.c.id).join(r, c.c.run_id == r.c.id).join(t, s.c.trial_id == t.c.id)
        )
        .where(c.c.workload == workload, s.c.metric == RSS_METRIC, t.c.max_rss_method.is_(None))
        .where(t.c.warmup.is_(False), t.c.profiled.is_(False), t.c.status == "ok")
        .order_by(r.c.started_at)
    )
    if host:
        q = q.where(host_col == host)
    if tags:
        q = q.where(r.c.id.in_(store.tagged(tags)))
    with store.engine.connect() as conn:
        for row in conn.execute(q):
            out.setdefault((row.host, row.key), []).append(row.id)
    return out


def metrics_of(store: Store | SqliteHistory, workload: str) -> tuple[str | None, list[str]]:
    """The workload's primary metric (that of its newest cell) and every metric its samples have, sorted: what
    `history WORKLOAD` shows, and what it lists beside it."""
    if isinstance(store, SqliteHistory):
        return store.metrics_of(workload)
    import sqlalchemy as sa

    from fairmark.store import schema as S

    c, s = S.cells, S.samples
    newest = sa.select(c.c.primary_metric).where(c.c.workload == workload).order_by(c.c.id.desc()).limit(1)
    names = (
        sa.select(s.c.metric)
        .distinct()
        .select_from(s.join(c, s.c.cell_id == c.c.id))
        .where(c.c.workload == workload)
    )
    with store.engine.connect() as conn:
        return conn.scalar(newest), sorted(conn.scalars(names))


def workloads(store: Store, *, tags: dict[str, str] | None = None) -> list[str]:
    """The workloads that have cells in the store (in runs with these tags), sorted: what a history can show."""
    import sqlalchemy as sa

    from fairmark.store import schema as S

    q = sa.select(S.cells.c.workload).distinct()
    if tags:
        q = q.where(S.cells.c.run_id.in_(store.tagged(tags)))
    with store.engine.connect() as conn:
        return sorted(conn.scalars(q))


def order_by_commits(series: Series, order: Sequence[str]) -> None:
    """Points in a repository's first-parent order (`order`: commit ids, oldest first) by their `commit` tag (a
    full id or a prefix of at least 7); several runs of a commit in time order; points whose commit is not on
    that line last, in time order."""
    pos = {sha: i for i, sha in enumerate(order)}

    def key(p: Point) -> tuple[int, int, dt.datetime]:
        c = p.tags.get("commit", "")
        i = pos.get(c)
        if i is None and len(c) >= 7:
            i = next((k for sha, k in pos.items() if sha.startswith(c)), None)
        return (0, i, p.started_at) if i is not None else (1, 0, p.started_at)

    series.points.sort(key=key)


def order_by_tag(series: Series, tag: str) -> None:
    """Order the points by a tag's value (numerically when every value is a number); untagged points last."""

    def key(p: Point) -> tuple[int, float, str, dt.datetime]:
        v = p.tags.get(tag)
        if v is None:
            return (2, 0.0, "", p.started_at)
        try:
            return (0, float(v), "", p.started_at)
        except ValueError:
            return (1, 0.0, v, p.started_at)

    series.points.sort(key=key)
