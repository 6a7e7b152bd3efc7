"""The peak RSS fairmark records is the workload's own (issue 25 item 1): held against GNU time's `%M` on three
programs of known, different sizes, locally and through the agent; and runs stored before, whose max_rss_kib
was fairmark's own memory, are marked so that history and exports never mix the two."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from fairmark.plan.load import LoadedPlan, parse_plan
from fairmark.remote import agent
from fairmark.run.runner import Runner, RunOptions
from fairmark.store.db import Store
from helpers import build_alloc, time_max_rss_kib

TOLERANCE = 0.10  # the issue's ±10% against /usr/bin/time
# /bin/true alone spreads over 964–1112 KiB from run to run under either (where its pages fall): medians of 5
RUNS = 5


def _programs(tmp_path: Path) -> dict[str, list[str]]:
    alloc = str(build_alloc(tmp_path))
    return {"true": ["/bin/true"], "alloc50": [alloc, "50"], "alloc200": [alloc, "200"]}


def _close(recorded: float, reference: float) -> bool:
    return abs(recorded - reference) <= TOLERANCE * reference


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


def test_the_agent_records_the_same(tmp_path: Path) -> None:
    """The shipped agent (stdlib only, as over SSH) builds the launcher on its host and measures the same."""
    from fairmark.remote.connection import shipped_agent_command
    from fairmark.run.spec import SPEC_VERSION, TrialSpec

    programs = _programs(tmp_path)
    requests = [{"op": "hello", "recover": False}]
    for name, argv in programs.items():
        spec = TrialSpec(tuple(argv), str(tmp_path), name).to_dict() | {"env": None, "version": SPEC_VERSION}
        requests += [{"op": "exec", "spec": spec}] * RUNS
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")}
    env["FAIRMARK_AGENT_STATE"] = str(tmp_path / "state")
    proc = subprocess.Popen(
        ["sh", "-c", shipped_agent_command(sys.executable)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdin and proc.stdout
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
    from fairmark.run import executor
    from fairmark.run.metrics import builtin_values

    monkeypatch.setattr(executor, "launcher", lambda: (None, "no C compiler"))
    res = executor.execute(["/bin/true"], out_dir=tmp_path)
    assert res.status == "ok" and res.max_rss_kib is None and res.max_rss_method is None
    assert "max_rss_kib" not in builtin_values(res) and res.wall_s > 0
