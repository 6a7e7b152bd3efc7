"""`--json` documents: the console writes exactly what json.dumps(plain(obj), indent=2, allow_nan=False) writes
(it walks the document once itself, without json's pure-Python indented encoder)."""

from __future__ import annotations

import datetime as dt
import enum
import io
import json
import sys
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fairmark.console import console, plain


def emitted(obj: Any) -> str:
    buf, old = io.StringIO(), sys.stdout
    sys.stdout = buf
    try:
        console.emit_json(obj)
    finally:
        sys.stdout = old
    return buf.getvalue()


def expected(obj: Any) -> str:
    return json.dumps(plain(obj), indent=2, allow_nan=False) + "\n"


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1)),
)
keys = st.one_of(
    st.text(max_size=4), st.integers(-3, 3), st.booleans(), st.none(), st.sampled_from([1.5, -0.0])
)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(keys, inner, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(documents)
def test_a_document_is_written_as_json_dumps_writes_it(doc: Any) -> None:
    assert emitted(doc) == expected(doc)


def test_keys_that_meet_as_text_merge_as_plain_merges_them() -> None:
    doc = {1: "int", "1": "text", None: "none", "null": "text", "x": [], "y": {}, "z": float("nan")}
    assert emitted(doc) == expected(doc)
    assert json.loads(emitted(doc)) == {"1": "text", "null": "text", "x": [], "y": {}, "z": None}


def test_a_large_document_is_written_whole() -> None:
    doc = {"trials": [{"seq": i, "wall_s": i / 7, "argv": ["true"], "ok": i % 3 != 0} for i in range(5000)]}
    text = emitted(doc)
    assert text == expected(doc)
    assert len(json.loads(text)["trials"]) == 5000


class _Level(enum.IntEnum):
    LOW = 1


class _Name(str):
    pass


class _Ratio(float):
    pass


# Subclasses of the scalar types (written as json.dumps writes them), numpy scalars, and arrays of one type
# (written as one piece) beside arrays of several.
odd_scalars = st.one_of(
    st.sampled_from([_Level.LOW, _Name("x\n"), _Ratio(0.5), _Ratio("inf"), np.float64(0.1), np.int64(7)]),
    st.floats(allow_nan=True, allow_infinity=True).map(np.float64),
    st.text(max_size=3).map(_Name),
)
odd_documents = st.recursive(
    st.one_of(scalars, odd_scalars),
    lambda inner: st.one_of(
        st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=6),
        st.lists(st.text(max_size=3), max_size=4).map(tuple),
        st.lists(st.integers(), max_size=4),
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(keys, st.text(max_size=2).map(_Name)), inner, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(odd_documents)
def test_subclasses_and_arrays_of_one_type_are_written_as_json_dumps_writes_them(doc: Any) -> None:
    assert emitted(doc) == expected(doc)


def test_a_float_seen_before_is_written_as_its_own_text() -> None:
    """The writer remembers floats' texts: -0.0 is not 0.0, and a remembered value still gives its own text."""
    doc = {
        "values": [0.0, -0.0, 1.5, 1e-300, 2.0**70, 1.5],
        "trials": [
            {"a": 1.5, "b": -0.0, "c": 0.0, "d": 1e-300, "samples": {"x": -0.0, "y": 1.5}},
            {"a": 0.0, "b": 1.5, "c": -0.0, "d": float("nan"), "samples": {"x": 0.0, "y": 2.0**70}},
            [-0.0, 0.0, -0.0],
        ],
    }
    assert emitted(doc) == expected(doc)
    assert '"b": -0.0' in emitted(doc) and '"c": 0.0' in emitted(doc)
