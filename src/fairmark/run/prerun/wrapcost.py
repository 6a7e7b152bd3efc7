"""What a variant's own `wrap` costs on this machine (issue 11 item 1).

fairmark's own placement (cpus) is applied by the launcher, so it adds no process to either side; a user's
`wrap = ["env", …]` or `["taskset", …]` is one more exec inside the measured time of that variant only. Before
the first trial, the wrapper around a no-op (`true`) and the no-op alone are launched alternately through the
same executor the trials use, PAIRS times each; the median of the per-pair differences, with its
order-statistic CI, is the wrapper's own cost here. Reports show it beside every wall-time verdict of that
variant and flag a difference that lies within it (verdict/wrapcost.py): it may be the wrapper, not the change.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from collections.abc import Iterable
from typing import Any

from fairmark.run.launch.executor import execute

PAIRS = 31  # enough for a 95% order-statistic CI of the median (needs n ≥ 6), a few ms per launch
CONFIDENCE = 95.0


def measure(variants: Iterable[Any], pairs: int = PAIRS) -> dict[str, dict[str, Any]]:
    """variant name → the cost of its `wrap` (local variants with a wrap only)."""
    from fairmark.stats.describe import median_ci

    noop = shutil.which("true") or "/bin/true"
    out: dict[str, dict[str, Any]] = {}
    for v in variants:
        if not v.wrap or v.host is not None:
            continue
        diffs, bare = [], []
        with tempfile.TemporaryDirectory(prefix="fairmark-wrapcost-") as tmp:
            for i in range(pairs):
                # alternate which goes first, so a drift (a cache warming) falls on both alike
                order = [[*v.wrap, noop], [noop]] if i % 2 == 0 else [[noop], [*v.wrap, noop]]
                got = [
                    execute(argv, out_dir=tmp, name=f"w{i}-{k}", timeout_s=10) for k, argv in enumerate(order)
                ]
                if any(m.status != "ok" for m in got):
                    return out | {v.name: {"wrap": list(v.wrap), "error": _why(got)}}
                wrapped, plain = (got[0], got[1]) if i % 2 == 0 else (got[1], got[0])
                diffs.append(wrapped.wall_s - plain.wall_s)
                bare.append(plain.wall_s)
        low, high = median_ci(diffs, CONFIDENCE)
        out[v.name] = {
            "wrap": list(v.wrap),
            "pairs": len(diffs),
            "confidence": CONFIDENCE,
            "median_s": statistics.median(diffs),
            "ci_low_s": low,
            "ci_high_s": high,
            "noop_median_s": statistics.median(bare),
        }
    return out


def _why(measured: list[Any]) -> str:
    bad = next(m for m in measured if m.status != "ok")
    return f"the wrapper around a no-op did not run: {bad.error or bad.status}"
