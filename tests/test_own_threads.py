"""fairmark's own process loads numpy's and scipy's OpenBLAS with one thread (cli/_threads.py: its spinning pool cost
0.12 s of CPU a command), and the programs it starts never see a variable fairmark set for itself: a workload, its
setup and the environment recorded for the run are exactly the user's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

OWN = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")


def user_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This process's environment without the variables under test (a CI machine may set them), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in OWN}
    return env | {"FAIRMARK_STORE": f"sqlite:///{tmp_path / 's.db'}", "NO_COLOR": "1"} | extra


def python(code: str, env: dict[str, str]) -> list[str]:
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return res.stdout.split()


TASKS = "len(os.listdir(f'/proc/{os.getpid()}/task'))"
SEEN = "[os.environ.get(k, '-') for k in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS')]"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_numpy_and_scipy_load_on_one_thread_and_the_environment_is_left_as_it_was(tmp_path) -> None:
    code = (
        "import os\nfrom fairmark.cli import _threads\n_threads.install()\n"
        f"import numpy, scipy.linalg\nprint({TASKS}, *{SEEN})"
    )
    assert python(code, user_env(tmp_path)) == ["1", "-", "-"]
    # a value the user set is theirs: OpenBLAS gets it, and so does everything fairmark starts
    tasks, *seen = python(code, user_env(tmp_path, OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="5"))
    assert seen == ["2", "5"]
    assert int(tasks) == 1 + 2 * (min(2, os.cpu_count() or 1) - 1)  # numpy's pool and scipy's, each of 2


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_the_command_line_entry_installs_it(tmp_path) -> None:
    a = tmp_path / "a.txt"
    a.write_text("1\n2\n3\n4\n")
    code = (
        "import os, sys\nfrom fairmark.cli.main import entry\n"
        f"sys.argv = ['fairmark', 'compare', {str(a)!r}, {str(a)!r}]\n"
        f"try:\n    entry()\nexcept SystemExit:\n    print('numpy' in sys.modules, {TASKS}, *{SEEN})"
    )
    assert python(code, user_env(tmp_path))[-4:] == ["True", "1", "-", "-"]


def test_a_workload_sees_the_users_environment_only(tmp_path) -> None:
    seen = tmp_path / "seen"
    probe = f'echo "$0 OPENBLAS=${{OPENBLAS_NUM_THREADS-unset}} OMP=${{OMP_NUM_THREADS-unset}}" >> {seen}'
    plan = tmp_path / "env.toml"
    plan.write_text(
        "[run]\nmin_trials = 3\nmax_trials = 3\nwarmup = 0\n"
        f"[[workload]]\nname = 'env'\nsetup = {json.dumps(probe.replace('$0', 'setup'))}\n"
        f"command = ['sh', '-c', {json.dumps(probe)}, 'trial']\n"
    )
    env = user_env(
        tmp_path,
        OMP_NUM_THREADS="3",  # the user's, for their workload: it passes through
        FAIRMARK_LOCK_PATH=str(tmp_path / "lock"),
        FAIRMARK_STATE_DIR=str(tmp_path / "state"),
    )
    res = subprocess.run(
        [sys.executable, "-m", "fairmark", "run", str(plan), "--json", "--accept-risk", "--no-monitors"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert (
        seen.read_text().splitlines() == ["setup OPENBLAS=unset OMP=3"] + ["trial OPENBLAS=unset OMP=3"] * 3
    )
    run = json.loads(res.stdout)["run"]
    for when in ("env_before", "env_after"):
        recorded = run[when]["env"]
        assert "OPENBLAS_NUM_THREADS" not in recorded and recorded["OMP_NUM_THREADS"] == "3", when
