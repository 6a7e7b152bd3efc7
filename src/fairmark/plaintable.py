"""A compact table (console.table) kept as text until it is printed, and laid out here when rich's layout is
already known: every value fits on one line and the output is plain (a pipe or a file, no colour).

Rich lays such a table out as the values' widest cell per column, each value justified in it, two spaces between
columns and a rule under the header; it costs ~2.5 ms a row to get there (`fairmark history` of 200 runs spent 0.6 s
of its 1.8 s CPU in rich's table, bench/read_cost.py) and ~0.1 s to import. Anything else — markup, an emoji
code, a control character, a table wider than the screen, a table option — is handed to rich as before
(`as_rich`): tests/test_plaintable.py lays random tables out both ways and compares them byte for byte.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table

# What rich reads as other than plain text in a value: markup, a tab (expanded), a line break, a control character
# (made visible by console.printable); and an emoji code (_emoji_free).
_NOT_PLAIN = re.compile(r"[\[\\\t\n\x00-\x1f\x7f-\x9f]")
# rich/_emoji_replace.py's pattern: ":name:" (or ":name-emoji:", ":name-text:") is replaced when rich knows the name
_EMOJI = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")
# The only names of digits alone in rich's emoji table (tests/test_plaintable.py checks it): a time of day
# ("05:40:52") holds ":40:", and is told plain without loading the table (3600 names, ~10 ms)
_DIGIT_EMOJI = frozenset({"100", "1234"})
# Characters outside ASCII that one cell of a terminal shows (rich.cells agrees); any other: rich.cells decides
_NARROW = frozenset("±▲▼—–−…×µ→←↑↓≈≤≥·°²³‰│✓✗√∞≠∆Δσμ€£")


def plain(text: str) -> bool:
    """`text` is shown as it is, by rich as here."""
    return not _NOT_PLAIN.search(text) and _emoji_free(text)


def _emoji_free(piece: str) -> bool:
    """rich's emoji replacement leaves `piece` (one piece of text between markup tags) as it is."""
    for match in _EMOJI.finditer(piece):
        name = match.group(2).lower()
        if name.isascii() and name.isdigit() and name not in _DIGIT_EMOJI:
            continue
        from rich._emoji_codes import EMOJI

        if name in EMOJI:
            return False
    return True


# rich's own markup syntax (rich/markup.py RE_TAGS): a run of backslashes, then "[" and a tag's text
_TAG = re.compile(r"(\\*)\[([a-z#/@][^[]*?)]")
# The tags this knows rich reads without an error: style words ("bold", "bold red", "dim"), closed by name or by
# "[/]". Links, "@" handlers and parameters go to rich.
_STYLE = re.compile(r"/?[a-z]+(?: [a-z]+)*|/")
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def plain_markup(markup: str) -> str | None:
    """What rich's `print` of `markup` writes to a pipe or a file (no colour, soft wrap: the lines as they are,
    styles dropped, escaped brackets restored), or None where this does not know it: a tag other than style words,
    a close that closes nothing, an emoji code, a tab or a control character. Parsed as rich/markup.py parses it
    (each piece of text on its own); tests/test_plaintable.py compares both on random markup."""
    out: list[str] = []
    stack: list[str] = []
    position = 0
    for match in _TAG.finditer(markup):
        escapes, tag = match.groups()
        out.append(markup[position : match.start()].replace("\\[", "["))
        position = match.end()
        backslashes, escaped = divmod(len(escapes), 2)
        out.append("\\" * backslashes)
        if escaped:
            out.append(f"[{tag}]")
        elif not _STYLE.fullmatch(tag) or not _close(stack, tag):
            return None
    out.append(markup[position:].replace("\\[", "["))
    text = "".join(out)
    return None if _CONTROL.search(text) or not all(_emoji_free(piece) for piece in out) else text


def _close(stack: list[str], tag: str) -> bool:
    """Push an opening tag, pop a closing one (by name, the last of that name; "[/]": the last); False where rich
    raises a MarkupError (nothing of that name is open)."""
    if not tag.startswith("/"):
        stack.append(tag)
        return True
    name = tag[1:]
    if not name:
        if not stack:
            return False
        stack.pop()
        return True
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] == name:
            del stack[i]
            return True
    return False


def _cell(value: object) -> bool:
    """A table's value is laid out here: plain text, or text whose brackets rich reads as no markup ("51 [0, 60]"),
    on one line, no blank at either end (rich's justification strips it)."""
    if not isinstance(value, str) or value != value.strip(" "):
        return False
    return plain(value) or ("\n" not in value and plain_markup(value) == value)


def cell_len(text: str) -> int:
    if text.isascii() or all(ch.isascii() or ch in _NARROW for ch in text):
        return len(text)
    from rich.cells import cell_len as rich_len

    return rich_len(text)


class PlainTable:
    """console.table's table: its columns and rows, laid out by `lines` or handed to rich by `as_rich`."""

    def __init__(self, columns: tuple[str, ...], wrap: tuple[str, ...], right: tuple[str, ...], options: Any):
        self.headers = columns
        self.wrap, self.right, self.options = wrap, right, dict(options)
        self.rows: list[tuple[Any, ...]] = []

    def add_row(self, *cells: Any) -> None:
        self.rows.append(cells)

    def lines(self, width: int) -> list[str] | None:
        """The table's lines as rich prints them at `width` columns, or None where this does not know them."""
        if self.options or not self.headers:
            return None
        rows = [self.headers, *self.rows]
        if any(len(r) != len(self.headers) or not all(_cell(c) for c in r) for r in rows):
            return None
        widths = [max(cell_len(r[i]) for r in rows) for i in range(len(self.headers))]
        total = sum(widths) + 2 * (len(widths) - 1)
        if total > width or 0 in widths:
            return None  # rich folds or drops what does not fit, and shows an empty column its own way
        right = [h in self.right for h in self.headers]

        def line(row: tuple[str, ...]) -> str:
            return "  ".join(
                (" " * (w - cell_len(c)) + c) if r else (c + " " * (w - cell_len(c)))
                for c, w, r in zip(row, widths, right, strict=True)
            )

        return [line(self.headers), "─" * total, *(line(r) for r in self.rows)]

    def as_rich(self) -> Table:
        """The same table as rich's (console.table's layout: no boxes, a rule under the header)."""
        from rich import box
        from rich.table import Table

        t = Table(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1),
            collapse_padding=True,
            **self.options,
        )
        for col in self.headers:
            t.add_column(col, no_wrap=col not in self.wrap, justify="right" if col in self.right else "left")
        for row in self.rows:
            t.add_row(*row)
        return t
