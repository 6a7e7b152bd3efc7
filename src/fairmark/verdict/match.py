"""Matching cells across runs: the one rule by which a cell of one run is "the same cell" in another
(`compare-runs`, `check --against run:/tag:`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from fairmark.verdict.values import MeasuredCell


def identity(cell: MeasuredCell, with_variant: bool = True) -> tuple[str, str, str]:
    c = cell.cell
    return (
        c.workload,
        c.variant if with_variant else "",
        json.dumps([list(p) for p in c.point], default=str),
    )


def match_cells(
    cells_a: Sequence[MeasuredCell], cells_b: Sequence[MeasuredCell]
) -> list[tuple[MeasuredCell, MeasuredCell]]:
    """The cells of `cells_a` measured in `cells_b` too: same workload, variant and sweep point. Runs made with one
    variant each (one run per kernel, typically) match on workload and point even when their variants are named
    differently."""
    by_b = {identity(c): c for c in cells_b}
    pairs = [(c, by_b[identity(c)]) for c in cells_a if identity(c) in by_b]
    single = len({c.cell.variant for c in cells_a}) == 1 and len({c.cell.variant for c in cells_b}) == 1
    if not pairs and single:
        by_b = {identity(c, False): c for c in cells_b}
        pairs = [(c, by_b[identity(c, False)]) for c in cells_a if identity(c, False) in by_b]
    return pairs
