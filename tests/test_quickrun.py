"""`show` on an SQLite store without SQLAlchemy (store/quickrun.py) reads what the full store reads: the same run,
cells, trials, samples, findings, artifacts and calibrations, record by record, for each of tests/screens_store.py's
ten runs (one given artifacts of three shapes and a calibration here, one a trial with no argv, one a failed
trial), and `show` prints the same bytes (terminal and --json) by either reader. What it does not know (no file,
another schema version) it declines, and `show` opens the full store."""

from __future__ import annotations

import contextlib
import io
import sqlite3
from pathlib import Path

import pytest

import screens_store
from fairmark.store.base import LOOPS_CALIBRATION
from fairmark.store.quickrun import opened

RUN = screens_store.RUN_IDS[4]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("quickrun") / "s.db"
    store = screens_store.build(path)
    store.add_artifact(RUN, kind="env.host", name="h", content_type="application/json", data={"a": [1, 2.5]})
    store.add_artifact(RUN, kind="profile.folded", name="p", content_type="text/plain", text="main;f 3\n")
    store.add_artifact(RUN, kind=LOOPS_CALIBRATION, name="c", content_type="application/json", data=7)
    store.add_calibrations([_calibration()])
    store.engine.dispose()
    conn = sqlite3.connect(path)
    with conn:  # trials of other shapes: no argv, failed with its error, profiled
        ids = [r[0] for r in conn.execute("SELECT id FROM trials WHERE run_id = ? ORDER BY seq", [RUN])]
        conn.execute("UPDATE trials SET argv = NULL WHERE id = ?", [ids[0]])
        conn.execute("UPDATE trials SET status = 'failed', error = 'exit 1' WHERE id = ?", [ids[1]])
        conn.execute("UPDATE trials SET profiled = 1, warmup = 1 WHERE id = ?", [ids[2]])
    conn.close()
    return path


def _calibration() -> dict[str, object]:
    return {
        "host_id": screens_store.HOST_ID,
        "hostname": screens_store.HOST,
        "workload": "alloc",
        "group": "alloc",
        "metric": "wall_s",
        "plan_path": "p.toml",
        "confidence": 95.0,
        "runs": 20,
        "false_positives": 1,
        "data": {"rate": 0.05, "mde_pct": 3.5},
    }


@pytest.mark.parametrize("run_id", screens_store.RUN_IDS)
def test_the_quick_reader_reads_what_the_store_reads(store_path: Path, run_id: str) -> None:
    from fairmark.store.db import Store

    url = f"sqlite:///{store_path}"
    store = Store.open(url)
    with opened(url) as quick:
        assert quick is not None
        run = quick.get_run(run_id)
        _same(run, store.get_run(run_id))
        _same(quick.get_run(run_id[:6]), run)
        _same(quick.calibrations(run.host_id), store.calibrations(run.host_id))
        _same(quick.cells(run_id), store.cells(run_id))
        _same(quick.trials(run_id), store.trials(run_id))
        _same(quick.sample_values(run_id), store.sample_values(run_id))
        _same(quick.findings(run_id), store.findings(run_id))
        _same(quick.artifacts(run_id), store.artifacts(run_id))
        for kind in ("env.host", LOOPS_CALIBRATION, "none"):
            _same(quick.artifacts(run_id, kind), store.artifacts(run_id, kind))
            _same(list(quick.iter_artifacts(run_id, kind)), list(store.iter_artifacts(run_id, kind)))
    store.engine.dispose()


def _same(got: object, want: object) -> None:
    """Equal, and of the same types and order (a 0 for a False, or 1 for 1.0, would be equal but print apart)."""
    assert got == want
    assert repr(got) == repr(want)


def test_the_quick_reader_finds_runs_as_the_store_does(store_path: Path) -> None:
    from fairmark.errors import InputError
    from fairmark.store.db import Store

    url = f"sqlite:///{store_path}"
    store = Store.open(url)
    with opened(url) as quick:
        assert quick is not None
        assert quick.get_run("last") == store.get_run("last")
        for ref in ("", "zzz", "0" * 36):  # ambiguous (every run), none, no such id
            with pytest.raises(InputError) as got:
                quick.get_run(ref)
            with pytest.raises(InputError) as want:
                store.get_run(ref)
            assert str(got.value) == str(want.value)
    store.engine.dispose()


def _show(args: list[str], store: Path) -> tuple[int, str, str]:
    from fairmark.cli.main import main
    from fairmark.console import console

    console.configure()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "--store", str(store)])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("run_id", [screens_store.RUN_IDS[0], RUN, screens_store.RUN_IDS[-1]])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_show_prints_the_same_bytes_by_either_reader(
    store_path: Path, run_id: str, json_flag: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import fairmark.cli.runs as runs

    monkeypatch.setenv("NO_COLOR", "1")
    quick = _show(["show", run_id, *json_flag], store_path)

    @contextlib.contextmanager
    def nothing(url: str):  # as on PostgreSQL: the full store
        yield None

    monkeypatch.setattr(runs, "opened", nothing)
    full = _show(["show", run_id, *json_flag], store_path)
    assert quick[0] == 0 and quick == full
