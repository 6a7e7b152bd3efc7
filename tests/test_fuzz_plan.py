"""Plans, fuzzed (issue 9): random TOML documents and random mutations of every plan in plans/ give either a
valid plan (whose cells can be listed) or a `file:line: key: expected …` error — from the command line exit 2,
no traceback, and no store written."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairmark.cli.main import main
from fairmark.errors import PlanError
from fairmark.plan.load import parse_plan
from fairmark.plan.schedule import cells_of
from fuzzing import FUZZ, HOSTILE_TEXT, mutated

ROOT = Path(__file__).resolve().parents[1]
PLANS = sorted((ROOT / "plans").rglob("*.toml"))
PLAN_TEXTS = [(p.name, p.read_text()) for p in PLANS]
NAME = "fz.toml"
ERROR = re.compile(rf"^{re.escape(NAME)}:\d+: ")

KEYS = (
    "title",
    "description",
    "run",
    "quick",
    "tuning",
    "workload",
    "variant",
    "name",
    "command",
    "tool",
    "params",
    "sweep",
    "env",
    "metrics",
    "regex",
    "json",
    "unit",
    "better",
    "warmup",
    "min_trials",
    "max_trials",
    "target_ci_pct",
    "confidence",
    "max_failures",
    "timeout_s",
    "shell",
    "setup",
    "prime",
    "teardown",
    "wrap",
    "sysctl",
    "mount",
    "cpus",
    "thp",
    "governor",
    "aslr",
    "malloc_debug",
    "seed",
    "baseline",
    "cwd",
    "stream",
    "parallel",
    "duration",
)


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else _str(k)


def _str(s: str) -> str:
    return json.dumps(s).replace("\x7f", "\\u007f")  # JSON escapes are TOML escapes; TOML also wants DEL


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    assert isinstance(v, dict)
    return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"


SWEEPS = (
    "1..99999999999",
    "pow2:1..99999999999x",
    "1..0",
    "0..4",
    "pow2:0..2x",
    "1..8x",
    "x..y",
    "",
    [],
    [1] * 5000,
    list(range(2000)),
    "1..2000",
)
keys = st.sampled_from(KEYS) | st.text(min_size=1, max_size=12)
scalars = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | st.text(max_size=30)
    | st.sampled_from(["true", "pow2:1..4x", "1..8", "1..99999999999", "pow2:1..999999999x", *HOSTILE_TEXT])
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
tables = st.dictionaries(keys, values, max_size=6)


@st.composite
def toml_documents(draw: st.DrawFn) -> str:
    lines = [f"{_key(k)} = {_value(v)}" for k, v in draw(tables).items()]
    for header in draw(
        st.lists(st.sampled_from(["run", "quick", "workload", "variant", "workload.metrics"]), max_size=5)
    ):
        array = header in ("workload", "variant", "workload.metrics") and draw(st.booleans())
        lines.append(f"[[{header}]]" if array else f"[{header}]")
        lines += [f"{_key(k)} = {_value(v)}" for k, v in draw(tables).items()]
    return "\n".join(lines) + "\n"


@st.composite
def mutated_plans(draw: st.DrawFn) -> str:
    _, text = draw(st.sampled_from(PLAN_TEXTS))
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["value", "key", "unknown", "duplicate", "text", "sweep"]))
        assigns = [i for i, ln in enumerate(lines) if re.match(r"^\s*[\w.\"-]+\s*=", ln)]
        if kind == "sweep":  # absurd sweeps: billions of points, empty, reversed, nonsense
            starts = [i for i, ln in enumerate(lines) if ln.strip() == "[[workload]]"]
            if starts:
                spec = draw(st.sampled_from(SWEEPS) | values)
                lines.insert(draw(st.sampled_from(starts)) + 1, f"sweep = {{ parallel = {_value(spec)} }}")
        elif kind == "text":
            lines = draw(mutated("\n".join(lines))).split("\n")
        elif kind == "duplicate":  # a second copy of a [[workload]] / [[variant]] block: duplicate names
            starts = [i for i, ln in enumerate(lines) if ln.startswith("[[")]
            if starts:
                i = draw(st.sampled_from(starts))
                end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("[")), len(lines))
                lines += lines[i:end]
        elif assigns:
            i = draw(st.sampled_from(assigns))
            key, _, _ = lines[i].partition("=")
            if kind == "value":
                lines[i] = f"{key}= {_value(draw(values))}"
            elif kind == "key":
                lines[i] = f"{_key(draw(keys))} ={lines[i].partition('=')[2]}"
            else:
                lines.insert(i, f"{_key(draw(keys))} = {_value(draw(scalars))}")
    return "\n".join(lines)


def check(text: str) -> bool:
    """True when the plan is valid; a refused plan must say file:line: (key:) what was expected."""
    try:
        plan = parse_plan(text, NAME)
    except PlanError as exc:
        assert ERROR.match(str(exc)), f"error without file:line: {exc}"
        assert "not valid TOML" in exc.message or exc.key, f"error without the key: {exc}"
        return False
    try:
        assert len(cells_of(plan)) >= 1
    except PlanError as exc:
        raise AssertionError(f"a plan that loads must have cells, but: {exc}") from None
    return True


@pytest.mark.slow
@FUZZ
@given(toml_documents())
def test_random_toml_documents_load_or_fail_with_file_line_key(text: str) -> None:
    check(text)


@pytest.mark.slow
@FUZZ
@given(mutated_plans())
def test_mutated_shipped_plans_load_or_fail_with_file_line_key(text: str) -> None:
    check(text)


def test_an_integer_longer_than_python_converts_is_refused_with_its_line() -> None:
    """Found by the 10 000-example run: tomllib raised int()'s digit-limit ValueError, not a TOML error."""
    assert not check("[run]\nwarmup = 1\nmin_trials = " + "7" * 5000 + "\n")
    with pytest.raises(PlanError, match=rf"^{re.escape(NAME)}:3: not valid TOML"):
        parse_plan("title = 'x'\n[run]\nseed = " + "1" * 4301 + "\n", NAME)


def test_the_shipped_plans_load() -> None:
    for name, text in PLAN_TEXTS:
        assert check(text), name


@pytest.mark.slow
@FUZZ
@given(text=st.one_of(mutated_plans(), toml_documents()))
def test_a_refused_plan_exits_2_without_a_traceback_or_a_store(text: str, tmp_path_factory) -> None:
    if _valid(text):
        return
    tmp = tmp_path_factory.mktemp("fz")
    plan, store = tmp / NAME, tmp / "store.db"
    plan.write_text(text, encoding="utf-8", errors="surrogatepass")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["run", str(plan), "--store", str(store)])
    assert code == 2, err.getvalue()
    assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue()
    assert f"{plan}:" in err.getvalue()
    assert not store.exists(), "a refused plan must not create or write the store"


def _valid(text: str) -> bool:
    try:
        parse_plan(text, NAME)
    except PlanError:
        return False
    return True
