"""Shared pieces of the property-based (hypothesis) tests: the example budget and text mutations.

`FAIRMARK_FUZZ_EXAMPLES=N` sets the examples per property (default 200, what `make test` runs, derandomized so
a failure reproduces); a long run sets it to 10000 and explores at random."""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("FAIRMARK_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # a shared, noisy machine: no per-example time limit
    derandomize="FAIRMARK_FUZZ_EXAMPLES" not in os.environ,
    database=None,  # nothing written into the checkout
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

HOSTILE_NUMBERS = (
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-1",
    "-0.5",
    "1e309",
    "-1e309",
    "9" * 40,
    "0",
    "",
    "x",
    "1e-400",
)
HOSTILE_TEXT = (
    "\x00",
    "\ufffd",
    "\u202e",
    "../../etc/passwd",
    "ä€😀",
    "\r\n",
    '"',
    "'",
    "\\",
    "{",
    "}",
    "[",
    "]",
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """`text` after one to three random edits: truncation, a number replaced by a hostile one (NaN, inf,
    negative, enormous), binary or unicode bytes inserted, lines swapped, dropped or repeated."""
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "number", "insert", "swap", "drop", "repeat", "huge"]))
        lines = text.split("\n")
        if kind == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        elif kind == "number":
            found = list(_NUMBER.finditer(text))
            if found:
                m = found[draw(st.integers(0, len(found) - 1))]
                text = text[: m.start()] + draw(st.sampled_from(HOSTILE_NUMBERS)) + text[m.end() :]
        elif kind == "insert":
            at = draw(st.integers(0, len(text)))
            junk = draw(
                st.sampled_from(HOSTILE_TEXT)
                | st.text(max_size=20)
                | st.binary(max_size=20).map(lambda b: b.decode("utf-8", errors="replace"))
            )
            text = text[:at] + junk + text[at:]
        elif kind == "huge":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + "9" * draw(st.integers(50, 5000)) + text[at:]
        elif len(lines) > 1:
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if kind == "swap":
                lines[i], lines[j] = lines[j], lines[i]
            elif kind == "drop":
                del lines[i]
            else:
                lines.insert(j, lines[i])
            text = "\n".join(lines)
    return text
