"""A metric's specification, the same record from the plan to the report (kept light: the store and the report
read it without loading the plan's validation)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

Better = Literal["higher", "lower"]


@dataclass(frozen=True)
class MetricSpec:
    """One metric, the same from plan to report: a plan's [[workload.metrics]] (`Metric.spec`), an adapter's
    `metrics`, the built-ins; the store keeps it per cell (`row`) and gives it back (`from_row`)."""

    name: str  # units in names where natural: tps, latency_avg_ms, gbit_s_sent
    unit: str
    better: Better
    description: str = ""
    # Whether the run gives this metric a verdict, as stored with the cell (None: not recorded, a store older
    # than the flag: `CellRecord.verdict_metrics` applies the rule of that time).
    verdict: bool | None = None
    # The same value in every trial by design — zstd's compression ratio of a fixed file, a read-only fio test's
    # write_iops: no "zero spread, suspect a coarse clock" warning when it does not vary (Adapter.constant_metrics)
    constant: bool = False

    def row(self, verdict: bool | None = None) -> dict[str, str | bool]:
        """As a cell row of the store keeps it (`verdict`: the run gives this metric a verdict)."""
        out: dict[str, str | bool] = {"name": self.name, "unit": self.unit, "better": self.better}
        flag = self.verdict if verdict is None else verdict
        if flag is not None:
            out["verdict"] = flag
        if self.constant:
            out["constant"] = True
        return out

    def judged(self, verdict: bool) -> MetricSpec:
        return replace(self, verdict=verdict)

    @classmethod
    def from_row(cls, row: dict[str, object]) -> MetricSpec:
        """A stored cell's metric (validated on import: cli/bundle.py)."""
        better = row.get("better")
        verdict = row.get("verdict")
        return cls(
            name=str(row["name"]),
            unit=str(row.get("unit") or ""),
            better="higher" if better == "higher" else "lower",
            verdict=verdict if isinstance(verdict, bool) else None,
            constant=row.get("constant") is True,
        )


# measured by the executor for every trial
BUILTIN_METRIC_SPECS = (
    MetricSpec("wall_s", "s", "lower"),
    MetricSpec("user_s", "s", "lower"),
    MetricSpec("sys_s", "s", "lower"),
    MetricSpec("cpu_s", "s", "lower"),
    MetricSpec("max_rss_kib", "KiB", "lower"),
)
BUILTIN_METRICS = {m.name: (m.unit, m.better) for m in BUILTIN_METRIC_SPECS}  # name: (unit, better)

# A workload with `loops` (issue 24: microbenchmarks) hands each trial a loop count; the command repeats its
# operation that many times, and these are the built-in times divided by it: the time of one iteration. The
# unit says so ("s/loop": shown as "312 ns/loop"); the whole trial's built-ins above are kept beside them.
LOOP_METRIC_SPECS = (
    MetricSpec("wall_s_per_loop", "s/loop", "lower"),
    MetricSpec("user_s_per_loop", "s/loop", "lower"),
    MetricSpec("sys_s_per_loop", "s/loop", "lower"),
    MetricSpec("cpu_s_per_loop", "s/loop", "lower"),
)
LOOP_METRICS = {m.name: (m.unit, m.better) for m in LOOP_METRIC_SPECS}  # name: (unit, better)
PER_LOOP_SUFFIX = "_per_loop"


def per_loop(values: dict[str, float], loops: int, start_s: float = 0.0) -> dict[str, float]:
    """The per-iteration metrics of a trial that ran `loops` iterations, from its built-in time metrics. `start_s`:
    the CPU time of the process start, where a `loops = "auto"` calibration measured it — taken off the trial's
    CPU time before it is divided, so that cpu_s_per_loop is one iteration's, not one plus the start's share."""
    out = {name: values[name.removesuffix(PER_LOOP_SUFFIX)] / loops for name in LOOP_METRICS}
    if start_s:
        out["cpu_s_per_loop"] = (values["cpu_s"] - start_s) / loops
    return out
