"""The git side of `fairmark bisect`: `git bisect` in --no-checkout mode (the user's working tree and HEAD are
never touched: the candidate is named by BISECT_HEAD), each commit built in its own `git worktree` under a
temporary directory, and everything undone at the end — no bisect state, no worktrees, the same HEAD."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fairmark.errors import UsageError

_FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.MULTILINE)
_ONLY_SKIPPED = "only 'skip'ped commits left"


class GitError(UsageError):
    """A git command failed: not a repository, an unknown revision, a bisect already in progress."""


@dataclass(frozen=True)
class BisectAnswer:
    """What git said after an answer: the next candidate, or the end (first bad commit, or a skipped range)."""

    first_bad: str | None = None
    candidates: tuple[str, ...] = ()  # when only skipped commits are left: the first bad one is among these
    done: bool = False


class Repo:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        top = self._git("rev-parse", "--show-toplevel", cwd=self.path).strip()
        self.top = Path(top)
        self._worktrees: list[Path] = []
        self._tmp: Path | None = None
        self._bisecting = False

    # -- plumbing ---------------------------------------------------------------------------------------------
    def _git(self, *args: str, cwd: Path | None = None, check: bool = True) -> str:
        proc = subprocess.run(
            ["git", *args], cwd=cwd or self.top, capture_output=True, text=True, check=False
        )
        if check and proc.returncode != 0:
            raise GitError(
                f"git {' '.join(args)} in {cwd or self.top}: {(proc.stderr or proc.stdout).strip()}"
            )
        return proc.stdout + proc.stderr

    def rev(self, ref: str) -> str:
        """The full commit id of `ref` (a branch, tag, sha, HEAD~3 …)."""
        out = self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False).strip()
        if not re.fullmatch(r"[0-9a-f]{40}", out):
            raise GitError(f"{ref!r} is not a commit of {self.top}")
        return out

    def subject(self, sha: str) -> str:
        return self._git("log", "-1", "--format=%s", sha).strip()

    def head_state(self) -> tuple[str, str]:
        """(symbolic ref or '', commit): what HEAD is, to check it is the same at the end."""
        ref = self._git("symbolic-ref", "-q", "HEAD", check=False).strip()
        return ref, self._git("rev-parse", "HEAD").strip()

    def bisect_in_progress(self) -> bool:
        start = self._git("rev-parse", "--git-path", "BISECT_START").strip()
        return (self.top / start).exists() if not Path(start).is_absolute() else Path(start).exists()

    def is_ancestor(self, a: str, b: str) -> bool:
        return (
            subprocess.run(
                ["git", "merge-base", "--is-ancestor", a, b], cwd=self.top, check=False, capture_output=True
            ).returncode
            == 0
        )

    def commits_between(self, good: str, bad: str) -> list[str]:
        """Commits after `good` up to `bad`, oldest first."""
        return self._git("rev-list", "--reverse", f"{good}..{bad}").split()

    # -- worktrees ------------------------------------------------------------------------------------------
    def checkout(self, sha: str, name: str) -> Path:
        """A separate checkout of `sha` (detached) in a temporary directory, removed by close()."""
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="fairmark-bisect-"))
        path = self._tmp / name
        self._git("worktree", "add", "--detach", "--force", str(path), sha)
        self._worktrees.append(path)
        return path

    def drop_checkout(self, path: Path) -> None:
        self._git("worktree", "remove", "--force", str(path), check=False)
        shutil.rmtree(path, ignore_errors=True)
        if path in self._worktrees:
            self._worktrees.remove(path)

    # -- git bisect -----------------------------------------------------------------------------------------
    def bisect_start(self, bad: str, good: str) -> BisectAnswer:
        self._bisecting = True
        return self._parse(self._git("bisect", "start", "--no-checkout", bad, good))

    def bisect_head(self) -> str:
        return self.rev("BISECT_HEAD")

    def answer(self, word: str, sha: str) -> BisectAnswer:
        """`git bisect good|bad|skip SHA` and what git says next."""
        return self._parse(self._git("bisect", word, sha, check=False))

    def _parse(self, out: str) -> BisectAnswer:
        m = _FIRST_BAD.search(out)
        if m:
            return BisectAnswer(first_bad=m.group(1), done=True)
        if _ONLY_SKIPPED in out:
            return BisectAnswer(
                candidates=tuple(re.findall(r"^([0-9a-f]{40})", out, re.MULTILINE)), done=True
            )
        if "Bisecting:" not in out:
            raise GitError(f"git bisect said something unexpected: {out.strip()[:500]}")
        return BisectAnswer()

    def close(self) -> list[str]:
        """Undo everything: bisect state, worktrees, the temporary directory. Returns what could not be undone."""
        problems = []
        if self._bisecting:
            out = self._git("bisect", "reset", check=False)
            self._bisecting = False
            if self.bisect_in_progress():
                problems.append(f"git bisect reset did not end the bisect: {out.strip()[:300]}")
        for path in list(self._worktrees):
            self.drop_checkout(path)
        self._git("worktree", "prune", check=False)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        return problems
