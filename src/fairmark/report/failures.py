"""Failure as a result (seed 004: "frequently able to run at 3000 connections, but not consistently"): the
failure rate of every cell of a workload that had failures, with its Wilson interval, and for a sweep the
point where errors start. Computed from the stored trials only; warm-up trials are not counted."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FailureRate:
    workload: str
    variant: str
    point: tuple[tuple[str, Any], ...]
    failed: int
    trials: int  # measured (non-warm-up) trials, failed ones included
    low: float  # Wilson interval of the failure probability
    high: float

    @property
    def rate(self) -> float:
        return self.failed / self.trials if self.trials else 0.0

    @property
    def sentence(self) -> str:
        where = ",".join(f"{k}={v}" for k, v in self.point)
        name = f"{self.workload}{f'[{where}]' if where else ''}/{self.variant}"
        return (
            f"{name}: {self.failed} of {self.trials} trials failed ({100 * self.rate:.0f}%; "
            f"Wilson CI {100 * self.low:.0f}–{100 * self.high:.0f}%)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "variant": self.variant,
            "point": [list(p) for p in self.point],
            "failed": self.failed,
            "trials": self.trials,
            "rate": self.rate,
            "ci_low": self.low,
            "ci_high": self.high,
            "sentence": self.sentence,
        }


def wilson(failed: int, trials: int, confidence: float) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (good coverage at small n and at 0 or n failures)."""
    if trials == 0:
        return 0.0, 1.0
    from scipy.stats import binomtest

    ci = binomtest(failed, trials).proportion_ci(confidence / 100.0, method="wilson")
    return float(ci.low), float(ci.high)


def failure_rates(cells: Iterable[Any], confidence: float) -> tuple[FailureRate, ...]:
    """Every cell of each workload in which some measured trial failed (the cells without failures too: they
    show where the errors are not)."""
    cells = list(cells)
    counts = []
    for c in cells:
        measured = [t for t in c.trials if not t["warmup"]]
        counts.append((c, sum(t["status"] != "ok" for t in measured), len(measured)))
    failing = {c.workload for c, failed, _ in counts if failed}
    return tuple(
        FailureRate(c.workload, c.variant, c.point, failed, n, *wilson(failed, n, confidence))
        for c, failed, n in counts
        if c.workload in failing
    )


def errors_start(rates: Sequence[FailureRate]) -> list[str]:
    """Per workload, variant and swept parameter: the smallest sweep value at which trials failed."""
    series: dict[tuple[str, str, str], list[FailureRate]] = {}
    for r in rates:
        if len(r.point) == 1:
            series.setdefault((r.workload, r.variant, r.point[0][0]), []).append(r)
    out = []
    for (workload, variant, param), members in series.items():
        members = sorted(members, key=lambda r: _order(r.point[0][1]))
        first = next((r for r in members if r.failed), None)
        if first is None:
            continue
        below = [r for r in members if _order(r.point[0][1]) < _order(first.point[0][1])]
        clean = f" (none in {sum(r.trials for r in below)} trials below it)" if below else ""
        out.append(f"{workload}/{variant}: errors start at {param} = {first.point[0][1]}{clean}")
    return out


def _order(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, int | float) else (1, str(value))


def spread_lines(report: Any) -> list[str]:
    """The spread verdicts a plan asked for ([run] spread = true), one line each."""
    return [
        f"{s['group']} {s['metric']}: {s['variant']} vs {s['baseline']}: {s['sentence']}"
        for s in report.spreads
    ]


def lines(report: Any) -> list[str]:
    """What every report says about failures: one line per cell of a failing workload, then where errors
    start."""
    rates = report.failures
    return [r.sentence for r in rates] + errors_start(rates)
