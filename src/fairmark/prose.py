"""Prose wrapped at word boundaries for the terminal (console.wrap) and the 80-column reports (report/writer.py):
textwrap's wrapping, except that a value keeps its unit ("400 µs", "2.1 M ops/s"), "±" its number ("± 0.3 ms")
and a relation its two sides ("α = 5%") on one line — a reader reads each as one word, and "±" alone at a
line's end, or "µs" alone at the next one's start, reads as something else."""

from __future__ import annotations

import re
import textwrap
from typing import Any

# A private-use character: textwrap takes it for part of a word (it splits at ASCII whitespace only); it is put
# back to a space once the lines are made.
_GLUE = "\ue000"
# A number, a space, and a unit stats/digits.py writes: time (ns … s, min, h), bytes and rates (KiB, MB/s,
# Gbit/s), Hz, W, J, a percentage or a factor, a count's unit with or without its prefix ("M ops/s", "req/s").
_VALUE_UNIT = re.compile(
    r"(?<=\d) ((?:[kMGTP] )?[a-z]+/[a-z]+|(?:Ki|Mi|Gi|Ti|Pi|[kMGTP])?(?:B|B/s|bit/s|bits/s|b/s|Hz|W|J)"
    r"|[nµum]?s(?:/loop)?|min|h|%|x|×)(?![\w/])"
)
_PLUS_MINUS = re.compile(r"± (?=[-−+]?\.?\d)")
# A name, a relation and a number ("α = 5%", "p < 0.05", "r₁ = -0.50"): "α =" at a line's end reads as unfinished.
_RELATION = re.compile(r"(?<=\S) ([=<>≤≥≈]) (?=[-−+]?\.?\d)")


def _glued(text: str) -> str:
    text = _VALUE_UNIT.sub(lambda m: _GLUE + m[1].replace(" ", _GLUE), text)
    text = _RELATION.sub(lambda m: _GLUE + m[1] + _GLUE, text)
    return _PLUS_MINUS.sub("±" + _GLUE, text)


def wrap(text: str, width: int, **options: Any) -> list[str]:
    """textwrap.wrap(text, width, **options), each value with its unit, "±" with its number and a relation with
    its two sides kept on one line."""
    if _GLUE in text:  # never in fairmark's own words: wrapped as it is
        return textwrap.wrap(text, width, **options)
    return [line.replace(_GLUE, " ") for line in textwrap.wrap(_glued(text), width, **options)]


def joins(text: str) -> bool:
    """`text` holds a value and its unit, "±" and its number or a relation: a space `wrap` does not break at."""
    return _GLUE not in text and _glued(text) != text
