"""One headline for a run on a busy machine (issue 34 item 1): on a shared machine every cell said "CPU saturated"
and a newcomer could not tell a broken tool from a busy machine. Said once, before the tables: what was seen,
what it cost (the change the run's verdicts can detect), and what to do — the per-cell saturation lines go."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from fairmark.report.data import RunReport
from fairmark.stats.digits import detectable_pair
from fairmark.verdict.compare import HUGE_RISE_PCT, detectable_size, fall_text

BUSY_FINDINGS = ("load", "busy-process", "pressure")  # the doctor's rules for other work on the machine
SATURATED = "cpu_saturation"


def busy_headline(r: RunReport, attrs: dict[str, Any], *, tables: bool = True) -> str | None:
    """The headline, or None when neither the doctor nor the monitors saw the machine busy. `tables`: the
    verdicts follow it (without, `run --json`'s stderr: they are in the JSON document, not "below")."""
    seen = {f["finding_id"]: f for f in r.findings if f.get("finding_id") in BUSY_FINDINGS}
    waited = [k for k, a in attrs.items() if a is not None and any(f.key == SATURATED for f in a.flags)]
    if not seen and not waited:
        return None
    # every machine's load, in the gate's order: this machine first when a guest's CPUs are its (run.loop.gate)
    what = list(dict.fromkeys(str(f["evidence"]) for f in r.findings if f.get("finding_id") == "load"))
    what += ["tasks waited for a CPU (pressure stall)"] if "pressure" in seen and not waited else []
    if waited:
        what.append(f"tasks waited for a CPU during {len(waited)} of {len(r.cells)} cell(s)")
    if "busy-process" in seen:
        what.append("another process used the CPU (below)")
    return (
        f"busy machine: {'; '.join(what)}. {_cost(r, tables)}To do: stop the other work and run again; "
        + ("`fairmark doctor` names it, `fairmark calibrate PLAN` says what this machine can detect.")
    )


def _cost(r: RunReport, tables: bool = True) -> str:
    """The change the primary metrics' verdicts could detect (80% power): what the noise cost. A verdict on the
    log scale detects a factor either way, so a large one is a fall and a rise ("-91% or +970%"): "±970%" beside
    a proven -95% read as a contradiction (issue 34)."""
    primary = {c.group: c.primary_metric for c in r.cells}
    pairs = [
        detectable_pair(v.comparison.mde_percent, v.comparison.scale == "log")
        for v in r.verdicts
        if primary.get(v.group) == v.metric and math.isfinite(v.comparison.mde_percent)
    ]
    if not pairs:
        return "The intervals are wider for it. "

    # the digits of the verdicts' own "would detect a change of …" (verdict.compare.detectable_size): the headline
    # said "+79% to +84%" above a verdict's "+80%"; a fall near -100% keeps the digits that say how near
    low, high = min(pairs, key=lambda p: p[1]), max(pairs, key=lambda p: p[1])
    if high[1] >= HUGE_RISE_PCT:
        what = f"changes of {_pair(low)} up to more than ×{HUGE_RISE_PCT / 100 + 1:.0f} either way"
    elif all(f == r for f, r in pairs):
        what = f"changes of {_span(detectable_size(low[1]), detectable_size(high[1]), '±')}"
    else:
        falls = _span(fall_text(*low), fall_text(*high), "-")
        what = f"changes of {falls} or {_span(detectable_size(low[1]), detectable_size(high[1]), '+')}"
    which = "the verdicts below" if tables else "this run's verdicts"
    return f"Cost: {which} detect only {what} (80% power); a quiet machine detects less. "


def _span(low: str, high: str, sign: str) -> str:
    return f"{sign}{low}" + (f" to {sign}{high}" if high != low else "")


def _pair(p: tuple[float, float]) -> str:
    return f"±{detectable_size(p[1])}" if p[0] == p[1] else f"-{fall_text(*p)} or +{detectable_size(p[1])}"


def without_saturation(attrs: dict[str, Any]) -> dict[str, Any]:
    """The cells' attributions without their "CPU saturated" flag: the headline said it once for all."""
    return {
        k: a if a is None else replace(a, flags=tuple(f for f in a.flags if f.key != SATURATED))
        for k, a in attrs.items()
    }
