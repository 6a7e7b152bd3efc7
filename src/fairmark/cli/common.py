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


def open_store():  # -> fairmark.store.db.Store (imported lazily: `fairmark compare` needs no database)
    from fairmark.store.db import Store

    return Store.open(state["store"])


def run_hosts(loaded: Any, options: Any) -> dict[str, Any] | None:
    """The [hosts.NAME] a run of `loaded` (a LoadedPlan) uses, for the runner (which connects them): the CLI builds
    a run's hosts, the run core never imports remote/. None for a plan that runs on this machine alone."""
    if not loaded.plan.remote:
        return None
    from fairmark.remote.hosts import hosts_for

    return dict(
        hosts_for(loaded.plan, loaded.path, hooks=options.hooks, allow_concurrent=options.allow_concurrent)
    )
