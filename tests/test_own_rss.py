"""The peak RSS fairmark records is the workload's own (issue 25 item 1): held against GNU time's `%M` on three
programs of known, different sizes, locally and through the agent; and runs stored before, whose max_rss_kib
was fairmark's own memory, are marked so that history and exports never mix the two."""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from fairmark.plan.load import LoadedPlan, parse_plan
from fairmark.remote import agent
from fairmark.run.loop.runner import Runner, RunOptions
from fairmark.store.db import Store
from helpers import build_alloc, time_max_rss_kib

TOLERANCE = 0.10  # the issue's ±10% against /usr/bin/time
# /bin/true alone spreads over 964–1112 KiB from run to run under either (where its pages fall): medians of 11
RUNS = 11


def _programs(tmp_path: Path) -> dict[str, list[str]]:
    alloc = str(build_alloc(tmp_path))
    return {"true": ["/bin/true"], "alloc50": [alloc, "50"], "alloc200": [alloc, "200"]}


# ...so for a 1 MB program 10% is less than /usr/bin/time's own spread: 1076 against 972 KiB was seen at load 25
SPREAD_KIB = 160


def _close(recorded: float, reference: float) -> bool:
    return abs(recorded - reference) <= max(TOLERANCE * reference, SPREAD_KIB)


@pytest.mark.slow
def test_the_recorded_peak_rss_is_the_workloads_own(tmp_path: Path) -> None:
    programs = _programs(tmp_path)
    text = f"[run]\nwarmup = 0\nmin_trials = {RUNS}\nmax_trials = {RUNS}\nseed = 1\n" + "".join(
        f"[[workload]]\nname = '{name}'\ncommand = {json.dumps(argv)}\n" for name, argv in programs.items()
    )
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    run_id = Runner(LoadedPlan(parse_plan(text), "plan.toml", text), store, RunOptions(probe=False)).start()
    workload = {c.id: c.workload for c in store.cells(run_id)}
    recorded: dict[str, list[int]] = {}
    for t in store.trials(run_id):
        assert t.status == "ok" and t.max_rss_method == agent.RSS_METHOD, t
        recorded.setdefault(workload[t.cell_id], []).append(t.max_rss_kib)
    found = {name: statistics.median(values) for name, values in recorded.items()}
    reference = {name: time_max_rss_kib(argv, tmp_path, RUNS) for name, argv in programs.items()}
    print(f"recorded {found} vs /usr/bin/time %M {reference}")
    assert all(_close(found[name], reference[name]) for name in programs), (found, reference)
    assert found["alloc200"] > 200 << 10 > found["alloc50"] > 50 << 10 > found["true"]


