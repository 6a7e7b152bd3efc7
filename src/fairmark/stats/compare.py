"""A/B comparison of two samples in numbers: the test that decides, ministat's Student t with pooled s, and a
rank test (exact Mann-Whitney U, or Wilcoxon's signed rank for pairs) as a cross-check.

The verdict (`significant`, `change`, the ratio and its interval) comes from one design (stats.paired): **paired
by round** when the trials' rounds are given (an interleaved run), **Welch** otherwise (`fairmark compare`:
unequal variances and n allowed) — on the logarithms when every value is positive; two independent samples with
outliers flagged, or whose Welch t and rank test disagree, are decided by Yuen's t on trimmed means
(stats.robust: the rule and why). ministat's own numbers (pooled Student t with its t table: `difference`,
`half_width`, `percent`, `percent_half_width`, `pooled_stddev`, `ministat_significant`) are kept for ministat's
lines and never decide the verdict. `tested` returns them as a frozen record of numbers; verdict/compare.py
words it (the sentence, the warnings) into the `Comparison` every command shows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict

import numpy as np

from fairmark.errors import InputError, UsageError
from fairmark.stats import robust
from fairmark.stats.arrays import Floats, Values
from fairmark.stats.describe import Summary, as_array, describe, sample_sd
from fairmark.stats.paired import RatioTest, RoundKey, fieller, paired_by_round, two_sided_p, welch
from fairmark.stats.ranks import RankCheck, exact_mann_whitney, signed_rank
from fairmark.stats.robust import Reason
from fairmark.stats.stopping import Capped
from fairmark.stats.tdist import exact_t, t_quantile

if TYPE_CHECKING:  # a run stopped by the decision stop loads it (LAZY_FOR_START): `show` of any other not
    from fairmark.stats import sequential as seq

Better = Literal["lower", "higher"]
Rounds = tuple[Sequence[RoundKey], Sequence[RoundKey]]  # each side's round of each value (same order)

__all__ = ["Better", "Tested", "tested", "two_sided_p", "welch_ratio"]


@dataclass(frozen=True)
class Tested:
    """What `tested` measured of two samples, numbers only: each side's summary, ministat's block, the test that
    decided (`test`: sequential, the design's or Yuen's) and the rank test that cross-checks it; with the
    decision stop, its look; when Yuen's decided, Welch's test it replaced and why."""

    baseline: Summary
    other: Summary
    ministat: MinistatFields
    test: RatioTest
    cross: RankCheck
    welch: dict[str, float]  # welch_ratio: Welch's t on the values and Fieller's ratio CI
    look: seq.Look | None = None  # the sequential test's last look (stop = "decision")
    welch_test: RatioTest | None = None  # Welch's test of the samples, when Yuen's replaced it
    robust_reason: Reason | None = None  # why Yuen's decided

    @property
    def decided_early(self) -> bool:
        """The decision stop decided on these trials, by design."""
        return self.look is not None and self.look.decision in ("different", "equivalent")


def tested(
    baseline: Values,
    other: Values,
    *,
    confidence: float = 95.0,
    better: Better = "lower",
    names: tuple[str, str] = ("A", "B"),
    ministat_compat: bool = False,
    rounds: Rounds | None = None,
    first_stage: int | None = None,
    length_planned: bool | Capped = False,
    sequential: seq.Design | None = None,
    robust: bool = True,
) -> Tested:
    """Test `other` against `baseline`. `rounds`: the round of each value (same order; an int, or (run, round)
    from several runs), for the paired design; `first_stage`: the rounds the run chose its length from
    (stats.stopping), `length_planned` whether it ran to that length. `sequential`: the run stopped when
    decided. `robust`: stats.robust's rule may decide. `names` only name a side in an error."""
    a, b = _checked(baseline, other, better, names)
    sa, sb = describe(a, confidence), describe(b, confidence)
    ministat = _ministat(a, b, sa, sb, confidence, ministat_compat)
    decided, test, cross, (welch_test, reason) = _decide(
        (a, b), confidence, rounds, (first_stage, length_planned), sequential, robust
    )
    return Tested(
        baseline=sa,
        other=sb,
        ministat=ministat,
        test=test,
        cross=cross,
        welch=welch_ratio(sa, sb, confidence),
        look=decided[1] if decided else None,
        welch_test=welch_test,
        robust_reason=reason,
    )


def _sequential_test(
    a: Floats, b: Floats, rounds: Rounds | None, design: seq.Design | None
) -> tuple[RatioTest, seq.Look] | None:
    """The sequential design's test of pairs by round (None: no such design, or fewer than 3 pairs)."""
    if design is None or rounds is None:
        return None
    ra, rb = rounds
    if len(ra) != a.size or len(rb) != b.size:
        raise InputError("rounds must give one round per value")
    from fairmark.stats.sequential import paired_ratio_test

    return paired_ratio_test(
        dict(zip(ra, a.tolist(), strict=True)), dict(zip(rb, b.tolist(), strict=True)), design
    )


