"""Options every command takes, and the shared state they set (console mode, store URL, --traceback)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from fairmark.console import console

state: dict[str, Any] = {"traceback": False, "store": None}


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    @click.option("--json", "json_mode", is_flag=True, help="Machine output on stdout (nothing else there).")
    @click.option(
        "--store",
        "store_url",
        envvar="FAIRMARK_STORE",
        metavar="URL",
        help="SQLAlchemy URL or SQLite path (default $XDG_DATA_HOME/fairmark/fairmark.db).",
    )
    @click.option("--traceback", is_flag=True, help="Show the Python stack on errors.")
    @functools.wraps(func)
    def wrapper(*args: Any, json_mode: bool, store_url: str | None, traceback: bool, **kwargs: Any) -> Any:
        state["traceback"] = traceback
        state["store"] = store_url
        console.configure(json_mode=json_mode)
        return func(*args, **kwargs)

    return wrapper


def stack(*options: Callable[[Any], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Several click options as one decorator, in the order they are listed (--help lists them so)."""

    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            func = option(func)
        return func

    return apply


ALLOW_CONCURRENT = click.option(
    "--allow-concurrent", is_flag=True, help="Run even if another fairmark run holds the host lock."
)
MONITOR_INTERVAL = click.option(
    "--monitor-interval",
    type=float,
    default=1.0,
    show_default=True,
    metavar="S",
    help="Seconds between two samples of the monitors during a trial.",
)
NO_MONITORS_HELP = "Do not sample vmstat-like monitors during trials."


def guard_options(
    accept_help: str, no_monitors_help: str = NO_MONITORS_HELP
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--accept-risk, --allow-concurrent, --no-monitors and --monitor-interval of a command that runs plans."""
    return stack(
        click.option("--accept-risk", is_flag=True, help=accept_help),
        ALLOW_CONCURRENT,
        click.option("--no-monitors", is_flag=True, help=no_monitors_help),
        MONITOR_INTERVAL,
    )


def open_store():  # -> fairmark.store.db.Store (imported lazily: `fairmark compare` needs no database)
    from fairmark.store.db import Store

    return Store.open(state["store"])


def profile_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--profile LIST` and `--explain` for the commands that run a plan between two builds (ab, bisect): when
    the gate trips, the line that says which function regressed (report/explain)."""
    func = click.option(
        "--explain",
        is_flag=True,
        help="CPU-profiled trials only in a run whose difference is significant: where it went, per function.",
    )(func)
    return click.option(
        "--profile",
        metavar="LIST",
        help="Profilers (cpu,locks,syscalls) of every run: extra trials per cell, kept apart from the measured.",
    )(func)


def profilers(profile: str | None, explain: bool) -> dict[str, Any]:
    """--profile and --explain as BisectOptions takes them."""
    names = tuple(p.strip() for p in profile.split(",") if p.strip()) if profile else ()
    return {"profile": names, "explain": explain}
