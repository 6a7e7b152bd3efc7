"""console.table laid out without rich (fairmark/plaintable.py) is rich's own layout, byte for byte: random tables
and lines (widths, justification, values of digits, signs, '±', '▲', brackets, colons, CJK, emoji codes, empty
values) printed both ways to a pipe and compared; what the plain path does not know goes to rich."""

from __future__ import annotations

import io
import random
import sys

import pytest

from fairmark.console import Console, _plain_text, _rich_class, escape, fit
from fairmark.plaintable import PlainTable

PIECES = [
    "1",
    "22",
    "abc",
    "1.0028 ± 0.0033",
    "▲",
    " ",
    "",
    "branch=main",
    "x [a] y",
    "[bold]b[/bold]",
    "00:00",
]
PIECES += ["日本", ":smile:", "a:b:c", "−5%", "é", "tab\there", "back\\slash", "—", "µs", "2026-01-01 00:00"]


PLAIN = [p for p in PIECES if _plain_text(p) and "[" not in p and ":" not in p and p.strip() == p]
# brackets rich reads as no markup (an interval of a bounded count), and a time of day (":40:", no emoji)
BRACKETS = [*PLAIN, "[0, 5]", "51 [0, 60]", "09:40:52", "[9]"]
PIECES += ["[0, 5]"]


def _value(rng: random.Random, pieces: list[str] = PIECES) -> str:
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))


def _rich_print(table: PlainTable, width: int) -> str:
    from rich.console import Console as RichConsole

    out = io.StringIO()
    rich = RichConsole(file=out, width=width, no_color=True, highlight=False, soft_wrap=True)
    t = table.as_rich()
    fit(t, width)
    rich.print(t)
    return out.getvalue()


@pytest.mark.parametrize("seed", range(400))
def test_a_random_table_reads_as_rich_lays_it_out(seed: int) -> None:
    rng = random.Random(seed)
    ncol = rng.randint(1, 6)
    headers = tuple(f"h{i}" + rng.choice(["", "x", "long header", "±"]) for i in range(ncol))
    right = tuple(h for h in headers if rng.random() < 0.4)
    wrap = tuple(h for h in headers if rng.random() < 0.3)
    table = PlainTable(headers, wrap, right, {})
    pieces = [PIECES, BRACKETS, PLAIN, PLAIN][seed % 4]  # most tables plain: the path under test
    for _ in range(rng.randint(0, 8)):
        table.add_row(*(_value(rng, pieces) for _ in headers))
    width = rng.choice([40, 80, 120])
    lines = table.lines(width)
    if lines is not None:
        assert "\n".join(lines) + "\n" == _rich_print(table, width)


def test_the_plain_path_takes_the_common_tables() -> None:
    table = PlainTable(("#", "run", "mean ± CI", "tags"), ("tags",), ("#",), {})
    table.add_row("12 ▲", "6cbf0ea9", "1.0028 ± 0.0033", "branch=main commit=0")
    table.add_row("3", "2bcacf45", "1.000 ± 0.004", "")
    assert table.lines(80) == [
        "   #  run       mean ± CI        tags                ",
        "─" * 53,
        "12 ▲  6cbf0ea9  1.0028 ± 0.0033  branch=main commit=0",
        "   3  2bcacf45  1.000 ± 0.004                        ",
    ]
    assert table.lines(40) is None  # wider than the screen: rich folds it
    assert PlainTable(("a",), (), (), {"show_header": False}).lines(80) is None


