"""Screens that said something wrong or misleading ("every screen right, round two", continued): one test (or
more) per text, each failing on the code before its fix (main at 7f07b74)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "words",
    ["±400 µs", "± 0.3 ms", "2.1 M ops/s", "5.2 MB/s", "880 KiB", "17 min", "4.1 s", "1.50 ×", "3.2 GHz"],
)
def test_a_value_keeps_its_unit_and_plus_minus_its_number_on_one_line(words: str) -> None:
    """The wrapper split "±400 µs" into "±400" at a line's end and "µs" at the next one's start, and
    "12.5 ± 0.3 ms" into "12.5 ± 0.3" and "ms" (or "12.5 ±" and "0.3 ms"): a value and its unit, and "±" and its
    number, now stay on one line, on the terminal and in the 80-column reports."""
    from fairmark.console import console
    from fairmark.report.writer import WIDTH, Writer

    for lead in range(60, 80):  # the words' every place near the line's end
        text = f"{'x' * lead} {words} y"
        lines = console.wrap(text, width=80).split("\n")
        writer = Writer(markdown=False)
        writer.para(text)
        for wrapped in (lines, writer.lines):
            assert max(map(len, wrapped)) <= WIDTH, wrapped
            assert any(words in line for line in wrapped), (lead, wrapped)


def test_the_wrapper_still_breaks_between_values() -> None:
    """Only a value and its unit are joined: "1.2 ± 400 µs" may break before "±", and a plain count of
    things ("3 runs") is words as any others."""
    from fairmark.console import console

    lines = console.wrap("x" * 74 + " a 1.2 ± 400 µs", width=80).split("\n")
    assert lines == ["x" * 74 + " a 1.2", "  ± 400 µs"], lines
    lines = console.wrap("x" * 76 + " 3 runs", width=80).split("\n")
    assert lines == ["x" * 76 + " 3", "  runs"], lines
