"""A stored run's view (report/data.RunReport), made from the store: its cells, verdicts, findings and the
curves of its sweeps, computed once; its artifacts are read later, by the sections that show them, through a
reader of this run alone (StoredArtifacts). The view itself holds no Store: every renderer reads the view."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fairmark.report.data import CellReport, RunReport, Scaling, ScalingPoint
from fairmark.report.failures import SPREAD_METHOD, failure_rates, spread_sentence
from fairmark.report.samples import sample_warnings
from fairmark.report.shape import shape_summary
from fairmark.stats import describe, format_value
from fairmark.stats.rates import poisson_ci
from fairmark.stats.scaling import curve_shape, efficiency_applies
from fairmark.stats.spread import compare_spread
from fairmark.store.base import LOOPS_CALIBRATION
from fairmark.store.records import ArtifactRow, RunReader, loops_text
from fairmark.verdict.judge import MIN_VALUES, enough
from fairmark.verdict.run import RunVerdicts, run_verdicts
from fairmark.verdict.values import MeasuredCell

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONObject


@dataclass(frozen=True)
class StoredArtifacts:
    """A stored run's artifacts (the view's ArtifactSource): this run's, read-only."""

    store: RunReader = field(repr=False)
    run_id: str

    def artifacts(self, kind: str | None = None) -> list[ArtifactRow]:
        return self.store.artifacts(self.run_id, kind)

    def iter_artifacts(self, kind: str) -> Iterator[ArtifactRow]:
        return self.store.iter_artifacts(self.run_id, kind)


def load_report(store: RunReader, run_ref: str, judged: RunVerdicts | None = None) -> RunReport:
    """The run's read model; `judged`: its cells and verdicts when the caller has them already (assemble.RunResult)."""
    judged = judged or run_verdicts(store, run_ref)
    run, design = judged.run, judged.design
    calibrations: dict[str, Any] = {}
    if any(c.cell.loops is not None for c in judged.cells):
        arts = store.artifacts(run.id, LOOPS_CALIBRATION)
        calibrations = {a["cell_key"]: a["data"] for a in arts if a["cell_key"] is not None}
    cells = tuple(_cell(c, design.confidence, calibrations.get(c.cell.key)) for c in judged.cells)
    policy = (run.options or {}).get("policy", {})
    return RunReport(
        run=run,
        cells=cells,
        verdicts=judged.verdicts,
        findings=tuple(store.findings(run.id)),
        scaling=_scaling(cells, design.confidence),
        confidence=design.confidence,
        baseline=design.baseline,
        source=StoredArtifacts(store, run.id),
        failures=failure_rates(cells, design.confidence),
        spreads=_spreads(cells, design.baseline, design.confidence) if policy.get("spread") else (),
    )


def _spreads(cells: tuple[CellReport, ...], baseline: str, confidence: float) -> tuple[dict[str, Any], ...]:
    """Each group's variants against its baseline cell: the spread of the primary metric."""
    by_group: dict[str, list[CellReport]] = defaultdict(list)
    for c in cells:
        by_group[c.group].append(c)
    out = []
    for group, members in by_group.items():
        base = next((c for c in members if c.variant == baseline), members[0])
        metric = base.primary_metric
        for other in (c for c in members if c is not base):
            v = compare_spread(
                base.values.get(metric, []),
                other.values.get(metric, []),
                confidence=confidence,
            )
            if v is not None:
                head: JSONObject = {
                    "group": group,
                    "metric": metric,
                    "baseline": base.variant,
                    "variant": other.variant,
                }
                numbers = v.to_dict()
                del numbers["confidence_pct"]  # the run's, said once in the report
                words: JSONObject = {
                    "sentence": spread_sentence(v, (base.variant, other.variant)),
                    "method": SPREAD_METHOD,
                }
                out.append(head | numbers | words)
    return tuple(out)


# Units of metrics that count rare events per trial (kernel events, OOM kills): Poisson, not normal.
COUNT_UNITS = frozenset({"events", "kills"})


def _summary(values: list[float], unit: str, confidence: float) -> dict[str, Any]:
    """describe(); for a count of rare events the exact Poisson interval of the mean count per trial instead of
    the t-interval, which goes below zero ("0.33 ± 0.9 events") and has no upper bound for all-zero counts."""
    s = describe(values, confidence).to_dict()
    if unit in COUNT_UNITS and all(v >= 0 and float(v).is_integer() for v in values):
        low, high = poisson_ci(int(sum(values)), len(values), confidence)
        s |= {"ci_low": low, "ci_high": high, "interval": "exact Poisson"}
    return s


