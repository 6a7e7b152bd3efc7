"""`fairmark export RUN` (json bundle, csv, ministat files) and `fairmark import BUNDLE.json`."""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import click

from fairmark import __version__
from fairmark.cli.common import common_options, open_store
from fairmark.console import console, dumps
from fairmark.errors import InputError
from fairmark.report.data import TRIAL_FIELDS, load_report
from fairmark.store import schema as S
from fairmark.store.db import Store, jsonable_row

BUNDLE_FORMAT = "fairmark-bundle"
BUNDLE_VERSION = 1
# Tables in insertion order; cells get new ids in the importing store, so rows pointing at cells are remapped.
TABLES = (S.runs, S.cells, S.trials, S.samples, S.findings, S.verdicts, S.artifacts)
DATETIME_COLUMNS = {"started_at", "ended_at"}


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+@-]+", "_", name).strip("_") or "x"


def bundle_of(store: Store, run_id: str) -> dict[str, Any]:
    tables = {}
    for table in TABLES:
        rows = store.table_rows(table, run_id)
        tables[table.name] = [jsonable_row(r) for r in rows]
    return {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "schema_version": S.SCHEMA_VERSION,
        "fairmark_version": __version__,
        "run_id": run_id,
        "tables": tables,
    }


def _write_csv(report: Any, out: Path) -> list[Path]:
    samples, trials = out / "samples.csv", out / "trials.csv"
    with samples.open("w", newline="") as f:
        w = csv.writer(f)
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
            ]
        )
        for c in report.cells:
            for t in c.trials:
                for metric, value in t["samples"].items():
                    spec = c.spec(metric)
                    w.writerow(
                        [
                            report.run.id,
                            c.key,
                            c.workload,
                            c.variant,
                            json.dumps(c.point),
                            t["seq"],
                            t["warmup"],
                            metric,
                            repr(value),
                            spec["unit"],
                            spec["better"],
                        ]
                    )
    with trials.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run_id", "cell", *TRIAL_FIELDS])
        for c in report.cells:
            for t in c.trials:
                w.writerow([report.run.id, c.key, *(t[k] for k in TRIAL_FIELDS)])
    return [samples, trials]


def _write_ministat(report: Any, out: Path) -> list[Path]:
    """One file per cell and metric, one value per line: `ministat A.txt B.txt` works on them directly."""
    files = []
    for c in report.cells:
        for metric, values in c.values.items():
            path = out / f"{_safe(c.group)}__{_safe(c.variant)}__{_safe(metric)}.txt"
            path.write_text(
                f"# run {report.run.id} cell {c.key} metric {metric} ({c.spec(metric)['unit']})\n"
                + "".join(f"{v!r}\n" for v in values)
            )
            files.append(path)
    return files


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--format", "fmt", type=click.Choice(["json", "csv", "ministat"]), default="json", show_default=True
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
    if fmt == "json":
        path = out / f"fairmark-{report.run.id}.json"
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


def _load_bundle(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except ValueError as exc:
        raise InputError(f"{path}: not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != BUNDLE_FORMAT:
        raise InputError(f"{path}: not a fairmark bundle (expected key format = {BUNDLE_FORMAT!r})")
    if doc.get("version") != BUNDLE_VERSION or int(doc.get("schema_version", 0)) > S.SCHEMA_VERSION:
        raise InputError(
            f"{path}: bundle version {doc.get('version')}/schema {doc.get('schema_version')} is not "
            f"readable by this fairmark ({BUNDLE_VERSION}/{S.SCHEMA_VERSION})"
        )
    tables = doc.get("tables")
    if not isinstance(tables, dict) or len(tables.get("runs", [])) != 1:
        raise InputError(f"{path}: a bundle holds exactly one run under tables.runs")
    return doc


def _rows(table: Any, rows: list[dict[str, Any]], cell_map: dict[int, int]) -> list[dict[str, Any]]:
    cols = {c.name for c in table.columns}
    out = []
    for r in rows:
        r = {k: v for k, v in r.items() if k in cols}
        for k in DATETIME_COLUMNS & r.keys():
            if isinstance(r[k], str):
                r[k] = dt.datetime.fromisoformat(r[k])
        if table is not S.runs and table is not S.trials:
            r.pop("id", None)  # integer ids are the importing store's
        if "cell_id" in r:
            r["cell_id"] = cell_map[r["cell_id"]]
        out.append(r)
    return out


@click.command("import")
@click.argument("bundle", type=click.Path(dir_okay=False))
@common_options
def import_(bundle: str) -> None:
    """Import a run exported elsewhere (with its raw samples) into the store."""
    doc = _load_bundle(Path(bundle))
    store = open_store()
    t = doc["tables"]
    run_id = t["runs"][0]["id"]
    try:
        store.get_run(run_id)
        raise InputError(f"run {run_id} is already in {store.url}")
    except InputError as exc:
        if "already" in exc.message:
            raise
    try:
        store.insert_rows({S.runs: _rows(S.runs, t["runs"], {})})
        cell_map = {}
        for cell in t.get("cells", []):
            row = {k: v for k, v in _rows(S.cells, [cell], {})[0].items() if k != "run_id"}
            cell_map[cell["id"]] = store.ensure_cells(run_id, [row])[cell["key"]]
        store.insert_rows({table: _rows(table, t.get(table.name, []), cell_map) for table in TABLES[2:]})
    except (KeyError, TypeError, ValueError) as exc:
        store.delete_run(run_id)  # nothing half-written
        raise InputError(f"{bundle}: malformed bundle ({type(exc).__name__}: {exc})") from None
    if console.json_mode:
        console.emit_json({"imported": run_id, "store": store.url})
    else:
        console.text(f"imported run {run_id} into {store.url}")


commands = [export, import_]
