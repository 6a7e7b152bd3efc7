"""`fairmark history`'s read model: the store's series, each point's CI, and the change points found in it,
each with its significance and the shift's size ± CI (runs are the unit: between-run variance)."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from fairmark.stats.changepoints import (
    MIN_SIZE,
    PHI_GRID,
    ChangePoint,
    check_alpha,
    detect,
    min_p_value,
    serial_correlation,
    shortest_for,
    undetectable,
)
from fairmark.stats.tdist import t_quantile
from fairmark.store.base import LEGACY_RSS
from fairmark.store.history import Series, order_by_commits, order_by_tag, query_history
from fairmark.store.quickhistory import SqliteHistory
from fairmark.verdict.compare import Better, Comparison
from fairmark.verdict.pairs import judge_shifts


@dataclass(frozen=True)
class HistoryOptions:
    workload: str
    metric: str | None = None
    host: str | None = None
    tags: dict[str, str] | None = None
    order_tag: str | None = None  # order points by this tag instead of time
    alpha: float = 0.01
    confidence: float = 95.0
    window: int | None = None  # change points among the last `window` points only (None: the whole series)
    # a change point whose new level's first run started after this is "new" (`history --new-since`, publish)
    new_since: dt.datetime | None = None
    commit_order: tuple[str, ...] | None = (
        None  # points in this first-parent order (commit ids, oldest first)
    )

    def __post_init__(self) -> None:
        check_alpha(self.alpha)  # before the store is read, and for a series too short to be tested


def ci_half_width(sd: float, n: int, confidence: float) -> float:
    return t_quantile(confidence, n - 1) * sd / math.sqrt(n) if n > 1 and math.isfinite(sd) else math.nan


def _label(series: Series, i: int, order_tag: str | None) -> str:
    """A point as a change point names it: its run and its tags (the ordering tag, else all of them)."""
    p = series.points[i]
    tags = {order_tag: p.tags[order_tag]} if order_tag and order_tag in p.tags else p.tags
    shown = " ".join(f"{k}={v}" for k, v in sorted(tags.items()))
    return p.run_id[:8] + (f" ({shown})" if shown else "")


def change_points(series: Series, opts: HistoryOptions) -> list[dict[str, Any]]:
    start = _start(series, opts)
    means = [p.mean for p in series.points[start:]]
    found = detect(means, alpha=opts.alpha)
    if not found:
        return []
    bounds = [0, *(c.index for c in found), len(means)]
    segments = [(means[bounds[k] : c.index], means[c.index : bounds[k + 2]]) for k, c in enumerate(found)]
    better: Better = "higher" if series.better == "higher" else "lower"
    # scipy and the plan model: loaded only when a series has a change to size

    judged = judge_shifts(segments, better=better, unit=series.unit, confidence=opts.confidence)
    return [
        _change_point(series, start + c.index, c.p_value, comp, opts) | {"phi_allowed": c.phi}
        for c, comp in zip(found, judged, strict=True)
    ]


def _change_point(
    series: Series, index: int, p_value: float, comp: Comparison | None, opts: HistoryOptions
) -> dict[str, Any]:
    return {
        "index": index,
        "run_id": series.points[index].run_id,
        "between": [_label(series, index - 1, opts.order_tag), _label(series, index, opts.order_tag)],
        "p_value": p_value,
        "alpha": opts.alpha,
        "percent": comp.change_percent if comp else None,  # the change of the ratio its interval is for
        "ratio": comp.ratio if comp else None,
        "ratio_ci": [comp.ratio_ci_low, comp.ratio_ci_high] if comp else None,
        "change": comp.change if comp else "none",
        "sentence": comp.sentence if comp else "",
        "new": opts.new_since is not None and aware(series.points[index].started_at) > aware(opts.new_since),
    }


def aware(t: dt.datetime) -> dt.datetime:
    """A stored time compared as UTC (SQLite gives its timestamps back without their zone)."""
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


def series_view(series: Series, opts: HistoryOptions) -> dict[str, Any]:
    """One series as plain data: its points (mean, CI, n), its change points, and a warning when consecutive
    runs are correlated."""
    cps = change_points(series, opts)
    points = [
        {
            "run_id": p.run_id,
            "started_at": p.started_at.isoformat(),  # as store.db.jsonable_row (not imported: SQLAlchemy)
            "n": p.n,
            "mean": p.mean,
            "sd": p.sd,
            "ci_half_width": ci_half_width(p.sd, p.n, opts.confidence),
            "tags": p.tags,
        }
        for p in series.points
    ]
    return {
        "host": series.host,
        "cell": series.cell,
        "metric": series.metric,
        "unit": series.unit,
        "better": series.better,
        "points": points,
        "change_points": cps,
        "warnings": [w for w in [_serial(series, cps, opts), _left_out(series)] if w],
        "left_out": list(series.left_out),
        "too_short": too_short(len(series.points[_start(series, opts) :]), opts),
        "undetectable": _undetectable(series, cps, opts),
    }


def _undetectable(series: Series, cps: list[dict[str, Any]], opts: HistoryOptions) -> list[int]:
    """Without a change point: the points (1-based) at which a new level could not have been shown at all — a
    "no change point" says nothing about a step there."""
    if cps:
        return []
    start = _start(series, opts)
    return [start + tau + 1 for tau in undetectable(len(series.points) - start, opts.alpha)]


def _left_out(series: Series) -> str | None:
    if not series.left_out:
        return None
    runs = ", ".join(r[:8] for r in series.left_out[:5]) + (" …" if len(series.left_out) > 5 else "")
    return f"{len(series.left_out)} run(s) left out ({runs}): their {LEGACY_RSS}"


def too_short(n: int, opts: HistoryOptions) -> str | None:
    """A sentence when no series of n runs can show a change point at α (None when one can)."""
    smallest = min_p_value(n)
    if smallest <= opts.alpha:
        return None
    need = shortest_for(opts.alpha)
    if n < 2 * MIN_SIZE:  # "the smallest p-value 5 runs can reach is 1": no split of them is tested at all
        reach = f"a split needs {MIN_SIZE} runs on each side"
    else:
        reach = f"the smallest p-value {n} runs can reach is {smallest:.2g}"
    enough = f"{need} runs can" if need else "no series can"
    return f"{n} runs are too few to show any change point at α = {opts.alpha:g} ({reach}; {enough})"


def _start(series: Series, opts: HistoryOptions) -> int:
    """The first point change points are looked for from (opts.window: among the last points only)."""
    return max(0, len(series.points) - opts.window) if opts.window else 0


def _serial(series: Series, cps: list[dict[str, Any]], opts: HistoryOptions) -> str | None:
    """Say so when the runs around the segments' means are correlated: drift can look like a step."""
    start = _start(series, opts)
    found = [ChangePoint(c["index"] - start, c["p_value"], 0.0) for c in cps]
    serial = serial_correlation([p.mean for p in series.points[start:]], found)
    if serial is None:
        return None
    r1, p = serial
    return (
        f"consecutive runs are correlated (lag-1 r = {r1:.2f} around the segments' means, p = {p:.2g}): a machine "
        "that drifts from run to run can look like a step; each change point here was tested against "
        f"autocorrelated noise (AR(1) up to φ {PHI_GRID[-1]:g})"
    )


