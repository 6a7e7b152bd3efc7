"""One page per run: the run's HTML report (`fairmark report --html`, report/html.py, with its content policy)
with the site's header added. Many pages are drawn in worker processes, each with its own connection
to the store."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from fairmark.report.html import CSP as html_csp
from fairmark.report.html import Figures, render_html
from fairmark.report.load import load_report
from fairmark.report.publish.manifest import write_atomic
from fairmark.report.publish.svg import strip
from fairmark.store.db import Store

# Nothing from elsewhere: styles inline, pictures inline SVG or data: URIs. A page that tried to load anything
# would show it as an error in the browser's console (the tests look). A run's page is `fairmark report`'s,
# which carries this policy already.
CSP = html_csp
NAV = (
    '<nav aria-label="site" style="border-bottom:1px solid #c6c6cc;padding:.4em 0;margin-bottom:.6em">'
    '<a href="../index.html">Dashboard</a> · <a href="index.html">All runs</a></nav>\n'
)
PARALLEL_FROM = 24  # pages: fewer are drawn here, without starting processes
BATCH = 16  # pages per task sent to a worker

_store: Any = None  # a worker's own store connection


def decorate(html: str) -> str:
    return html.replace("<body>", "<body>\n" + NAV, 1)


def render_run(store: Any, run_id: str) -> str:

    text, _ = render_html([load_report(store, run_id)], figures=_figures())
    return decorate(text)


def _figures() -> Any:
    """The report's figures, its strip plots drawn as plain SVG (svg.strip, the same marks) rather than by
    matplotlib: 22 ms each, two per run of two workloads — 7 minutes of a 10 000-run site. The rest (monitor
    timelines, scaling curves) are matplotlib's, as in `fairmark report`."""

    class SiteFigures(Figures):
        def add(self, kind: str, args: tuple, name: str) -> dict[str, Any]:
            if kind == "strip_plot":
                return {"svg": strip(*args)}
            return super().add(kind, args, name)

    return SiteFigures()


def _write(store: Any, jobs: list[tuple[str, str]]) -> int:
    for run_id, path in jobs:
        write_atomic(Path(path), render_run(store, run_id))
    return len(jobs)


def _worker_init(url: str) -> None:
    global _store

    _store = Store.open(url)


def _worker(jobs: list[tuple[str, str]]) -> int:
    return _write(_store, jobs)


class RunPages:
    """Render and write each (run id, path) — in worker processes, started at once, while the caller goes on
    with the other pages — and `finish()` waits for them. Few pages, one CPU, or a store only this process can
    see (SQLite in memory) are drawn here, in `finish()`."""

    def __init__(self, store: Any, jobs: list[tuple[str, str]], workers: int):
        self.store, self.jobs = store, jobs
        self.pool: ProcessPoolExecutor | None = None
        self.futures: list[Future] = []
        url = store.url
        in_memory = url.startswith("sqlite") and (":memory:" in url or url.rstrip("/") == "sqlite:")
        if workers > 1 and len(jobs) >= PARALLEL_FROM and not in_memory:
            store.engine.dispose()  # no connection of this process is carried into the workers
            ctx = multiprocessing.get_context("fork")
            self.pool = ProcessPoolExecutor(
                workers, mp_context=ctx, initializer=_worker_init, initargs=(url,)
            )
            self.futures = [
                self.pool.submit(_worker, jobs[i : i + BATCH]) for i in range(0, len(jobs), BATCH)
            ]

    def finish(self) -> None:
        if self.pool is None:
            _write(self.store, self.jobs)
            return
        for future in self.futures:
            future.result()

    def __enter__(self) -> RunPages:
        return self

    def __exit__(self, *exc: object) -> None:
        """Workers end with the publish: on an error or a signal their pending pages are dropped (the
        manifest is not saved, so the next publish makes them)."""
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 4))
