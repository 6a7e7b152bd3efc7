"""`fairmark ab` (issue 31 item 1) on a throwaway git repository the test creates: a small C program whose head is
~10% slower. The commands run are docs/ci.md's GitHub Actions and GitLab CI lines, read from that file: each
exits 1 naming both commits, its JUnit validates against the JUnit schema the suite uses, its Markdown names the
regression; with a head that changes nothing they exit 0; SIGTERM during a build leaves the repository exactly
as it was. The program times its own sleep under SCHED_FIFO (helpers.NAP_C): the planted slowdown is in what is
measured at any load, and the test is of `ab`, not of the machine."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import NAP_C, REPO, commit_files, git, new_repo, prog_plan, repo_state, wait_until
from test_continual_check import validate_junit

DELAY_US = 100_000
PLAN = prog_plan("ab test", "warmup = 1\nmin_trials = 6\nmax_trials = 14\ntarget_ci_pct = 2.0")
MAKEFILE = "prog: prog.c delay.h\n\tcc -O2 -o prog prog.c\n"


def ci_lines() -> list[str]:
    """The shell lines of docs/ci.md's two pull-request jobs that run fairmark ab and show its summary."""
    text = (REPO / "docs" / "ci.md").read_text()
    jobs = text.split("## The lab at scale")[0]
    lines = [
        m.group(1) for m in re.finditer(r"^\s+(?:run:|-) (fairmark ab .*|cat fairmark\.md .*)$", jobs, re.M)
    ]
    assert len(lines) == 3, lines  # GitHub: ab, cat; GitLab: ab
    return lines


PROG_C = '#include "delay.h"\n' + NAP_C.replace("argc > 1 ? atof(argv[1]) : 0.1", "DELAY_US / 1e6")


def commit(
    repo: Path, delay_us: int, message: str, note: str = "", also: dict[str, str] | None = None
) -> str:
    files = {"delay.h": f"#define DELAY_US {delay_us}L\n", "prog.c": PROG_C, "NOTES": note}
    return commit_files(repo, files | (also or {}), message)


def make_repo(path: Path) -> tuple[str, str, str]:
    """base; a head ~10% slower; a head that changes only a note (each a child of base)."""
    new_repo(path)
    fixed = {"bench/ab.toml": PLAN, "Makefile": MAKEFILE, ".gitignore": "prog\nfairmark.*\n"}
    base = commit(path, DELAY_US, "base", also=fixed)
    slow = commit(path, int(DELAY_US * 1.10), "slower by a tenth")
    git(path, "checkout", "-q", "-b", "docs", base)
    same = commit(path, DELAY_US, "a note only", note="nothing measured changes\n")
    git(path, "checkout", "-q", "main")
    return base, slow, same


def run_line(line: str, repo: Path, tmp: Path, base: str, head: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "TMPDIR": str(tmp),
        "NO_COLOR": "1",
        "BASE_SHA": base,
        "HEAD_SHA": head,
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
        "CI_COMMIT_SHA": head,
        "GITHUB_STEP_SUMMARY": str(repo.parent / "summary.md"),
    }
    return subprocess.run(["sh", "-c", line], cwd=repo, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_ab_fails_a_slower_head_and_passes_an_unchanged_one(tmp_path: Path, own_tmp: Path) -> None:
    repo = tmp_path / "repo"
    base, slow, same = make_repo(repo)
    before = repo_state(repo)
    github_ab, summary, gitlab_ab = ci_lines()
    for line in (github_ab, gitlab_ab):
        done = run_line(line, repo, own_tmp, base, slow)
        said = done.stdout + done.stderr
        assert done.returncode == 1, said[-4000:]
        assert base in said and slow in said, said[-3000:]
        validate_junit(repo / "fairmark.xml")
        junit = (repo / "fairmark.xml").read_text()
        assert '<failure message="regression beyond 3%' in junit and base[:12] in junit and slow[:12] in junit
        md = (repo / "fairmark.md").read_text()
        assert "**FAILED**" in md and "❌ regression" in md and "prog/head elapsed_s" in md, md
        assert base[:12] in md and slow[:12] in md
        assert repo_state(repo) | {"status": ""} == before | {"status": ""}  # only the two reports are new
        assert list(own_tmp.iterdir()) == []
    assert run_line(summary, repo, own_tmp, base, slow).returncode == 0
    assert "**FAILED**" in (tmp_path / "summary.md").read_text()
    done = run_line(github_ab, repo, own_tmp, base, same)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "**passed**" in (repo / "fairmark.md").read_text()
    validate_junit(repo / "fairmark.xml")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_metrics_own_fail_on_pct_overrides_the_threshold(
    fairmark_cli, tmp_path: Path, own_tmp: Path
) -> None:
    repo = tmp_path / "repo"
    base, slow, _ = make_repo(repo)
    plan = tmp_path / "own.toml"
    plan.write_text(PLAN.replace('better = "lower" }', 'better = "lower", fail_on_pct = 40 }'))
    args = ["ab", "--base", base, "--head", slow, "--plan", str(plan), "--build", "make", "--repo", str(repo)]
    code, out, err = fairmark_cli(*args, "--accept-risk", "--fail-on", "1%", "--json")
    assert code == 0, err[-3000:]
    import json

    result = json.loads(out)
    (case,) = result["cases"]
    assert case["threshold_pct"] == 40 and case["status"] != "regression"
    assert result["base"] == base and result["head"] == slow


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sigterm_during_a_build_leaves_the_repository_as_it_was(tmp_path: Path, own_tmp: Path) -> None:
    repo = tmp_path / "repo"
    base, slow, _ = make_repo(repo)
    before = repo_state(repo)
    marks = tmp_path / "marks"
    marks.mkdir()
    build = 'echo $$ >> "$MARKS/build.pids"; touch "$MARKS/building"; sleep 120; make'
    argv = [sys.executable, "-m", "fairmark", "ab", "--base", base, "--head", slow, "--plan", "bench/ab.toml"]
    env = os.environ | {"TMPDIR": str(own_tmp), "MARKS": str(marks), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [*argv, "--build", build, "--accept-risk"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert wait_until(lambda: (marks / "building").exists() or proc.poll() is not None, timeout_s=300)
        assert proc.poll() is None
        assert len(repo_state(repo)["worktrees"].split("\n\n")) == 2  # the base's checkout, mid-build
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, out[-3000:]
    assert "Traceback" not in out
    assert repo_state(repo) == before
    assert not (repo / ".git" / "fairmark-bisect.json").exists()
    assert list(own_tmp.iterdir()) == []
    from fairmark.run.guard.lock import pid_alive

    assert not any(pid_alive(int(p)) for p in (marks / "build.pids").read_text().split())
