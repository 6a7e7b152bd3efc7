"""Scratch directories: a live run's is untouchable by any other fairmark's sweep (it holds a lock on it for its
whole life), and a killed fairmark's — with the servers it left working in it, which run in their own session so
a SIGKILL of fairmark's process group misses them — are removed by the next run.

Issue 25 item 7: `mariadb.toml --quick` died with exit 70 (FileNotFoundError on its scratch's trial-00004)
beside other fairmark processes. The sweep then judged a directory by the PID in its name, which says nothing
to a fairmark in another PID namespace: there a live owner's PID is free (or another process's)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fairmark.remote import agent
from fairmark.run.guard import scratch
from fairmark.run.guard.lock import pid_alive
from fairmark.run.loop.stage import sweep_stale_scratch
from helpers import REPO, wait_until

HOLD = "import sys, time; from fairmark.run.guard.scratch import Scratch; print(Scratch('kv', sys.argv[1]).path, flush=True); time.sleep(600)"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _holder(base: Path) -> tuple[subprocess.Popen[str], Path]:
    """Another process holding a scratch directory in `base`, as a live fairmark does."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(base)], stdout=subprocess.PIPE, text=True)
    return proc, Path(proc.stdout.readline().strip())


def _server_in(cwd: Path) -> subprocess.Popen[bytes]:
    """A stand-in for a managed server: its own session, its working directory in the scratch directory."""
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], cwd=cwd, start_new_session=True
    )


def _kill(*procs: subprocess.Popen) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_killed_owners_scratch_and_its_server_are_removed_a_live_owners_is_not(tmp_path: Path) -> None:
    dead_owner, left = _holder(tmp_path)
    live_owner, live = _holder(tmp_path)
    (left / "redis-server").mkdir()
    server = _server_in(left / "redis-server")
    try:
        assert sweep_stale_scratch(str(tmp_path)) == []  # both owners live: nothing is touched
        dead_owner.kill()
        dead_owner.wait()
        lines = sweep_stale_scratch(str(tmp_path))
        server.wait(timeout=60)
        assert not pid_alive(server.pid)
        assert not left.exists() and live.exists()
        assert any(f"pid {server.pid}" in line and str(left) in line for line in lines), lines
        assert any(line.startswith(f"removed {left}") for line in lines), lines
    finally:
        _kill(server, live_owner, dead_owner)


def test_a_directory_named_by_an_older_fairmark_is_judged_by_its_pid(tmp_path: Path) -> None:
    """Before the lock, the owner's PID was in the name: such leftovers are still removed when it is gone."""
    dead = _dead_pid()
    left = tmp_path / f"fairmark-{dead}-kv-abc"
    (left / "redis-server").mkdir(parents=True)
    server = _server_in(left / "redis-server")
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    live = tmp_path / f"fairmark-{owner.pid}-live-abc"
    live.mkdir()
    try:
        lines = sweep_stale_scratch(str(tmp_path))
        server.wait(timeout=60)
        assert not left.exists() and live.exists()
        assert any(f"pid {server.pid}" in line and f"fairmark process {dead}" in line for line in lines), (
            lines
        )
    finally:
        _kill(server, owner)


@pytest.mark.parametrize("legacy", [True, False])
def test_a_server_whose_scratch_is_already_gone_is_stopped_too(tmp_path: Path, legacy: bool) -> None:
    """Its directory was removed but not the server: the kernel shows its cwd as '(deleted)'."""
    left = tmp_path / (f"fairmark-{_dead_pid()}-kv-abc" if legacy else f"{scratch.PREFIX}kv-abc")
    left.mkdir()
    server = _server_in(left)
    try:
        wait_until(lambda: Path(f"/proc/{server.pid}/cwd").resolve() == left, timeout_s=60)
        left.rmdir()
        sweep_stale_scratch(str(tmp_path))
        server.wait(timeout=60)
    finally:
        _kill(server)


def test_kept_scratch_is_never_swept(tmp_path: Path) -> None:
    held = scratch.Scratch("kv", str(tmp_path))
    kept = held.keep()
    assert kept.name.startswith(scratch.KEPT_PREFIX) and kept.is_dir()
    assert sweep_stale_scratch(str(tmp_path)) == [] and kept.is_dir()


WRITER = """
[run]
warmup = 0
min_trials = 4
max_trials = 4
timeout_s = 240

[[workload]]
name = "writer"
shell = true
command = 'while [ ! -e "{go}" ]; do sleep 0.05; done; head -c 100000 /dev/zero > "$FAIRMARK_SCRATCH/data"; wc -c < "$FAIRMARK_SCRATCH/data"'
"""

