"""The judge: the one place where numbers become verdicts.

pairs (baseline values, other values, how to read them) → the minimum-n rule → compare → false discovery rate
across every comparison judged together → `Judgement`s. Called by fairmark.verdict.pairs alone, which builds the
pairs of every command (run, show, report, check, bisect, history, compare, compare-runs). It knows nothing of
plans, cells, stores or terminals, so the verdict rule is changed here and nowhere else; the numbers are stats/'s
(stats.compare, stats.levels), their words verdict/compare.py's and verdict/levels.py's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Generic, TypeVar

from fairmark.stats.arrays import Values, known
from fairmark.stats.compare import Better, Rounds
from fairmark.stats.fdr import bh_adjust
from fairmark.stats.paired import RoundKey
from fairmark.stats.stopping import Capped
from fairmark.verdict.compare import ZERO_SPREAD, Comparison, compare

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONObject
    from fairmark.stats.arrays import Unit
    from fairmark.stats.levels import Labels
    from fairmark.stats.sequential import Design

# The caller's tag of a pair, returned with its judgement (an untagged Pair is a Pair[None]). The default (PEP 696)
# is for the type checker: at run time typing's TypeVar (3.11's has no default) spares typing_extensions' import.
if TYPE_CHECKING:
    from typing_extensions import TypeVar as TypeVarDefault

    T = TypeVarDefault("T", covariant=True, default=None)
else:
    T = TypeVar("T", covariant=True)

MIN_VALUES = 3  # ministat's floor: fewer values give no statistics (the one definition; use enough())


def aa_biased(confidence: float = 95.0) -> str:
    """The warning of an A/A twin that came out different: a reason for suspicion, not proof of a bias."""
    chance = f"{100 - confidence:g}%"
    return (
        "the A/A twin (an exact copy of the baseline) came out different from it: either something in this setup "
        f"(order, caches, a neighbour) biases the measurement, or this is one of the {chance} of A/A comparisons "
        "that differ by chance; treat this workload's verdicts with suspicion until `fairmark calibrate` "
        "measures the rate"
    )


AA_BIASED = aa_biased()


def enough(values: Values) -> bool:
    """Whether a sample is large enough to be judged at all."""
    return len(values) >= MIN_VALUES


@dataclass(frozen=True)
class Pair(Generic[T]):
    """Two samples to judge: `other` against `baseline`. `tag` is the caller's, returned untouched."""

    baseline: Values
    other: Values
    better: Better = "lower"
    unit: str = ""
    name_baseline: str = "A"
    name_other: str = "B"
    aa_percent_half_width: float | None = None  # the ±% an A/A twin showed (see aa_spread)
    calibration: bool = False  # this pair IS the A/A twin against its baseline
    constant_expected: bool = False  # the metric cannot vary by design: its zero spread is no warning
    tag: T = None  # type: ignore[assignment]  # the default of the untagged Pair[None] (T's default, PEP 696)
    # The round of each value (same order), when the two cells were interleaved round by round: the verdict is
    # then paired by round (stats.paired); `first_stage`: the rounds from which the run fixed its length.
    rounds: tuple[Sequence[int], Sequence[int]] | None = None
    first_stage: int | None = None
    length_planned: bool | Capped = (
        False  # ran to the length its first stage planned; Capped: cut at max_trials
    )
    host_calibration: Mapping[str, object] | None = (
        None  # what `fairmark calibrate` measured here (stats.calibration)
    )
    # Each value's unit at the levels above the trial, same order: {"host": (a, b), "boot": (a, b), "run": (a,
    # b)}, whatever is known (None for an unknown unit). stats.levels decides the level of the verdict: the
    # highest at which the sides were not measured in the same units (runs ⊂ boots ⊂ hosts).
    labels: Labels | None = None
    # The older spelling of one level: `units` at `unit_level` ("boot" | "host" | "run").
    units: tuple[Sequence[Unit], Sequence[Unit]] | None = None
    unit_level: str = "boot"
    # The run stopped when decided (stop = "decision"): its paired verdict is the sequential design's test at its
    # last look (stats.sequential); ignored when the pairs come from several runs (each had its own looks).
    sequential: Design | None = None
    # When each unit (run, boot) started, by its label: the verdict says whether the sides were interleaved in
    # time or measured in blocks, and widens a block design's interval for drift (stats.timeorder).
    starts: Mapping[str, float] | None = None

    def all_labels(self) -> dict[str, tuple[Sequence[Unit], Sequence[Unit]]]:
        out = dict(self.labels or {})
        if self.units is not None:
            out.setdefault(self.unit_level, self.units)
        return out


