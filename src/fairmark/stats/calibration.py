"""What K interleaved A/A runs of a workload say about this machine: how often two identical variants were
called different (the false-positive rate, with its exact Clopper-Pearson interval), and the change a run of this
plan detects with 80% power here (the median of the runs' minimum detectable effects)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypedDict


class Calibration(TypedDict):
    """What K A/A runs of a workload say about this machine (stored per host, group and metric)."""

    runs: int
    false_positives: int
    false_positive_rate: float  # nan without runs
    false_positive_ci: list[float]  # Clopper-Pearson, [low, high]
    alpha: float
    mde_percent: float | None  # the median of the runs' minimum detectable effects
    scale: str  # "log" when every run's verdict was on the log scale: its MDE is a factor either way
    trials_per_side: list[int] | None  # the fewest and the most
    constant: bool  # every run's twin and baseline were each one value: no interval, nothing to calibrate


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial CI of a rate k/n."""
    from scipy import special

    a = (1.0 - level) / 2.0
    low = 0.0 if k == 0 else float(special.betaincinv(k, n - k + 1, a))
    high = 1.0 if k == n else float(special.betaincinv(k + 1, n - k, 1.0 - a))
    return low, high


def summarize(aa: Sequence[Mapping[str, object]], *, confidence: float) -> Calibration:
    """`aa`: one A/A comparison per run (`Comparison.to_dict()` or the stored verdict data). A false positive is
    a run whose verdict called the identical twin different."""
    k = sum(1 for c in aa if c["significant"])
    n = len(aa)
    low, high = clopper_pearson(k, n) if n else (math.nan, math.nan)
    mdes = sorted(m for c in aa if isinstance(m := c.get("mde_percent"), int | float))
    trials = sorted(min(_count(c, "n_baseline"), _count(c, "n_other")) for c in aa)
    return {
        "runs": n,
        "false_positives": k,
        "false_positive_rate": k / n if n else math.nan,
        "false_positive_ci": [low, high],
        "alpha": (100.0 - confidence) / 100.0,  # 0.05 at 95%: 1 - 0.95 stored 0.050000000000000044
        "mde_percent": mdes[len(mdes) // 2] if mdes else None,
        "scale": "log" if aa and all(c.get("scale") == "log" for c in aa) else "raw",
        "trials_per_side": [trials[0], trials[-1]] if trials else None,
        "constant": bool(aa) and all(c.get("constant") for c in aa),
    }


def _count(comparison: Mapping[str, object], key: str) -> int:
    value = comparison[key]
    assert isinstance(value, int), f"{key}: {value!r}"  # a comparison's sample size
    return value
