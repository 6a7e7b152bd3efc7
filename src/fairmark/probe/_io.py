"""Reading a (possibly foreign) root tree and running commands, both failure-tolerant.

Every probe reads through `Root` so the same parser works on the live system (root "/") and on a saved tree
(`--sysroot DIR`). A file that is missing or unreadable yields None: the snapshot records "unknown", never a
guess. Commands run only for the live root, each with a short timeout, because a hung `gcc --version` must not
hang the benchmark.
"""

from __future__ import annotations

import gzip
import os
import subprocess
from dataclasses import dataclass
from typing import Any

COMMAND_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Root:
    path: str = "/"

    @property
    def live(self) -> bool:
        return os.path.realpath(self.path) == "/"

    def join(self, rel: str) -> str:
        return os.path.join(self.path, rel.lstrip("/"))

    def exists(self, rel: str) -> bool:
        return os.path.lexists(self.join(rel))

    def read(self, rel: str, *, limit: int = 4 << 20) -> str | None:
        path = self.join(rel)
        try:
            if path.endswith(".gz"):
                with gzip.open(path, "rt", errors="replace") as fh:
                    return fh.read(limit)
            with open(path, errors="replace") as fh:
                return fh.read(limit)
        except (OSError, EOFError):
            return None

    def line(self, rel: str) -> str | None:
        text = self.read(rel, limit=65536)
        return text.strip() if text is not None else None

    def int(self, rel: str) -> int | None:
        text = self.line(rel)
        try:
            return int(text) if text is not None else None
        except ValueError:
            return None

    def listdir(self, rel: str) -> list[str]:
        try:
            return sorted(os.listdir(self.join(rel)))
        except OSError:
            return []

    def readlink(self, rel: str) -> str | None:
        try:
            return os.readlink(self.join(rel))
        except OSError:
            return None


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int | None  # None: not started or timed out
    stdout: str
    stderr: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def first_line(self) -> str | None:
        for text in (self.stdout, self.stderr):
            for line in text.splitlines():
                if line.strip():
                    return line.strip()
        return None


def run_command(argv: list[str], *, timeout_s: float = COMMAND_TIMEOUT_S) -> CommandResult:
    env = {"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # stable, untranslated output
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return CommandResult(tuple(argv), None, "", "", error=f"timed out after {timeout_s:g} s")
    except OSError as exc:
        return CommandResult(tuple(argv), None, "", "", error=str(exc))
    return CommandResult(tuple(argv), proc.returncode, proc.stdout[:8192], proc.stderr[:8192])


def mount_for(mounts: list[dict[str, Any]], path: str) -> dict[str, Any] | None:
    """The mount that contains `path`: the longest mount point that is a prefix (last one wins on ties)."""
    best = None
    for m in mounts:
        mp = m["mount_point"].rstrip("/") or "/"
        if (path == mp or path.startswith(mp.rstrip("/") + "/") or mp == "/") and (
            best is None or len(mp) >= len(best["mount_point"].rstrip("/") or "/")
        ):
            best = m
    return best


def unknown_fs(workdir: str) -> dict[str, Any]:
    """The file-system record of a working directory whose mount could not be found."""
    return {
        "workdir": workdir,
        "mount_point": None,
        "fstype": None,
        "device": None,
        "options": [],
        "disk": None,
    }
