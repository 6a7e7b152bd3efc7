"""One kernel setting that fairmark changes and must put back: journal the original, write, read back.

Linux exposes every setting fairmark changes as a file (/proc/sys, /sys/kernel/mm/transparent_hugepage,
/sys/devices/system/cpu); FreeBSD's sysctls go through the `sysctl` command (see sysctl.py). Both follow the
same protocol: `check()` before any trial, `apply(journal)` journals then changes then verifies, `revert()`
restores and verifies. The undo of a journal entry is a module function so recovery needs no live object.
"""

from __future__ import annotations

import errno
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fairmark.errors import EnvironmentRefused, FairmarkError
from fairmark.run.variants.journal import Journal

Select = Literal["plain", "bracket"]


class RevertError(FairmarkError):
    """A changed setting could not be put back. Loud on purpose: the machine is not as fairmark found it."""

    exit_status = EnvironmentRefused.exit_status


def normalize(raw: str, select: Select = "plain") -> str:
    """The value a file shows, in a comparable form: whitespace-collapsed, or the [bracketed] choice of
    files like transparent_hugepage/enabled ("always [madvise] never" → "madvise")."""
    if select == "bracket":
        m = re.search(r"\[([^\]]+)\]", raw)
        if m:
            return m.group(1)
    return " ".join(raw.split())


def read_value(path: str | Path, select: Select = "plain") -> str:
    return normalize(Path(path).read_text(encoding="utf-8", errors="replace"), select)


def write_value(path: str | Path, value: str) -> None:
    # One write() of the whole value: /proc/sys and sysfs parse per write call.
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(value)


def run_command(argv: Sequence[str], *, timeout_s: float = 120) -> str:
    """Run a system command (losetup, mkfs, mount, sysctl …); its stderr becomes the error message."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, check=False)
    except FileNotFoundError:
        raise EnvironmentRefused(f"`{argv[0]}` is not installed (needed for: {' '.join(argv)})") from None
    except subprocess.TimeoutExpired:
        raise FairmarkError(f"`{' '.join(argv)}` did not finish within {timeout_s:g} s") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise FairmarkError(f"`{' '.join(argv)}` failed (exit {done.returncode}): {' | '.join(detail[-3:])}")
    return done.stdout


def _why(exc: OSError) -> str:
    reasons = {
        errno.EINVAL: "the kernel rejected the value (EINVAL)",
        errno.EPERM: "not permitted (EPERM) — not root, or locked down in this container/VM",
        errno.EACCES: "permission denied (EACCES)",
        errno.EBUSY: "busy (EBUSY)",
        errno.EROFS: "read-only (EROFS)",
    }
    return reasons.get(exc.errno or 0, exc.strerror or str(exc))


@dataclass
class FileSetting:
    label: str  # "sysctl net.ipv4.tcp_no_metrics_save", "THP", "cpu1 online"
    path: str
    want: str
    select: Select = "plain"
    allowed: tuple[str, ...] = ()  # values the file accepts, when the kernel lists them
    # guard: not changed by fairmark but by a side effect of another change (a CPU going offline shrinks
    # cgroup v1 cpusets for good), so the original is journaled and written back, never `want`
    guard: bool = False
    entry_id: str | None = None
    original: str | None = None

    def describe(self) -> str:
        try:
            now = read_value(self.path, self.select)
        except OSError:
            now = "?"
        return f"{self.label}: {now} → {self.want}" if now != self.want else f"{self.label} = {self.want}"

    def check(self) -> None:
        p = Path(self.path)
        if not p.exists():
            raise EnvironmentRefused(
                f"{self.label}: not available on this kernel ({self.path} does not exist)"
            )
        if not p.stat().st_mode & 0o222:
            raise EnvironmentRefused(f"{self.label}: read-only here ({self.path} has no write permission)")
        if self.allowed and self.want not in self.allowed:
            raise EnvironmentRefused(f"{self.label}: {self.want!r} is not one of {', '.join(self.allowed)}")

    def apply(self, journal: Journal) -> None:
        original = read_value(self.path, self.select)
        if original == normalize(self.want) and not self.guard:
            return  # already so: nothing to change, nothing to put back
        self.original = original
        self.entry_id = journal.add(
            {
                "type": "file",
                "path": self.path,
                "original": original,
                "select": self.select,
                "label": self.label,
            }
        )
        if self.guard:
            return
        try:
            write_value(self.path, self.want)
        except OSError as exc:
            self.revert(journal)
            raise EnvironmentRefused(f"{self.label}: cannot set {self.want!r}: {_why(exc)}") from None
        got = read_value(self.path, self.select)
        if got != normalize(self.want):
            self.revert(journal)
            raise EnvironmentRefused(f"{self.label}: wrote {self.want!r} but the kernel kept {got!r}")

    def revert(self, journal: Journal) -> str | None:
        """Put the original back; returns a problem description (and keeps the journal entry) on failure."""
        if self.entry_id is None:
            return None
        problem = undo_file(journal.get(self.entry_id))[1]
        if problem is None:
            journal.remove(self.entry_id)
            self.entry_id = None
        return problem


def undo_file(entry: dict[str, Any]) -> tuple[str, str | None]:
    """Restore one journaled file value. Returns (what was done, problem or None). Idempotent."""
    path, original, label = entry["path"], entry["original"], entry.get("label", entry["path"])
    select = entry.get("select", "plain")
    try:
        now = read_value(path, select)
        if now == original:
            return f"{label} is {original} (original)", None
        write_value(path, original)
        got = read_value(path, select)
    except OSError as exc:
        return (
            f"{label}: could not restore {original!r}",
            f"{label}: cannot restore {original!r}: {_why(exc)}",
        )
    if got != original:
        return (
            f"{label}: restore failed",
            f"{label}: wrote the original {original!r} back but it reads {got!r}",
        )
    return f"restored {label} = {original} (was {now})", None


def verify_files(entries: list[dict[str, Any]], read: Callable[[str, Select], str] = read_value) -> list[str]:
    """After a run: every touched file must show its original value again. Returns the mismatches."""
    problems = []
    for e in entries:
        try:
            now = read(e["path"], e.get("select", "plain"))
        except OSError as exc:
            problems.append(f"{e['label']}: cannot read {e['path']}: {exc}")
            continue
        if now != e["original"]:
            problems.append(f"{e['label']} is {now!r}, expected its original {e['original']!r}")
    return problems
