"""`--wait-lock DURATION` (run, resume, calibrate, bisect, ab), and the look at the host lock a measuring command
takes first, before its heavy imports (issue 31 item 2).

A CI job that finds the machine busy with someone else's benchmark either waits for it (`--wait-lock 30m`: it
says once who holds the lock, then takes it when it is free) or is refused at once (exit 3) — in milliseconds of
CPU: the imports a run needs (pydantic, SQLAlchemy, numpy, scipy) cost a second of CPU, which a loaded machine
stretched to 8 s of wall before it said no (bench/lock_refusal.py measures it). Standard library and click only.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from typing import Any

import click

from fairmark.console import console
from fairmark.run.guard.lock import wait_until_free

_DURATION_RE = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>s|sec|m|min|h|d)?", re.IGNORECASE)
_UNIT_S = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """Seconds in `text`: 90, 90s, 10m, 1.5h, 1h30m (ValueError otherwise)."""
    pos, total = 0, 0.0
    text = text.strip()
    while pos < len(text):
        m = _DURATION_RE.match(text, pos)
        if not m:
            raise ValueError(f"{text!r} is not a duration (e.g. 90s, 10m, 1h30m)")
        total += float(m["n"]) * _UNIT_S[(m["unit"] or "").lower()]
        pos = m.end()
    if not text:
        raise ValueError("an empty duration (e.g. 90s, 10m, 1h30m)")
    return total


def _duration_param(ctx: click.Context, param: click.Parameter, value: str | None) -> float:
    if value is None:
        return 0.0
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def wait_lock_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--wait-lock DURATION` as `wait_lock`: seconds (0.0 when not given)."""
    return click.option(
        "--wait-lock",
        "wait_lock",
        metavar="DURATION",
        callback=_duration_param,
        help="When another fairmark run holds this machine's lock, wait up to DURATION (90s, 10m, 1h) for it, "
        "saying once who holds it, then run; exit 3 if it is still held then (default: exit 3 at once).",
    )(f)


def runs_here(plan: str) -> bool:
    """Whether a plan file runs trials on this machine, as far as its TOML says without loading it: a variant
    without a `host` (or no [[variant]], the default one). A bundle or a file that is not TOML: False — the run
    then takes (or is refused) the lock after loading it, as before."""
    if not plan.endswith(".toml"):
        return False
    try:
        with open(plan, "rb") as f:
            doc = tomllib.load(f)
    except (OSError, ValueError):
        return False  # the plan's loader says what is wrong with it
    variants = doc.get("variant")
    if not isinstance(variants, list) or not variants:
        return True
    return any(not (isinstance(v, dict) and v.get("host")) for v in variants)


def lock_first(wait_s: float, *, allow_concurrent: bool = False, plan: str | None = None) -> None:
    """Before a measuring command's heavy imports: wait (up to wait_s) for the host lock to be free, or refuse
    (EnvironmentRefused, exit 3) naming who holds it. `plan`: a run's plan file — a plan whose every trial runs
    on other hosts does not lock this machine, nor does --allow-concurrent."""
    if allow_concurrent or (plan is not None and not runs_here(plan)):
        return

    wait_until_free(wait_s, on_wait=console.note)