@pytest.mark.slow
def test_the_agent_records_the_same(tmp_path: Path) -> None:
    """The shipped agent (stdlib only, as over SSH) builds the launcher on its host and measures the same."""
    from fairmark.remote.connection import shipped_agent_command, shipped_agent_payload
    from fairmark.run.spec import SPEC_VERSION, TrialSpec

    programs = _programs(tmp_path)
    requests = [{"op": "hello", "recover": False}]
    for name, argv in programs.items():
        spec = TrialSpec(tuple(argv), str(tmp_path), name).to_dict() | {"env": None, "version": SPEC_VERSION}
        requests += [{"op": "exec", "spec": spec}] * RUNS
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
    env["FAIRMARK_AGENT_STATE"] = str(tmp_path / "state")
    env["PYTHONDONTWRITEBYTECODE"] = (
        "1"  # a bare environment, but no __pycache__ in src/ (the hello imports fairmark)
    )
    proc = subprocess.Popen(
        ["sh", "-c", shipped_agent_command(sys.executable)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.buffer.write(shipped_agent_payload())  # the agent's source first, as over SSH
    answers = []
    try:  # one request at a time: end of input while a trial runs is a lost controller to the agent
        for i, req in enumerate(requests):
            proc.stdin.write(json.dumps({"v": agent.PROTOCOL, "id": i, **req}) + "\n")
            proc.stdin.flush()
            answers.append(json.loads(proc.stdout.readline()))
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert all(a["ok"] for a in answers), answers
    assert answers[0]["result"]["launcher"] is None  # no reason not to measure: the launcher was built
    measured = [a["result"]["measured"] for a in answers[1:]]
    assert all(m["status"] == "ok" and m["max_rss_method"] == agent.RSS_METHOD for m in measured), measured
    found = {
        name: statistics.median(m["max_rss_kib"] for m in measured[i * RUNS : (i + 1) * RUNS])
        for i, name in enumerate(programs)
    }
    reference = {name: time_max_rss_kib(argv, tmp_path, RUNS) for name, argv in programs.items()}
    print(f"agent recorded {found} vs /usr/bin/time %M {reference}")
    assert all(_close(found[name], reference[name]) for name in programs), (found, reference)


def test_without_a_launcher_no_peak_rss_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host where no launcher can be built records no number rather than fairmark's own memory."""
    from fairmark.run.launch import executor
    from fairmark.run.trials.metrics import builtin_values

    monkeypatch.setattr(executor, "launcher", lambda: (None, "no C compiler"))
    res = executor.execute(["/bin/true"], out_dir=tmp_path)
    assert res.status == "ok" and res.max_rss_kib is None and res.max_rss_method is None
    assert "max_rss_kib" not in builtin_values(res) and res.wall_s > 0


def test_runs_stored_before_are_marked_and_history_and_exports_keep_them_apart(
    tmp_path: Path, fairmark_cli
) -> None:
    """A store made before schema 9 (its run's max_rss_kib was fairmark's own ~88 MB, as issue 25 found) is
    migrated; a run made after beside it. History shows only the new run's peak and says what it left out;
    `show`, the CSV and the ministat exports say it beside the old run's values."""
    import sqlalchemy as sa

    from fairmark.store import schema
    from fairmark.store.records import LEGACY_RSS

    alloc = build_alloc(tmp_path)
    text = "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\nseed = 1\n[[workload]]\nname = 'alloc'\n"
    text += f"command = ['{alloc}', '50']\n"
    loaded = LoadedPlan(parse_plan(text), "plan.toml", text)
    url = os.environ["FAIRMARK_STORE"]
    store = Store.open(url)
    old = Runner(loaded, store, RunOptions(probe=False)).start()
    with store.engine.begin() as conn:  # the shape a v8 store stored it in: fairmark's peak, and no method
        conn.execute(sa.text("UPDATE trials SET max_rss_kib = 88024"))
        conn.execute(sa.text("UPDATE samples SET value = 88024 WHERE metric = 'max_rss_kib'"))
        conn.execute(sa.text("ALTER TABLE trials DROP COLUMN max_rss_method"))
        conn.execute(sa.text("UPDATE fairmark_meta SET value = '8' WHERE key = 'schema_version'"))
    store.engine.dispose()
    store = Store.open(url)  # migrated to the current schema
    assert schema.SCHEMA_VERSION >= 9 and all(t.legacy_rss for t in store.trials(old))

    code, out, err = fairmark_cli("history", "alloc:max_rss_kib")
    assert code == 2 and "1 run(s) left out" in err and "fairmark's own memory" in err  # nothing else to show
    new = Runner(loaded, store, RunOptions(probe=False)).start()
    assert not any(t.legacy_rss for t in store.trials(new))
    code, out, err = fairmark_cli("history", "alloc:max_rss_kib", "--json")
    (series,) = json.loads(out)["series"]
    assert [p["run_id"] for p in series["points"]] == [new] and series["left_out"] == [old]
    assert series["points"][0]["mean"] < 60 << 10  # the workload's 50 MiB, not 88 024 KiB
    code, out, err = fairmark_cli("history", "alloc:max_rss_kib")
    assert code == 0 and "1 run(s) left out" in " ".join((out + err).split()), (out, err)
    code, out, err = fairmark_cli("history", "alloc:wall_s", "--json")  # other metrics keep every run
    assert [p["run_id"] for p in json.loads(out)["series"][0]["points"]] == [old, new]

    code, out, err = fairmark_cli("show", old)
    assert code == 0 and "fairmark's own memory" in " ".join((out + err).split())
    code, out, err = fairmark_cli("show", new)
    assert code == 0 and "fairmark's own memory" not in " ".join((out + err).split())
    for run_id in (old, new):
        dest = tmp_path / run_id
        assert fairmark_cli("export", run_id, "--format", "csv", "--out", str(dest))[0] == 0
        with (dest / "samples.csv").open(newline="") as f:
            rss = [r for r in csv.DictReader(f) if r["metric"] == "max_rss_kib"]
        assert rss and all(r["note"] == (LEGACY_RSS if run_id == old else "") for r in rss), rss
        assert "max_rss_method" in (dest / "trials.csv").read_text().splitlines()[0]
        assert fairmark_cli("export", run_id, "--format", "ministat", "--out", str(dest / "m"))[0] == 0
        (ministat_file,) = (dest / "m").glob("*max_rss_kib.txt")
        assert ("# NOTE: " + LEGACY_RSS in ministat_file.read_text()) == (run_id == old)
