"""The git side of `fairmark bisect`: `git bisect` in --no-checkout mode (the user's working tree and HEAD are
never touched: the candidate is named by BISECT_HEAD), each commit built in its own `git worktree` under a
temporary directory, and everything undone at the end — no bisect state, no worktrees, the same HEAD.

Each change to the repository (a worktree added or removed, a bisect answer, the clean-up) is a section no
SIGTERM/SIGHUP cuts (run.guard.signals.held): the signal is acted on when git has finished writing. A bisect killed
outright (kill -9, a machine that lost power) cannot clean up, so it leaves a note in the git directory first
(OWNER_FILE: its PID, when that process started, its temporary directory); the next bisect of the repository
finds the note of a process that is gone and undoes what it left — the bisect state, the worktrees, the
temporary directory — instead of refusing. A bisect holds an flock on a file in its temporary directory
(`fairmark-bisect-PID-…`) for its whole life, released by the kernel however it ends: a directory whose lock
can be taken belongs to no running bisect (in whatever PID namespace), and the next bisect of any repository
removes it."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairmark.errors import UsageError
from fairmark.run.guard.lock import owner_alive, process_start
from fairmark.run.guard.signals import held

_FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.MULTILINE)
_ONLY_SKIPPED = "only 'skip'ped commits left"
OWNER_FILE = "fairmark-bisect.json"  # in the git directory while a fairmark bisect has the repository
ALIVE_FILE = ".alive"  # in the temporary directory, flock()ed by its bisect while it runs
TMP_PREFIX = "fairmark-bisect-"
_TMP_NAME = re.compile(re.escape(TMP_PREFIX) + r"(\d+)-")


class GitError(UsageError):
    """A git command failed: not a repository, an unknown revision, a bisect already in progress."""


@dataclass(frozen=True)
class BisectAnswer:
    """What git said after an answer: the next candidate, or the end (first bad commit, or a skipped range)."""

    first_bad: str | None = None
    candidates: tuple[str, ...] = ()  # when only skipped commits are left: the first bad one is among these
    done: bool = False
    left: str = ""  # git's count of what remains: "3 revisions left to test after this (roughly 2 steps)"


class Repo:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        top = self._git("rev-parse", "--show-toplevel", cwd=self.path).strip()
        self.top = Path(top)
        self._worktrees: list[Path] = []
        self._tmp: Path | None = None
        self._alive: int | None = None  # the flock()ed file of the temporary directory
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

    def git_path(self, name: str) -> Path:
        """A file of the repository's git directory (`git rev-parse --git-path`)."""
        path = Path(self._git("rev-parse", "--git-path", name).strip())
        return path if path.is_absolute() else self.top / path

    def bisect_in_progress(self) -> bool:
        return self.git_path("BISECT_START").exists()

    # -- ownership: what a killed bisect left, found and undone by the next ---------------------------------
    def claim(self) -> list[str]:
        """Take the repository for this bisect: undo what a bisect that is gone left (saying what), refuse while
        another fairmark bisect runs in it or the user's own `git bisect` is in progress, then write the note."""
        with held():
            done = self._recover()
            if self.bisect_in_progress():
                raise GitError(
                    f"a git bisect is already in progress in {self.top}", hint="`git bisect reset` ends it"
                )
            self._tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-"))
            self._alive = os.open(self._tmp / ALIVE_FILE, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._alive, fcntl.LOCK_EX)
            owner = {"pid": os.getpid(), "start": process_start(os.getpid()), "tmp": str(self._tmp)}
            self.git_path(OWNER_FILE).write_text(json.dumps(owner))
        return done

    def _recover(self) -> list[str]:
        note = self.git_path(OWNER_FILE)
        try:
            owner = json.loads(note.read_text())
        except FileNotFoundError:
            owner = None
        except (OSError, ValueError):
            owner = {}  # a note cut short by the kill: its process is gone
        if owner and _running(Path(owner.get("tmp") or "/nonexistent"), owner):
            raise GitError(
                f"another fairmark bisect (PID {owner['pid']}) is running in {self.top}",
                hint="wait for it to end; a bisect runs one at a time in a repository",
            )
        done = []
        if owner is not None and self.bisect_in_progress():
            self._git("bisect", "reset", check=False)
            done.append("ended its git bisect")
        removed = self._remove_orphans()
        if removed:
            done.append(f"removed {removed} worktree(s)")
        swept = sweep_temporary()
        if swept:
            done.append(f"removed {swept} temporary director{'y' if swept == 1 else 'ies'}")
        note.unlink(missing_ok=True)
        if not done:
            return []
        who = f" (PID {owner['pid']})" if owner else ""
        return [f"a fairmark bisect{who} that was killed left {self.top} changed: " + ", ".join(done)]

    def _remove_orphans(self) -> int:
        """Remove the worktrees of bisects that are gone (under a `fairmark-bisect-PID-…` directory)."""
        out = self._git("worktree", "list", "--porcelain", check=False)
        paths = [Path(line[9:]) for line in out.splitlines() if line.startswith("worktree ")]
        linked = [p for p in paths if p.resolve() != self.top.resolve()]  # never the repository's own tree
        orphans = [p for p in linked if (tmp := _tmp_dir(p)) is not None and not _running(tmp)]
        for path in orphans:
            self._git("worktree", "remove", "--force", "--force", str(path), check=False)
            shutil.rmtree(path, ignore_errors=True)
        self._git("worktree", "prune", check=False)
        return len(orphans)

    def is_ancestor(self, a: str, b: str) -> bool:
        return (
            subprocess.run(
                ["git", "merge-base", "--is-ancestor", a, b], cwd=self.top, check=False, capture_output=True
            ).returncode
            == 0
        )

    def first_parent(self, ref: str = "HEAD") -> tuple[str, ...]:
        """The commits of `ref`'s first-parent line, oldest first: a branch's history in the order it was made."""
        return tuple(self._git("rev-list", "--first-parent", "--reverse", self.rev(ref)).split())

    def commits_between(self, good: str, bad: str) -> list[str]:
        """Commits after `good` up to `bad`, oldest first."""
        return self._git("rev-list", "--reverse", f"{good}..{bad}").split()

    # -- worktrees ------------------------------------------------------------------------------------------
    def checkout(self, sha: str, name: str) -> Path:
        """A separate checkout of `sha` (detached) in the temporary directory claim() made, removed by close()."""
        assert self._tmp is not None, "claim() first"
        path = self._tmp / name
        with held():
            self._worktrees.append(path)  # before git registers it: close() removes it whatever git got to
            self._git("worktree", "add", "--detach", "--force", str(path), sha)
        return path

    def drop_checkout(self, path: Path) -> None:
        with held():
            self._git("worktree", "remove", "--force", "--force", str(path), check=False)
            shutil.rmtree(path, ignore_errors=True)
            if path in self._worktrees:
                self._worktrees.remove(path)

    # -- git bisect -----------------------------------------------------------------------------------------
    def bisect_start(self, bad: str, good: str) -> BisectAnswer:
        with held():
            self._bisecting = True
            out = self._git("bisect", "start", "--no-checkout", bad, good)
        return self._parse(out)

    def bisect_head(self) -> str:
        return self.rev("BISECT_HEAD")

    def answer(self, word: str, sha: str) -> BisectAnswer:
        """`git bisect good|bad|skip SHA` and what git says next."""
        with held():
            out = self._git("bisect", word, sha, check=False)
        return self._parse(out)

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
        left = re.search(r"Bisecting: (.*?)\s*$", out, re.MULTILINE)
        return BisectAnswer(left=left.group(1) if left else "")

    def close(self) -> list[str]:
        """Undo everything: bisect state, worktrees, the temporary directory, the note of claim(). Returns what
        could not be undone. No signal cuts it (one arriving meanwhile is raised at its end)."""
        with held():
            return self._close()

    def _close(self) -> list[str]:
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
            self.git_path(OWNER_FILE).unlink(missing_ok=True)
        if self._alive is not None:
            os.close(self._alive)  # the flock goes with it
            self._alive = None
        return problems


