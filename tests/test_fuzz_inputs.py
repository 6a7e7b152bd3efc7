"""`fairmark compare` files and `fairmark import` bundles, fuzzed (issue 9): corrupted JSON, wrong schema
versions, hostile names (`../../etc/passwd`), megabyte strings, NaN → a clean error (exit 2) or a correct
result, never an internal error, never a half-imported run, never a file written outside --out."""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairmark.cli.bundle import bundle_of
from fairmark.cli.main import main
from fairmark.plan.metric import MetricSpec
from fairmark.store.db import Store, now
from fairmark.store.records import CellRecord, Sample, TrialRecord
from fuzzing import FUZZ, HOSTILE_NUMBERS, HOSTILE_TEXT, mutated

HOSTILE_NAMES = (
    "../../etc/passwd",
    "/etc/passwd",
    "..",
    ".",
    "",
    "a/b",
    "x" * 1_000_000,
    "\x00",
    "%",
    "_",
    "ä€😀",
)


def cli(*args: str) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(list(args))
    return code, err.getvalue()


def clean(code: int, err: str) -> None:
    assert code in (0, 2), (code, err[-2000:])
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]


# -- compare ---------------------------------------------------------------------------------------------
lines = st.lists(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.integers().map(str),
        st.sampled_from(HOSTILE_NUMBERS + HOSTILE_TEXT),
        st.text(max_size=40),
    ),
    max_size=30,
).map("\n".join)
data_files = (
    lines | st.binary(max_size=200).map(lambda b: b.decode("latin-1")) | st.just("1\n" * 3 + "9" * 100_000)
)


