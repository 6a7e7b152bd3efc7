"""Screens that said something wrong or misleading, noticed at the last stop ("every screen right, round two"):
one test (or more) per text, each failing on the code before its fix (main at 9fe1859)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

OTHERTOOLS = Path(__file__).parent / "fixtures" / "othertools"


def test_format_cvs_docstring_shows_what_it_prints() -> None:
    """Its docstring promised '140%' (two significant digits) where format_cv(1.35) prints '135%'."""
    from fairmark.stats.digits import format_cv

    examples = re.findall(r"([\d.]+) → '([^']+)'", format_cv.__doc__ or "")
    assert examples, format_cv.__doc__
    for value, text in examples:
        assert format_cv(float(value)) == text, (value, text)


def _compare_text(capsys: pytest.CaptureFixture[str], *files: str) -> str:
    from fairmark.cli.main import main

    assert main(["compare", *(str(OTHERTOOLS / f) for f in files)]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_compares_legend_explains_only_the_marks_its_rows_show(capsys: pytest.CaptureFixture[str]) -> None:
    """Under hyperfine's two files (one row, proven, Welch's t) the notes explained "~" and "†" anyway."""
    text = _compare_text(capsys, "hyperfine/hf_a.json", "hyperfine/hf_b.json")
    assert "-26% (-44% to -1.6%) faster" in text, text
    assert "~" not in text and "†" not in text, text
    assert "Each change is fairmark's verdict for that benchmark (Welch's t on the logarithms), with" in text
    text = _compare_text(capsys, "pyperf/pyperf_a.json", "pyperf/pyperf_b.json")  # "~", no "†"
    assert "~: no difference proven at 95% confidence." in text and "†" not in text, text
    text = _compare_text(capsys, "benchstat/old.txt", "benchstat/new.txt")  # both
    assert "~: no difference proven" in text and "† Yuen's t on 20%-trimmed means" in text, text