def _tmp_dir(path: Path) -> Path | None:
    """The `fairmark-bisect-PID-…` directory `path` is in (None: not in one)."""
    for parent in (path, *path.parents):
        if _TMP_NAME.match(parent.name):
            return parent
    return None


def _running(tmp: Path, owner: dict[str, Any] | None = None) -> bool:
    """Whether the bisect of temporary directory `tmp` still runs: it holds the flock of tmp/ALIVE_FILE for its
    whole life. Without that file (gone, or the bisect was killed before making it) its PID (and start time, from
    the git directory's note) tells."""
    try:
        fd = os.open(tmp / ALIVE_FILE, os.O_RDONLY)
    except FileNotFoundError:
        pid = owner.get("pid") if owner else None
        m = _TMP_NAME.match(tmp.name)
        pid = pid or (int(m.group(1)) if m else 0)
        return bool(pid) and owner_alive(int(pid), owner.get("start") if owner else None)
    except OSError:
        return True  # cannot tell: leave it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # a lock taken here goes with it
    return False


def sweep_temporary() -> int:
    """Remove the temporary directories of fairmark bisects that are gone (any repository's); how many."""
    n = 0
    for path in Path(tempfile.gettempdir()).glob(f"{TMP_PREFIX}*-*"):
        if _TMP_NAME.match(path.name) and path.is_dir() and not _running(path):
            shutil.rmtree(path, ignore_errors=True)
            n += not path.exists()
    return n
