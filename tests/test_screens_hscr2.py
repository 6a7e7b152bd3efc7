"""Issue 34, round two (helper hscr2): the digits of a change and its interval, rounded once; screens that read
wrong on a busy machine. Each test failed on the code before its fix."""

from __future__ import annotations

import math
import random

import pytest

from fairmark.stats.digits import last_digit_exponent
from fairmark.verdict.compare import EXACT_PCT, percent_texts


@pytest.mark.parametrize(
    ("ratio", "low", "high", "texts"),
    [
        # the near bound needed four decimals to show its sign; the estimate and the other bound took them too
        (0.9880, 0.9764, 0.99996, ("-1.2%", "-2.4%", "-0.0040%")),  # was "-1.200% (-2.360% to -0.0040%)"
        (0.988, 0.9764, 0.9997, ("-1.2%", "-2.4%", "-0.030%")),  # was "-1.20% (-2.36% to -0.030%)"
        # a bound that rounds up into the next decade keeps two digits ("0.010", not "0.0100")
        (0.997, 0.993, 1.0001, ("-0.30%", "-0.70%", "+0.010%")),  # was "+0.0100%"
        (0.003, 0.001, 0.02, ("-99.7%", "-99.9%", "-98.0%")),  # was "-99.90%": 0.0999… left, one digit: 0.1
        (1.0512, 1.03, 1.07, ("+5.1%", "+3.0%", "+7.0%")),  # already right: unchanged
    ],
)
def test_item1_each_text_is_rounded_once(
    ratio: float, low: float, high: float, texts: tuple[str, str, str]
) -> None:
    assert percent_texts(ratio, low, high, True) == texts
    assert percent_texts(ratio, low, high, False) == texts  # significance changes no digit


@pytest.mark.parametrize(
    ("ratio", "low", "high", "estimate"),
    [
        (0.003, 0.0001, 5.0, "-99.7%"),  # was "-100%": two digits of the change, none of what is left
        (0.0004, 0.0001, 5.0, "-99.96%"),  # was "-100%"
        (1.0003, 0.5, 2.0, "+0.030%"),  # a small change under a wide interval: never "0%"
        (0.9997, 0.5, 2.0, "-0.030%"),
    ],
)
def test_item2_an_estimate_never_rounds_onto_minus_100_or_0(
    ratio: float, low: float, high: float, estimate: str
) -> None:
    texts = percent_texts(ratio, low, high, False)
    assert texts is not None and texts[0] == estimate


def _exponent(text: str) -> int:
    """Power of ten of the last digit of a printed number ('-0.030%' → -3, '+30000%' → 0)."""
    digits = text.rstrip("%").lstrip("+-")
    return -len(digits.split(".")[1]) if "." in digits else 0


def test_one_rounding_rule_on_random_intervals() -> None:
    """Every text is its value rounded once, at the interval's last digit or two significant digits of its own
    (one of what is left above -100%), whichever is finer: never 0, never across 0, never onto -100%."""
    rng = random.Random(34)
    for _ in range(4000):
        centre = math.exp(rng.uniform(-9, 6))
        spread = math.exp(rng.uniform(-10, 4))
        low, high = centre * math.exp(-spread * rng.random()), centre * math.exp(spread * rng.random())
        texts = percent_texts(centre, low, high, rng.random() < 0.5)
        assert texts is not None
        pct = [100 * (v - 1) for v in (centre, low, high)]
        hw = (pct[2] - pct[1]) / 2
        shown = last_digit_exponent(hw)
        for value, text in zip(pct, texts, strict=True):
            printed = float(text.rstrip("%"))
            if abs(value) < EXACT_PCT or shown is None:
                continue
            assert printed != 0 and math.copysign(1, printed) == math.copysign(1, value), (value, texts)
            assert printed != -100 or value <= -100, (value, texts)
            own = math.floor(math.log10(abs(value))) - 1  # two significant digits (before rounding)
            if -100 < value < 0:
                own = min(own, math.floor(math.log10(100 + value)))  # one of what is left
            finest = min(shown, own)
            assert abs(printed - value) <= 0.5 * 10.0**finest * (1 + 1e-9), (value, hw, texts)  # one rounding
            if (
                "." in text
            ):  # no more digits than the finer rule asks (one fewer where it rounded up a decade)
                assert finest <= _exponent(text) <= finest + 1, (value, hw, texts)
