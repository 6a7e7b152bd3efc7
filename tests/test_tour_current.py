"""docs/tour.md is the README's tour as a new user sees it (scripts/tour.py runs it and writes it): regenerated in
the same change that changes what it shows (issue 34 item 16 — it was 48 commits old). A cheap check, not the tour
itself (minutes): every README tour line has its recipe in scripts/tour.py. (The check of docs/tour.md's commit
against DEPENDS — `git show 780f8f7:tests/test_tour_current.py` — waits for a tour that passes again.)"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from helpers import REPO

# What the tour's output is made of: its commands (the README's block, the script's recipes) and what prints
# them (the CLI, the terminal report, the console, the digits). A change to one: `python3 scripts/tour.py`.
DEPENDS = (
    "scripts/tour.py",
    "src/fairmark/cli",
    "src/fairmark/report/terminal.py",
    "src/fairmark/report/sections",  # each section's terminal part
    "src/fairmark/console.py",
    "src/fairmark/stats/digits.py",
)


def _tour_module():  # scripts/ is not a package
    spec = importlib.util.spec_from_file_location("fairmark_tour_script", REPO / "scripts" / "tour.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fairmark_tour_script", module)  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)


def test_every_readme_tour_line_has_its_recipe() -> None:
    tour = _tour_module()
    tour.check_recipes(tour.tour_lines(REPO / "README.md"))  # SystemExit naming the line otherwise
