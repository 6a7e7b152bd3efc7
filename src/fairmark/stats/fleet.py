"""Which hosts of a fleet differ from the others beyond the noise (issue 32 item 5): "which of my 50 boxes is the
odd one?".

Each host ran the same cell; its trials give it a mean (on the log scale: the question is "how many percent").
A host is judged against the *other* hosts' means (an odd host never drags the level it is judged against):
if the hosts were alike, its mean would be one more draw from the distribution the others' means come from —
their mean m and sample spread s, which hold both the hosts' own trial noise and how much hosts of this fleet
legitimately differ. Its deleted (leave-one-out) residual

    t = (its mean − m) / (s · sqrt(1 + 1/(k − 1)))

follows Student's t on k − 2 degrees of freedom when host means are alike and normal: the prediction interval of
one more host, the classical outlier test. A host whose own trials are noisier than the others' gets that
excess added to s². The hosts' p-values are adjusted together (Benjamini–Hochberg): at 5%, the expected share of
hosts wrongly named stays at 5% (bench/fleet_odd_hosts.py simulates it)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fairmark.stats.fdr import bh_adjust

MIN_HOSTS = 3  # a level and a spread of the others need at least two of them


@dataclass(frozen=True)
class HostDeviation:
    """One host against the rest of the fleet: its ratio to the others' median, with an interval."""

    host: str
    n: int
    mean: float  # geometric mean of its values
    ratio: float  # its level / the others' median level
    ratio_lo: float
    ratio_hi: float
    p: float
    q: float  # adjusted across the fleet's hosts
    odd: bool


def odd_hosts(values: Mapping[str, Sequence[float]], *, alpha: float = 0.05) -> list[HostDeviation]:
    """Every host with at least two positive values, judged against the others (fewer than MIN_HOSTS such
    hosts: nothing can be judged, an empty list)."""
    logs = {h: np.log(np.asarray(v, dtype=float)) for h, v in values.items() if len(v) >= 2 and min(v) > 0}
    if len(logs) < MIN_HOSTS:
        return []
    means = {h: float(x.mean()) for h, x in logs.items()}
    ses = {h: float(x.std(ddof=1) / math.sqrt(len(x))) for h, x in logs.items()}
    k = len(logs)
    rows = [_judge(h, means, ses, k, alpha) for h in logs]
    qs = bh_adjust([r[2] for r in rows])
    return [
        HostDeviation(
            host=h,
            n=len(logs[h]),
            mean=math.exp(means[h]),
            ratio=math.exp(d),
            ratio_lo=math.exp(d - half),
            ratio_hi=math.exp(d + half),
            p=p,
            q=q,
            odd=q <= alpha,
        )
        for (h, d, p, half), q in zip(rows, qs, strict=True)
    ]


def _judge(
    host: str, means: Mapping[str, float], ses: Mapping[str, float], k: int, alpha: float
) -> tuple[str, float, float, float]:
    """(host, log difference from the others' mean, two-sided p, half-width of its 1 − α interval)."""
    from scipy import stats  # heavy: only when a fleet is judged

    others = np.array([m for h, m in means.items() if h != host])
    own_excess = ses[host] ** 2 - float(np.mean([ses[h] ** 2 for h in means if h != host]))
    var = float(others.var(ddof=1)) * (1.0 + 1.0 / (k - 1)) + max(own_excess, 0.0)
    diff = means[host] - float(others.mean())
    df = k - 2
    if var == 0.0:
        return host, diff, (0.0 if diff else 1.0), 0.0
    scale = math.sqrt(var)
    p = float(2.0 * stats.t.sf(abs(diff) / scale, df))
    return host, diff, p, float(stats.t.ppf(1.0 - alpha / 2.0, df)) * scale
