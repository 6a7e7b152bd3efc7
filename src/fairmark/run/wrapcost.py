"""What a variant's own `wrap` costs on this machine (issue 11 item 1).

fairmark's own placement (cpus) is applied by the launcher, so it adds no process to either side; a user's
`wrap = ["env", …]` or `["taskset", …]` is one more exec inside the measured time of that variant only. Before
the first trial, the wrapper around a no-op (`true`) and the no-op alone are launched alternately through the
same executor the trials use, PAIRS times each; the median of the per-pair differences, with its
order-statistic CI, is the wrapper's own cost here. Reports show it beside every wall-time verdict of that
variant and flag a difference that lies within it: such a difference may be the wrapper, not the change.
"""

from __future__ import annotations

import math
import shutil
import statistics
import tempfile
from collections.abc import Iterable
from typing import Any

from fairmark.run.executor import execute

PAIRS = 31  # enough for a 95% order-statistic CI of the median (needs n ≥ 6), a few ms per launch
CONFIDENCE = 95.0
# The metrics a wrapper's process enters: fairmark's own clock and rusage of the trial's tree. A tool's own
# figures (MB/s, tps) are measured inside the tool and do not include the wrapper's start.
TIME_METRICS = ("wall_s", "cpu_s", "user_s", "sys_s")


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
            "wrap": list(v.wrap), "pairs": len(diffs), "confidence": CONFIDENCE,
            "median_s": statistics.median(diffs), "ci_low_s": low, "ci_high_s": high,
            "noop_median_s": statistics.median(bare),
        }  # fmt: skip
    return out


def _why(measured: list[Any]) -> str:
    bad = next(m for m in measured if m.status != "ok")
    return f"the wrapper around a no-op did not run: {bad.error or bad.status}"


def note(
    cost: dict[str, Any], variant: str, baseline: str, comparison: dict[str, Any], metric: str
) -> str | None:
    """The line a report prints under a verdict of `variant` (vs `baseline`) on a time metric: the wrapper's
    cost here, and whether the verdict's difference lies within it."""
    if metric not in TIME_METRICS:
        return None
    wrap = " ".join(cost.get("wrap") or [])
    if cost.get("error"):
        return f"{variant}'s wrap `{wrap}`: its own cost could not be measured ({cost['error']})"
    med, low, high = cost["median_s"], cost["ci_low_s"], cost["ci_high_s"]
    ci = "" if math.isnan(low) else f" [{1e3 * low:.2f}, {1e3 * high:.2f}]"
    head = (f"{variant}'s wrap `{wrap}` costs {1e3 * med:.2f} ms{ci} per trial on this machine (around a no-op, "
            f"{cost['pairs']} pairs; {baseline} has no such process)")  # fmt: skip
    diff = _difference_s(comparison)
    reach = max(abs(med), abs(high) if not math.isnan(high) else 0.0)
    if diff is None or metric != "wall_s":
        return head
    if abs(diff) <= reach:
        return (f"{head} — the difference ({1e3 * diff:+.2f} ms) is within the wrapper's own cost: "
                "it may be the wrapper, not the change")  # fmt: skip
    return f"{head}; the difference ({1e3 * diff:+.2f} ms) is beyond it"


def _difference_s(comparison: dict[str, Any]) -> float | None:
    """other − baseline in seconds, from a stored comparison."""
    value = comparison.get("difference")
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None
