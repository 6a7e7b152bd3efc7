"""`fairmark history WORKLOAD[:METRIC]`: a workload's series over runs, per host and cell, with change points."""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from fairmark.cli._tags import parse_tags, short_tag, tag_option
from fairmark.cli.common import common_options, open_store, state
from fairmark.console import console, escape
from fairmark.errors import GateTripped, InputError
from fairmark.store.base import LEGACY_RSS, normalize_url
from fairmark.store.history import RSS_METRIC, legacy_rss_runs, metrics_of
from fairmark.store.quickhistory import opened

if TYPE_CHECKING:
    from fairmark.report.history import HistoryOptions
    from fairmark.store.db import Store
    from fairmark.store.quickhistory import SqliteHistory


def order_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--order time|commit` and `--repo`, as `history` and `publish` take them (see commit_order)."""
    func = click.option(
        "--repo",
        default=".",
        show_default=True,
        type=click.Path(file_okay=False),
        help="With --order commit: the git repository.",
    )(func)
    return click.option(
        "--order",
        type=click.Choice(["time", "commit"]),
        default="time",
        show_default=True,
        help="Points by start time, or in the first-parent order of --repo's HEAD by their commit tag.",
    )(func)


@click.command()
@click.argument("target", metavar="WORKLOAD[:METRIC]")
@click.option("--host", metavar="H", help="Only this host's series (default: every host, each apart).")
@tag_option("Only runs with this tag (repeatable: all of them).")
@order_options
@click.option("--by-tag", "order_tag", metavar="KEY", help="Order the points by this tag, not by time.")
@click.option(
    "--alpha",
    type=float,
    default=0.01,
    show_default=True,
    help="Each split's significance level (at most 0.05); a history's false alarms stay within 2α.",
)
@click.option(
    "--new-since",
    "new_since",
    metavar="RUN|DATE",
    help="Mark change points whose new level starts after this run started (or this ISO date/time, UTC when "
    "no zone is given).",
)
@click.option(
    "--exit-code", is_flag=True, help="Exit 1 when a change point is new (after --new-since; else any)."
)
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write an HTML plot here.")
@click.option("--png", "png_path", type=click.Path(dir_okay=False), help="Write a PNG plot here.")
@common_options
def history(
    target: str,
    host: str | None,
    tag_items: tuple[str, ...],
    order_tag: str | None,
    order: str,
    repo: str,
    alpha: float,
    new_since: str | None,
    exit_code: bool,
    html_path: str | None,
    png_path: str | None,
) -> None:
    """One point per run (mean, CI, n) of a workload's cells, per host; change points by binary segmentation that holds its level under drift (stats/changepoints.py)."""
    from fairmark.report.history import HistoryOptions

    workload, _, metric = target.partition(":")
    if not 0 < alpha < 1:
        raise click.BadParameter(f"{alpha}: expected a level between 0 and 1", param_hint="--alpha")
    opts = HistoryOptions(
        workload,
        metric or None,
        host,
        parse_tags(tag_items),
        order_tag,
        alpha=alpha,
        commit_order=commit_order(order, repo, order_tag),
    )
    data, metric, others, since = _read(opts, new_since)
    if not data:
        store = open_store()
        raise InputError(
            f"no stored samples of workload {workload!r}"
            + (f" metric {metric!r}" if metric else "")
            + (f" on host {host!r}" if host else "")
            + (" with those tags" if opts.tags else "")
            + f" in {store.safe_url}"
            + _all_left_out(store, workload, metric, host, opts.tags)
        )
    _plots(data, workload, html_path, png_path)
    if console.json_mode:
        console.emit_json(
            {"workload": workload, "metric": metric, "other_metrics": others, "alpha": alpha, "series": data}
            | ({"new_since": since.isoformat()} if since else {})
        )
    else:
        _print(data, workload, metric, others, alpha)
    if exit_code:
        _gate(data, since)


def _read(opts: HistoryOptions, new_since: str | None) -> tuple[list[dict], str, list[str], Any]:
    """The series (build_history), the metric shown, the others stored and the --new-since mark: from an SQLite
    store of this schema without SQLAlchemy (store/quickhistory.py), else (or on any sqlite3 error) the store."""
    import sqlite3

    if not new_since:  # a run named by --new-since is looked up by the full store
        with opened(normalize_url(state["store"])) as quick, contextlib.suppress(sqlite3.Error):
            if quick is not None:
                return (*_series(quick, opts), None)
    store = open_store()
    since = _mark(store, new_since) if new_since else None
    return (*_series(store, dataclasses.replace(opts, new_since=since)), since)


def _series(store: Store | SqliteHistory, opts: HistoryOptions) -> tuple[list[dict], str, list[str]]:
    from fairmark.report.history import build_history

    metric, others = opts.metric or "", []
    if not metric:  # the workload's primary metric; the others are named, not all printed
        primary, names = metrics_of(store, opts.workload)
        metric, others = primary or "", [m for m in names if m != primary]
    return build_history(store, dataclasses.replace(opts, metric=metric or None)), metric, others


def _plots(data: list[dict], workload: str, html_path: str | None, png_path: str | None) -> None:
    if html_path or png_path:
        from fairmark.report.history_plot import write_html, write_png

        if html_path:
            write_html(data, workload, html_path)
        if png_path:
            write_png(data, workload, png_path)


def commit_order(order: str, repo: str, order_tag: str | None) -> tuple[str, ...] | None:
    """--order commit: the first-parent line of --repo's HEAD, oldest first (None: by time)."""
    if order != "commit":
        return None
    if order_tag:
        raise click.UsageError("--order commit and --by-tag KEY are two orders: give one")
    # LAZY_FOR_START: git's module loads subprocess, the host lock and socket, which a history by time never uses
    from fairmark.bisect.git import Repo

    return Repo(repo).first_parent()


def _print(data: list[dict], workload: str, metric: str, others: list[str], alpha: float) -> None:
    for i, s in enumerate(data):
        if i:
            console.print()
        _table(workload, s, alpha)
    if others:
        console.text(
            f"{metric} is {workload}'s primary metric; also stored: {', '.join(others)} "
            f"(`fairmark history {workload}:METRIC`)"
        )


def _mark(store: Store, text: str):  # -> dt.datetime
    """--new-since: an ISO date or time (UTC unless it names its zone), else a run (id, prefix, `last`)."""
    import datetime as dt

    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return store.get_run(text).started_at
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _gate(data: list[dict], since) -> None:
    """Otava's `regressions --since`: exit 1 when a change point lies after the mark (any, without one)."""
    new = [
        f"{s['cell']} {s['metric']} on {s['host']} before point {cp['index'] + 1} "
        f"({cp['between'][1]}): {cp['sentence'] or cp['change']}"
        for s in data
        for cp in s["change_points"]
        if cp["new"] or since is None
    ]
    if new:
        when = f" since {since.isoformat(timespec='seconds')}" if since else ""
        raise GateTripped(f"{len(new)} change point(s){when}: " + "; ".join(new))


def _all_left_out(store: Store, workload: str, metric: str, host: str | None, tags: dict | None) -> str:
    """Why a max_rss_kib history is empty when every stored run of it recorded fairmark's own memory."""

    if metric != RSS_METRIC:
        return ""
    runs = {r for ids in legacy_rss_runs(store, workload, host=host, tags=tags).values() for r in ids}
    return f"; {len(runs)} run(s) left out: their {LEGACY_RSS}" if runs else ""


def _table(workload: str, s: dict, alpha: float) -> None:
    """One line per run: its mean ± CI in a prefix shared by the series (so points compare at a glance), the
    digits each CI supports; change points marked ▲ where the new level starts."""
    from fairmark.stats.digits import column_unit, format_bounded, never_negative

    t = console.table("#", "run", "started", "n", "mean ± CI", "tags", wrap=("tags",), right=("#", "n"))
    starts = {cp["index"] for cp in s["change_points"]}
    divisor, unit = column_unit((p["mean"] for p in s["points"]), s["unit"])
    # a time's interval stops at 0 ("900 [0, 2100]", not "900 ± 1200" ms), as the run's tables do
    floor = 0.0 if never_negative(s["unit"]) and all(p["mean"] >= 0 for p in s["points"]) else None
    for i, p in enumerate(s["points"]):
        hw = p["ci_half_width"]
        t.add_row(
            str(i + 1) + (" ▲" if i in starts else ""),
            p["run_id"][:8],
            p["started_at"][:16].replace("T", " "),
            str(p["n"]),
            format_bounded(p["mean"] / divisor, hw / divisor if math.isfinite(hw) else None, low=floor),
            escape(" ".join(f"{k}={short_tag(v)}" for k, v in sorted(p["tags"].items()))),
        )
    better = f", {s['better']} is better" if s.get("better") else ""
    unit_text = f" in {unit}" if unit else ""
    # the cell's key names its workload ("alloc/nodebug"): "alloc alloc/nodebug" said it twice
    cell = s["cell"] if str(s["cell"]).startswith(workload) else f"{workload} {s['cell']}"
    console.print_table(t, f"{cell} {s['metric']}{unit_text} on {s['host']}{better}")
    if s.get("too_short"):
        console.text(s["too_short"])
    elif not s["change_points"]:
        console.text(
            f"no change point at α = {alpha:g} ({len(s['points'])} runs; each split was tested against run-to-run "
            "drift up to AR(1) φ 0.6 as well)" + _blind(s["undetectable"], alpha)
        )
    for text in s.get("warnings", []):
        console.warn(text)
    for cp in s["change_points"]:
        console.text(
            ("NEW " if cp.get("new") else "")
            + f"change point before point {cp['index'] + 1} (between {' and '.join(cp['between'])}), "
            f"p = {cp['p_value']:.2g}: {cp['sentence']}"
        )


def _blind(points: list[int], alpha: float) -> str:
    """Where "no change point" says nothing: the points a new level could not have been shown to start at."""
    if not points:
        return ""
    runs: list[str] = []
    first = 0
    for k in range(1, len(points) + 1):
        if k == len(points) or points[k] != points[k - 1] + 1:
            a, b = points[first], points[k - 1]
            runs.append(f"{a}" if a == b else f"{a}–{b}")
            first = k
    return (
        f"; a new level starting at point {' or '.join(runs)} could not have been shown at α = {alpha:g} "
        "(fewer than 3 runs on a side, or too few orderings of the runs for that α): nothing is said there"
    )


commands = [history]
