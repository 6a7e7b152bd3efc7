"""Check that every number docs/reproductions.md quotes for a run appears in fairmark's own output for that run.

    .venv/bin/python bench/check_reproductions.py STORE [DOC]

For every table row and every quoted fairmark sentence ("fairmark: "…"") of the doc, the runs it names (the
8-hex-digit ids in backticks of its section, or of the row itself in the summary) are shown with `fairmark show
RUN` (wide, so nothing wraps) and `fairmark show RUN --json`; each number of the row or sentence must be one of
the numbers in that output (whole numbers: 7.1 does not match 27.15). The summary table's first two columns (row number, seed) and its last ("seed said") are the
doc's own words and are skipped. Prints each miss and a count; exit 1 when anything is missing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN_ID = re.compile(r"`([0-9a-f]{8})`")
NUMBER = re.compile(r"(?<![\w.])[-+−]?\d+(?:\.\d+)?%?")
QUOTE = re.compile(r'"([^"]+)"')


def shown(run: str, store: str, cache: dict[str, str]) -> str:
    if run not in cache:
        env = os.environ | {"COLUMNS": "300", "NO_COLOR": "1"}
        exe = str(REPO / ".venv/bin/fairmark")
        text = subprocess.run(
            [exe, "show", run, "--store", store], capture_output=True, text=True, env=env
        ).stdout
        js = subprocess.run(
            [exe, "show", run, "--store", store, "--json"], capture_output=True, text=True
        ).stdout
        cache[run] = normalise(text + "\n" + js)
    return cache[run]


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("−", "-"))


def numbers(text: str) -> list[str]:
    return [n.replace("−", "-").lstrip("+") for n in NUMBER.findall(text)]


def checks(doc: str) -> list[tuple[list[str], str, str]]:
    """(runs, where, text) for every table row and every quoted sentence with a number, with the runs it belongs
    to."""
    out = []
    for section in re.split(r"\n(?=## )", doc):
        runs = RUN_ID.findall(section)
        in_summary = section.startswith("## Summary")
        for line in section.splitlines():
            if line.startswith("|") and not set(line) <= set("|-: "):
                cols = [c.strip() for c in line.strip("|").split("|")]
                if in_summary:
                    row_runs = RUN_ID.findall(line)
                    if row_runs:
                        out.append((row_runs, line[:60], " ".join(cols[2:-1]).replace(row_runs[0], "")))
                elif runs and not any(c in ("cell", "n") for c in cols[:2]):
                    out.append((runs, line[:60], " ".join(cols[1:])))
        prose = "\n".join(line for line in section.splitlines() if not line.startswith("|"))
        for q in QUOTE.findall(prose):  # every quoted sentence of a section that names runs
            if runs and NUMBER.search(q):
                out.append((runs, q[:60], q))
    return out


def main() -> int:
    store = sys.argv[1]
    doc = Path(sys.argv[2] if len(sys.argv) > 2 else REPO / "docs/reproductions.md").read_text()
    cache: dict[str, str] = {}
    missing, checked = 0, 0
    for runs, where, text in checks(doc):
        output = set(numbers(" ".join(shown(r, store, cache) for r in runs)))  # whole numbers, not substrings
        for n in numbers(RUN_ID.sub("", text)):
            checked += 1
            if n not in output:
                missing += 1
                print(f"missing {n!r} (runs {', '.join(runs)}): {where}")
    print(f"{checked} numbers checked against fairmark's output for {len(cache)} runs; {missing} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
