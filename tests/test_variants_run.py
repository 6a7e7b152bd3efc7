"""System-changing variants through a real `fairmark run`: the sysctl comes back after a normal end, an error,
Ctrl-C and kill -9 (then any fairmark command); `cpus = 1` gives a 2-thread CPU-bound workload one CPU."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fairmark.run.variants.syslock import SystemLock

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="changing the system needs root"),
    # runs that change sysctls (the system lock refuses a second at once), scratch file systems mounted
    pytest.mark.machine,
]

SYSCTL = Path("/proc/sys/net/ipv4/tcp_no_metrics_save")
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def original():
    # Under the machine-wide lock (the fairmark processes started here run under it as our children), so
    # another fairmark changing this sysctl at the same time cannot be taken for the original value.
    lock = SystemLock()
    lock.acquire(wait_s=300)
    before = SYSCTL.read_text().strip()
    try:
        yield before
    finally:
        SYSCTL.write_text(before)
        lock.release()


def plan_file(
    tmp_path: Path, original: str, *, command: str = '["true"]', extra_b: str = "", trials: int = 3
) -> Path:
    other = "0" if original == "1" else "1"
    path = tmp_path / "plan.toml"
    path.write_text(
        f"""
[run]
warmup = 0
min_trials = {trials}
max_trials = {trials}

[[workload]]
name = "w"
command = {command}

[[variant]]
name = "A"

[[variant]]
name = "B"
settle_s = 0
sysctl = {{ "net.ipv4.tcp_no_metrics_save" = {other}{extra_b} }}
"""
    )
    return path


def run_args(plan: Path, tmp_path: Path) -> list[str]:
    return [
        "run",
        str(plan),
        "--store",
        f"sqlite:///{tmp_path / 'x.db'}",
        "--json",
        "--accept-risk",
        "--no-monitors",
    ]


@pytest.mark.slow
def test_normal_end_restores(tmp_path, original, fairmark_cli):
    code, out, err = fairmark_cli(*run_args(plan_file(tmp_path, original), tmp_path))
    assert code == 0, err
    assert SYSCTL.read_text().strip() == original
    assert json.loads(out)["cells"][1]["n_ok"] == 3
    assert not list((Path(os.environ["FAIRMARK_STATE_DIR"]) / "journal").glob("*.json"))


def test_error_midway_restores(tmp_path, original, fairmark_cli):
    # B's second sysctl is rejected by the kernel after the first one was applied: the run fails, and the
    # first one is put back.
    plan = plan_file(tmp_path, original, extra_b=', "net.ipv4.ip_local_port_range" = "70000 80000"')
    code, _, err = fairmark_cli(*run_args(plan, tmp_path))
    assert code == 3 and "ip_local_port_range" in err
    assert SYSCTL.read_text().strip() == original


def _start(plan: Path, tmp_path: Path, original: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "fairmark", *run_args(plan, tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,  # its own process group, like a shell job: Ctrl-C goes to the whole group
    )
    deadline = time.monotonic() + 120  # a wait for an event, not a speed limit
    while SYSCTL.read_text().strip() == original:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"variant B never became active: {proc.stderr.read()[-2000:]}")
        time.sleep(0.05)
    return proc


@pytest.mark.slow
def test_ctrl_c_restores(tmp_path, original):
    proc = _start(plan_file(tmp_path, original, command='["sleep", "1"]', trials=5), tmp_path, original)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert SYSCTL.read_text().strip() == original


@pytest.mark.slow
def test_kill_9_then_any_command_restores(tmp_path, original):
    proc = _start(plan_file(tmp_path, original, command='["sleep", "1"]', trials=5), tmp_path, original)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert SYSCTL.read_text().strip() != original  # nobody could put it back yet
    done = subprocess.run(
        [sys.executable, "-m", "fairmark", "runs", "--store", f"sqlite:///{tmp_path / 'x.db'}"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert SYSCTL.read_text().strip() == original, done.stderr
    assert "restored sysctl net.ipv4.tcp_no_metrics_save" in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench is not installed")
@pytest.mark.skipif(os.cpu_count() != 2, reason="the CPU sets are stated for a 2-CPU machine")
def test_a_one_cpu_variant_runs_a_two_thread_workload_on_one_cpu(tmp_path, fairmark_cli):
    """`cpus = 1` confines the trial to one CPU: it sees one, and its processes never get more than one
    CPU-second a second, whatever else runs. How much faster two CPUs make it is the machine's business (the
    test skipped or failed when neighbours took the second CPU, issue 24): not asserted."""
    plan = tmp_path / "cpus.toml"
    plan.write_text(
        """
[run]
warmup = 0
min_trials = 3
max_trials = 3

[[workload]]
name = "primes"
shell = true
command = "echo cpus=$(nproc); exec sysbench cpu --threads=2 --events=1200 --time=0 run"
metrics = [{ name = "cpus", regex = 'cpus=(\\d+)', better = "higher" }]

[[variant]]
name = "two"
cpus = 2

