"""The tests that decide a verdict, each giving the ratio B/A with its confidence interval.

Scale. Where every value is positive (times, rates, sizes: the usual case in OS benchmarks) an effect is
multiplicative — a debug kernel makes a test 5–25× slower, not "+400 ms" — so the test is made on the logarithms
and the interval of the (geometric mean) ratio is exp of the interval of the mean log ratio: never below 0, as
asymmetric as it should be, and a change that is 5–25× in every round is found with 3 rounds. Where a value is 0
or negative (a difference, a count that can be 0) the test is on the values themselves and the ratio interval is
Fieller's.

Designs:
* **paired by round** (the verdict of an interleaved run): trial i of A and trial i of B ran in the same round,
  so what the machine did in that round is shared; the test is on the pairs. When the run chose its length from
  a first stage (stats.stopping), the verdict is significant only when both Stein's test (spread of the first
  stage, df = k − 1 — exact whatever length the first stage chose) and the test with the spread of all rounds
  reject: an outlier or a neighbour arriving after the first stage widens the interval instead of only moving
  the mean. The interval shown is the union of the two, so it excludes 1 exactly when the verdict is significant.
* **Welch** (independent samples: `fairmark compare`, runs or boots as the unit): unequal variances and
  unequal n allowed, Welch–Satterthwaite df.
* **pooled** (ministat's Student t): kept for ministat's own lines, never fairmark's verdict.

A sample without spread never yields a t-based interval or p: when every pair differs by the same amount (or
both sides are constant) the verdict is the rank test's (sign test on the pairs, exact Mann-Whitney U on two
samples), said so, with no interval.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeAlias, TypeVar

import numpy as np

from fairmark.stats.arrays import Floats, Values
from fairmark.stats.describe import sample_sd as _sd
from fairmark.stats.power import POWER, capped_factor, mde_factor, two_stage_factor
from fairmark.stats.ranks import exact_mann_whitney
from fairmark.stats.stopping import Capped
from fairmark.stats.tdist import exact_t
from fairmark.stats.tlight import t_ppf, t_sf

if TYPE_CHECKING:  # annotations only (stats/arrays.py says why)
    import numpy.typing as npt

STEIN = "the first stage's spread and all rounds' spread"
# The design of a verdict whose observation is a unit above the trial (stats.levels, stats.sequential): a label
UNIT_DESIGNS = {"run": "runs as the unit", "boot": "boots as the unit", "host": "hosts as the unit"}
# What pairs two values: their round, or (run, round) when the values come from several runs.
RoundKey: TypeAlias = int | tuple[str, int]
K = TypeVar("K", bound=RoundKey)


@dataclass(frozen=True)
class RatioTest:
    design: str  # "paired by round" | "Welch" | "runs as the unit" | … | "pooled"
    scale: str  # "log" (the test on logarithms: a ratio of geometric means) | "raw"
    n_pairs: int | None
    difference: float  # on the test's scale: mean log ratio (log) or mean_b − mean_a (raw)
    se: float  # its standard error (the wider of the two parts of a two-stage paired test)
    df: float
    t_quantile: float
    p_value: float
    significant: bool
    ratio: float
    ratio_ci_low: float  # nan: unbounded
    ratio_ci_high: float
    mde: float  # the change this design detects with 80% power, on the test's scale (inf/nan: none)
    constant: bool = False  # no spread: decided by a rank test, no interval
    parts: str = ""  # a two-stage paired test: which spreads it took

    @property
    def mde_percent(self) -> float:
        """The MDE as ±% of the baseline (log scale: the upward change, the larger of the two)."""
        if self.scale == "log":
            return 100.0 * math.expm1(self.mde) if math.isfinite(self.mde) else math.nan
        return math.nan  # raw scale: the caller knows the baseline mean

    @property
    def interval_bounded(self) -> bool:
        return math.isfinite(self.ratio_ci_low) and math.isfinite(self.ratio_ci_high)


def fieller(ma: float, mb: float, va: float, vb: float, cov: float, t: float) -> tuple[float, float]:
    """The set of R with (mb − R·ma)² ≤ t²·(vb − 2R·cov + R²·va); (nan, nan) when it is unbounded."""
    qa = ma * ma - t * t * va
    if qa <= 0:
        return (math.nan, math.nan)
    mid = ma * mb - t * t * cov
    disc = mid * mid - qa * (mb * mb - t * t * vb)
    root = math.sqrt(max(disc, 0.0))
    return ((mid - root) / qa, (mid + root) / qa)


def two_sided_p(t: float, df: float) -> float:
    """P(|T| > |t|), from stats/tlight rather than scipy: `history` loaded scipy.special for this alone."""
    return 2.0 * t_sf(df, abs(t))


def positive(*samples: Values) -> bool:
    """Whether the log scale applies: every value of every sample is > 0."""
    return all(np.size(s) and float(np.min(s)) > 0 for s in samples)


@dataclass(frozen=True)
class Part:
    """One t test of a mean difference: estimate, standard error, df, its interval on the ratio scale."""

    est: float
    se: float
    df: float
    t: float
    p: float
    low: float
    high: float
    # Stein's part of a two-stage test whose run ran to the length planned from this spread (not cut at
    # max_trials). Such a test's MDE is power.two_stage_factor's (combine, two_stage); this flag is what said so
    # before, with (t_α + t_0.8)·se for this part alone (76.7% at the stated change, issue 31 item 7).
    se_by_design: bool = False

    @property
    def rejects(self) -> bool:
        return bool(abs(self.est) > self.t * self.se)


def _log_part(est: float, se: float, df: float, confidence: float) -> Part:
    t = exact_t(confidence, df)
    return Part(est, se, df, t, two_sided_p(est / se, df), math.exp(est - t * se), math.exp(est + t * se))


def _raw_part(ma: float, mb: float, va: float, vb: float, cov: float, df: float, confidence: float) -> Part:
    t = exact_t(confidence, df)
    se = math.sqrt(max(va + vb - 2 * cov, 0.0))
    low, high = fieller(ma, mb, va, vb, cov, t)
    return Part(mb - ma, se, df, t, two_sided_p((mb - ma) / se, df), low, high)


def combine(
    design: str,
    scale: str,
    n_pairs: int | None,
    parts: list[Part],
    ratio: float,
    confidence: float,
    label: str = "",
    *,
    two_stage: bool = False,
) -> RatioTest:
    """Significant only when every part rejects; the interval is the union of theirs (it excludes 1 exactly
    then); p the largest. The MDE: a two-stage test's (`two_stage`: Stein's part, then all rounds') from both
    parts' degrees of freedom and all rounds' spread (power.two_stage_factor); else the largest part's own."""
    widest = max(parts, key=lambda q: q.t * q.se)
    lows, highs = [q.low for q in parts], [q.high for q in parts]
    bounded = all(math.isfinite(v) for v in lows + highs)
    if two_stage:
        mde = two_stage_factor(parts[0].df, parts[1].df, confidence) * parts[1].se
    else:
        mde = max(_mde_of(q, confidence) for q in parts)
    return RatioTest(
        design=design,
        scale=scale,
        n_pairs=n_pairs,
        difference=parts[0].est,
        se=widest.se,
        df=widest.df,
        t_quantile=widest.t,
        p_value=max(q.p for q in parts),
        significant=all(q.rejects for q in parts),
        ratio=ratio,
        ratio_ci_low=min(lows) if bounded else math.nan,
        ratio_ci_high=max(highs) if bounded else math.nan,
        mde=mde,
        parts=label,
    )