class MinistatFields(TypedDict):
    """The fields of a Comparison that ministat's block sets."""

    difference: float
    half_width: float
    percent: float
    percent_half_width: float
    pooled_stddev: float
    ministat_significant: bool
    student_p: float


class VerdictFields(TypedDict):
    """The fields of a Comparison that the deciding test sets."""

    df: float
    t_quantile: float
    significant: bool
    p_value: float
    design: str
    n_pairs: int | None
    ratio: float
    ratio_ci_low: float
    ratio_ci_high: float
    mde_percent: float
    scale: str
    constant: bool


def verdict_fields(test: RatioTest, mean_baseline: float) -> VerdictFields:
    return {
        "df": test.df,
        "t_quantile": test.t_quantile,
        "significant": test.significant,
        "p_value": test.p_value,
        "design": test.design,
        "n_pairs": test.n_pairs,
        "ratio": test.ratio,
        "ratio_ci_low": test.ratio_ci_low,
        "ratio_ci_high": test.ratio_ci_high,
        "mde_percent": mde_percent(test, mean_baseline),
        "scale": test.scale,
        "constant": test.constant,
    }


def change_of(test: RatioTest, better: Better) -> Literal["better", "worse", "none"]:
    if not test.significant:
        return "none"
    return "better" if (test.difference < 0) == (better == "lower") else "worse"


def mde_percent(test: RatioTest, mean_baseline: float) -> float:
    if test.scale == "log":
        return test.mde_percent
    return 100.0 * test.mde / abs(mean_baseline) if mean_baseline else math.nan


def _checked(baseline: Values, other: Values, better: str, names: tuple[str, str]) -> tuple[Floats, Floats]:
    if better not in ("lower", "higher"):
        raise UsageError(f"better must be 'lower' or 'higher', got {better!r}")
    a, b = as_array(baseline), as_array(other)
    for name, arr in zip(names, (a, b), strict=True):
        if arr.size < 2:
            raise InputError(f"{name}: {arr.size} value(s); a comparison needs at least 2 (ministat wants 3)")
    return a, b


def _ministat(
    a: Floats, b: Floats, sa: Summary, sb: Summary, confidence: float, ministat_compat: bool
) -> MinistatFields:
    """ministat's block: Student's t with the pooled s, the difference d and its half-width e (|d| > e is
    ministat's verdict), in units and in percent of the baseline's mean."""
    df = a.size + b.size - 2
    t = t_quantile(confidence, df, ministat_compat=ministat_compat)
    pooled_sd = _pooled_sd(a, b, df)
    d = sb.mean - sa.mean
    e = t * (pooled_sd * math.sqrt(1.0 / a.size + 1.0 / b.size))
    return {
        "difference": d,
        "half_width": e,
        "percent": _pct(d, sa.mean),
        "percent_half_width": _pct(e, sa.mean),
        "pooled_stddev": pooled_sd,
        "ministat_significant": bool(abs(d) > e),
        "student_p": _student_p(d, pooled_sd, a.size, b.size, df),
    }


def _pooled_sd(a: Floats, b: Floats, df: int) -> float:
    """√(((n_a − 1)·s_a² + (n_b − 1)·s_b²)/df), scaled so that tiny (1e-300) and huge values stay in range."""
    scale = max(float(np.max(np.abs(a - a.mean()))), float(np.max(np.abs(b - b.mean()))))
    if scale == 0:
        return 0.0
    sa, sb = sample_sd(a) / scale, sample_sd(b) / scale
    return scale * math.sqrt(((a.size - 1) * sa * sa + (b.size - 1) * sb * sb) / df)


def _design_test(
    a: Floats, b: Floats, confidence: float, rounds: Rounds | None, stages: tuple[int | None, bool | Capped]
) -> RatioTest:
    """Paired by round when rounds are known and at least 3 pairs complete, Welch else."""
    if rounds is not None:
        ra, rb = rounds
        if len(ra) != a.size or len(rb) != b.size:
            raise InputError("rounds must give one round per value")
        test = paired_by_round(
            dict(zip(ra, a.tolist(), strict=True)),
            dict(zip(rb, b.tolist(), strict=True)),
            confidence=confidence,
            first_stage=stages[0],
            length_planned=stages[1],
        )
        if test is not None:
            return test
    return welch(a, b, confidence=confidence)


