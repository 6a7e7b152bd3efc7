"""`fairmark publish`: the static site. The index and the list of runs, where a reader starts, are written after
every page they link to (runs, series, bisects); the manifest last."""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from fairmark import __version__
from fairmark.errors import UsageError
from fairmark.report.history import HistoryOptions
from fairmark.report.load import load_report
from fairmark.report.publish import runpages, source, views
from fairmark.report.publish.manifest import Manifest, code_fingerprint, digest, write_atomic

RUN_FIELDS = (
    "id",
    "status",
    "started_at",
    "ended_at",
    "title",
    "hostname",
    "hosts",
    "cells",
    "trials",
    "trials_ok",
    "accept_risk",
)


def run_key(row: dict[str, Any]) -> tuple:
    """What a run's page and its line in the lists show of it (tags in a stable order)."""
    return (*(row[k] for k in RUN_FIELDS), tuple(sorted(row["tags"].items())))


@dataclass(frozen=True)
class PublishOptions:
    out: Path
    tags: dict[str, str] = field(default_factory=dict)
    repo_url: str | None = None  # "https://…/commit/{sha}"
    alpha: float = 0.01
    window: int | None = 500  # change points among the last `window` runs of a series (None: all of them)
    order_tag: str | None = None  # order a series' points by this tag instead of time
    commit_order: tuple[str, ...] | None = None  # or in this first-parent order of commits (oldest first)
    workers: int = 0  # processes drawing run pages (0: one per CPU, at most 4)


@dataclass
class Outcome:
    written: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    removed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # stale entries of the manifest that name no page of the site: left alone (a tampered manifest, issue 37)
    refused: list[str] = field(default_factory=list)
    new_change_points: list[str] = field(default_factory=list)  # since the last publish: series and shift

    def to_dict(self) -> dict[str, Any]:
        return {
            "written": dict(self.written),
            "skipped": dict(self.skipped),
            "removed": self.removed,
            "refused": self.refused,
            "seconds": round(self.seconds, 3),
            "new_change_points": self.new_change_points,
        }

    def sentence(self) -> str:
        def kinds(c: Counter[str]) -> str:
            return ", ".join(f"{k} {n}" for k, n in sorted(c.items())) or "none"

        return (
            f"wrote {sum(self.written.values())} pages ({kinds(self.written)}), skipped "
            f"{sum(self.skipped.values())} unchanged ({kinds(self.skipped)}), removed {len(self.removed)}, "
            f"in {self.seconds:.1f} s"
            + (
                f"; left {len(self.refused)} entries of the manifest alone that name no page of the site "
                f"({', '.join(self.refused[:3])}{', …' if len(self.refused) > 3 else ''})"
                if self.refused
                else ""
            )
            + (
                f"; {len(self.new_change_points)} new change point(s) since the last publish: "
                + "; ".join(self.new_change_points)
                if self.new_change_points
                else ""
            )
        )


