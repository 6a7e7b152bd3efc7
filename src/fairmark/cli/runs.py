"""`fairmark runs` and `fairmark show RUN`."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from fairmark.cli._tags import parse_tags, short_tag, tag_option
from fairmark.cli.common import common_options, open_store, state
from fairmark.console import console, escape
from fairmark.store.base import normalize_url
from fairmark.store.owner import GONE as CONTROLLER_GONE
from fairmark.store.quick import list_runs
from fairmark.store.quickrun import SqliteRun, opened

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.store.records import RunListing


@click.command()
@click.option("--limit", type=int, default=50, show_default=True, help="List at most this many runs.")
@click.option("--host", metavar="NAME", help="Only runs whose trials ran on this host ([hosts.NAME]).")
@tag_option("Only runs with this tag (repeatable: all of them).")
@common_options
def runs(limit: int, host: str | None, tag_items: tuple[str, ...]) -> None:
    """List the runs in the store, newest first."""
    url, rows = _runs(limit, host, parse_tags(tag_items))
    if console.json_mode:
        console.emit_json({"store": url, "runs": rows})
        return
    if not rows:
        console.text(f"no runs in {url}")
        return
    console.text(f"runs in {url}, newest first")
    status_w = max(len(_status(r)) for r in rows)
    for r in rows:
        console.text(_run_line(r, status_w))
        if r["controller_gone"]:
            console.text(
                " " * 10 + f"`fairmark resume {r['id'][:8]}` continues it, keeping its finished trials"
            )
        indent = " " * 10
        console.print(f"[bold]{escape(console.wrap(indent + (r['title'] or r['plan_path'])))}[/bold]")
        tags = " ".join(f"{k}={short_tag(v)}" for k, v in sorted(r["tags"].items()))
        if tags:
            console.text(f"{indent}tags: {tags}")


def _run_line(r: RunListing, status_w: int) -> str:
    """id, start, status, trials, cells, and where it ran: one line of fixed columns per run."""
    trials = f"{r['trials_ok']}/{r['trials']} trials ok"
    where = f"hosts {','.join(r['hosts'])}" if r["hosts"] else ""
    risk = "accept-risk" if r["accept_risk"] else ""
    fields = [
        r["id"][:8],
        f"{r['started_at']:%Y-%m-%d %H:%M}",
        f"{_status(r):<{status_w}}",
        trials,
        f"{r['cells']} cells",
        where,
        risk,
    ]
    return "  ".join(f for f in fields if f)


def _status(r: RunListing) -> str:
    """The store's status, or that the run's controller died without ending it (kill -9, `timeout`)."""
    return CONTROLLER_GONE if r["controller_gone"] else r["status"]


def _runs(limit: int, host: str | None, tags: dict[str, str]) -> tuple[str, list[RunListing]]:
    """The store's URL and its runs: an SQLite store of this schema without SQLAlchemy (store/quick.py, a
    quarter of a second less), anything else through the full store."""

    url = normalize_url(state["store"])
    rows = list_runs(url, limit, host=host, tags=tags)
    if rows is not None:
        return url, rows
    store = open_store()
    return store.url, store.list_runs(limit, host=host, tags=tags)


@click.command()
@click.argument("run_ref", metavar="RUN", default="last")
@click.option(
    "-w", "--width", type=int, default=74, show_default=True, help="Width of the ministat-style plot."
)
@common_options
def show(run_ref: str, width: int) -> None:
    """Terminal report of a run (RUN: id, unique prefix, or 'last')."""
    from fairmark.report.jsondoc import run_json
    from fairmark.report.terminal import render

    # An SQLite store of this schema is read without SQLAlchemy (store/quickrun.py: a third of the command's CPU)
    with opened(normalize_url(state["store"])) as quick, _store_errors():
        report = _report(quick, run_ref)
        if console.json_mode:
            console.emit_json(run_json(report))
            return
        render(report, plot_width=width)
    if (
        len((report.run.options or {}).get("hosts") or {}) > 1
    ):  # hosts as variants: how their environments differ
        from fairmark.report.hosts import print_host_diff

        print_host_diff(open_store(), report.run.id)


def _report(quick: SqliteRun | None, run_ref: str) -> RunReport:
    """The run's view read by `quick`, or by the full store (no such reader, or an SQLite error: the full store
    words it)."""
    from fairmark.report.load import load_report  # statistics: not needed to list runs

    if quick is not None:
        with contextlib.suppress(sqlite3.Error):
            return load_report(quick, run_ref)
    return load_report(open_store(), run_ref)


@contextlib.contextmanager
def _store_errors() -> Iterator[None]:
    """An SQLite error of a read after the view was made (an artifact a section reads) in the words the full
    store gives it (full, read-only, corrupted: exit 3)."""
    try:
        yield
    except sqlite3.Error as exc:
        from fairmark.store.db import sqlite_failure

        failure = sqlite_failure(normalize_url(state["store"]), exc)
        if failure is None:
            raise
        raise failure from exc


commands = [runs, show]
