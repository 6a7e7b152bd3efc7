"""`fairmark bisect` ended by what a CI cancel sends (issue 26 item 6): SIGTERM — or SIGHUP — at each phase of a
bisect in progress leaves the repository exactly as it was (refs, registered worktrees, BISECT_* files, status,
HEAD), no temporary directory, no host lock held or stale, no build still running, and exits 128 + the signal.
A bisect killed outright (SIGKILL) cannot clean up; the next bisect of the repository undoes what it left
instead of refusing.

Each phase is found by what the bisect does, not by timing: the plan's command and the build leave a marker
file naming the checkout they run in (a candidate's checkout is `c-SHA`), and for the phase between steps a
`git` first on the bisect's PATH leaves one and waits a moment when asked to `bisect start`, after the ends'
check proved the planted regression. The signal is sent once the marker is there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, prog_plan, repo_state, wait_until
from test_continual_bisect import make_repo

PLAN = prog_plan(
    "bisect signals",
    "warmup = 0\nmin_trials = 6\nmax_trials = 12\ntarget_ci_pct = 2.0",
    command_prefix='touch "$MARKS/trial-$(basename "$FAIRMARK_CHECKOUT")"; ',
)
# a candidate's build waits (the build phase's signal comes during it); the ends build at once
BUILD = (
    'echo $$ >> "$MARKS/build.pids"; touch "$MARKS/build-$(basename "$PWD")"; '
    'case "$(basename "$PWD")" in c-*) [ -n "$SLOW_BUILD" ] && sleep 120 ;; esac; cc -O2 -o prog prog.c'
)
GIT_SHIM = """#!/bin/sh
if [ "$1" = bisect ] && [ "$2" = start ]; then touch "$MARKS/git-bisect-start"; sleep 2; fi
exec {git} "$@"
"""


def start_bisect(tmp_path: Path, repo: Path, own: Path, *extra: str, env: dict[str, str] | None = None):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    argv = [
        sys.executable,
        "-m",
        "fairmark",
        "bisect",
        "--good",
        "main~11",
        "--bad",
        "main",
        "--plan",
        str(plan),
    ]
    argv += ["--repo", str(repo), "--build", BUILD, "--accept-risk", *extra]
    log = (tmp_path / "bisect.log").open("w")
    env = os.environ | {"TMPDIR": str(own), "MARKS": str(tmp_path / "marks"), "NO_COLOR": "1"} | (env or {})
    # a session of its own: a signal to its process group reaches it and its children, never this test.
    # SIGHUP as a shell leaves it for a command: a suite started under `nohup` hands its children SIGHUP
    # ignored, and fairmark keeps an ignored SIGHUP ignored on purpose — the SIGHUP case would see a bisect
    # that rightly runs to its end.
    proc = subprocess.Popen(
        argv,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        env=env,
        start_new_session=True,
        preexec_fn=default_sighup,
    )
    return proc, log


def default_sighup() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def marker(tmp_path: Path, prefix: str) -> bool:
    return any((tmp_path / "marks").glob(prefix + "*"))


def lock_holder() -> str:
    return Path(os.environ["FAIRMARK_LOCK_PATH"]).read_text()


def git_shim(tmp_path: Path) -> dict[str, str]:
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "git").write_text(GIT_SHIM.format(git=real.strip()))
    (shim / "git").chmod(0o755)
    return {"PATH": f"{shim}:{os.environ['PATH']}"}


PHASES = {  # phase → (the marker it is found by, the bisect's extra environment)
    "build": ("build-c-", {"SLOW_BUILD": "1"}),
    "trials": ("trial-c-", {}),
    "between steps": ("git-bisect-start", None),
}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("phase", "sig", "group"),
    [
        pytest.param(
            phase, sig, group, id=f"{phase.replace(' ', '-')}-{sig.name}" + ("-group" if group else "")
        )
        for phase, sig, group in [
            ("build", signal.SIGTERM, False),
            ("trials", signal.SIGTERM, False),
            ("between steps", signal.SIGTERM, False),
            ("trials", signal.SIGHUP, False),
            (
                "between steps",
                signal.SIGTERM,
                True,
            ),  # to the process group, as some CI runners send it: git too
        ]
    ],
)
def test_a_signal_at_any_phase_leaves_the_repository_as_it_was(
    tmp_path: Path, own_tmp: Path, phase: str, sig: signal.Signals, group: bool
) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, 1.15)
    (tmp_path / "marks").mkdir()
    before = repo_state(repo)
    mark, env = PHASES[phase]
    proc, log = start_bisect(tmp_path, repo, own_tmp, "--allow-concurrent", env=env or git_shim(tmp_path))
    try:
        assert wait_until(lambda: marker(tmp_path, mark) or proc.poll() is not None, timeout_s=800)
        assert proc.poll() is None, (tmp_path / "bisect.log").read_text()[-3000:]
        state = repo_state(repo)
        if phase != "between steps":  # mid-step: the bisect is in progress with the ends' and the candidate's
            assert state["bisect"] and len(state["worktrees"].split("\n\n")) == 4, state
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        code = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    out = (tmp_path / "bisect.log").read_text()
    assert code == 128 + sig, out[-3000:]
    assert "Traceback" not in out
    assert repo_state(repo) == before
    gitdir = repo / ".git"
    assert not list(gitdir.glob("BISECT_*")) and not (gitdir / "fairmark-bisect.json").exists()
    assert list(own_tmp.iterdir()) == []  # no checkout, no scratch directory left
    assert lock_holder() == ""  # released: no PID left to look stale
    from fairmark.run.guard.lock import pid_alive

    builds = [int(p) for p in (tmp_path / "marks" / "build.pids").read_text().split()]
    assert not any(pid_alive(p) for p in builds)  # no build outlives the bisect


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_what_a_killed_bisect_left_is_undone_by_the_next(fairmark_cli, tmp_path: Path, own_tmp: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, 1.15)
    (tmp_path / "marks").mkdir()
    before = repo_state(repo)
    proc, log = start_bisect(tmp_path, repo, own_tmp)
    try:
        assert wait_until(lambda: marker(tmp_path, "trial-c-") or proc.poll() is not None, timeout_s=800)
        assert proc.poll() is None, (tmp_path / "bisect.log").read_text()[-3000:]
        proc.kill()
        proc.wait()
    finally:
        log.close()
    # what kill -9 leaves: the bisect in progress, three worktrees, the temporary directory, the lock's PID
    left = repo_state(repo)
    assert left["bisect"] and "refs/bisect/" in left["refs"] and len(left["worktrees"].split("\n\n")) == 4
    assert list(own_tmp.glob("fairmark-bisect-*"))
    assert json.loads(lock_holder())["pid"] == proc.pid
    # the next bisect (its build fails at once: the test is of what it does first) undoes it all, not refused
    args = ["--good", "main~11", "--bad", "main", "--plan", str(tmp_path / "plan.toml"), "--repo", str(repo)]
    code, _, err = fairmark_cli("bisect", *args, "--build", "exit 7", "--accept-risk")
    assert code == 2 and "--build failed at the good commit" in err, err
    flat = " ".join(err.split())
    assert f"a fairmark bisect (PID {proc.pid}) that was killed left" in flat
    assert "ended its git bisect, removed 3 worktree(s), removed 1 temporary directory" in flat
    assert f"took over a stale host lock of PID {proc.pid}" in flat
    assert repo_state(repo) == before
    assert not list(own_tmp.glob("fairmark-bisect-*"))
    assert lock_holder() == ""


def test_a_temporary_directory_is_removed_only_when_no_bisect_holds_it(own_tmp: Path) -> None:
    """What tells a running bisect's directory from a dead one's is its flock, which the kernel releases when the
    process ends, not the PID in its name (a bisect in another PID namespace has a PID that means nothing
    here): a held directory stays whatever its name says, an unheld one goes, as does one that never got its
    lock file once the PID in its name is gone."""
    import fcntl

    from fairmark.bisect.git import ALIVE_FILE, sweep_temporary

    dead = 2**22 + 7  # above pid_max's default: no process has it
    held, free, bare = (own_tmp / f"fairmark-bisect-{dead}-{k}" for k in ("held", "free", "bare"))
    for d in (held, free, bare):
        d.mkdir()
    (free / ALIVE_FILE).touch()
    fd = os.open(held / ALIVE_FILE, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert sweep_temporary() == 2
        assert held.exists() and not free.exists() and not bare.exists()
    finally:
        os.close(fd)
    assert sweep_temporary() == 1 and not held.exists()