def _mde_of(q: Part, confidence: float) -> float:
    """The change q's test detects with 80% power in a repeat of the design (see Part.se_by_design)."""
    if not q.se_by_design:
        return mde_factor(q.df, confidence) * q.se

    return (q.t + t_ppf(q.df, POWER)) * q.se


def _sign_test(design: str, scale: str, n: int, diff: float, ratio: float, confidence: float) -> RatioTest:
    """Every pair differs by the same amount: no spread, so no t; the exact sign test (2·½ⁿ) decides."""
    p = min(1.0, 2.0 * 0.5**n) if diff != 0 else 1.0
    sig = bool(diff != 0 and p <= 1 - confidence / 100)
    return RatioTest(
        design,
        scale,
        n,
        diff,
        0.0,
        n - 1,
        math.nan,
        p,
        sig,
        ratio,
        math.nan,
        math.nan,
        math.nan,
        constant=True,
    )


def paired_by_round(
    a: Mapping[K, float],
    b: Mapping[K, float],
    *,
    confidence: float,
    first_stage: int | None = None,
    length_planned: bool | Capped = False,
    log: bool | None = None,
) -> RatioTest | None:
    """The blocked analysis of two cells' values keyed by round; None below 3 complete pairs. `first_stage`:
    the number of rounds from which the run chose its length: when the run went beyond them, the verdict needs
    both the first stage's spread (Stein) and all rounds' spread to reject; `length_planned`: the run ran to the
    length that stage planned (or, a Capped, was cut at max_trials under that rule). `log`: None chooses
    (positive values: the log scale)."""
    keys = [r for r in a if r in b]
    n = len(keys)
    if n < 3:
        return None
    keys.sort(key=_round_order)
    xa = np.array([a[r] for r in keys], dtype=np.float64)
    xb = np.array([b[r] for r in keys], dtype=np.float64)
    use_log = positive(xa, xb) if log is None else log
    first = _first_stage_mask(keys, first_stage)
    if isinstance(length_planned, Capped) and not all(isinstance(k, int) for k in keys):
        length_planned = False  # pooled runs, each cut: a repeat is no one run's rule (each part's own MDE)
    if use_log:
        if _no_raw_spread(xb - xa, xa, xb):
            # Quantized values (ticks): the same difference in every round, whose logs vary only because the
            # values do: the tick's resolution allows half to one and a half ticks, not a tight interval.
            diff = float(np.mean(np.log(xb) - np.log(xa)))
            return _sign_test("paired by round", "log", n, diff, math.exp(diff), confidence)
        la, lb = np.log(xa), np.log(xb)
        test = _paired_log(lb - la, first, confidence, length_planned is True)
        return _capped(test, (la, lb, 1.0), (1.0, 1.0), first, length_planned, confidence)
    test = _paired_raw(xa, xb, first, confidence, length_planned is True)
    c = max(float(np.max(np.abs(xa))), float(np.max(np.abs(xb)))) or 1.0  # squares of 1e300 stay in range
    scale = (max(abs(float(xa.mean())) / c, 1e-300), max(abs(float(xb.mean())) / c, 1e-300))
    return _capped(test, (xa / c, xb / c, c), scale, first, length_planned, confidence)


