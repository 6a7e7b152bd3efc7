"""The one place that writes to the terminal.

Human output goes to stdout; with ``--json`` stdout carries exactly one JSON document and everything human
(progress, notes, warnings) goes to stderr. Colour follows rich's rules: off when ``NO_COLOR`` is set or the
stream is not a terminal, so pipes and CI logs get plain lines.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from rich.console import Console as RichConsole
from rich.markup import escape


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    return str(obj)


def _null(_constant: str) -> None:
    return None


def dumps(obj: Any, *, indent: int | None = 2) -> str:
    """JSON has no NaN/Infinity: an undefined statistic is null, never a made-up number. The first pass writes
    them as the tokens NaN/Infinity and reading it back turns exactly those tokens into null."""
    plain = json.loads(json.dumps(obj, default=_json_default), parse_constant=_null)
    return json.dumps(plain, indent=indent, allow_nan=False)


class Console:
    def __init__(self) -> None:
        self.json_mode = False
        self.quiet = False
        self._streams: tuple[object, object, bool] | None = None
        self._out: RichConsole | None = None
        self._err: RichConsole | None = None

    def _current(self) -> None:
        """(Re)bind to the current sys.stdout/sys.stderr and NO_COLOR: tests and embedding code swap streams,
        and a console left bound to a closed stream must never be written to."""
        key = (sys.stdout, sys.stderr, bool(os.environ.get("NO_COLOR")))
        if key != self._streams:
            no_color = key[2]
            # soft_wrap: lines are never broken at the terminal width (plots, paths and messages stay
            # greppable); tables still fit themselves to the width.
            self._out = RichConsole(file=sys.stdout, no_color=no_color, highlight=False, soft_wrap=True)
            self._err = RichConsole(
                file=sys.stderr, no_color=no_color, highlight=False, stderr=True, soft_wrap=True
            )
            self._streams = key

    @property
    def out(self) -> RichConsole:
        self._current()
        assert self._out is not None
        return self._out

    @property
    def err(self) -> RichConsole:
        self._current()
        assert self._err is not None
        return self._err

    def configure(self, *, json_mode: bool = False, quiet: bool = False) -> None:
        self.json_mode, self.quiet = json_mode, quiet

    @property
    def human(self) -> RichConsole:
        """Where human-readable output goes: stdout normally, stderr in --json mode."""
        return self.err if self.json_mode else self.out

    @property
    def interactive(self) -> bool:
        return self.err.is_terminal and not os.environ.get("NO_COLOR") and not os.environ.get("CI")

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if self.json_mode and not kwargs.pop("force", False):
            return
        self.out.print(*objects, **kwargs)

    def text(self, line: str) -> None:
        """A plain line, printed verbatim (no markup interpretation); suppressed in --json mode."""
        if not self.json_mode:
            self.out.print(escape(line), highlight=False)

    def line(self, text: str) -> None:
        """A plain line on stderr, written verbatim without rich's rendering: the per-trial log of a plan of
        thousands of millisecond trials must cost microseconds per line, not a fifth of a millisecond."""
        stream = self.err.file
        stream.write(text + "\n")
        stream.flush()

    def note(self, message: str) -> None:
        if not self.quiet:
            self.err.print(f"[dim]fairmark:[/dim] {escape(message)}")

    def warn(self, message: str) -> None:
        self.err.print(f"[yellow]fairmark: warning:[/yellow] {escape(message)}")

    def error(self, message: str, hint: str | None = None) -> None:
        self.err.print(f"[bold red]fairmark: error:[/bold red] {escape(message)}")
        if hint:
            self.err.print(f"  [dim]hint:[/dim] {escape(hint)}")

    def emit_json(self, obj: Any) -> None:
        sys.stdout.write(dumps(obj) + "\n")
        sys.stdout.flush()

    @contextlib.contextmanager
    def status(self, message: str) -> Iterator[None]:
        if self.interactive:
            with self.human.status(escape(message)):
                yield
        else:
            self.note(message)
            yield


console = Console()