def _cell(m: MeasuredCell, confidence: float, calibration: Mapping[str, Any] | None = None) -> CellReport:
    values = {name: list(lv.values) for name, lv in m.metrics.items()}
    units = {spec.name: spec.unit for spec in m.cell.metrics}
    summaries = {
        name: _summary(v, units.get(name, ""), confidence) for name, v in values.items() if len(v) >= 1
    }
    primary = values.get(m.cell.primary_metric, [])
    warnings = (
        tuple(sample_warnings(primary, unit=m.cell.spec(m.cell.primary_metric).unit))
        if enough(primary)
        else ()
    )
    if not enough(primary):
        warnings = (f"only {len(primary)} measured trial(s): no statistics (ministat needs ≥ {MIN_VALUES})",)
    elif len(primary) < 6 and not (m.cell.stop_reason or "").startswith(DECIDED):
        # a decision stop that stopped early did so by design: its reason ("decided after N rounds") says so,
        # and the interval its verdict shows is the sequential one, valid that early
        warnings += (f"only {len(primary)} measured trials: the CI is wide; 6 or more are advised",)
    warnings += _too_short(m)
    loops = m.cell.loops
    return CellReport(
        measured=m,
        values=values,
        rounds={name: list(lv.rounds) for name, lv in m.metrics.items()},
        summaries=summaries,
        warnings=warnings,
        boots={name: list(lv.boots) for name, lv in m.metrics.items()},
        loops_note=loops_text(loops, calibration) if loops is not None else None,
    )


DECIDED = "decided after"  # run.loop.stoprule's reason for a group the decision stop stopped on an answer
SHORT_TRIAL_S = 0.010  # below this a trial measures the clock and the process start more than its work


def _too_short(m: MeasuredCell) -> tuple[str, ...]:
    """A command workload without loops whose fastest trial lasted < SHORT_TRIAL_S: the start of its process
    (milliseconds, CV near 70% on this VM) is most of what was measured, and a verdict on it says little. The
    fastest, not the median: on a loaded machine a 1 ms trial waits for a CPU for tens of milliseconds, and its
    median says more about the neighbours than about the work."""
    walls = [t.wall_s for t in m.trials if t.measured and t.wall_s is not None]
    if m.cell.loops is not None or m.cell.command is None or not walls:
        return ()
    fastest = min(walls)
    if fastest >= SHORT_TRIAL_S:
        return ()
    return (
        f"its fastest trial lasted {format_value(fastest, unit='s')} (median {format_value(statistics.median(walls), unit='s')}): "
        "too short for the clock and the process start, which vary by more than such a trial's work — let the "
        'command repeat its operation: loops = "auto" (docs/plan.md)',
    )


def _scaling(cells: tuple[CellReport, ...], confidence: float) -> tuple[Scaling, ...]:
    series: dict[tuple[str, str, str], list[CellReport]] = defaultdict(list)
    for c in cells:
        if len(c.point) == 1:  # a curve needs exactly one swept parameter
            series[(c.workload, c.variant, c.point[0][0])].append(c)
    out = []
    for (workload, variant, param), cells_of_curve in series.items():
        members = [c for c in cells_of_curve if len(c.values.get(c.primary_metric, [])) >= 2]
        if len(members) < 2:
            continue
        after = cells_of_curve[cells_of_curve.index(members[-1]) + 1 :]  # the sweep goes on, unmeasured
        beyond = ", ".join(str(c.point[0][1]) for c in after)
        metric = members[0].primary_metric
        spec = members[0].spec(metric)
        higher = spec.better == "higher"
        first = describe(members[0].values[metric], confidence)
        x0 = members[0].point[0][1]
        pts = [_scaling_point(c, metric, confidence, first.mean, x0, higher) for c in members]
        shape = curve_shape([c.values[metric] for c in members], higher=higher, confidence=confidence)
        peak = pts[shape.peak].value if shape.peak is not None else None
        words = shape_summary(shape, param, [p.value for p in pts], [p.mean for p in pts], beyond=beyond)
        out.append(
            Scaling(
                workload=workload,
                variant=variant,
                parameter=param,
                metric=metric,
                unit=spec.unit,
                points=tuple(pts),
                peak=peak,
                declines_after_peak=shape.declines_after_peak,
                best=pts[shape.best].value,
                flat_pct=shape.flat_pct,
                shape=words,
                rises_to_end=shape.rises_to_end,
            )
        )
    return tuple(out)


def _scaling_point(c: CellReport, metric: str, confidence: float, first: float, x0: Any, higher: bool) -> Any:
    """A point of a curve: its mean ± CI, speedup over the first point, and — for a CPU or thread sweep only —
    efficiency (speedup ÷ the parameter's ratio; meaningless for a load sweep such as connections)."""
    s = describe(c.values[metric], confidence)
    speedup = (s.mean / first if higher else first / s.mean) if first and s.mean else math.nan
    x = c.point[0][1]
    numeric = isinstance(x, int | float) and isinstance(x0, int | float) and x0
    eff = speedup / (x / x0) if numeric and efficiency_applies(c.point[0][0]) else None
    return ScalingPoint(x, s.n, s.mean, s.ci_half_width, speedup, eff)