def _capped(
    test: RatioTest,
    cells: tuple[Floats, Floats, float],
    scale: tuple[float, float],
    first: npt.NDArray[np.bool_] | None,
    regime: bool | Capped,
    confidence: float,
) -> RatioTest:
    """A two-stage test of a run cut at max_trials: its MDE from a repeat under the same stopping rule
    (power.capped_factor, on all rounds' se); before, each part's own MDE, the larger (84.9% at the stated
    change, over-stated). `cells`: both cells' values on the test's scale, over a unit that `unit` restores.
    Any other test as it is."""
    if not (isinstance(regime, Capped) and first is not None and test.parts and not test.constant):
        return test
    ya, yb, unit = cells
    factor = capped_factor((ya, yb), scale, int(first.sum()), regime, confidence)
    se_all = float(np.std(yb - ya, ddof=1)) / math.sqrt(ya.size) * unit
    return replace(test, mde=factor * se_all)


def _no_raw_spread(d: Floats, xa: Floats, xb: Floats) -> bool:
    """Every pair differs by the same amount, up to the rounding of the subtraction itself."""
    scale = max(float(np.max(np.abs(xa))), float(np.max(np.abs(xb))))
    return bool(float(np.ptp(d)) <= 8 * np.finfo(np.float64).eps * scale)


