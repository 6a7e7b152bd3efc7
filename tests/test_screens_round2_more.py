"""Screens that said something wrong or misleading ("every screen right, round two", continued): one test (or
more) per text, each failing on the code before its fix (main at 7f07b74)."""

from __future__ import annotations

from pathlib import Path

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


@pytest.mark.parametrize("words", ["α = 5%", "p < 0.05", "(r₁ = -0.50)"])
def test_a_relation_keeps_its_two_sides_on_one_line(words: str) -> None:
    """`calibrate`: "… (0%, 95% CI 0–84%; α =" at a line's end and "5%); detects …" at the next one's start."""
    from fairmark.console import console

    for lead in range(60, 80):
        lines = console.wrap(f"{'x' * lead} {words} y", width=80).split("\n")
        assert any(words in line for line in lines), (lead, lines)


def test_a_tables_wrapped_column_keeps_a_value_with_its_unit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table's column that wraps (check's status, compare-runs' "B vs A") is wrapped by rich, at every space:
    "… 12.5 ± 0.3" above "ms per call", "… 1.2 ±" above "0.4 s"."""
    from fairmark.console import console

    monkeypatch.setenv("COLUMNS", "80")
    t = console.table("name", "said", wrap=("said",))
    t.add_row("x" * 50, "the change is now 12.5 ± 0.3 ms per call, or 400 µs in all")
    t.add_row("y" * 50, "a change of the mean 1.2 ± 0.4 s, or 3 s")
    console.print_table(t)
    lines = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert max(map(len, lines)) <= 80, lines
    for words in ("± 0.3 ms", "400 µs", "± 0.4 s"):
        assert any(words in line for line in lines), (words, lines)


def test_the_wrapper_still_breaks_between_values() -> None:
    """Only a value and its unit are joined: "1.2 ± 400 µs" may break before "±", and a plain count of
    things ("3 runs") is words as any others."""
    from fairmark.console import console

    lines = console.wrap("x" * 74 + " a 1.2 ± 400 µs", width=80).split("\n")
    assert lines == ["x" * 74 + " a 1.2", "  ± 400 µs"], lines
    lines = console.wrap("x" * 76 + " 3 runs", width=80).split("\n")
    assert lines == ["x" * 76 + " 3", "  runs"], lines


def _report(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    import screens_store
    from fairmark.cli.main import main

    store = tmp_path / "screens.db"
    screens_store.build(store)
    assert main(["report", "last", *args, "--store", f"sqlite:///{store}"]) == 0
    return capsys.readouterr().out


def test_ministats_lines_in_the_unit_of_the_table_above_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report --text`: "alloc — wall_s in ms" over "nodebug 8 63.1 ± 0.6", then ministat's lines in seconds
    ("x 8 0.062438376 … 0.063148288"), and under "bytes_s in GB/s" "5.344727e+09": the same means in another
    unit, no unit said. They are now in the table's unit (63.148288, 5.344727)."""
    text = _report(tmp_path, capsys, "--text")
    for heading, mean in (("alloc — wall_s in ms", 63.1), ("crypto — bytes_s in GB/s", 5.34)):
        section = text.split(heading)[1]
        avg = float(section.split("Stddev\n")[1].split()[5])  # x, N, Min, Max, Median, Avg
        assert avg == pytest.approx(mean, rel=0.01), section[:1500]


def test_checks_change_of_a_constant_metric_has_no_sign() -> None:
    """`fairmark check last` after `fairmark run plans/quick.toml --quick`: zstd's ratio, the same in every trial
    of both variants, showed "+0%" in the change column: no change has no sign (the verdicts say "0%")."""
    from fairmark.report.check_output import fmt_change
    from fairmark.verdict.compare import compare

    same = compare([1.333] * 5, [1.333] * 5, name_baseline="a", name_other="b")
    assert fmt_change(same) == "0%", fmt_change(same)
    assert fmt_change(compare([7.0] * 5, [7.0, 7.0, 7.0, 7.0, 7.07])).startswith("+"), (
        "a change keeps its sign"
    )


def test_a_calibrations_alpha_is_the_confidences_complement_exactly() -> None:
    """`fairmark calibrate plans/quick.toml --runs 2 --quick --json` stored and printed "alpha":
    0.050000000000000044 (1 - 95/100 in binary floating point)."""
    from fairmark.stats.calibration import summarize

    aa = [{"significant": False, "mde_percent": 9.0, "scale": "log", "n_baseline": 5, "n_other": 5}] * 2
    assert [summarize(aa, confidence=c)["alpha"] for c in (95.0, 99.0, 99.5, 80.0)] == [
        0.05,
        0.01,
        0.005,
        0.2,
    ]


def test_markdown_paragraphs_do_not_run_together() -> None:
    """`report last --markdown` of a quick run on a busy machine: "… confidence 95%, baseline nodebug", "quick
    run: …" and "busy machine: …" were written line after line, and Markdown shows them as one paragraph: "…
    baseline nodebug quick run: few trials … not a result to quote busy machine: …". List items and the blocks
    under them (4 spaces: apart, Markdown would make them code) still follow on."""
    from fairmark.report.writer import Writer

    w = Writer(markdown=True)
    w.para("status done, confidence 95%, baseline nodebug")
    w.para("quick run: few trials and short parameters")
    w.para("- alloc wall_s: slower")
    w.para("change +405%", "    ")
    w.para("- zstd ratio: the same value")
    w.para("  [nodebug] alloc: 99% user time")
    w.para("  [malloc-debug] alloc: 99.5% user time")
    assert w.lines == [
        "status done, confidence 95%, baseline nodebug",
        "",
        "quick run: few trials and short parameters",
        "- alloc wall_s: slower",
        "    change +405%",
        "- zstd ratio: the same value",
        "",
        "  [nodebug] alloc: 99% user time",
        "",
        "  [malloc-debug] alloc: 99.5% user time",
    ], w.lines
    text = Writer(markdown=False)
    text.para("status done")
    text.para("quick run")
    assert text.lines == ["status done", "quick run"], "the text report as it was"
