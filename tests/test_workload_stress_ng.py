"""stress-ng adapter: YAML parse on captured output (including exec refused as root), end to end."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError, RawOutput
from fairmark.run.workloads.stress_ng import parse_yaml
from helpers import wait_until

# One at a time under xdist (tests/conftest.py): counts /tmp/fairmark-stress-ng-* directories and stress-ng processes machine-wide.
pytestmark = pytest.mark.machine("perf")

FIX = Path(__file__).parent / "fixtures" / "tools" / "stress-ng"


def _raw(name: str, stressors: list[str], stderr: str = "") -> RawOutput:
    yaml_path = FIX / name
    text = yaml_path.read_text() if yaml_path.exists() else ""
    return RawOutput("", stderr, 0, {"yaml": text, "stressors": "\n".join(stressors)})


def test_parse_four_stressors():
    m = parse_yaml((FIX / "fork-pipe-switch-vm.yaml").read_text(), ["fork", "pipe", "switch", "vm"])
    assert m["bogo_ops_s_real_pipe"] == pytest.approx(192225.669176)
    assert m["bogo_ops_s_usr_sys_switch"] == pytest.approx(113050.005539)
    assert m["bogo_ops_s_real"] == m["bogo_ops_s_real_fork"] == pytest.approx(24.452227)


def test_parse_exec_as_nobody():
    m = adapter_for("stress-ng").parse(_raw("exec-fork-nobody.yaml", ["exec", "fork"]))
    assert m["bogo_ops_s_real"] == pytest.approx(129.957663)


def test_exec_refused_as_root_is_failed_trial_despite_exit_0():
    # Captured: as root stress-ng skips exec, runs fork, exits 0 — exec's absence must fail the trial.
    stderr = (FIX / "exec-fork-root.stderr.txt").read_text()
    with pytest.raises(ParseError, match="no metrics for exec"):
        adapter_for("stress-ng").parse(_raw("exec-fork-root.yaml", ["exec", "fork"], stderr))


def test_no_yaml_at_all_is_failed_trial():
    stderr = (FIX / "exec-root.stderr.txt").read_text()
    with pytest.raises(ParseError, match="wrote no YAML"):
        adapter_for("stress-ng").parse(_raw("does-not-exist.yaml", ["exec"], stderr))


def test_params_checked():
    a = adapter_for("stress-ng")
    with pytest.raises(PlanError, match="not supported"):
        a.resolve({"stressors": ["fork", "frobnicate"]})
    with pytest.raises(PlanError, match="non-empty list"):
        a.resolve({"stressors": "fork"})
    names = {m.name for m in a.metrics}
    assert {"bogo_ops_s_real_sem_sysv", "bogo_ops_s_usr_sys_exec"} <= names


def _leftover_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("fairmark-stress-ng-*")}


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed")
def test_stress_ng_end_to_end_with_exec(tmp_path):
    before = _leftover_dirs()
    params = {"stressors": ["exec", "fork", "pipe"], "duration_s": 1}
    m = tools.run_once(adapter_for("stress-ng"), params, tmp_path)
    assert m["bogo_ops_s_real_exec"] > 0 and m["bogo_ops_s_real_pipe"] > 0
    assert m["bogo_ops_s_real"] == m["bogo_ops_s_real_exec"]
    assert _leftover_dirs() == before  # the private world-writable directory is gone


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("stress-ng") is None, reason="needs root and stress-ng")
def test_stress_ng_runs_as_unprivileged_user_only_for_exec(tmp_path):
    a = adapter_for("stress-ng")
    m = tools.run_once(a, {"stressors": ["pipe"], "duration_s": 1}, tmp_path / "a")
    assert m["bogo_ops_s_real"] > 0
    with pytest.raises(PlanError, match="does not exist"):
        tools.run_once(a, {"stressors": ["exec"], "user": "no-such-user-x", "duration_s": 1}, tmp_path / "b")


def test_command_drops_to_user_only_when_root_and_exec(tmp_path):
    from fairmark.run.workloads.base import TrialContext, WorkloadContext

    a = adapter_for("stress-ng")
    for stressors, is_root, wrapped in (
        (["exec"], True, True),
        (["pipe"], True, False),
        (["exec"], False, False),
    ):
        ctx = WorkloadContext("s", a.resolve({"stressors": stressors}), tmp_path, tmp_path, is_root=is_root)
        a.setup(ctx)
        try:
            (tmp_path / "t1").mkdir(exist_ok=True)
            argv = a.command(TrialContext(ctx, ctx.params, tmp_path / "t1", "A"))
            assert (argv[:3] == ["runuser", "-u", "nobody"]) is wrapped
            assert "--yaml" in argv and f"--{stressors[0]}" in argv
        finally:
            a.teardown(ctx)


RUN_PLAN = """
[run]
warmup = 0
min_trials = 3
max_trials = 3
timeout_s = 120

[[workload]]
name = "procs"
tool = "stress-ng"
params = { stressors = ["exec", "pipe"], duration_s = 1 }
"""


@pytest.mark.slow  # three 1-second trials plus the run's environment probe: about 6 s idle, more under load
@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed")
def test_stress_ng_through_fairmark_run(tmp_path):
    from helpers import fairmark_subprocess, json_out

    plan = tmp_path / "plan.toml"
    plan.write_text(RUN_PLAN)
    before = _leftover_dirs()
    proc = fairmark_subprocess(
        "run",
        str(plan),
        "--store",
        f"sqlite:///{tmp_path / 'x.db'}",
        "--json",
        "--no-monitors",
        "--accept-risk",
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    cell = json_out(proc.stdout)["cells"][0]
    assert cell["primary_metric"] == "bogo_ops_s_real" and cell["n_ok"] == 3 and cell["n_failed"] == 0
    assert all(v > 0 for v in cell["values"]["bogo_ops_s_real_exec"])
    assert _leftover_dirs() == before


def _stress_ng_pids() -> set[int]:
    import psutil

    out = set()
    for p in psutil.process_iter(["name", "status"]):
        if (
            p.info["name"]
            and p.info["name"].startswith("stress-ng")
            and p.info["status"] != psutil.STATUS_ZOMBIE
        ):
            out.add(p.pid)
    return out


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed")
def test_ctrl_c_mid_trial_leaves_no_directory_or_process(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    plan = tmp_path / "plan.toml"
    plan.write_text(
        RUN_PLAN.replace("duration_s = 1", "duration_s = 30").replace("[run]", "[run]\nkill_grace_s = 0.5")
    )
    before_dirs, before_pids = _leftover_dirs(), _stress_ng_pids()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fairmark",
            "run",
            str(plan),
            "--store",
            f"sqlite:///{tmp_path / 'x.db'}",
            "--no-monitors",
            "--accept-risk",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120  # a wait for the trial to start, not a speed limit
    while (
        not (_leftover_dirs() - before_dirs and _stress_ng_pids() - before_pids)
        and time.monotonic() < deadline
    ):
        time.sleep(0.1)  # until the trial runs: its private directory and stress-ng exist
    assert _stress_ng_pids() - before_pids, "the trial never started"
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-1500:]
    print(f"stopped {time.monotonic() - started:.1f} s after SIGINT")
    assert _leftover_dirs() == before_dirs
    assert wait_until(lambda: not (_stress_ng_pids() - before_pids)), _stress_ng_pids() - before_pids
