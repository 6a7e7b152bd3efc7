"""console.table laid out without rich (fairmark/plaintable.py) is rich's own layout, byte for byte: random tables
and lines (widths, justification, values of digits, signs, '±', '▲', brackets, colons, CJK, emoji codes, empty
values) printed both ways to a pipe and compared; what the plain path does not know goes to rich."""

from __future__ import annotations

import io
import random
import sys

import pytest

from fairmark.console import Console, _plain_text, fit
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
    pieces = PLAIN if seed % 4 else PIECES  # most tables plain: the path under test
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
