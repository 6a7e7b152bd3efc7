"""The decision benches' one table shape: a row per figure, a column per rule (a table per rule would be wide),
then the line that says which commit the figures are of and how busy the machine was while they were made.

Imported by bench/decision_order.py and bench/decision_rho.py; `make bench` runs the scripts, not this file."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

import _commit


def print_figures(note: str, figures: Sequence[str], columns: Sequence[tuple[str, Sequence[str]]]) -> None:
    """`note` above a Markdown table: one row per figure, one column per (rule, its cell for each figure)."""
    print(note)
    print("| figure | " + " | ".join(rule for rule, _ in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for j, figure in enumerate(figures):
        print(f"| {figure} | " + " | ".join(cells[j] for _, cells in columns) + " |")


def print_provenance(start: float, load0: float) -> None:
    """The commit the figures are of (bench/_commit.py: also from a `git archive` copy), the load average from
    `load0` at `start` (time.monotonic()) to now, and the seconds taken."""
    print(
        f"\ncommit {_commit.commit()}, load average {load0:.1f} → {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs, {time.monotonic() - start:.0f} s"
    )
