"""fairmark compare against Go's benchstat on benchstat's own test data (issue 38 item 2): one row per benchmark
and unit, each tool's call, fairmark's exact Mann-Whitney U, and whether they agree — as a Markdown table.

Run: .venv/bin/python bench/benchstat_agreement.py OLD NEW   (benchstat on PATH or in ~/go/bin; `-ignore note`,
since fairmark tells benchmarks apart by name and package only)
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys


def benchstat(old: str, new: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(benchmark, unit) → (benchstat's change or ~, its p) from its CSV."""
    tool = shutil.which("benchstat") or os.path.expanduser("~/go/bin/benchstat")
    out = subprocess.run(
        [tool, "-ignore", "note", "-format", "csv", old, new], capture_output=True, text=True, check=True
    ).stdout
    rows: dict[tuple[str, str], tuple[str, str]] = {}
    unit = ""
    for row in csv.reader(io.StringIO(out)):
        if len(row) == 7 and row[0] == "" and row[1]:
            unit = {"sec/op": "ns/op", "B/s": "MB/s"}.get(row[1], row[1])
        elif len(row) == 7 and row[0] not in ("", "geomean"):
            rows[(row[0], unit)] = (row[5], row[6].split()[0].removeprefix("p="))
    return rows


def fairmark(old: str, new: str) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "fairmark", "compare", "--json", old, new],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)["rows"]


def main() -> None:
    old, new = sys.argv[1:3]
    theirs = benchstat(old, new)
    print("| benchmark | unit | benchstat | fairmark (design, p, q) | U test p | agree |")
    print("|---|---|---|---|---|---|")
    for r in fairmark(old, new):
        (c,) = r["comparisons"]
        change, p = theirs.get((r["benchmark"], r["unit"]), ("absent", ""))
        if c is None:
            print(f"| {r['benchmark']} | {r['unit']} | {change} (p={p}) | cannot be judged | | |")
            continue
        them = change not in ("~", "absent")
        design = "Yuen" if c["design"].startswith("Yuen") else c["design"]
        mine = f"{c['interval']} ({design}, p={c['p_value']:.2g}, q={c['q_value']:.2g})"
        mine = mine if c["significant"] else "~ " + mine
        u = c["mann_whitney"]["p_value"]
        agree = "yes" if them == c["significant"] else "**no**"
        print(f"| {r['benchmark']} | {r['unit']} | {change} (p={p}) | {mine} | {u:.3g} | {agree} |")


if __name__ == "__main__":
    main()