SWEEPER = """
[run]
warmup = 0
min_trials = 3
max_trials = 3

[[workload]]
name = "quick"
command = ["true"]
"""


def _fairmark(args: list[str], tmp: Path, store: Path, **kw) -> list[str]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    argv = [sys.executable, "-m", "fairmark", "run", *args, "--store", f"sqlite:///{store}"]
    argv += ["--json", "--no-monitors", "--accept-risk", "--allow-concurrent"]
    return argv, env


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or not sys.platform.startswith("linux"),
    reason="needs root and unshare (a PID namespace)",
)
@pytest.mark.slow
def test_a_fairmark_in_another_pid_namespace_keeps_its_scratch_while_another_sweeps(tmp_path: Path) -> None:
    """Two fairmarks on one /tmp: A runs in its own PID namespace (a container, `unshare --pid`) with a PID that
    is free out here, its trials waiting to write into its scratch; B, outside, starts a run (which sweeps).
    A's scratch must survive and A's trials must all write there."""
    tmp, go = tmp_path / "tmp", tmp_path / "go"
    tmp.mkdir()
    (tmp_path / "writer.toml").write_text(WRITER.format(go=go))
    (tmp_path / "sweeper.toml").write_text(SWEEPER)
    argv, env = _fairmark([str(tmp_path / "writer.toml")], tmp, tmp_path / "a.db")
    # Inside the namespace the next PID is set to one that no process has out here: the PID A's scratch name
    # carried before the lock meant nothing to B.
    free = _dead_pid()
    inner = f"echo {free - 1} > /proc/sys/kernel/ns_last_pid && {' '.join(map(repr, argv))}; exit $?"
    a = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c", inner],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert wait_until(lambda: any(tmp.glob("fairmark-*writer*")) or a.poll() is not None, timeout_s=240)
        assert a.poll() is None, a.communicate()
        (a_scratch,) = tmp.glob("fairmark-*writer*")
        argv, env = _fairmark([str(tmp_path / "sweeper.toml")], tmp, tmp_path / "b.db")
        b = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert b.returncode == 0, b.stderr
        assert a_scratch.is_dir(), f"B removed A's live scratch: {b.stderr[-2000:]}"
        go.touch()
        out, err = a.communicate(timeout=300)
        assert a.returncode == 0, err[-3000:]
        cells = json.loads(out)["cells"]
        assert [t["status"] for c in cells for t in c["trials"]] == ["ok"] * 4, err[-3000:]
    finally:
        go.touch()
        if a.poll() is None:
            os.killpg(a.pid, signal.SIGKILL)
            a.wait()


def test_the_trial_output_of_a_killed_agent_is_removed_by_the_next(tmp_path: Path) -> None:
    """An agent removes its trial's output directory when the trial ends; a SIGKILL'd one cannot. The next agent
    removes those whose lock is free (and those of pre-lock agents whose pid is gone), never a live agent's."""
    code = (
        "import sys, tempfile, time; from fairmark.remote import agent; "
        "d = tempfile.mkdtemp(prefix=agent.OUT_PREFIX, dir=sys.argv[1]); fd = agent.take_dir(d); "
        "print(d, flush=True); time.sleep(600)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    left, live = (Path(p.stdout.readline().strip()) for p in procs)
    legacy = tmp_path / f"{agent.LEGACY_OUT_PREFIX}{_dead_pid()}-abc"
    legacy.mkdir()
    try:
        procs[0].kill()
        procs[0].wait()
        lines = agent.sweep_dead_outputs(str(tmp_path))
        assert not left.exists() and not legacy.exists() and live.exists()
        assert len(lines) == 2 and lines[0].startswith(f"removed {left}"), lines
    finally:
        _kill(*procs)


def test_the_agent_holds_the_controllers_scratch_on_its_host(tmp_path: Path) -> None:
    """The controller's lock is on its own machine; on a host, the agent that made the scratch path holds it,
    so a fairmark run on that host does not sweep it while the controller's run goes on."""
    code = (
        "import sys, time; from fairmark.remote import agent; agent.hold_scratch(sys.argv[1]); "
        "print('held', flush=True); time.sleep(600)"
    )
    path = tmp_path / f"{scratch.PREFIX}w-abc" / "trial-00001"
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        assert sweep_stale_scratch(str(tmp_path)) == [] and path.is_dir()
        proc.kill()
        proc.wait()
        assert sweep_stale_scratch(str(tmp_path)) and not path.parent.exists()
    finally:
        _kill(proc)
