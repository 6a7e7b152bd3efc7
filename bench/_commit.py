"""Which commit a bench script's figures are of: the line each prints with them names it.

A bench is often run from a `git archive` copy of a branch (HELPERS: not from the worktree being rebased), which
has no .git to ask. So, in order: the commit given (a script's --commit, or FAIRMARK_BENCH_COMMIT), the one
`git archive` wrote into this file (.gitattributes marks it export-subst), git's HEAD when this file is in a
checkout of its own (never that of a repository the copy happens to sit in), else a word that says so.

Imported by the bench scripts; `make bench` runs the scripts (bench/[!_]*.py), not this file."""

from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

ENV = "FAIRMARK_BENCH_COMMIT"
ROOT = Path(__file__).resolve().parent.parent
ARCHIVED = "$Format:%h$"  # `git archive` puts the commit's short hash here; in a checkout it stays as written
UNKNOWN = f"unknown (not a git checkout: give --commit or {ENV})"


def add_option(parser: argparse.ArgumentParser) -> None:
    """--commit SHA on a script's command line (default: $FAIRMARK_BENCH_COMMIT)."""
    parser.add_argument(
        "--commit",
        default=os.environ.get(ENV),
        help=f"the commit the figures are of (default: ${ENV}, else git)",
    )


def commit(given: str | None = None) -> str:
    """The short commit of this bench tree (the module's docstring says from where)."""
    if given or (given := os.environ.get(ENV)):
        return given
    if not ARCHIVED.startswith("$"):
        return ARCHIVED
    return tree_commit(ROOT, top=True) or UNKNOWN


def tree_commit(tree: Path | str, top: bool = False) -> str | None:
    """git's short HEAD of the checkout `tree` is in (`top`: only if tree is that checkout's top); None if none."""
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--show-toplevel", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2 or (top and Path(lines[0]).resolve() != Path(tree).resolve()):
        return None
    return lines[1]