def _first_stage_mask(keys: Sequence[RoundKey], first_stage: int | None) -> npt.NDArray[np.bool_] | None:
    """Which pairs (in the order their rounds ran) are the first stage: the first `first_stage` rounds of each
    run — of the run, or of every run whose pairs are pooled (a bisect step's runs, each planned from its own
    first stage: Stein's test holds for them together too; without it 5.5% [4.9, 6.3] of A/A steps pooled over
    2 runs were 'different'). None when there is no first stage or the runs went no further."""
    if first_stage is None or first_stage < 3:
        return None
    seen: dict[str | None, int] = defaultdict(int)
    mask = []
    for key in keys:
        run = key[0] if isinstance(key, tuple) else None
        mask.append(seen[run] < first_stage)
        seen[run] += 1
    out = np.array(mask, dtype=np.bool_)
    return out if 3 <= int(out.sum()) < out.size else None


def _round_order(key: RoundKey) -> tuple[int] | tuple[str, int]:
    """Rounds in the order they ran: an int, or (run, round) when the pairs come from several runs."""
    return key if isinstance(key, tuple) else (key,)


def _paired_log(
    d: Floats, first: npt.NDArray[np.bool_] | None, confidence: float, planned: bool = False
) -> RatioTest:
    n = d.size
    mean = float(d.mean())
    ratio = math.exp(mean)
    sd_all = _sd(d)
    if sd_all == 0:
        return _sign_test("paired by round", "log", n, mean, ratio, confidence)
    parts = [_log_part(mean, sd_all / math.sqrt(n), n - 1, confidence)]
    sd_first = _sd(d[first]) if first is not None else 0.0
    if (
        first is not None and sd_first > 0
    ):  # Stein's part; a first stage without spread says nothing (dropped)
        stein = _log_part(mean, sd_first / math.sqrt(n), int(first.sum()) - 1, confidence)
        parts.insert(0, replace(stein, se_by_design=planned))
    both = len(parts) == 2
    label = STEIN if both else ""
    return combine("paired by round", "log", n, parts, ratio, confidence, label, two_stage=both and planned)


def _paired_raw(
    xa: Floats, xb: Floats, first: npt.NDArray[np.bool_] | None, confidence: float, planned: bool = False
) -> RatioTest:
    n = xa.size
    ma, mb = float(xa.mean()), float(xb.mean())
    ratio = mb / ma if ma != 0 else math.nan
    d = xb - xa
    if _sd(d) == 0:
        return _sign_test("paired by round", "raw", n, mb - ma, ratio, confidence)
    # One scale for both cells: the ratio and t do not change, and squares of 1e300 or 1e-300 stay in range.
    c = max(float(np.max(np.abs(xa))), float(np.max(np.abs(xb))))
    ya, yb = xa / c, xb / c
    parts = []
    everything = np.ones(n, dtype=np.bool_)
    for m in ([first] if first is not None and _sd(d[first]) > 0 else []) + [everything]:
        cov = np.cov(ya[m], yb[m], ddof=1) / n
        part = _raw_part(ma / c, mb / c, cov[0, 0], cov[1, 1], cov[0, 1], int(m.sum()) - 1, confidence)
        parts.append(replace(part, est=part.est * c, se=part.se * c, se_by_design=planned and m is first))
    both = len(parts) == 2
    label = STEIN if both else ""
    return combine("paired by round", "raw", n, parts, ratio, confidence, label, two_stage=both and planned)


def welch(
    a: Floats, b: Floats, *, confidence: float, design: str = "Welch", log: bool | None = None
) -> RatioTest:
    """Two independent samples (each ≥ 2 values, or one of a single value against ≥ 2: see below): Welch's t
    on the logarithms (or Fieller with Welch's df on the values). One side of a single value takes its variance
    from the other side (a prediction interval: it assumes the single one varies like the others)."""
    use_log = positive(a, b) if log is None else log
    xa, xb, c = on_scale(a, b, use_log)
    part = welch_part(xa, xb, use_log, c, confidence)
    ma, mb = float(xa.mean()), float(xb.mean())
    ratio = ratio_of(ma, mb, use_log)
    if part is None:
        return _constant_samples(
            design, "log" if use_log else "raw", xa, xb, (mb - ma) * c, ratio, confidence
        )
    return combine(design, "log" if use_log else "raw", None, [part], ratio, confidence)