@pytest.mark.parametrize("seed", range(200))
def test_a_line_and_a_titled_table_print_as_rich_prints_them(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    text = " ".join(_value(rng) for _ in range(rng.randint(1, 30)))
    table = PlainTable(("a", "b"), (), ("b",), {})
    table.add_row(_value(rng), _value(rng))
    got = {}
    for plain in (True, False):
        out = io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setenv("COLUMNS", "60")
        if not plain:  # rich's path: as on a terminal, without colour
            monkeypatch.setattr("fairmark.console._plain_wrap_width", lambda stream: None)
            monkeypatch.setattr(PlainTable, "lines", lambda self, width: None)
        console = Console()
        console.text(text)
        console.print()
        console.print_table(table, text)
        got[plain] = out.getvalue()
    assert got[True] == got[False]
    assert _plain_text("x [a] y\nz") and not _plain_text("a\\b") and not _plain_text(":smile:")


MARKUP = [
    "[bold]",
    "[/bold]",
    "[/]",
    "[dim]",
    "[yellow]",
    "[bold red]",
    "[/bold red]",
    "[red bold]",
    "[a]",
    "[b] w: ",
    "\\",
    "\\[",
    "\\\\",
    "[link=https://x]",
    "[@click]",
    "[#ff0000]",
    ":smile:",
    ":Smile:",
    ":smile-emoji:",
    ":40:",
    ":100:",
    "05:40:52",
    "a:b",
    "text",
    " ",
    "\n",
    "日本",
    "[",
    "]",
    "[1]",
    "±5%",
    "\t",
    "\x1b",
]


def _rich_markup(text: str) -> str | None:
    """What rich (fairmark's console class) prints of `text` to a file, without colour; None: a MarkupError."""
    from rich.errors import MarkupError

    out = io.StringIO()
    try:
        _rich_class()(file=out, no_color=True, highlight=False, soft_wrap=True, width=80).print(text)
    except MarkupError:
        return None
    return out.getvalue()


@pytest.mark.parametrize("seed", range(300))
def test_markup_to_a_pipe_reads_as_rich_prints_it(seed: int) -> None:
    """console.print of a line of markup to a pipe or a file is written without rich (`show` loads no rich):
    random markup, escaped or not, gives rich's bytes, or is handed to rich (None) — never other bytes."""
    from fairmark.plaintable import plain_markup

    rng = random.Random(seed)
    text = "".join(rng.choice(MARKUP) for _ in range(rng.randint(0, 12)))
    if seed % 3 == 0:
        text = escape(text)
    got = plain_markup(text)
    if got is not None:
        assert got + "\n" == _rich_markup(text), repr(text)


def test_the_common_lines_of_show_need_no_rich() -> None:
    from fairmark.plaintable import plain_markup

    assert plain_markup("[bold]run 1 — x[/bold]") == "run 1 — x"
    assert plain_markup(escape("[a] w: 92% user, started 2026-11-29 05:40:52")) == (
        "[a] w: 92% user, started 2026-11-29 05:40:52"
    )
    assert plain_markup("[yellow]quick run[/]") == "quick run"
    assert plain_markup(":smile:") is None  # rich replaces it: rich prints it
    assert plain_markup("[/bold]") is None  # rich's MarkupError, in rich's words


@pytest.mark.parametrize("seed", range(200))
def test_escape_is_rich_escape(seed: int) -> None:
    from rich.markup import escape as rich_escape

    rng = random.Random(seed)
    text = "".join(rng.choice(MARKUP) for _ in range(rng.randint(0, 10)))
    assert escape(text) == rich_escape(text)


def test_the_digit_names_in_rich_emoji_table() -> None:
    """plaintable reads ":40:" as plain without rich's table: the only names of digits in it are these."""
    from rich._emoji_codes import EMOJI

    from fairmark.plaintable import _DIGIT_EMOJI

    assert {name for name in EMOJI if name.isascii() and name.isdigit()} == _DIGIT_EMOJI


@pytest.mark.parametrize("columns", [None, "60", "132"])
def test_the_width_of_a_pipe_is_rich_width(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    from fairmark.console import _plain_width

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert _plain_width(out) == _rich_class()(file=out).width


@pytest.mark.parametrize("seed", range(60))
def test_warnings_and_errors_to_a_pipe_read_as_rich_prints_them(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    message = " ".join(_value(rng) for _ in range(rng.randint(1, 30)))
    hint = " ".join(_value(rng) for _ in range(rng.randint(0, 10)))
    columns = rng.choice(["60", "0", "200"]) if seed % 2 else "60"
    got = {}
    for plain in (True, False):
        err = io.StringIO()
        monkeypatch.setattr(sys, "stderr", err)
        monkeypatch.setenv("COLUMNS", columns)
        if not plain:
            monkeypatch.setattr("fairmark.console._plain_wrap_width", lambda stream: None)
        console = Console()
        console.warn(message)
        console.note(message)
        console.error(message, hint or None)
        got[plain] = err.getvalue()
    assert got[True] == got[False]
