"""`fairmark run PLAN --commits A..B --build CMD`: a history filled in, one run per commit of a range (asv's
`run A..B`).

The commits are those of `git rev-list --first-parent A..B` (the range's first-parent line: what a branch's
history is), every `every`-th one counted from B (B always among them), newest or oldest first. A commit that
already has a finished run of the same plan (its text's sha256) on this machine (its host name), tagged
commit=SHA, is skipped: a backfill run again, or after an interrupted one, measures only what is missing. Each
other commit is checked out in a worktree of its own and built there with bisect's machinery (bisect.git.Repo:
the repository exactly as before also on SIGTERM, a killed predecessor's leftovers undone), then the plan runs
once with `$FAIRMARK_CHECKOUT` the worktree (through assemble.execute_run, as every run), tagged commit=SHA. A
commit that does not build is skipped and said; the worktree is removed after each commit.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairmark.assemble import execute_run
from fairmark.bisect.git import Repo
from fairmark.bisect.search import Bisect, BisectOptions, _quoted
from fairmark.errors import PlanError, UsageError
from fairmark.plan.load import load_plan
from fairmark.run.guard.signals import unwinding


@dataclass(frozen=True)
class BackfillResult:
    commits: tuple[str, ...]  # the commits chosen, in the order measured
    measured: dict[str, str] = field(default_factory=dict)  # commit → run id
    stored: tuple[str, ...] = ()  # skipped: already stored for this plan and host
    failed: dict[str, str] = field(default_factory=dict)  # commit → why its build failed
    cleanup_problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "commits": list(self.commits),
            "measured": self.measured,
            "already_stored": list(self.stored),
            "build_failed": self.failed,
            "cleanup_problems": list(self.cleanup_problems),
        }


def first_parent_range(repo: Repo, spec: str) -> list[str]:
    """The commits of `A..B` on B's first-parent line, newest first (`B` alone: just B)."""
    if ".." not in spec:
        return [repo.rev(spec)]
    a, _, b = spec.partition("..")
    start, end = repo.rev(a or "HEAD"), repo.rev(b or "HEAD")
    return repo._git("rev-list", "--first-parent", f"{start}..{end}").split()


def choose(commits: list[str], every: int, oldest_first: bool) -> list[str]:
    """Every `every`-th commit of a newest-first list, the newest always among them, in the order asked."""
    chosen = commits[::every]
    return chosen[::-1] if oldest_first else chosen


class Backfill(Bisect):
    """bisect's checkouts, builds and clean-up; one run of the plan per commit not yet stored."""

    def __init__(
        self, opts: BisectOptions, store: Any, *, spec: str, every: int = 1, oldest_first=False, **kw
    ):
        self.opts, self.store = opts, store
        self.progress, self.note, self.warn = (
            kw["progress"],
            kw.get("note", _nothing),
            kw.get("warn", _nothing),
        )
        self.repo = Repo(opts.repo)
        self.spec, self.every, self.oldest_first = spec, every, oldest_first
        self._warned: set[str] = set()
        self.plan_text = _read(opts.plan_path)

    def run(self) -> BackfillResult:  # type: ignore[override]
        with unwinding():
            return self._backfill()

    def _backfill(self) -> BackfillResult:
        repo = self.repo
        commits = choose(first_parent_range(repo, self.spec), self.every, self.oldest_first)
        if not commits:
            raise UsageError(f"--commits {self.spec}: no commit in that range")
        stored = self._stored(commits)
        before = repo.head_state()
        for line in repo.claim():
            self.warn(line)
        measured: dict[str, str] = {}
        failed: dict[str, str] = {}
        try:
            for sha in (c for c in commits if c not in stored):
                self._one(sha, measured, failed)
        finally:
            problems = repo.close()
            if repo.head_state() != before:
                problems.append(f"HEAD was {before}, is now {repo.head_state()}")
        kept = tuple(c for c in commits if c in stored)
        return BackfillResult(tuple(commits), measured, kept, failed, tuple(problems))

    def _stored(self, commits: list[str]) -> set[str]:
        sha = hashlib.sha256(self.plan_text.encode()).hexdigest()
        found = self.store.commits_measured(sha, os.uname().nodename, commits)
        for c in commits:
            if c in found:
                self.note(
                    f"{c[:12]} {self.repo.subject(c)}: already stored for this plan on this host, skipped"
                )
        return set(found)

    def _one(self, sha: str, measured: dict[str, str], failed: dict[str, str]) -> None:
        path = self.repo.checkout(sha, f"c-{sha[:12]}")
        try:
            why, tail = self._build(path)
            if why:
                failed[sha] = why
                self.warn(
                    f"{sha[:12]} {self.repo.subject(sha)}: build failed ({why}), skipped" + _quoted(tail)
                )
                return
            measured[sha] = self._measure_at(sha, path)
            self.note(f"{sha[:12]} {self.repo.subject(sha)}: run {measured[sha][:8]}")
        finally:
            self.repo.drop_checkout(path)

    def _measure_at(self, sha: str, path: Path) -> str:
        old = os.environ.get("FAIRMARK_CHECKOUT")
        os.environ["FAIRMARK_CHECKOUT"] = str(
            path
        )  # as `run --checkout`: the plan's commands are checked there
        try:
            loaded = load_plan(self.opts.plan_path)
            request = self.opts.request(loaded, {"commit": sha})
            result = execute_run(request, self.store, progress=self.progress(), warn=self._warn_once)
        finally:
            if old is None:
                os.environ.pop("FAIRMARK_CHECKOUT", None)
            else:
                os.environ["FAIRMARK_CHECKOUT"] = old
        self._warn_environment(result.run_id)
        return result.run_id


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PlanError(f"cannot read the plan: {exc.strerror}", path=path) from None


def _nothing(_: str) -> None:
    return None