[[variant]]
name = "one"
cpus = 1
"""
    )
    code, out, err = fairmark_cli(*run_args(plan, tmp_path))
    assert code == 0, err
    doc = json.loads(out)
    cells = {c["variant"]: c for c in doc["cells"]}
    assert {v: c["values"]["cpus"] for v, c in cells.items()} == {"two": [2.0] * 3, "one": [1.0] * 3}
    # The CPU set holds whatever else runs on the machine: one CPU gives at most one CPU-second a second.
    assert max(_cpus_used([t]) for t in cells["one"]["trials"]) <= 1.05, cells["one"]["trials"]
    # how the CPUs were set is recorded and reported (issue 32: cpuset v1 here, as root on cgroup v1)
    placed = doc["run"]["options"]["placement"]
    assert placed == {"two": "cpuset v1", "one": "cpuset v1"}, placed
    store = ["--store", f"sqlite:///{tmp_path / 'x.db'}"]
    code, text, err = fairmark_cli("report", doc["run"]["id"], "--text", *store)
    assert code == 0 and "one: cpus=1, cpus placement=cpuset v1" in text, text + err


def _cpus_used(trials: list[dict]) -> float:
    return sum(t["user_s"] + t["sys_s"] for t in trials) / sum(t["wall_s"] for t in trials)


@pytest.mark.skipif(not Path("/dev/loop-control").exists(), reason="no loop devices in this environment")
def test_mount_variant_runs_trials_on_its_scratch_fs_and_removes_it(tmp_path, fairmark_cli):
    state = Path(os.environ["FAIRMARK_STATE_DIR"])
    plan = tmp_path / "mount.toml"
    plan.write_text(
        """
[run]
warmup = 0
min_trials = 3
max_trials = 3

[[workload]]
name = "where"
shell = true
# passes only inside the variant's scratch file system, which is the trial's working directory
command = 'test "$PWD" = "$FAIRMARK_WORKDIR" && test "$(stat -f -c %T .)" = ext2/ext3 && grep -q " $PWD ext4 .*sync" /proc/mounts && echo ok=1'
metrics = [{ name = "ok", regex = 'ok=(1)', better = "higher" }]

[[variant]]
name = "sync"
mount = { fs = "ext4", options = "sync", size = "32M" }
"""
    )
    code, out, err = fairmark_cli(*run_args(plan, tmp_path))
    assert code == 0, err
    assert json.loads(out)["cells"][0]["n_ok"] == 3
    assert str(state) not in Path("/proc/mounts").read_text()
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert str(state) not in loops
    assert list((state / "scratch").iterdir()) == []


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/loop-control").exists(), reason="no loop devices in this environment")
@pytest.mark.skipif(os.geteuid() != 0, reason="scratch file systems need root")
def test_tool_data_lives_on_each_variants_scratch_file_system(tmp_path: Path) -> None:
    """A tool with a data directory (dbench) prepares it on the variant's own scratch fs, not beside it."""
    plan = tmp_path / "mnt.toml"
    plan.write_text(
        "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n"
        "[[workload]]\nname = 'db'\ntool = 'dbench'\nparams = { clients = 1, duration_s = 2 }\n"
        "[[variant]]\nname = 'default'\nsettle_s = 0\nmount = { fs = 'ext4', size = '256M' }\n"
        "[[variant]]\nname = 'sync'\nsettle_s = 0\nmount = { fs = 'ext4', options = 'sync', size = '256M' }\n"
    )
    res = subprocess.run(
        [sys.executable, "-m", "fairmark", "run", str(plan), "--json", "--no-monitors", "--accept-risk"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert "preparing its data for variant default on" in res.stderr
    assert "preparing its data for variant sync on" in res.stderr
    doc = json.loads(res.stdout)
    default, sync = ({c["variant"]: c for c in doc["cells"]}[v] for v in ("default", "sync"))
    # Three measured trials each — or more for one: the compared cells stop together, so a failed trial of one
    # (dbench under load, its raw output stored) gives the other a fourth round (seen in a fresh-clone suite)
    assert min(default["n_ok"], sync["n_ok"]) == 3, (default, sync)
    for cell, other in ((default, sync), (sync, default)):
        assert cell["n_ok"] == 3 or other["n_failed"] >= cell["n_ok"] - 3, (cell["n_ok"], other["n_failed"])
    # The proof is where the data went, not how fast it was written: three trials of a 5-25x effect can end
    # "not significant after FDR" on a loaded machine (seen at load 14), which says nothing about the mount.
    dirs = {name: Path(cell["params"]["directory"]) for name, cell in (("default", default), ("sync", sync))}
    for name, data_dir in dirs.items():
        assert data_dir.name == "mnt" and data_dir.parent.name.split("-")[1] == name, data_dir
        assert f"preparing its data for variant {name} on {data_dir}" in " ".join(res.stderr.split())
    assert dirs["default"] != dirs["sync"]
    assert "fairmark" not in Path("/proc/self/mounts").read_text()