def build_history(store: Any, opts: HistoryOptions) -> list[dict[str, Any]]:
    """Every series of the workload with its points (mean, CI, n) and change points, as plain data."""
    out = []
    for series in query_history(store, opts.workload, metric=opts.metric, host=opts.host, tags=opts.tags):
        if opts.order_tag:
            order_by_tag(series, opts.order_tag)
        elif opts.commit_order is not None:
            order_by_commits(series, opts.commit_order)
        out.append(series_view(series, opts))
    return baseline_first(store, out)


def baseline_first(store: Any, views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The series in a stable order — host, metric, cell — each workload's baseline cell first, as every other
    screen lists it (its run's `baseline`, read from the newest run of each series: a few rows)."""
    newest = {v["points"][-1]["run_id"] for v in views if v["points"]}
    options: dict[str, Any]
    if isinstance(store, SqliteHistory):
        options = store.options(newest)
    else:
        import sqlalchemy as sa

        from fairmark.store import schema as S

        with store.engine.connect() as conn:
            q = sa.select(S.runs.c.id, S.runs.c.options).where(S.runs.c.id.in_(newest))
            options = {row.id: row.options for row in conn.execute(q)}
    # runs before the options kept `baseline` had it in their policy; unknown: the order the runs gave
    baseline = {run_id: _baseline_of(o) for run_id, o in options.items()}

    def key(v: dict[str, Any]) -> tuple[Any, ...]:
        base = baseline.get(v["points"][-1]["run_id"]) if v["points"] else None
        group, _, variant = str(v["cell"]).rpartition("/")
        return (v["host"], v["metric"], group, bool(base) and variant != base)

    return sorted(views, key=key)


def _baseline_of(options: Any) -> Any:
    o: Any = options or {}
    return o.get("baseline") or (o.get("policy") or {}).get("baseline")