def on_scale(a: Values, b: Values, log: bool) -> tuple[Floats, Floats, float]:
    """Both samples on the test's scale: logarithms, or the values divided by one constant c (the ratio and t
    do not change, and squares of 1e300 or 1e-300 stay in range)."""
    if log:
        return np.log(np.asarray(a, float)), np.log(np.asarray(b, float)), 1.0
    c = max(float(np.max(np.abs(a))), float(np.max(np.abs(b))), 1e-300)
    return np.asarray(a, float) / c, np.asarray(b, float) / c, c


def ratio_of(ma: float, mb: float, log: bool) -> float:
    return math.exp(mb - ma) if log else (mb / ma if ma != 0 else math.nan)


def welch_part(xa: Floats, xb: Floats, log: bool, c: float, confidence: float) -> Part | None:
    """Welch's t of two samples already on the test's scale; None without any spread."""
    na, nb = xa.size, xb.size
    sa, sb = (_sd(xa) if na > 1 else math.nan), (_sd(xb) if nb > 1 else math.nan)
    if na == 1 or nb == 1:
        s = sb if na == 1 else sa
        va, vb, df = s * s / na, s * s / nb, float(max(na, nb) - 1)
    else:
        va, vb = sa * sa / na, sb * sb / nb
        df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1)) if va + vb > 0 else float(na + nb - 2)
    if not va + vb > 0:
        return None
    return means_part(float(xa.mean()), float(xb.mean()), va, vb, df, log, c, confidence)


def means_part(
    ma: float, mb: float, va: float, vb: float, df: float, log: bool, c: float, confidence: float
) -> Part:
    """The t test of two independent means on the test's scale (variances of the means va, vb; df), its
    interval as a ratio: exp of the log interval, or Fieller's on values divided by c."""
    if log:
        return _log_part(mb - ma, math.sqrt(va + vb), df, confidence)
    part = _raw_part(ma, mb, va, vb, 0.0, df, confidence)
    return replace(part, est=part.est * c, se=part.se * c)


def _constant_samples(
    design: str, scale: str, xa: Floats, xb: Floats, diff: float, ratio: float, confidence: float
) -> RatioTest:
    """Both samples without spread: no t; the exact Mann-Whitney U decides (3 + 3 values can never reach 5%)."""
    p = exact_mann_whitney(xa, xb)["p_value"] if diff != 0 else 1.0
    sig = bool(diff != 0 and p <= 1 - confidence / 100)
    return RatioTest(
        design,
        scale,
        None,
        diff,
        0.0,
        math.nan,
        math.nan,
        p,
        sig,
        ratio,
        math.nan,
        math.nan,
        math.nan,
        constant=True,
    )


def pooled(
    ma: float, mb: float, pooled_sd: float, na: int, nb: int, *, t: float, confidence: float
) -> RatioTest:
    """ministat's design (common variance, df = na + nb − 2) in ratio form; `t` is the quantile ministat's rule
    uses, so significance is exactly ministat's |d| > e. Only for ministat's lines and the A/A spread."""
    s2 = pooled_sd * pooled_sd
    ratio = mb / ma if ma != 0 else math.nan
    df = na + nb - 2
    se = math.sqrt(s2 / na + s2 / nb)
    if se == 0:
        return RatioTest(
            "pooled",
            "raw",
            None,
            mb - ma,
            0.0,
            df,
            t,
            1.0 if mb == ma else 0.0,
            mb != ma,
            ratio,
            ratio,
            ratio,
            0.0,
            constant=True,
        )
    low, high = fieller(ma, mb, s2 / na, s2 / nb, 0.0, t)
    return RatioTest(
        "pooled",
        "raw",
        None,
        mb - ma,
        se,
        df,
        t,
        two_sided_p((mb - ma) / se, df),
        bool(abs(mb - ma) > t * se),
        ratio,
        low,
        high,
        mde_factor(df, confidence) * se,
    )


def relabel(test: RatioTest, design: str) -> RatioTest:
    return replace(test, design=design)
