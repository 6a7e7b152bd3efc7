"""The text and Markdown reports' writer: headings, wrapped paragraphs and preformatted blocks at WIDTH
columns, fenced in Markdown (report/text.py and the sections' text parts write through it)."""

from __future__ import annotations

from collections.abc import Sequence

from fairmark import prose

WIDTH = 80


class Writer:
    def __init__(self, markdown: bool):
        self.md = markdown
        self.lines: list[str] = []

    def heading(self, text: str, level: int = 2) -> None:
        if self.md:
            self.lines += ["", "#" * level + " " + text, ""]
        else:
            rule = "=" if level <= 2 else "-"
            wrapped = prose.wrap(text, WIDTH, break_long_words=False, break_on_hyphens=False) or [""]
            self.lines += ["", *wrapped, rule * min(max(map(len, wrapped)), WIDTH)]

    def para(self, text: str, indent: str = "") -> None:
        rest = " " * len(indent) + "  "
        self.lines += prose.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=rest) or [""]

    def block(self, lines: Sequence[str]) -> None:
        """Preformatted lines (tables, plots): fenced in Markdown so they keep their columns."""
        if self.md:
            self.lines += ["```", *lines, "```"]
        else:
            self.lines += list(lines)

    def blank(self) -> None:
        self.lines.append("")
