"""SIGTERM and SIGHUP — what a CI cancel, a closed terminal or `kill PID` send — made to unwind like Ctrl-C, so
that every `finally` puts back what it changed (errors.Terminated, exit status 128 + the signal); and critical
sections in which any of these signals (Ctrl-C too) waits for the section's end.

Python's default for SIGTERM and SIGHUP ends the process at once: no `finally` runs, so a `fairmark bisect`
cancelled by CI left `git bisect` in progress, its worktrees registered, its temporary directory and a stale
host lock. `unwinding()` installs a handler for the signals that still have the default disposition (one
ignored on purpose, as `nohup` ignores SIGHUP, stays ignored). The first signal raises; later ones only mark
that the process is ending, so that a second SIGTERM cannot cut the clean-up the first one started.

`held()` marks a section that must not be cut half-way — git writing its bisect state, a worktree being
registered, a clean-up: a signal arriving inside is raised when the section ends, also in place of an exception
the section ends with (a signal sent to the whole process group ends the git inside too, and its failure is the
signal's doing); a clean-up already under way for an earlier signal just goes on.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from fairmark.errors import Terminated

_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class _State:
    depth = 0  # held sections entered and not left
    pending: int | None = None  # a signal that arrived inside a held section
    ending = False  # a signal was raised: the process is unwinding


def _raise(signum: int) -> None:
    _State.ending = True
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def _handler(signum: int, _frame: FrameType | None) -> None:
    if _State.depth:
        _State.pending = _State.pending or signum
        return
    if _State.ending:  # a second signal while the first one's clean-up runs: that clean-up goes on
        return
    _raise(signum)


@contextlib.contextmanager
def unwinding() -> Iterator[None]:
    """For the duration: SIGTERM/SIGHUP raise Terminated, Ctrl-C KeyboardInterrupt, each held inside `held()`.
    Only in the main thread (where Python runs handlers); nested uses are free."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    installed: dict[int, Any] = {}
    for sig in (*_SIGNALS, signal.SIGINT):
        current = signal.getsignal(sig)
        default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
        if current is default:
            installed[sig] = signal.signal(sig, _handler)
    try:
        yield
    finally:
        for signum, old in installed.items():
            signal.signal(signum, old)
        if installed:
            _State.ending, _State.pending = False, None


class held:  # lower case: used as `with held():`, like contextlib's context managers
    """A section no signal cuts: one arriving inside is raised at its end."""

    def __enter__(self) -> None:
        _State.depth += 1

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        _State.depth -= 1
        if _State.depth or _State.pending is None:
            return
        signum, _State.pending = _State.pending, None
        if not _State.ending:
            _raise(signum)
