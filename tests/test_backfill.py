"""Backfill and commit order (issue 31 item 3): `fairmark run PLAN --commits A..B --build CMD` measures each commit
of the range's first-parent line in a worktree of its own, tagged commit=SHA; run again, it measures nothing
(every commit already stored for this plan on this host); `--every N` picks every N-th from B; `history --order
commit` and `publish --order commit` put the points in first-parent order, whatever order they were measured in.
The repository is left as found. The program is a C program the test builds (helpers.NAP_C, a timed sleep)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import NAP_C, commit_series, prog_plan, repo_state

PLAN = prog_plan("backfill test", "warmup = 0\nmin_trials = 3\nmax_trials = 3")
MAKEFILE = "prog: prog.c\n\tcc -O2 -o prog prog.c\n"


def make_repo(path: Path, n: int) -> list[str]:
    """n commits of a program sleeping 10 ms + 1 ms per commit; shas oldest first."""
    versions = [
        {"prog.c": NAP_C.replace("argc > 1 ? atof(argv[1]) : 0.1", f"{0.010 + 0.001 * i}")} for i in range(n)
    ]
    versions[0] |= {"Makefile": MAKEFILE, ".gitignore": "prog\n"}
    return commit_series(path, versions, first=0)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_range_run_twice_measures_nothing_the_second_time(
    fairmark_cli, tmp_path: Path, own_tmp: Path
) -> None:
    repo = tmp_path / "repo"
    shas = make_repo(repo, 5)
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    before = repo_state(repo)
    args = ["run", str(plan), "--commits", "main~4..main", "--build", "make", "--repo", str(repo)]
    args += ["--accept-risk", "--no-monitors", "--oldest-first", "--json"]
    code, out, err = fairmark_cli(*args)
    assert code == 0, err[-3000:]
    first = json.loads(out)
    assert first["commits"] == shas[1:]  # main~4 itself is not in main~4..main; oldest first
    assert list(first["measured"]) == shas[1:] and first["already_stored"] == []
    assert repo_state(repo) == before and list(own_tmp.iterdir()) == []

    code, out, err = fairmark_cli(*args)
    assert code == 0, err[-3000:]
    again = json.loads(out)
    assert again["measured"] == {} and again["already_stored"] == shas[1:]  # nothing measured

    # every 2nd from the newest, newest first (all stored already: nothing measured)
    code, out, err = fairmark_cli(
        "run",
        str(plan),
        "--commits",
        f"{shas[0]}..main",
        "--every",
        "2",
        "--build",
        "make",
        "--repo",
        str(repo),
        "--accept-risk",
        "--no-monitors",
        "--json",
    )
    assert code == 0, err[-3000:]
    every = json.loads(out)
    assert every["commits"] == [shas[4], shas[2]] and every["measured"] == {}

    # commit order: first-parent order, whatever order the runs were made in
    code, out, err = fairmark_cli("history", "prog", "--order", "commit", "--repo", str(repo), "--json")
    assert code == 0, err
    (series,) = json.loads(out)["series"]
    assert [p["tags"]["commit"] for p in series["points"]] == shas[1:]
    site = tmp_path / "site"
    code, out, err = fairmark_cli("publish", "--out", str(site), "--order", "commit", "--repo", str(repo))
    assert code == 0, err


def test_commit_order_puts_points_in_first_parent_order() -> None:
    import datetime as dt

    from fairmark.store.history import Point, Series, order_by_commits

    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    shas = [str(i) * 40 for i in range(4)]
    made = [(shas[3], 0), (shas[1], 1), ("elsewhere", 2), (shas[0], 3), (shas[2][:7], 4), (shas[1], 5)]
    s = Series("h", "c", "m", "s", "lower")
    s.points = [Point(f"r{h}", t0 + dt.timedelta(hours=h), 3, 1.0, 0.1, {"commit": c}) for c, h in made]
    order_by_commits(s, shas)
    assert [p.run_id for p in s.points] == ["r3", "r1", "r5", "r4", "r0", "r2"]
