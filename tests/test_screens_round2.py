"""Screens that said something wrong or misleading, noticed at the last stop ("every screen right, round two"):
one test (or more) per text, each failing on the code before its fix (main at 9fe1859)."""

from __future__ import annotations

import re


def test_format_cvs_docstring_shows_what_it_prints() -> None:
    """Its docstring promised '140%' (two significant digits) where format_cv(1.35) prints '135%'."""
    from fairmark.stats.digits import format_cv

    examples = re.findall(r"([\d.]+) → '([^']+)'", format_cv.__doc__ or "")
    assert examples, format_cv.__doc__
    for value, text in examples:
        assert format_cv(float(value)) == text, (value, text)
