"""`fairmark run --profile cpu,locks,syscalls` end to end (issue 25 item 3): each profiler gets trials of its own
(never two in one trial: strace's ptrace stops topped the lock table when they shared one), every profile is of
the workload's own processes, and every report (JSON, text, HTML) says so with the workload's share of the busy
CPUs' samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairmark.run.profiles import hooks_for

PROFILED_TRIALS = 2  # the plan's: the CPU profiler's too (max_profiled), which would go on until decided

# One at a time under xdist (tests/conftest.py): perf, whose sample rate the kernel lowers machine-wide under load.
pytestmark = pytest.mark.machine("perf")


def profiled_plan(name: str, shell: str) -> str:
    """Two variants, a and b, of one workload `name` running `sh -c SHELL`: 3 trials each, and PROFILED_TRIALS
    more per profiler asked for."""
    return f"""
[run]
warmup = 0
min_trials = 3
max_trials = 3
profiled_trials = {PROFILED_TRIALS}
max_profiled = {PROFILED_TRIALS}

[[workload]]
name = "{name}"
command = {json.dumps(["sh", "-c", shell])}

[[variant]]
name = "a"

[[variant]]
name = "b"
"""


PLAN = profiled_plan("sum", "head -c 20000000 /dev/zero | md5sum")


def _kinds(artifacts: list[dict]) -> set[str]:
    return {a["kind"] for a in artifacts if a["kind"].startswith("profile.")}


@pytest.mark.slow
def test_each_profiler_has_trials_of_its_own_and_reports_say_what_they_cover(tmp_path, fairmark_cli):
    hooks = hooks_for(["cpu", "locks", "syscalls"])
    if any(h.unavailable for h in hooks):
        pytest.skip("; ".join(h.unavailable for h in hooks if h.unavailable))
    from fairmark.store.db import Store

    plan = tmp_path / "p.toml"
    plan.write_text(PLAN)
    db = f"sqlite:///{tmp_path / 'x.db'}"
    args = ["run", str(plan), "--store", db, "--json", "--accept-risk", "--no-monitors"]
    code, out, err = fairmark_cli(*args, "--profile", "cpu,locks,syscalls")
    assert code == 0, err
    doc = json.loads(out)
    run_id = doc["run"]["id"]
    store = Store.open(db)
    by_trial: dict[str, list[dict]] = {}
    for a in store.artifacts(run_id, None):
        by_trial.setdefault(a["trial_id"], []).append(a)
    for cell in doc["cells"]:
        profiled = [t for t in cell["trials"] if t["profiled"]]
        assert len(profiled) == 3 * PROFILED_TRIALS
        kinds = [_kinds(by_trial.get(t["id"], [])) for t in profiled]
        assert all(len(k) == 1 for k in kinds), kinds  # one profiler per trial
        assert sorted(k for ks in kinds for k in ks) == sorted(
            ["profile.cpu", "profile.locks", "profile.syscalls"] * PROFILED_TRIALS
        )
        traced = [t for t in profiled if "strace" in " ".join(t["argv"])]
        assert len(traced) == PROFILED_TRIALS
    for a in store.artifacts(run_id, "profile.locks"):
        assert not any("ptrace" in r["lock"] for r in a["data"]["rows"]), a["data"]["rows"][:3]
    profiles = {p["variant"]: p for p in doc["profiles"]}
    assert set(profiles) == {"a", "b"}
    for p in profiles.values():
        assert p["cpu"]["scope"] == "process tree (cgroup)" and 0 < p["cpu"]["workload_share"] <= 1
        assert p["locks"]["scope"] == "process tree (cgroup)"
        assert p["syscalls"]["scope"] == "process tree (strace -f)"
    _, text, _ = fairmark_cli("report", run_id, "--store", db, "--text")
    flat = " ".join(text.split())
    assert "CPU profile of a: process tree (cgroup): the workload's processes only; they were" in flat
    html = tmp_path / "r.html"
    code, _, err = fairmark_cli("report", run_id, "--store", db, "--html", str(html))
    assert code == 0, err
    assert "of the samples of busy CPUs during the profiled trials" in Path(html).read_text()
