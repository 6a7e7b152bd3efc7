"""`fairmark export RUN` (json bundle, csv, ministat files) and `fairmark import BUNDLE.json`."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, TypeGuard

import click
import sqlalchemy as sa

from fairmark import __version__
from fairmark.cli.common import common_options, open_store
from fairmark.console import console, dumps
from fairmark.errors import InputError
from fairmark.report.data import TRIAL_FIELDS
from fairmark.report.load import load_report
from fairmark.store import schema as S
from fairmark.store.db import Store, jsonable_row
from fairmark.store.records import LEGACY_RSS
from fairmark.store.sums import write as write_sums

BUNDLE_FORMAT = "fairmark-bundle"
BUNDLE_VERSION = 1
# Tables in insertion order; cells get new ids in the importing store, so rows pointing at cells are remapped. A
# bundle of a store before schema 8 also holds its verdicts as they were computed then: they are not imported
# (verdicts are computed from the samples). A bundle before tags were exported has no run_tags: none imported.
TABLES = (S.runs, S.cells, S.trials, S.samples, S.findings, S.artifacts, S.run_tags)
DATETIME_COLUMNS = {"started_at", "ended_at"}


def _safe(name: str) -> str:
    """A file-name part: safe characters only, and short (a cell name from an imported bundle can be a
    megabyte); a long one keeps its start and a hash of the whole, so names stay distinct."""
    safe = re.sub(r"[^A-Za-z0-9_.=+@-]+", "_", name).strip("_") or "x"
    if len(safe) > 60:
        safe = f"{safe[:40]}-{hashlib.sha256(name.encode(errors='replace')).hexdigest()[:12]}"
    return safe


def bundle_of(store: Store, run_id: str) -> dict[str, Any]:
    tables = {}
    for table in TABLES:
        rows = store.export_rows(table, run_id)
        tables[table.name] = [jsonable_row(r) for r in rows]
    return {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "schema_version": S.SCHEMA_VERSION,
        "fairmark_version": __version__,
        "run_id": run_id,
        "tables": tables,
    }


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: one starting as a formula would (`=HYPERLINK(…)`, `@SUM(…)`,
    `-2+3`: a cell a bundle or a tool's output put there) gets a leading `'`, as OWASP's CSV injection page
    advises; numbers (-1.5, -inf) are left as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


class _Writer:
    """csv.writer whose text cells cannot act as formulas (_cell)."""

    def __init__(self, f: Any):
        self._w = csv.writer(f)

    def writerow(self, row: list[Any]) -> None:
        self._w.writerow([_cell(v) for v in row])


def _write_csv(report: Any, out: Path) -> list[Path]:
    samples, trials = out / "samples.csv", out / "trials.csv"
    with samples.open("w", newline="") as f:
        w = _Writer(f)
        w.writerow(
            [
                "run_id",
                "cell",
                "workload",
                "variant",
                "point",
                "trial_seq",
                "warmup",
                "metric",
                "value",
                "unit",
                "better",
                "note",
            ]
        )
        for c in report.cells:
            for t in c.trials:
                for metric, value in c.samples.get(t.id, {}).items():
                    spec = c.spec(metric)
                    legacy = metric == "max_rss_kib" and t.legacy_rss
                    w.writerow(
                        [
                            report.run.id,
                            c.key,
                            c.workload,
                            c.variant,
                            json.dumps(c.point),
                            t.seq,
                            t.warmup,
                            metric,
                            repr(value),
                            spec.unit,
                            spec.better,
                            LEGACY_RSS if legacy else "",
                        ]
                    )
    with trials.open("w", newline="") as f:
        w = _Writer(f)
        w.writerow(["run_id", "cell", *TRIAL_FIELDS])
        for c in report.cells:
            for t in c.trials:
                w.writerow([report.run.id, c.key, *(getattr(t, k) for k in TRIAL_FIELDS)])
    return [samples, trials]


def _write_ministat(report: Any, out: Path) -> list[Path]:
    """One file per cell and metric, one value per line: `ministat A.txt B.txt` works on them directly. A cell
    and metric without a measured value (never ran, or every trial failed) gets no file: a file of only its
    header line is not data, and ministat refuses it. Only the cells without a successful trial are said: a
    metric the plan does not make (an adapter's zstd levels it did not run) is not missing."""
    files = []
    empty = 0
    for c in report.cells:
        if not any(t.measured for t in c.trials):
            empty += 1
            continue
        for metric, values in c.values.items():
            if not values:
                continue
            path = out / f"{_safe(c.group)}__{_safe(c.variant)}__{_safe(metric)}.txt"
            legacy = metric == "max_rss_kib" and any(t.measured and t.legacy_rss for t in c.trials)
            path.write_text(
                f"# run {report.run.id} cell {c.key} metric {metric} ({c.spec(metric).unit})\n"
                + (f"# NOTE: {LEGACY_RSS}\n" if legacy else "")
                + "".join(f"{v!r}\n" for v in values)
            )
            files.append(path)
    if empty:
        console.note(
            f"{empty} cell(s) without a successful trial (never ran, or every trial failed): no file"
        )
    return files


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "csv", "ministat"]),
    default="json",
    show_default=True,
    help="json: the bundle `fairmark import` and `fairmark run` read; csv: samples.csv and trials.csv; "
    "ministat: one file of values per cell and metric, for `ministat A B`.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=".",
    show_default=True,
    help="Directory to write into (created).",
)
@common_options
def export(run_ref: str, fmt: str, out_dir: str) -> None:
    """Export a run: a JSON bundle (importable, with raw samples), CSV tables, or ministat input files."""
    store = open_store()
    report = load_report(store, run_ref)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if report.rss_note and fmt != "json":  # the bundle keeps each trial's max_rss_method: the mark itself
        console.warn(report.rss_note)
    if fmt == "json":
        path = out / f"fairmark-{_safe(report.run.id)}.json"
        tmp = path.with_suffix(".json.tmp")  # nothing half-written: write aside, then rename
        tmp.write_text(dumps(bundle_of(store, report.run.id)))
        tmp.replace(path)
        files = [path]
    elif fmt == "csv":
        files = _write_csv(report, out)
    else:
        files = _write_ministat(report, out)
    if console.json_mode:
        console.emit_json({"run_id": report.run.id, "format": fmt, "files": [str(f) for f in files]})
    else:
        for f in files:
            console.text(str(f))


