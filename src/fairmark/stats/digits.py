"""Round a reported value to the digits its confidence interval supports.

Rule (the Particle Data Group's, also in GUM practice): look at the first three significant digits of the
half-width. 100–354 → keep two significant digits of it; 355–949 → keep one; 950–999 → round it up to the
next power of ten and keep two. The value is then rounded to the same decimal place. So 12.34 ± 1.83 →
"12.3 ± 1.8", 412.567 ± 9 → "413 ± 9" (the units digit still carries information: 404…422),
412.567 ± 37 → "410 ± 40".
Only human output is rounded; the store and JSON keep full precision.
"""

from __future__ import annotations

import math

PLAIN_DIGITS = 6  # significant digits when no interval is known (what ministat's %g prints)
FLOAT_NOISE = 1e-12  # a half-width 12 decades below the value is rounding noise of doubles, not a measurement


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


def _plain(value: float) -> str:
    return f"{value:.{PLAIN_DIGITS}g}"


def format_pair(value: float, half_width: float | None) -> tuple[str, str | None]:
    """(value text, half-width text) rounded together; half-width text is None when unknown."""
    if not math.isfinite(value):
        return ("n/a", None)
    exp = last_digit_exponent(half_width) if half_width is not None else None
    if half_width is not None and 0 < abs(half_width) < FLOAT_NOISE * max(abs(value), 1.0):
        # A half-width at floating-point noise level (identical values in every trial): no interval to round to.
        return (_plain(value), "0")
    if exp is None:
        return (_plain(value), None if half_width is None or math.isnan(half_width) else _plain(half_width))
    return (_clean(round_to(value, exp)), round_to(abs(half_width), exp))


def format_value(value: float, half_width: float | None = None, unit: str = "") -> str:
    """'413 ± 9 MB/s', '12.3% ± 1.8%', '0.1354 s' (no interval: 6 significant digits)."""
    text, hw = format_pair(value, half_width)
    if unit == "%":
        return f"{text}%" + (f" ± {hw}%" if hw is not None else "")
    suffix = f" {unit}" if unit else ""
    return text + (f" ± {hw}" if hw is not None else "") + suffix


def format_percent(percent: float, half_width: float | None = None, *, signed: bool = False) -> str:
    """A percentage and its half-width rounded together: '12.3% ± 1.8%' (signed: '+12.3% ± 1.8%')."""
    text, hw = format_pair(percent, half_width)
    if signed and math.isfinite(percent) and not text.startswith("-"):
        text = "+" + text
    return f"{text}%" + (f" ± {hw}%" if hw is not None else "")


def _clean(text: str) -> str:
    """No '-0.0': a value that rounds to zero has no sign."""
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def format_median(median: float, low: float | None, high: float | None, unit: str = "") -> str:
    """The median with its own order-statistic interval, '413 [405, 420] MB/s', digits as that interval
    supports; the bare median when there is no interval (too few values for the level)."""
    suffix = f" {unit}" if unit else ""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return format_value(median, None, unit)
    hw = (high - low) / 2 or None
    texts = [format_pair(v, hw)[0] for v in (median, low, high)]
    return f"{texts[0]} [{texts[1]}, {texts[2]}]{suffix}"
