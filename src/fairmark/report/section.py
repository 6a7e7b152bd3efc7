"""The interface of a run's report section (report/sections.py holds the list, in its order)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.report.writer import Writer


@dataclass(frozen=True)
class Section:
    """One section of a run's report: its name, and the parts its own module writes (None: the renderer's own
    part of that name, or nothing). `terminal(r)` prints it for `show`, `text(w, r)` writes it for text and
    Markdown, `json(r)` gives its keys of `--json`, `html(r)` what its template (report/templates/sections/
    NAME.html.j2) reads as `r[NAME]`."""

    name: str
    terminal: Callable[[RunReport], None] | None = None
    text: Callable[[Writer, RunReport], None] | None = None
    json: Callable[[RunReport], dict[str, Any]] | None = None
    html: Callable[[RunReport], Any] | None = None