def load_bundle(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict) or doc.get("format") != BUNDLE_FORMAT:
        raise InputError(f"{path}: not a fairmark bundle (expected key format = {BUNDLE_FORMAT!r})")
    version, schema = doc.get("version"), doc.get("schema_version")
    if version != BUNDLE_VERSION or not _is_int(schema) or not 1 <= schema <= S.SCHEMA_VERSION:
        raise InputError(
            f"{path}: bundle version {str(version)[:40]}/schema {str(schema)[:40]} is not readable by this "
            f"fairmark (expected version {BUNDLE_VERSION}, schema 1..{S.SCHEMA_VERSION})"
        )
    tables = doc.get("tables")
    if not isinstance(tables, dict) or not isinstance(tables.get("runs"), list) or len(tables["runs"]) != 1:
        raise InputError(f"{path}: a bundle holds exactly one run under tables.runs")
    for table in TABLES:
        rows = tables.get(table.name, [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise InputError(f"{path}: tables.{table.name} must be a list of rows (JSON objects)")
    run_id = tables["runs"][0].get("id")
    if not isinstance(run_id, str) or not _UUID.fullmatch(run_id):
        raise InputError(f"{path}: tables.runs[0].id must be a run id (a UUID), got {str(run_id)[:80]!r}")
    return doc


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _value(table: Any, col: Any, v: Any, run_id: str) -> Any:
    """One value of a bundle row, checked against the store's column: a bundle is input, and a value of the
    wrong type would otherwise surface later as a crash in `show` or `export`."""
    where = f"tables.{table.name}.{col.name}"
    if col.name == "run_id":
        if v != run_id:
            raise ValueError(f"{where}: {str(v)[:80]!r} is not the bundle's run {run_id}")
        return v
    if v is None:
        if not col.nullable and col.default is None:
            raise ValueError(f"{where}: a value is required")
        return None
    kind = col.type
    if isinstance(kind, sa.JSON):
        return _metrics(v, where) if (table.name, col.name) == ("cells", "metrics") else v
    if isinstance(kind, sa.DateTime):
        if not isinstance(v, str):
            raise ValueError(f"{where}: expected an ISO 8601 time, got {type(v).__name__}")
        return dt.datetime.fromisoformat(v)
    if isinstance(kind, sa.Boolean):
        ok = isinstance(v, bool)
    elif isinstance(kind, sa.Integer):
        ok = _is_int(v) and -(2**63) <= v < 2**63
    elif isinstance(kind, sa.Float):
        ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    else:
        ok = isinstance(v, str) and len(v) <= (kind.length or 1 << 24)
    if not ok:
        raise ValueError(f"{where}: {str(v)[:80]!r} is not a valid {kind}")
    return v


def _metrics(v: Any, where: str) -> list[dict[str, Any]]:
    """A cell's metric specs, as `MetricSpec.row` writes them: reports and exports read each one's name, unit
    and direction long after the import (the read-back check does not reach them all)."""
    if not isinstance(v, list):
        raise ValueError(f"{where}: expected a list of metrics, got {type(v).__name__}")
    for i, m in enumerate(v):
        if not isinstance(m, dict):
            raise ValueError(f"{where}[{i}]: expected an object, got {type(m).__name__}")
        for key in ("name", "unit"):
            if not isinstance(m.get(key), str):
                raise ValueError(f"{where}[{i}].{key}: expected a string, got {str(m.get(key))[:40]!r}")
        if m.get("better") not in ("higher", "lower"):
            raise ValueError(
                f"{where}[{i}].better: expected 'higher' or 'lower', got {str(m.get('better'))[:40]!r}"
            )
        if not isinstance(m.get("verdict", False), bool):
            raise ValueError(f"{where}[{i}].verdict: expected true or false")
    return v


def _rows(
    table: Any,
    rows: list[dict[str, Any]],
    run_id: str,
    cell_map: dict[Any, int],
    trial_ids: frozenset[str] = frozenset(),
) -> list[dict[str, Any]]:
    out = []
    for i, r in enumerate(rows):
        if table is S.trials and not isinstance(r.get("id"), str):
            # a trial's id is its UUID, kept across stores: without one the insert would fail in the database
            raise ValueError(
                f"tables.trials[{i}].id: expected the trial's id (a string), got {str(r.get('id'))[:40]!r}"
            )
        r = {c.name: _value(table, c, r[c.name], run_id) for c in table.columns if c.name in r}
        if table is not S.runs and table is not S.trials:
            r.pop("id", None)  # integer ids are the importing store's
        if "cell_id" in r:
            if r["cell_id"] not in cell_map:
                raise ValueError(f"tables.{table.name}: cell_id {r['cell_id']!r} is not a cell of the bundle")
            r["cell_id"] = cell_map[r["cell_id"]]
        if r.get("trial_id") is not None and r["trial_id"] not in trial_ids:
            # a sample or artifact of another run's trial (one already in this store) would join that run
            raise ValueError(
                f"tables.{table.name}[{i}].trial_id: {str(r['trial_id'])[:40]!r} is not a trial of the bundle"
            )
        out.append(r)
    return out


def _insert(conn: sa.Connection, doc: dict[str, Any]) -> str:
    t = doc["tables"]
    run_id = t["runs"][0]["id"]
    conn.execute(sa.insert(S.runs), _rows(S.runs, t["runs"], run_id, {}))
    cell_map: dict[Any, int] = {}
    for cell in t.get("cells", []):
        old = cell.get("id")
        if not _is_int(old) or old in cell_map:
            raise ValueError(f"tables.cells: id {str(old)[:40]!r} is not a unique integer")
        (row,) = _rows(S.cells, [cell], run_id, {})
        inserted = conn.execute(sa.insert(S.cells).values(**row)).inserted_primary_key
        assert inserted is not None  # a single-row INSERT has one
        cell_map[old] = inserted[0]
    trial_ids: frozenset[str] = frozenset()
    for table in TABLES[2:]:
        rows = _rows(table, t.get(table.name, []), run_id, cell_map, trial_ids)
        if table is S.trials:
            trial_ids = frozenset(r["id"] for r in rows)
        if rows:
            conn.execute(sa.insert(table), rows)
    if t["runs"][0].get("status") != "running":
        write_sums(conn, run_id)  # as the run's end did where it ran (store/sums.py)
    return run_id


@click.command("import")
@click.argument("bundle", type=click.Path(dir_okay=False))
@common_options
def import_(bundle: str) -> None:
    """Import a run exported elsewhere (with its raw samples) into the store."""
    doc = load_bundle(Path(bundle))
    store = open_store()
    run_id = doc["tables"]["runs"][0]["id"]
    if store_has(store, run_id):
        raise InputError(f"run {run_id} is already in {store.url}")
    import_bundle(store, doc, bundle)
    if console.json_mode:
        console.emit_json({"imported": run_id, "store": store.url})
    else:
        console.text(f"imported run {run_id} into {store.url}")


def store_has(store: Store, run_id: str) -> bool:
    with store.engine.connect() as conn:
        return conn.execute(sa.select(S.runs.c.id).where(S.runs.c.id == run_id)).first() is not None


def import_bundle(store: Store, doc: dict[str, Any], bundle: str) -> str:
    """All of a checked bundle (load_bundle) into the store, or nothing (InputError naming the file)."""
    run_id: str = doc["tables"]["runs"][0]["id"]
    try:
        with store.engine.begin() as conn:  # one transaction: all of the bundle or nothing
            _insert(conn, doc)
    except (
        KeyError,
        TypeError,
        ValueError,
        OverflowError,
        sa.exc.IntegrityError,
        sa.exc.StatementError,
    ) as exc:
        detail = str(getattr(exc, "orig", None) or exc).splitlines()[0][:300]
        raise InputError(f"{bundle}: malformed bundle ({type(exc).__name__}: {detail})") from None
    try:  # JSON columns (metrics, point …) have shapes only the report knows: read the run back as a check
        load_report(store, run_id)
    except Exception as exc:
        store.delete_run(run_id)
        raise InputError(
            f"{bundle}: malformed bundle: its run cannot be read back ({type(exc).__name__}: {str(exc)[:300]})"
        ) from None
    return run_id


commands = [export, import_]
