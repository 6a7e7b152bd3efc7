"""Round a reported value to the digits its confidence interval supports, in a unit scaled to its size.

Rule (the Particle Data Group's, also in GUM practice): look at the first three significant digits of the
half-width. 100–354 → keep two significant digits of it; 355–949 → keep one; 950–999 → round it up to the
next power of ten and keep two. The value is then rounded to the same decimal place. So 12.34 ± 1.83 →
"12.3 ± 1.8", 412.567 ± 9 → "413 ± 9" (the units digit still carries information: 404…422),
412.567 ± 37 → "410 ± 40".

Units keep their name and take the SI prefix the value's size calls for (5 280 000 000 ± 190 000 000 B/s →
"5.28 ± 0.19 GB/s", 0.0566 s → "56.6 ms", 87 770 KiB → "85.7 MiB"); a count or rate of anything else takes one
only from a million up ("5.3 M ops/s"). A value with no interval shows 4 significant digits: enough to read,
and no claim of a precision nobody measured.
Only human output is rounded or rescaled; the store and JSON keep full precision in the stored unit.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable

PLAIN_DIGITS = 4  # significant digits of a value shown without an interval (a single trial, a bare median)
FLOAT_NOISE = 1e-12  # a half-width 12 decades below the value is rounding noise of doubles, not a measurement

_DECIMAL = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"": 1.0, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_TIME = {"n": 1e-9, "µ": 1e-6, "m": 1e-3, "": 1.0}
_COUNT = {"": 1.0, "M": 1e6, "G": 1e9, "T": 1e12}  # "M ops/s": a thousand ops/s reads fine without a prefix
# Units whose prefix is part of the name (MB/s, Gbit/s, KiB, ms); anything else non-empty is a count.
_PREFIXED = (
    (re.compile(r"(?P<p>Ki|Mi|Gi|Ti|Pi)(?P<base>B|B/s)"), _BINARY),
    (re.compile(r"(?P<p>[kMGTP])?(?P<base>B|B/s|bit/s|bits/s|b/s|Hz|W|J)"), _DECIMAL),
    (re.compile(r"(?P<p>[nµum])?(?P<base>s|s/loop)"), _TIME),  # s/loop: a microbenchmark's time per iteration
)
_UNSCALED = frozenset({"", "%", "x", "×", "bool", "min", "h", "pkg/h"})


# (prefix, factor) of each table, smallest factor first: what scale_unit walks
_ASCENDING = {id(t): sorted(t.items(), key=lambda kv: kv[1]) for t in (_DECIMAL, _BINARY, _TIME, _COUNT)}


@functools.cache  # a run's progress line scales its unit at every trial: one regex match per unit is enough
def _family(unit: str) -> tuple[float, str, dict[str, float], str] | None:
    """(factor of the unit's own prefix, base unit, prefix table, separator) or None for a unit kept as is."""
    if unit in _UNSCALED:
        return None
    for pattern, table in _PREFIXED:
        m = pattern.fullmatch(unit)
        if m:
            prefix = "µ" if m["p"] == "u" else (m["p"] or "")
            if prefix in table:
                return table[prefix], m["base"], table, ""
    return 1.0, unit, _COUNT, " "


def scale_unit(magnitude: float, unit: str) -> tuple[float, str]:
    """(divisor, unit to show) for values of about this magnitude in `unit`: the largest prefix that leaves
    at least 1 in front of the point (seconds never grow into minutes). Divide the value by the divisor."""
    fam = _family(unit)
    mag = abs(magnitude)
    if fam is None or not math.isfinite(mag) or mag == 0:
        return 1.0, unit
    own, base, table, sep = fam
    in_base = mag * own
    ascending = _ASCENDING[id(table)]
    prefix = ascending[0][0]
    for name, factor in ascending:
        if in_base >= factor * (1 - 1e-12):
            prefix = name
    if sep and prefix:  # "M ops/s"
        return table[prefix] / own, f"{prefix}{sep}{base}"
    return table[prefix] / own, prefix + base


def unit_suffix(shown: str) -> str:
    """A value's unit as written after it: a percent sign attached ("12%"), any other unit after a space."""
    return "%" if shown == "%" else f" {shown}" if shown else ""


def shared_scale(values: Iterable[float | None]) -> float | None:
    """The magnitude that picks one prefix for a column of values (its largest finite one), or None."""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v)]
    return max(finite) if finite else None


