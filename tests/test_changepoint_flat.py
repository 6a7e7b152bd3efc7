"""A series flat to the float's resolution has no change point and no warning: `fairmark publish` of the README's
tour met one (a metric at 1e12 whose values are 1e12's neighbours, centred only to rounding), and numpy's
"invalid value encountered in log1p" went to stderr, 5 lines past 80 columns."""

from __future__ import annotations

import warnings

import numpy as np

from fairmark.stats.changepoints import detect


def test_a_series_flat_to_the_floats_resolution_has_no_change_point() -> None:
    lo, hi = np.nextafter(1e12, 0), np.nextafter(1e12, 2e12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert detect([lo] + [hi] * 7) == []
        assert [c.index for c in detect([1.0] * 10 + [1.1] * 10)] == [10]  # a real step is still found
