"""The judge: the one place where numbers become verdicts.

pairs (baseline values, other values, how to read them) → the minimum-n rule → compare → false discovery rate
across every comparison judged together → `Judgement`s. Used by `run` (verdicts stored with the run), `show`
and `report` (through the report's read model), `compare` (files) and `compare-runs` (two runs). Numbers only:
it knows nothing of plans, cells, stores or terminals, so the verdict rule is changed here and nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from fairmark.stats.compare import Better, Comparison, compare
from fairmark.stats.fdr import bh_adjust
from fairmark.stats.levels import compare_levels, differ_by_unit

MIN_VALUES = 3  # ministat's floor: fewer values give no statistics (the one definition; use enough())

AA_BIASED = (
    "the A/A calibration found a difference between two identical variants: something in this setup (order, "
    "caches, a neighbour) biases the measurement; treat every verdict of this workload with suspicion"
)


def enough(values: Sequence[float]) -> bool:
    """Whether a sample is large enough to be judged at all."""
    return len(values) >= MIN_VALUES


@dataclass(frozen=True)
class Pair:
    """Two samples to judge: `other` against `baseline`. `tag` is the caller's, returned untouched."""

    baseline: Sequence[float]
    other: Sequence[float]
    better: Better = "lower"
    unit: str = ""
    name_baseline: str = "A"
    name_other: str = "B"
    aa_percent_half_width: float | None = None  # the ±% an A/A twin showed (see aa_spread)
    calibration: bool = False  # this pair IS the A/A twin against its baseline
    tag: Hashable = None
    # The round of each value (same order), when the two cells were interleaved round by round: the verdict is
    # then paired by round (stats.paired); `first_stage`: the rounds from which the run fixed its length.
    rounds: tuple[Sequence[int], Sequence[int]] | None = None
    first_stage: int | None = None
    host_calibration: dict[str, Any] | None = (
        None  # what `fairmark calibrate` measured here (stats.calibration)
    )
    # The boot (or host) of each value, same order: when the two sides share none, the verdict takes the unit
    # as its observation (stats.levels: trials nested in boots); `unit_level` names it ("boot" | "host").
    units: tuple[Sequence[Hashable], Sequence[Hashable]] | None = None
    unit_level: str = "boot"


@dataclass(frozen=True)
class Judgement:
    pair: Pair
    comparison: Comparison
    q_value: float  # Benjamini-Hochberg adjusted p-value across everything judged together
    fdr_significant: bool  # q ≤ 1 − confidence

    @property
    def significant(self) -> bool:
        return self.comparison.significant

    def to_dict(self) -> dict[str, Any]:
        """The comparison's fields, plus the calibration flag and its warning when the A/A twin differed."""
        d = self.comparison.to_dict()
        if self.pair.calibration:
            d["calibration"] = True
            if self.comparison.significant:
                d["warnings"] = [*d.get("warnings", []), AA_BIASED]
        return d


def judge(
    pairs: Sequence[Pair], *, confidence: float = 95.0, ministat_compat: bool = False
) -> list[Judgement]:
    """Judge every pair with enough values on both sides (the others are left out: no statistics), with the
    false discovery rate controlled across all of them."""
    kept = [p for p in pairs if enough(p.baseline) and enough(p.other)]
    comps = [
        _by_unit(p, confidence, ministat_compat) if p.units and differ_by_unit(*p.units) else compare(p.baseline, p.other, confidence=confidence, better=p.better, name_baseline=p.name_baseline,
                name_other=p.name_other, unit=p.unit, ministat_compat=ministat_compat,
                aa_percent_half_width=p.aa_percent_half_width, rounds=p.rounds, first_stage=p.first_stage,
                calibration=p.host_calibration)
        for p in kept
    ]  # fmt: skip
    # A p-value that is not a number (cannot happen with finite values) counts as "no evidence", not as absent.
    qs = bh_adjust([c.p_value if math.isfinite(c.p_value) else 1.0 for c in comps]) if comps else []
    alpha = 1 - confidence / 100
    return [Judgement(p, c, q, bool(q <= alpha)) for p, c, q in zip(kept, comps, qs, strict=True)]


def _by_unit(p: Pair, confidence: float, ministat_compat: bool) -> Comparison:
    """The level-aware path: variants that differ by boot (or host) are judged with the unit as the observation."""
    assert p.units is not None
    return compare_levels(p.baseline, p.units[0], p.other, p.units[1], level=p.unit_level, confidence=confidence,
                          better=p.better, name_baseline=p.name_baseline, name_other=p.name_other, unit=p.unit,
                          ministat_compat=ministat_compat)  # fmt: skip


def aa_spread(
    baseline: Sequence[float], twin: Sequence[float], *, confidence: float = 95.0, better: Better = "lower"
) -> float | None:
    """The ±% within which this machine cannot tell the baseline from itself (the A/A CI half-width, or the
    A/A difference actually observed, whichever is larger); None without enough values."""
    if not (enough(baseline) and enough(twin)):
        return None
    c = compare(baseline, twin, confidence=confidence, better=better)
    return max(abs(c.percent), c.percent_half_width)