@pytest.mark.slow
@FUZZ
@given(a=data_files, b=data_files)
def test_compare_of_any_two_files_is_a_result_or_a_clean_error(a: str, b: str, tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp("cmp")
    (tmp / "a.txt").write_bytes(a.encode("utf-8", errors="surrogatepass"))
    (tmp / "b.txt").write_bytes(b.encode("utf-8", errors="surrogatepass"))
    clean(*cli("compare", str(tmp / "a.txt"), str(tmp / "b.txt")))


# -- import ----------------------------------------------------------------------------------------------
@functools.cache
def _bundle() -> dict:
    """A real export of a small run, made once (when first drawn, not at collection) in a folder removed after."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fairmark-fz-") as tmp:
        return _bundle_in(Path(tmp))


def _bundle_in(tmp: Path) -> dict:
    store = Store.open(str(tmp / "src.db"))
    run = store.create_run(
        plan_path="p.toml",
        plan_text="",
        plan_sha256="",
        title="t",
        seed=1,
        host_id="h",
        hostname="h",
        status="done",
        command_line="",
        fairmark_version="0",
        accept_risk=False,
        options={},
        env_before=None,
        notes=[],
    )
    spec = MetricSpec("wall_s", "s", "lower", verdict=True)
    cells = store.ensure_cells(run, [CellRecord(f"w/{v}", "w", v, (), "wall_s", (spec,)) for v in ("A", "B")])
    for i in range(6):
        v = "AB"[i % 2]
        trial = TrialRecord(
            run,
            cells[f"w/{v}"],
            i + 1,
            i // 2,
            False,
            "ok",
            now(),
            wall_s=1.0 + i / 10,
            user_s=0.5,
            sys_s=0.1,
            max_rss_kib=1000,
            exit_code=0,
            argv=("true",),
        )
        store.add_trial(trial, [Sample(trial.id, trial.cell_id, "wall_s", 1.0 + i / 10, "s", "lower")])
    return json.loads(json.dumps(bundle_of(store, run), default=str))


@st.composite
def bundles(draw: st.DrawFn) -> str:
    doc = copy.deepcopy(_bundle())
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["version", "name", "value", "drop", "type", "text"]))
        if kind == "version":
            doc[draw(st.sampled_from(["version", "schema_version", "format"]))] = draw(
                st.sampled_from([0, 2, 99, -1, "1", None, 1.5, "x" * 1000, [], {}])
            )
        elif kind == "text":
            return draw(mutated(json.dumps(doc)))
        else:
            table = draw(st.sampled_from(sorted(doc["tables"])))
            rows = doc["tables"][table]
            if not isinstance(rows, list) or not rows:  # an earlier edit replaced the table
                continue
            row = rows[draw(st.integers(0, len(rows) - 1))]
            if not isinstance(row, dict) or not row:
                continue
            col = draw(st.sampled_from(sorted(row)))
            if kind == "name":
                row[col] = draw(st.sampled_from(HOSTILE_NAMES))
            elif kind == "value":
                row[col] = draw(st.sampled_from([None, -1, 1e308, 2**70, "nan", [], {}, True]))
            elif kind == "drop":
                del row[col]
            else:
                doc["tables"][table] = draw(st.sampled_from([None, {}, "rows", [[]], [None]]))
    return json.dumps(doc)


@pytest.mark.slow
@FUZZ
@given(text=bundles())
def test_import_of_a_damaged_bundle_is_all_or_nothing_and_clean(text: str, tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp("imp")
    path, store = tmp / "bundle.json", tmp / "store.db"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    code, err = cli("import", str(path), "--store", str(store))
    clean(code, err)
    runs = Store.open(str(store)).list_runs()
    if code != 0:
        assert runs == [], "a refused bundle must leave nothing in the store"
        return
    assert len(runs) == 1
    out = tmp / "out"
    for fmt in ("ministat", "csv", "json"):
        clean(*cli("export", runs[0]["id"], "--format", fmt, "--out", str(out), "--store", str(store)))
    written = [p.resolve() for p in tmp.rglob("*") if p.is_file()]
    assert all(p.is_relative_to(tmp.resolve()) for p in written)


def test_a_megabyte_name_and_a_path_as_run_id_are_refused_or_kept_harmlessly(tmp_path) -> None:
    doc = copy.deepcopy(_bundle())
    for table in doc["tables"].values():
        for row in table:
            if "run_id" in row:
                row["run_id"] = "../../etc/passwd"
    doc["tables"]["runs"][0]["id"] = "../../etc/passwd"
    doc["tables"]["cells"][0]["variant"] = "v" * 1_000_000
    (tmp_path / "b.json").write_text(json.dumps(doc))
    clean(*cli("import", str(tmp_path / "b.json"), "--store", str(tmp_path / "s.db")))


def test_values_whose_squares_overflow_a_float_compare_cleanly(tmp_path) -> None:
    # found by the 10 000-example run: Welch's df squared the variances (3e77 → OverflowError)
    (tmp_path / "a.txt").write_text("0.0\n0.0\n0.0\n")
    (tmp_path / "b.txt").write_text("0.0\n0.0\n3.4737626771194864e+77\n")
    clean(*cli("compare", str(tmp_path / "a.txt"), str(tmp_path / "b.txt")))


def test_values_too_large_for_a_variance_are_a_clean_error(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("0.0\n0.0\n0.0\n")
    (tmp_path / "b.txt").write_text("0.0\n0.0\n1.6421143998800675e+301\n")  # past stats.describe.MAX_ABS
    code, err = cli("compare", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"))
    clean(code, err)
    assert code == 2 and "b.txt:3: column 1:" in err and "larger in magnitude than 1e300" in err


def test_a_cell_metric_without_its_unit_is_refused_at_import(tmp_path) -> None:
    """Found by the 10 000-example run: a cell's metric spec without "unit" was imported, and `export` then
    failed with an internal KeyError. The import refuses it (exit 2), names the key, and keeps nothing."""
    doc = copy.deepcopy(_bundle())
    spec = doc["tables"]["cells"][1]["metrics"][0]
    spec["x" + "unit"] = spec.pop("unit")
    (tmp_path / "b.json").write_text(json.dumps(doc))
    code, err = cli("import", str(tmp_path / "b.json"), "--store", str(tmp_path / "s.db"))
    clean(code, err)
    assert code == 2 and "tables.cells.metrics[0].unit: expected a string" in err, err
    assert Store.open(str(tmp_path / "s.db")).list_runs() == []


def test_a_sample_of_another_runs_trial_is_refused_at_import(tmp_path) -> None:
    """A bundle whose samples name the trials of a run already in the store (issue 37): refused, naming the
    row, and nothing of it kept — the other run is left as it was."""
    first = copy.deepcopy(_bundle())
    (tmp_path / "a.json").write_text(json.dumps(first))
    assert cli("import", str(tmp_path / "a.json"), "--store", str(tmp_path / "s.db"))[0] == 0
    second = copy.deepcopy(first)
    run_id = str(uuid.uuid4())
    for rows in second["tables"].values():
        for row in rows:
            if "run_id" in row:
                row["run_id"] = run_id
    second["tables"]["runs"][0]["id"] = run_id
    for trial in second["tables"]["trials"]:
        trial["id"] = str(uuid.uuid4())  # its own trials, but its samples keep pointing at the first run's
    assert second["tables"]["samples"]
    (tmp_path / "b.json").write_text(json.dumps(second))
    code, err = cli("import", str(tmp_path / "b.json"), "--store", str(tmp_path / "s.db"))
    clean(code, err)
    assert code == 2 and "tables.samples[0].trial_id" in err and "is not a trial of the bundle" in err, err
    store = Store.open(str(tmp_path / "s.db"))
    assert [r["id"] for r in store.list_runs()] == [first["tables"]["runs"][0]["id"]]