@dataclass(frozen=True)
class Judgement(Generic[T]):
    pair: Pair[T]
    comparison: Comparison
    q_value: float  # Benjamini-Hochberg adjusted p-value across everything judged together
    fdr_significant: bool  # q ≤ 1 − confidence

    @property
    def significant(self) -> bool:
        return self.comparison.significant

    @property
    def warnings(self) -> tuple[str, ...]:
        """The comparison's warnings, and the A/A twin's when it came out different."""
        if self.pair.calibration and self.comparison.significant:
            return (*self.comparison.warnings, aa_biased(self.comparison.confidence))
        return self.comparison.warnings

    def to_dict(self) -> JSONObject:
        """The comparison's fields, plus the calibration flag and its warning when the A/A twin differed."""
        d = self.comparison.to_dict()
        if self.pair.calibration:
            d["calibration"] = True
            d["warnings"] = list(self.warnings)
        return d


def judge(
    pairs: Sequence[Pair[T]], *, confidence: float = 95.0, ministat_compat: bool = False
) -> list[Judgement[T]]:
    """Judge every pair with enough values on both sides (the others are left out: no statistics), with the
    false discovery rate controlled across all of them."""
    kept = [p for p in pairs if enough(p.baseline) and enough(p.other)]
    comps = [judge_one(p, confidence=confidence, ministat_compat=ministat_compat) for p in kept]
    # A p-value that is not a number (no claim can be made) counts as "no evidence", not as absent.
    qs = bh_adjust([c.p_value if math.isfinite(c.p_value) else 1.0 for c in comps]) if comps else []
    alpha = 1 - confidence / 100
    return [Judgement(p, c, q, bool(q <= alpha)) for p, c, q in zip(kept, comps, qs, strict=True)]


def judge_one(p: Pair[T], *, confidence: float = 95.0, ministat_compat: bool = False) -> Comparison:
    """One pair's verdict at the level its labels call for (stats.levels.unit_level): paired by round or Welch
    inside the units both sides share, the unit as the observation above them."""
    labels = p.all_labels()
    rounds, first_stage = _rounds(p, labels)
    one_run = rounds is p.rounds
    level = _level(labels)
    within = compare(
        p.baseline,
        p.other,
        confidence=confidence,
        better=p.better,
        name_baseline=p.name_baseline,
        name_other=p.name_other,
        unit=p.unit,
        ministat_compat=ministat_compat,
        aa_percent_half_width=p.aa_percent_half_width,
        rounds=rounds,
        first_stage=first_stage,
        length_planned=p.length_planned if first_stage is not None else False,
        calibration=p.host_calibration,
        sequential=p.sequential if one_run and p.sequential and not p.sequential.two_sample else None,
        robust=level is None,  # above the trials the unit decides (stats.levels): its trials are only shown
    )
    if p.constant_expected:  # a metric constant by design (MetricSpec.constant): its zero spread is expected
        within = replace(within, warnings=tuple(w for w in within.warnings if not w.startswith(ZERO_SPREAD)))
    if level is None:
        return within
    from fairmark.verdict.levels import compare_levels  # LAZY_FOR_START (_level says why)

    ua, ub = labels[level]
    units = p.sequential if p.sequential and p.sequential.two_sample else None  # boots = "auto"
    return compare_levels(
        p.baseline,
        ua,
        p.other,
        ub,
        level=level,
        confidence=confidence,
        within=within,
        sequential=units,
        starts=p.starts,
    )


def _level(labels: Labels) -> str | None:
    """The level above the trials at which the sides differ (stats.levels.unit_level), None without labels."""
    if not labels:  # two samples and nothing above their values: `compare` of files, `history`'s segments
        return None
    # LAZY_FOR_START: imported here, so that `compare` of files loads neither stats.levels nor verdict.levels
    # (with stats.timeorder, 8 classes built at import; issue 31 item 7's start)
    from fairmark.stats.levels import unit_level

    return unit_level(labels)


def _rounds(p: Pair[T], labels: Labels) -> tuple[Rounds | None, int | None]:
    """The round of each value as the pairing key: (run, round) when the values come from several runs, so that
    pairs never cross runs; the first stage is then that of each run."""
    if p.rounds is None:
        return None, None
    runs_a, runs_b = labels.get("run") or ((), ())
    if not known(runs_a) or not known(runs_b) or len(set(runs_a) | set(runs_b)) == 1:
        return p.rounds, p.first_stage
    rounds_a, rounds_b = p.rounds
    keyed_a: list[RoundKey] = [(u, r) for u, r in zip(runs_a, rounds_a, strict=True)]
    keyed_b: list[RoundKey] = [(u, r) for u, r in zip(runs_b, rounds_b, strict=True)]
    return (keyed_a, keyed_b), p.first_stage


def aa_spread(
    baseline: Values, twin: Values, *, confidence: float = 95.0, better: Better = "lower"
) -> float | None:
    """The ±% within which this machine cannot tell the baseline from itself (the A/A CI half-width, or the
    A/A difference actually observed, whichever is larger); None without enough values."""
    if not (enough(baseline) and enough(twin)):
        return None
    c = compare(baseline, twin, confidence=confidence, better=better)
    if not (math.isfinite(c.ratio_ci_low) and math.isfinite(c.ratio_ci_high)):
        return max(abs(c.percent), c.percent_half_width)
    half = 50.0 * (c.ratio_ci_high - c.ratio_ci_low)
    return max(abs(c.change_percent), half)
