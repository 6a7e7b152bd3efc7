"""A `--profile` that came back empty is said where the run ends, and the run exits 3 (issue 32): a run on a
cgroup v2 guest whose 40 profiled trials all failed ended "done", exit 0, its only trace a fail column of 20s
beside n = 5 — the measured trials' column, which counts no profiled trial now.

Two ways a profile is lost, each for real: the profiled trial itself fails (the workload refuses to run in the
trial's profile cgroup, which is where the profiler puts it), and the profiler fails in a trial that ran (a
`perf` first on PATH that exits at once, so that what fails is known; the real perf is in
tests/test_profile_run.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fairmark.run.profiles import hooks_for
from test_profile_run import profiled_plan

pytestmark = pytest.mark.machine("perf")  # perf (one at a time under xdist, tests/conftest.py)

# Fails only in a profiled trial: the CPU profiler's cgroup is named fairmark-profile-PID-HEX.
REFUSES = "if grep -q fairmark-profile- /proc/self/cgroup; then echo 'error: refusing to run profiled' >&2; exit 7; fi"


def _plan(tmp_path: Path, shell: str) -> str:
    path = tmp_path / "p.toml"
    path.write_text(profiled_plan("w", shell))
    return str(path)


def _skip_without_perf() -> None:
    (hook,) = hooks_for(["cpu"])
    if hook.unavailable:
        pytest.skip(hook.unavailable)


@pytest.mark.slow
def test_a_run_whose_every_profiled_trial_failed_says_so_and_exits_3(tmp_path: Path, fairmark_cli) -> None:
    _skip_without_perf()
    plan = _plan(tmp_path, f"{REFUSES}; head -c 2000000 /dev/zero | md5sum")
    code, out, err = fairmark_cli("run", plan, "--accept-risk", "--no-monitors", "--profile", "cpu")
    assert code == 3, out[-3000:] + err[-2000:]
    # the headline, with the first profiled trial's error, above the tables
    assert "PROFILES MISSING" in out and out.index("PROFILES MISSING") < out.index("variant"), out
    assert "2 of 2 profiled cells brought back no cpu profile; first, trial 7" in " ".join(out.split()), out
    assert "w/a: no cpu profile from 2 profiled trials, 2 failed; trial" in " ".join(out.split()), out
    assert "exit status 7; error: refusing to run profiled" in " ".join(err.split()), err
    # the table's fail column counts measured trials: none failed, so it has none
    table = out[out.index("variant") : out.index("variant") + 400]
    assert " fail " not in table, table
    # its progress line: a profiled trial, not a failure counted against the cell's max_failures
    assert "profiled trial (not counted)  FAILED: exit status 7" in out + err, err[-2000:]
    # one line per cell for its profiled trials, not one per trial
    assert " ".join(out.split()).count("w/a: 2 of 2 failed; trial") == 1, out
    # the measured part stands: done, compared
    code, text, _ = fairmark_cli("show", "last", "--json")
    doc = json.loads(text)
    assert doc["run"]["status"] == "done" and all(c["n_ok"] == 3 and c["n_failed"] == 0 for c in doc["cells"])
    assert [m["key"] for m in doc["missing_profiles"]] == ["w/a", "w/b"], doc["missing_profiles"]
    assert all(m["failed"] == 2 and m["profilers"] == ["cpu"] for m in doc["missing_profiles"])
    assert doc["profile_failure"].startswith("profiles missing: 2 of 2 profiled cells")


@pytest.mark.slow
def test_a_profiler_that_failed_in_every_trial_is_a_missing_profile_too(
    tmp_path: Path, fairmark_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    _skip_without_perf()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    perf = bin_dir / "perf"
    perf.write_text("#!/bin/sh\necho 'perf: simulated: no such event' >&2\nexit 1\n")
    perf.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    plan = _plan(tmp_path, "head -c 2000000 /dev/zero | md5sum")
    code, out, err = fairmark_cli("run", plan, "--json", "--accept-risk", "--no-monitors", "--profile", "cpu")
    assert code == 3, err[-3000:]
    doc = json.loads(out)
    assert all(t["status"] == "ok" for c in doc["cells"] for t in c["trials"])  # the trials ran
    missing = doc["missing_profiles"]
    assert [m["key"] for m in missing] == ["w/a", "w/b"] and all(m["failed"] == 0 for m in missing), missing
    assert all("simulated: no such event" in m["error"] for m in missing), missing
    assert "simulated: no such event" in err and "profiles missing: 2 of 2" in err, err


def test_a_profiled_run_that_delivered_exits_0_without_a_headline(tmp_path: Path, fairmark_cli) -> None:
    _skip_without_perf()
    plan = _plan(tmp_path, "head -c 2000000 /dev/zero | md5sum")
    code, out, err = fairmark_cli("run", plan, "--json", "--accept-risk", "--no-monitors", "--profile", "cpu")
    assert code == 0, err[-3000:]
    doc = json.loads(out)
    assert doc["missing_profiles"] == [] and doc["profile_failure"] is None