@cache
def _env() -> Environment:
    return Environment(
        loader=PackageLoader("fairmark.report", "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


class Site:
    def __init__(self, store: Any, opts: PublishOptions):
        self.store, self.opts = store, opts
        self.out = opts.out
        self.manifest = Manifest(self.out)
        self.code = code_fingerprint()
        self.outcome = Outcome()
        self.common: dict[str, Any] = {
            "version": __version__,
            "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "tags": " ".join(f"{k}={v}" for k, v in sorted(opts.tags.items())),
            "csp": runpages.CSP,
            "has_bisects": False,
        }
        self.history = HistoryOptions(
            "",
            tags=opts.tags,
            order_tag=opts.order_tag,
            alpha=opts.alpha,
            window=opts.window,
        )
        self.published = self.manifest.published_runs()

    def _page(self, kind: str, rel: str, parts: Any, template: str, view: Any, summary: Any = None) -> None:
        """Render `view` into `rel` unless the page there was made from the same `parts` by the same code."""
        page_digest = digest(self.code, self.common["has_bisects"], parts)
        if self.manifest.fresh(rel, page_digest):
            self.outcome.skipped[kind] += 1
            return
        root = "../" * rel.count("/")
        html = _env().get_template(template).render(**self.common, **view, root=root)
        write_atomic(self.out / rel, html)
        self.manifest.record(rel, page_digest, summary)
        self.outcome.written[kind] += 1

    def series_pages(self, found: list[source.SeriesSource], links: views.Links) -> list[dict[str, Any]]:
        rows = []
        opts = self.opts
        for src in found:
            rel = f"series/{views.series_slug(src)}.html"
            points = [
                (p.run_id, p.started_at, p.n, p.mean, p.sd, sorted(p.tags.items())) for p in src.series.points
            ]
            parts = (
                src.workload,
                src.series.key,
                src.series.unit,
                src.series.better,
                points,
                opts.alpha,
                opts.window,
                opts.repo_url,
                self._has_new(src),  # marked "new" on the publish after its runs, unmarked on the next
            )
            page_digest = digest(self.code, self.common["has_bisects"], parts)
            summary = self.manifest.summary(rel)
            if summary is not None and self.manifest.fresh(rel, page_digest):
                self.outcome.skipped["series"] += 1
                rows.append(summary)
                continue
            page, row = views.series_page(src, self.history, links)
            self._mark_new(page, row)
            self._page("series", rel, parts, "publish_series.html.j2", page, row)
            rows.append(row)
            self.outcome.new_change_points += [
                f"{row['host']} {row['workload']} {row['cell']} {row['metric']} {c['shift']}"
                for c in page["change_points"]
                if c["new"]
            ]
        return rows

    def _has_new(self, src: source.SeriesSource) -> bool:
        return self.published is not None and any(p.run_id not in self.published for p in src.series.points)

    def _mark_new(self, page: dict[str, Any], row: dict[str, Any]) -> None:
        """Change points whose new level starts at a run the last publish did not have."""
        for c in page["change_points"]:
            c["new"] = self.published is not None and c["after"]["run"] not in self.published
        if row.get("cp"):
            row["cp"]["new"] = sum(c["new"] for c in page["change_points"])

    def _verdicts(self, run_id: str) -> list[dict[str, Any]]:
        """A run's verdicts (group, metric, sentence, …), computed from its samples: the store keeps none."""
        return [
            {"group": v.group, "metric": v.metric, "sentence": v.sentence}
            for v in load_report(self.store, run_id).verdicts
        ]

    def bisect_pages(self, found: list[source.BisectSource], links: views.Links) -> list[dict[str, Any]]:
        rows = []
        for b in found:
            page = views.bisect_page(b, links, self._verdicts)
            parts = ([run_key(r) for r in b.runs], b.result, self.opts.repo_url)
            self._page("bisects", f"bisects/{b.id}.html", parts, "publish_bisect.html.j2", page)
            rows.append(views.bisect_row(page))
        return rows

    def run_pages(self, rows: list[dict[str, Any]]) -> runpages.RunPages:
        """Starts drawing the run pages that changed; the caller calls finish()."""
        jobs = []
        for r in rows:
            rel = f"runs/{r['id']}.html"
            page_digest = digest(self.code, run_key(r))
            if self.manifest.fresh(rel, page_digest):
                self.outcome.skipped["runs"] += 1
                continue
            jobs.append((r["id"], str(self.out / rel)))
            self.manifest.record(rel, page_digest)
        if jobs:
            self.outcome.written["runs"] += len(jobs)
        return runpages.RunPages(self.store, jobs, self.opts.workers or runpages.default_workers())

    def lists(
        self,
        run_rows: list[dict[str, Any]],
        series_rows: list[dict[str, Any]],
        bisect_rows: list[dict[str, Any]],
        links: views.Links,
    ) -> None:
        runs_view = {"runs": [views.run_row(r, links, "../") for r in run_rows]}
        parts = ([run_key(r) for r in run_rows], self.opts.repo_url)
        self._page("lists", "runs/index.html", parts, "publish_runs.html.j2", runs_view)
        hosts: dict[str, list[dict[str, Any]]] = {}
        # the primary metric first in each cell (marked), the others after it, alphabetically
        order = lambda r: (r["host"], r["workload"], r["cell"], not r.get("primary"), r["metric"])  # noqa: E731
        for row in sorted(series_rows, key=order):
            hosts.setdefault(row["host"], []).append(row)
        index = {
            "hosts": [{"name": h, "rows": rows} for h, rows in hosts.items()],
            "bisects": bisect_rows,
            "counts": {"runs": len(run_rows), "series": len(series_rows)},
            "alpha": self.opts.alpha,
            "window": self.opts.window,
        }
        self._page("index", "index.html", index, "publish_index.html.j2", index)

    def remove_stale(self) -> None:
        for rel in self.manifest.stale():
            path = self.manifest.removable(rel)
            if path is None:
                self.outcome.refused.append(rel)
                continue
            path.unlink(missing_ok=True)
            self.outcome.removed.append(rel)


def _prepare(out: Path) -> None:
    """The site's directory, without what a publish killed mid-page left (a page is written to a temporary
    file, then renamed)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make the site's directory {out}: {exc.strerror}") from None
    for tmp in out.rglob(".tmp-*.html"):
        tmp.unlink(missing_ok=True)


def publish(store: Any, opts: PublishOptions) -> Outcome:
    """Write (or bring up to date) the site in opts.out from the store."""
    t0 = time.monotonic()
    _prepare(opts.out)
    site = Site(store, opts)
    run_rows = source.runs(store, opts.tags)
    links = views.Links(frozenset(r["id"] for r in run_rows), opts.repo_url)
    found = source.bisects(store, run_rows)
    site.common["has_bisects"] = bool(found)
    with site.run_pages(run_rows) as drawing:  # in worker processes, while this one does the rest
        series_rows = site.series_pages(
            source.series(store, opts.tags, opts.order_tag, opts.commit_order), links
        )
        bisect_rows = site.bisect_pages(found, links)
        drawing.finish()
    site.lists(run_rows, series_rows, bisect_rows, links)
    site.remove_stale()
    site.manifest.save()
    site.outcome.seconds = time.monotonic() - t0
    return site.outcome
