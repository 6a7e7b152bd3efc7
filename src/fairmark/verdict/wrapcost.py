"""The line a verdict carries on a time metric of a variant with its own `wrap`: what the wrapper cost on this
machine (measured by run/prerun/wrapcost.py before the first trial, stored in the run's options as wrap_costs), and
whether the verdict's difference lies within it (then the difference may be the wrapper, not the change)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from fairmark.verdict.compare import Comparison
from fairmark.verdict.record import Verdict

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONObject

# The metrics a wrapper's process enters: fairmark's own clock and rusage of the trial's tree. A tool's own
# figures (MB/s, tps) are measured inside the tool and do not include the wrapper's start.
TIME_METRICS = ("wall_s", "cpu_s", "user_s", "sys_s")


def note(cost: JSONObject, variant: str, baseline: str, comparison: Comparison, metric: str) -> str | None:
    """The line a report prints under a verdict of `variant` (vs `baseline`) on a time metric: the wrapper's
    cost here, and whether the verdict's difference lies within it."""
    if metric not in TIME_METRICS:
        return None
    argv = cost.get("wrap")
    wrap = " ".join(str(w) for w in argv) if isinstance(argv, list) else ""
    if cost.get("error"):
        return f"{variant}'s wrap `{wrap}`: its own cost could not be measured ({cost['error']})"
    med, low, high = _seconds(cost, "median_s"), _seconds(cost, "ci_low_s"), _seconds(cost, "ci_high_s")
    ci = "" if math.isnan(low) else f" [{1e3 * low:.2f}, {1e3 * high:.2f}]"
    head = (
        f"{variant}'s wrap `{wrap}` costs {1e3 * med:.2f} ms{ci} per trial on this machine (around a no-op, "
        f"{cost['pairs']} pairs; {baseline} has no such process)"
    )
    diff = _difference_s(comparison)
    reach = max(abs(med), abs(high) if not math.isnan(high) else 0.0)
    if diff is None or metric != "wall_s":
        return head
    if abs(diff) <= reach:
        return (
            f"{head} — the difference ({1e3 * diff:+.2f} ms) is within the wrapper's own cost: "
            "it may be the wrapper, not the change"
        )
    return f"{head}; the difference ({1e3 * diff:+.2f} ms) is beyond it"


def _seconds(cost: JSONObject, key: str) -> float:
    """A time run/prerun/wrapcost.py measured (nan: none, e.g. no interval from too few pairs)."""
    value = cost.get(key)
    return float(value) if isinstance(value, int | float) else math.nan


def _difference_s(comparison: Comparison) -> float | None:
    """other − baseline in seconds."""
    value = comparison.difference
    return float(value) if math.isfinite(value) else None


def with_wrap_costs(verdicts: tuple[Verdict, ...], costs: Mapping[str, JSONObject]) -> tuple[Verdict, ...]:
    """Beside each time verdict of a variant with its own `wrap`: what the wrapper costs on this machine (measured
    around a no-op before the run), flagged when the difference lies within it (issue 11 item 1)."""
    out = []
    for v in verdicts:
        cost = costs.get(v.variant)
        text = note(cost, v.variant, v.baseline, v.comparison, v.metric) if cost else None
        out.append(replace(v, wrap_cost=cost | {"note": text}) if cost and text else v)
    return tuple(out)