def _decide(
    samples: tuple[Floats, Floats],
    confidence: float,
    rounds: Rounds | None,
    stages: tuple[int | None, bool | Capped],
    sequential: seq.Design | None,
    robust: bool,
) -> tuple[tuple[RatioTest, seq.Look] | None, RatioTest, RankCheck, tuple[RatioTest | None, Reason | None]]:
    """The test that decides (sequential, the design's, or Yuen's where stats.robust says so), the rank test
    that cross-checks it, and when Yuen's decided, Welch's test it replaced and why."""
    a, b = samples
    decided = _sequential_test(a, b, rounds, sequential)
    test = decided[0] if decided else _design_test(a, b, confidence, rounds, stages)
    cross = _cross_check(a, b, test, rounds, confidence)
    if not robust or decided:
        return decided, test, cross, (None, None)
    robust_test, reason = _robust(a, b, test, cross, confidence)
    return decided, robust_test, cross, ((test, reason) if reason else (None, None))


def _robust(
    a: Floats, b: Floats, test: RatioTest, cross: RankCheck, confidence: float
) -> tuple[RatioTest, Reason | None]:
    """Yuen's trimmed t in place of Welch's when stats.robust's rule says the data call for it, and why."""
    why = robust.robust_reason((a, b), test, cross, 1.0 - confidence / 100.0)
    decided = robust.yuen(a, b, confidence=confidence) if why else None
    if decided is None:
        return test, None
    return decided, why


def _cross_check(
    a: Floats, b: Floats, test: RatioTest, rounds: Rounds | None, confidence: float
) -> RankCheck:
    """The rank test matching the design: Wilcoxon signed rank on the pairs, exact Mann-Whitney U else."""
    alpha = 1.0 - confidence / 100.0
    if np.ptp(np.concatenate([a, b])) == 0:  # all values equal: nothing to rank
        return {
            "test": "Mann-Whitney U",
            "u": a.size * b.size / 2.0,
            "p_value": 1.0,
            "min_p": 1.0,
            "significant": False,
        }
    if test.design == "paired by round" and rounds is not None:
        by_a = dict(zip(rounds[0], a.tolist(), strict=True))
        pairs = [(by_a[r], v) for r, v in zip(rounds[1], b.tolist(), strict=True) if r in by_a]
        pa, pb = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        d = np.log(pb) - np.log(pa) if test.scale == "log" else pb - pa
        sr = signed_rank(d)
        return RankCheck(
            test="Wilcoxon signed rank",
            u=None,
            p_value=sr["p_value"],
            min_p=sr["min_p"],
            significant=bool(sr["p_value"] < alpha),
        )
    mw = exact_mann_whitney(a, b)
    return RankCheck(
        test="Mann-Whitney U",
        u=mw["u"],
        p_value=mw["p_value"],
        min_p=mw["min_p"],
        exact=mw["exact"],
        significant=bool(mw["p_value"] < alpha),
    )


def _pct(x: float, base: float) -> float:
    return 100.0 * x / base if base != 0 else math.nan


def _student_p(d: float, pooled: float, na: int, nb: int, df: int) -> float:
    se = pooled * math.sqrt(1.0 / na + 1.0 / nb)
    if se == 0:
        return 1.0 if d == 0 else 0.0
    return two_sided_p(d / se, df)


def welch_ratio(sa: Summary, sb: Summary, confidence: float) -> dict[str, float]:
    """Welch's t test on the values and the CI of mean_b/mean_a by Fieller's theorem with the
    Welch-Satterthwaite df (kept for the JSON and the ministat view; the verdict is stats.paired's)."""
    ratio = sb.mean / sa.mean if sa.mean != 0 else math.nan
    # Both samples divided by one constant: neither the df nor the ratio's CI changes, and the squares below
    # stay in range for any finite input (3e77 squared twice overflowed a float, 1e300 squared once)
    c = max(abs(sa.mean), abs(sb.mean), sa.stddev, sb.stddev)
    if not c > 0 or not (sa.stddev > 0 or sb.stddev > 0):  # no spread at all: no test statistic exists
        nan = math.nan
        return {
            "t": nan,
            "df": nan,
            "p_value": nan,
            "ratio": ratio,
            "ratio_ci_low": nan,
            "ratio_ci_high": nan,
        }
    ma, mb = sa.mean / c, sb.mean / c
    va, vb = (sa.stddev / c) ** 2 / sa.n, (sb.stddev / c) ** 2 / sb.n
    tw = (mb - ma) / math.sqrt(va + vb)
    dfw = (va + vb) ** 2 / (va**2 / (sa.n - 1) + vb**2 / (sb.n - 1))
    p = two_sided_p(tw, dfw)

    low, high = fieller(ma, mb, va, vb, 0.0, exact_t(confidence, dfw))
    return {"t": tw, "df": dfw, "p_value": p, "ratio": ratio, "ratio_ci_low": low, "ratio_ci_high": high}