def column_unit(values: Iterable[float | None], unit: str) -> tuple[float, str]:
    """(divisor, unit) shared by a table's column: its values divided by the divisor are shown bare and the
    unit once, in the table's title ("alloc — wall_s in ms"), so a long unit (transactions/s) costs no width."""
    return scale_unit(shared_scale(values) or 0.0, unit)


def last_digit_exponent(half_width: float) -> int | None:
    """Power of ten of the last digit worth printing for this half-width (None when it cannot be judged)."""
    hw = abs(half_width)
    if not math.isfinite(hw) or hw == 0:
        return None
    exp = math.floor(math.log10(hw))
    lead3 = round(hw / 10 ** (exp - 2))
    if lead3 >= 1000:  # 999.7 rounds to 1000: one decade up
        exp, lead3 = exp + 1, 100
    if lead3 < 355:
        return exp - 1
    if lead3 < 950:
        return exp
    return exp  # 950–999 → 10^(exp+1) shown with two digits: last digit at 10^exp


def round_to(value: float, exponent: int) -> str:
    """`value` rounded to 10**exponent, as text without exponent notation."""
    if exponent >= 0:
        return f"{round(value / 10**exponent) * 10**exponent:.0f}"
    return f"{value:.{-exponent}f}"


def significant_exponent(value: float, digits: int) -> int:
    """Power of ten of the last of `digits` significant digits of `value` (not 0) once rounded: 9.96 to two is
    "10", not "10.0" (the exponent of the value before rounding kept a third digit)."""
    exp = math.floor(math.log10(abs(value))) - digits + 1
    return exp + 1 if round(abs(value) / 10.0**exp) >= 10**digits else exp


