"""Stability verdicts (workloads whose metrics include `kernel_events`, i.e. the stability tool): per variant,
minutes survived, kernel events by kind with their first lines and times, whether the host stayed reachable;
each variant's event rate against the baseline's with an exact Poisson rate-ratio CI (stats/rates.py)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from fairmark.console import console
from fairmark.report.data import CellReport, RunReport
from fairmark.report.section import Context, Section
from fairmark.stats.rates import RateComparison, compare_rates, poisson_ci
from fairmark.store.events import events_in

# What the stability line says with its exact Poisson interval: a cell's other-metrics line leaves it out (it
# showed "events_per_min 0 ± 0" beside the line's right "[0, 4.9]")
SHOWN = frozenset({"events_per_min"})


def kernel_events(r: RunReport) -> list[dict[str, Any]]:
    """Every kernel event a watch reported, with where it happened (`kernel_events` in `run --json`)."""
    return [
        {"workload": c.workload, "variant": c.variant, "trial": t.seq} | e
        for c in r.cells
        for t in c.trials
        if not t.warmup
        for e in events_in(t.stderr_tail or "")
    ]


def _verdict(c: CellReport) -> dict[str, Any]:
    events = [e for t in c.trials if not t.warmup for e in events_in(t.stderr_tail or "")]
    events = [e for e in events if e["kind"] != "oom_kill_bounded"]
    measured = [t for t in c.trials if not t.warmup]
    return {
        "workload": c.workload,
        "variant": c.variant,
        "trials": len(measured),
        "failed": sum(t.status != "ok" for t in measured),
        "minutes_survived": sum(c.values.get("survived_min", [])),
        "kernel_events": int(sum(c.values.get("kernel_events", []))),
        # Counted from the per-kind metrics: the stored stderr tail carries only the last events of a flood.
        "by_kind": {
            k.removeprefix("events_"): int(n)
            for k, v in c.values.items()
            if k.startswith("events_") and k != "events_per_min" and (n := sum(v))
        }
        or dict(Counter(e["kind"] for e in events)),
        "first_lines": [f"{e['time']} {e['kind']}: {e['text']}" for e in events[:5]],
        "host_reachable": all(v == 1 for v in c.values.get("host_reachable", [])),
    }


def rate_sentence(c: RateComparison, unit: str = "min") -> str:
    """The two event rates compared, in words (stats/rates.py computes the numbers)."""
    head = f"A {c.events_a} in {c.exposure_a:g} {unit}, B {c.events_b} in {c.exposure_b:g} {unit}"
    if c.ratio is None:
        return f"{head}: no events in either, the rates cannot be told apart (p = 1)"
    high = "∞" if math.isinf(c.ci_high) else f"{c.ci_high:.3g}"
    return f"{head}: rate ratio A/B {c.ratio:.3g}, {c.confidence:g}% CI [{c.ci_low:.3g}, {high}], p = {c.p_value:.3g}"


def _with_rate(v: dict[str, Any], confidence: float) -> dict[str, Any]:
    """Events per minute survived with its exact Poisson interval: 0 events still bound the rate from above."""
    minutes = v["minutes_survived"]
    if not minutes:
        return v
    low, high = poisson_ci(v["kernel_events"], minutes, confidence)
    return v | {"events_per_min": v["kernel_events"] / minutes, "events_per_min_ci": [low, high]}


def stability(r: RunReport) -> list[dict[str, Any]]:
    cells = [c for c in r.cells if "kernel_events" in c.values]
    out = [_with_rate(_verdict(c), r.confidence) for c in cells]
    base = {(v["workload"]): v for v in out if v["variant"] == r.baseline}
    for v in out:
        b = base.get(v["workload"])
        if b is None or v is b or not (v["minutes_survived"] and b["minutes_survived"]):
            continue
        cmp = compare_rates(
            v["kernel_events"], v["minutes_survived"], b["kernel_events"], b["minutes_survived"], r.confidence
        )
        v["vs_baseline"] = {
            "ratio": cmp.ratio,
            "ci": [cmp.ci_low, cmp.ci_high],
            "p_value": cmp.p_value,
            "sentence": rate_sentence(cmp),
        }
    return out


def lines(r: RunReport) -> list[str]:
    """The verdicts in words, for `show`."""
    text = []
    for v in stability(r):
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(v["by_kind"].items())) or "none"
        rate = ""
        if "events_per_min_ci" in v:
            low, high = v["events_per_min_ci"]
            rate = (
                f", {v['events_per_min']:.2g}/min [{low:.2g}, {high:.2g}] ({r.confidence:g}% exact Poisson)"
            )
        text.append(
            f"stability {v['workload']}/{v['variant']}: survived {v['minutes_survived']:.1f} min over "
            f"{v['trials']} trial(s) ({v['failed']} failed), {v['kernel_events']} kernel event(s) ({kinds}){rate}, "
            f"host {'reachable' if v['host_reachable'] else 'NOT reachable'} after every trial"
        )
        text += [f"    {line}" for line in v["first_lines"]]
        if "vs_baseline" in v:
            text.append(f"    event rate vs {r.baseline}: {v['vs_baseline']['sentence']}")
    return text


def _terminal(r: RunReport, _: Context) -> None:
    for line in lines(r):
        console.text(line)


def _json(r: RunReport, _: Context) -> dict[str, Any]:
    """Only for runs with a stability workload."""
    if not any("kernel_events" in c.values for c in r.cells):
        return {}
    return {"kernel_events": kernel_events(r), "stability": stability(r)}


SECTION = Section("stability", terminal=_terminal, json=_json, html=lambda r, _: lines(r))
