"""docs/tour.md is the README's tour as a new user sees it (scripts/tour.py runs it and writes it): regenerated in
the same change that changes what it shows (issue 34 item 16 — it was 48 commits old). A cheap check, not the tour
itself (minutes): every README tour line has its recipe in scripts/tour.py, and neither the tour's commands nor what
the views it runs print changed since the commit docs/tour.md was generated at.

What the views print is tests/golden/ (every terminal view at 80 and 120 columns on fixed data; tests/test_screens.py
fails until a change of a view's output updates it), not the sources that print it: a refactor whose output is
byte-identical leaves the tour as it was, and the sources change all day (57 commits touched cli/, report/ and the
console in six hours of one session, 3 touched the golden files).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from helpers import REPO

# What the tour's output is made of: its commands (the README's block, checked apart; the script's recipes) and
# what the views print (their golden files). A change to one: `python3 scripts/tour.py`, committed with it.
DEPENDS = ("scripts/tour.py", "tests/golden")


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


def test_docs_tour_was_generated_after_the_last_change_of_what_it_shows() -> None:
    m = re.search(r"^- commit: `([0-9a-f]+)`", (REPO / "docs" / "tour.md").read_text(), re.M)
    assert m, "docs/tour.md names no commit"
    if _git("cat-file", "-e", f"{m[1]}^{{commit}}").returncode:
        pytest.skip(f"commit {m[1]} is not in this clone (a shallow one)")
    then = _git("show", f"{m[1]}:README.md").stdout
    changed = _git("diff", "--name-only", m[1], "HEAD", "--", *DEPENDS).stdout.split()
    readme_then = re.search(r"^## A short tour\n+```sh\n(.*?)^```", then, re.S | re.M)
    readme_now = re.search(
        r"^## A short tour\n+```sh\n(.*?)^```", (REPO / "README.md").read_text(), re.S | re.M
    )
    assert readme_now and readme_then and readme_then[1] == readme_now[1], (
        "the README's tour changed since docs/tour.md was made: run `python3 scripts/tour.py`"
    )
    assert not changed, (
        f"changed since docs/tour.md was made at {m[1]}: {', '.join(changed)} — run `python3 scripts/tour.py` "
        "(or --here) and commit docs/tour.md with the change"
    )