def _plain(value: float) -> str:
    """A value without an interval: PLAIN_DIGITS significant digits, never in exponent notation."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    exp = math.floor(math.log10(abs(value))) - PLAIN_DIGITS + 1
    text = _clean(round_to(value, exp))
    return _trim(text) if "." in text else text


def _trim(text: str) -> str:
    """'0.2800' → '0.28': without an interval, trailing zeros claim nothing."""
    return text.rstrip("0").rstrip(".")


def format_pair(value: float, half_width: float | None) -> tuple[str, str | None]:
    """(value text, half-width text) rounded together; half-width text is None when unknown."""
    if not math.isfinite(value):
        return ("n/a", None)
    exp = last_digit_exponent(half_width) if half_width is not None else None
    if half_width is not None and 0 < abs(half_width) < FLOAT_NOISE * max(abs(value), 1.0):
        # A half-width at floating-point noise level (identical values in every trial): no interval to round to.
        return (_plain(value), "0")
    if exp is None or half_width is None:
        return (_plain(value), None if half_width is None or math.isnan(half_width) else _plain(half_width))
    return (_clean(round_to(value, exp)), round_to(abs(half_width), exp))


def format_value(
    value: float, half_width: float | None = None, unit: str = "", *, scale: float | None = None
) -> str:
    """'413 ± 9 MB/s', '12.3% ± 1.8%', '135.4 ms' (no interval: 4 significant digits). `scale`: the
    magnitude that picks the prefix (default: the value's own, or the half-width's when larger) — give one
    for a column of values that should share a prefix."""
    ref = (
        scale
        if scale is not None
        else max(abs(value), abs(half_width or 0.0))
        if math.isfinite(value)
        else 0.0
    )
    divisor, shown = scale_unit(ref, unit)
    hw = None if half_width is None else half_width / divisor
    text, hw_text = format_pair(value / divisor, hw)
    if shown == "%":
        return f"{text}%" + (f" ± {hw_text}%" if hw_text is not None else "")
    suffix = f" {shown}" if shown else ""
    return text + (f" ± {hw_text}" if hw_text is not None else "") + suffix


def format_percent(percent: float, half_width: float | None = None, *, signed: bool = False) -> str:
    """A percentage and its half-width rounded together: '12.3% ± 1.8%' (signed: '+12.3% ± 1.8%')."""
    text, hw = format_pair(percent, half_width)
    if signed and math.isfinite(percent) and not text.startswith("-"):
        text = "+" + text
    return f"{text}%" + (f" ± {hw}%" if hw is not None else "")


def format_cv(cv: float | None) -> str:
    """A coefficient of variation as a percentage: two significant digits below 10%, whole percents above
    (0.0095 → '0.95%', 0.14 → '14%', 1.35 → '135%', never '1.4e+02%'): it describes the spread, nobody reads
    a digit past the percent."""
    if cv is None or not math.isfinite(cv):
        return "—"
    pct = 100 * cv
    exp = significant_exponent(pct, 2) if pct else 0
    return _clean(round_to(pct, min(exp, 0) if abs(pct) >= 10 else exp)) + "%"


def format_spread(sd: float, unit: str = "") -> str:
    """A standard deviation: a spread, not an estimate with an interval — two significant digits in its unit's
    prefix ('880 µs', '190 MB/s'), never in exponent notation."""
    if not math.isfinite(sd):
        return "n/a"
    divisor, shown = scale_unit(sd, unit)
    x = sd / divisor
    text = _clean(round_to(x, significant_exponent(x, 2))) if x else "0"  # 9.99: "10", not "10.0"
    return f"{text}%" if shown == "%" else text + (f" {shown}" if shown else "")


def estimate_text(value: float, half_width: float | None) -> str:
    """A point estimate rounded with its interval, but to at least two significant digits: under a wide interval
    a ratio of 1.494 rounded to the interval's precision printed "observed 0% (-100% to +1600%)" — the estimate
    is what was observed, and it was +49%."""
    text = format_pair(value, half_width)[0]
    if not math.isfinite(value) or abs(value) < 1e-9 or half_width is None:
        return text
    own = significant_exponent(value, 2)
    exp = last_digit_exponent(half_width)
    return text if exp is not None and exp <= own else _clean(round_to(value, own))


def _clean(text: str) -> str:
    """No '-0.0': a value that rounds to zero has no sign."""
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def format_median(
    median: float,
    low: float | None,
    high: float | None,
    unit: str = "",
    *,
    fallback_half_width: float | None = None,
    scale: float | None = None,
    interval: bool = True,
) -> str:
    """The median with its own order-statistic interval, '413 [405, 420] MB/s', digits as that interval
    supports. Without one (too few values for the level) the bare median, rounded where `fallback_half_width`
    (the mean's CI) puts the last digit — the median is no better known than the mean — but never to nothing:
    at least its first digit. `scale` as in format_value; `interval=False`: the median alone, its digits still
    as its interval supports (a narrow table)."""
    ends: tuple[float, ...] = ()
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        ends = (low, high)
    hw = (ends[1] - ends[0]) / 2 if ends else fallback_half_width
    if hw is None or not math.isfinite(median) or not math.isfinite(hw):
        return format_value(median, None, unit, scale=scale)
    ref = scale if scale is not None else max(abs(v) for v in (median, hw, *ends))
    divisor, shown = scale_unit(ref, unit)
    suffix = unit_suffix(shown)
    if not ends:
        return _at_least_one_digit(median / divisor, hw / divisor) + suffix
    texts = [format_pair(v / divisor, hw / divisor or None)[0] for v in (median, *ends)]
    return (f"{texts[0]} [{texts[1]}, {texts[2]}]" if interval else texts[0]) + suffix


def _at_least_one_digit(value: float, half_width: float) -> str:
    exp = last_digit_exponent(half_width)
    if exp is None:
        return _plain(value)
    if value != 0:
        exp = min(exp, math.floor(math.log10(abs(value))))
    return _clean(round_to(value, exp))


def format_interval(value: float, low: float, high: float, unit: str = "") -> str:
    """'3.2 [1.1, 7.5] events': a value and an interval that need not be symmetric (an exact Poisson one), all
    three rounded where the interval's half-width puts the last digit, in one prefix — but an end that is not
    zero keeps its first digit ('0.3 [0.008, 1.9]'): a bound above zero never reads as zero."""
    hw = (high - low) / 2
    divisor, shown = scale_unit(max(abs(value), abs(low), abs(high)), unit)
    texts = [
        _at_least_one_digit(v / divisor, hw / divisor) if hw else _plain(v / divisor)
        for v in (value, low, high)
    ]
    suffix = unit_suffix(shown)
    return f"{texts[0]} [{texts[1]}, {texts[2]}]{suffix}"


def bounds(unit: str, smallest: float | None, largest: float | None) -> tuple[float | None, float | None]:
    """The range a metric cannot leave (issue 34 item 6), from its unit and the values it took: a quantity that
    was never negative — a count, a rate, a time, a share — is at least 0; a percentage that stayed within
    [0, 100] (a CPU share of one process, an idle share) is at most 100. A symmetric t-interval ignores both
    ("retransmits 80 ± 340", "cpu_pct_remote 20% ± 60%")."""
    if smallest is None or largest is None or not (math.isfinite(smallest) and math.isfinite(largest)):
        return None, None
    low = 0.0 if smallest >= 0 else None
    high = 100.0 if unit == "%" and low is not None and largest <= 100 else None
    return low, high


def never_negative(unit: str) -> bool:
    """Whether a quantity in `unit` cannot be below zero by what it is — a time, a size, a rate of bytes or bits,
    a frequency, a power — whatever values a series took (history keeps no run's smallest value)."""
    fam = _family(unit)
    return fam is not None and fam[2] is not _COUNT


def format_bounded(
    value: float,
    half_width: float | None,
    unit: str = "",
    *,
    low: float | None = None,
    high: float | None = None,
    scale: float | None = None,
) -> str:
    """format_value's 'mean ± CI' — unless the symmetric interval passes one of the quantity's bounds (`low`,
    `high`, see bounds()): then the interval cut there and written out, '80 [0, 420] segments', its estimate
    with at least one digit ('0.21% [0, 1.0%]', not '0.0% ± 0.8%'). The cut interval holds the true value
    whenever the uncut one does: the true value is within the bounds."""
    if half_width is None or not math.isfinite(half_width) or not math.isfinite(value) or half_width <= 0:
        return format_value(value, half_width, unit, scale=scale)
    lo, hi = value - half_width, value + half_width
    if (low is None or lo >= low) and (high is None or hi <= high):
        return format_value(value, half_width, unit, scale=scale)
    lo, hi = max(lo, low) if low is not None else lo, min(hi, high) if high is not None else hi
    ref = scale if scale is not None else max(abs(value), abs(lo), abs(hi))
    divisor, shown = scale_unit(ref, unit)
    hw = half_width / divisor
    texts = [_at_least_one_digit(v / divisor, hw) if v else "0" for v in (value, lo, hi)]
    suffix = unit_suffix(shown)
    return f"{texts[0]} [{texts[1]}, {texts[2]}]{suffix}"


def detectable_pair(rise_pct: float, log: bool) -> tuple[float, float]:
    """(fall, rise) in % of the change a design detects, from its MDE as the rise (stats/paired.RatioTest's
    mde_percent). On the log scale the MDE is a factor either way, ×(1 + rise) or ÷ it: a rise of +970% is a
    fall of −91%, and "±970%" printed beside a proven −95% read as a contradiction (issue 34). On the raw
    scale, and below a rise of 10% (the two differ by under a point), both are the rise."""
    if not log or not math.isfinite(rise_pct) or rise_pct < 10:
        return rise_pct, rise_pct
    return 100 * rise_pct / (100 + rise_pct), rise_pct
