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
        self._para_end = -1  # len(lines) after the last paragraph

    def heading(self, text: str, level: int = 2) -> None:
        if self.md:
            self.lines += ["", "#" * level + " " + text, ""]
        else:
            rule = "=" if level <= 2 else "-"
            wrapped = prose.wrap(text, WIDTH, break_long_words=False, break_on_hyphens=False) or [""]
            self.lines += ["", *wrapped, rule * min(max(map(len, wrapped)), WIDTH)]

    def para(self, text: str, indent: str = "") -> None:
        """`text` wrapped at WIDTH under `indent`. In Markdown a paragraph right after another is set apart by a
        blank line (their lines ran together: "… baseline nodebug quick run: few trials …"), but a list item (it
        starts its own) and a block under a list item (4 spaces or more: apart, it would be code)."""
        if self.md and self._para_end == len(self.lines) and self.lines[-1] and not _joins_on(indent + text):
            self.lines.append("")
        rest = " " * len(indent) + "  "
        self.lines += prose.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=rest) or [""]
        self._para_end = len(self.lines)

    def block(self, lines: Sequence[str]) -> None:
        """Preformatted lines (tables, plots): fenced in Markdown so they keep their columns."""
        if self.md:
            self.lines += ["```", *lines, "```"]
        else:
            self.lines += list(lines)

    def blank(self) -> None:
        self.lines.append("")


def _joins_on(line: str) -> bool:
    """A Markdown line that goes on where the one before it left off: a list item, or indented 4 spaces."""
    return line.startswith("    ") or line.lstrip(" ").startswith(("- ", "* "))
