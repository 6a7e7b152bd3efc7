"""What the dashboard shows, read from the store through the read models the commands use: the runs
(`Store.list_runs`, as `fairmark runs`), each workload's series (the history query, as `fairmark history`) and
the bisects (their runs' tags and the outcome `fairmark bisect` stored with its first run)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from fairmark.store.history import (
    Series,
    metrics_of,
    order_by_commits,
    order_by_tag,
    query_history,
    workloads,
)
from fairmark.store.schema import BISECT_RESULT

BISECT_TAGS = ("bisect.id", "bisect.good")  # a run made by `fairmark bisect` carries these


@dataclass(frozen=True)
class SeriesSource:
    workload: str
    series: Series
    primary: str = ""  # the workload's primary metric (its newest cell's): marked, and listed first


@dataclass
class BisectSource:
    id: str
    runs: list[dict[str, Any]] = field(default_factory=list)  # oldest first, each a list_runs row
    result: dict[str, Any] | None = None  # what `fairmark bisect` stored when it finished

    @property
    def started_at(self) -> dt.datetime:
        return self.runs[0]["started_at"]


def is_bisect_run(tags: dict[str, str]) -> bool:
    return any(k in tags for k in BISECT_TAGS)


def is_ab_run(tags: dict[str, str]) -> bool:
    """A run of `fairmark ab`: its cells are a change's two builds (base, head), one pull request's question, not
    a point of a branch's history; its own run page shows it."""
    return "ab.head" in tags


def runs(store: Any, tags: dict[str, str] | None) -> list[dict[str, Any]]:
    """Every run with these tags, newest first (fairmark runs' rows: status, hosts, tags, trial counts)."""
    return store.list_runs(limit=None, tags=tags or None)


def series(
    store: Any,
    tags: dict[str, str] | None,
    order_tag: str | None,
    commit_order: tuple[str, ...] | None = None,
) -> list[SeriesSource]:
    """Every series (host × cell × metric) of every workload, in runs with these tags. A bisect's runs are left
    out: their cells are the bisect's sides (good, candidate, bad), a history of commits picked by the search,
    which the bisect's own page shows; so are `fairmark ab`'s (is_ab_run)."""
    out = []
    for workload in workloads(store, tags=tags or None):
        primary = metrics_of(store, workload)[0] or ""
        for s in query_history(store, workload, tags=tags or None):
            s.points = [p for p in s.points if not is_bisect_run(p.tags) and not is_ab_run(p.tags)]
            if not s.points:
                continue
            if order_tag:
                order_by_tag(s, order_tag)
            elif commit_order is not None:
                order_by_commits(s, commit_order)
            out.append(SeriesSource(workload, s, primary))
    return out


def bisects(store: Any, run_rows: list[dict[str, Any]]) -> list[BisectSource]:
    """The bisects among these runs, newest first. Runs of one bisect share its bisect.id tag; a bisect made
    before that tag existed is told apart by its good end and its first step (step 0, attempt 1)."""
    found: dict[str, BisectSource] = {}
    legacy: BisectSource | None = None
    for row in sorted(run_rows, key=lambda r: r["started_at"]):
        tags = row["tags"]
        if not is_bisect_run(tags):
            continue
        key = tags.get("bisect.id")
        if key is None:
            first = tags.get("bisect.step") == "0" and tags.get("bisect.attempt", "1") == "1"
            if (
                legacy is None
                or first
                or legacy.runs[0]["tags"].get("bisect.good") != tags.get("bisect.good")
            ):
                legacy = found.setdefault(row["id"], BisectSource(row["id"]))
            legacy.runs.append(row)
            continue
        found.setdefault(key, BisectSource(key)).runs.append(row)
    for b in found.values():
        stored = store.artifacts(b.runs[0]["id"], BISECT_RESULT)
        b.result = stored[-1]["data"] if stored else None
    return sorted(found.values(), key=lambda b: b.started_at, reverse=True)
