"""The read model of a stored run: everything a report shows, computed from the store alone.

Reports (terminal, text, HTML, exports) read only this, so a report can be made later, elsewhere, from an
imported bundle. Verdicts compare each variant's cell with the baseline variant's cell of the same group
(workload × sweep point) on the workload's declared metrics; Benjamini-Hochberg controls the false discovery
rate across all comparisons of the run.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from fairmark.plan.metric import MetricSpec
from fairmark.report.failures import FailureRate, failure_rates
from fairmark.stats import describe, format_value, sample_warnings
from fairmark.stats.judge import MIN_VALUES, enough
from fairmark.stats.scaling import curve_shape, efficiency_applies, shape_summary
from fairmark.store.db import RunRecord, Store
from fairmark.store.records import (
    LEGACY_RSS,
    ArtifactRow,
    CellRecord,
    FindingRow,
    JSONObject,
    JSONValue,
    Point,
    TrialRecord,
    loops_text,
)
from fairmark.store.schema import LOOPS_CALIBRATION
from fairmark.verdict.record import Verdict as Verdict
from fairmark.verdict.run import RunVerdicts, run_verdicts
from fairmark.verdict.values import MeasuredCell


@dataclass(frozen=True)
class CellReport:
    """A stored cell with its trials and what they measured, as every report reads it."""

    measured: MeasuredCell
    values: dict[str, list[float]]  # metric → values of ok, measured (non-warm-up) trials, in trial order
    rounds: dict[str, list[int]]  # metric → the round of each of those values (pairs cells by round)
    summaries: dict[str, dict[str, Any]]
    warnings: tuple[str, ...]
    boots: dict[str, list[str | None]] = field(
        default_factory=dict
    )  # metric → the boot of each of those values
    loops_note: str | None = (
        None  # a workload with loops: the count each trial was handed (and its calibration)
    )

    @property
    def record(self) -> CellRecord:
        return self.measured.cell

    @property
    def trials(self) -> tuple[TrialRecord, ...]:
        return self.measured.trials

    @property
    def samples(self) -> Mapping[str, Mapping[str, float]]:
        """trial id → metric → value, for every trial of the cell."""
        return self.measured.samples

    @property
    def id(self) -> int:
        return self.record.id

    @property
    def key(self) -> str:
        return self.record.key

    @property
    def group(self) -> str:
        return self.record.group

    @property
    def workload(self) -> str:
        return self.record.workload

    @property
    def variant(self) -> str:
        return self.record.variant

    @property
    def point(self) -> Point:
        return self.record.point

    @property
    def status(self) -> str:
        return self.record.status

    @property
    def stop_reason(self) -> str | None:
        return self.record.stop_reason

    @property
    def primary_metric(self) -> str:
        return self.record.primary_metric

    @property
    def metrics(self) -> tuple[MetricSpec, ...]:
        return self.record.metrics

    @property
    def command(self) -> tuple[str, ...] | None:
        return self.record.command

    @property
    def params(self) -> Mapping[str, JSONValue] | None:
        return self.record.params

    @property
    def labels(self) -> Mapping[str, str] | None:
        return self.record.labels

    @property
    def n_ok(self) -> int:
        return sum(1 for t in self.trials if t.measured)

    @property
    def n_failed(self) -> int:
        return sum(1 for t in self.trials if t.status != "ok")

    def spec(self, metric: str) -> MetricSpec:
        return self.record.spec(metric)

    @property
    def verdict_metrics(self) -> tuple[str, ...]:
        """Declared metrics get verdicts; the executor's built-ins (always recorded) only when declared."""
        return self.record.verdict_metrics


@dataclass(frozen=True)
class ScalingPoint:
    value: Any
    n: int
    mean: float
    ci_half_width: float
    speedup: float  # mean ÷ first point's mean, oriented so that > 1 is better
    efficiency: float | None  # speedup ÷ (value ÷ first value) for numeric sweeps


@dataclass(frozen=True)
class Scaling:
    workload: str
    variant: str
    parameter: str
    metric: str
    unit: str
    points: tuple[ScalingPoint, ...]
    peak: Any  # the proven peak's sweep value: inside the sweep, a point before and one after it proven worse
    declines_after_peak: bool  # a later point proven worse than the best (Holm across all pairs)
    best: Any = None  # the sweep value with the best mean (proven or not)
    flat_pct: float | None = None  # "flat within ±x%": no two points differ significantly
    shape: str = ""  # the shape in words (stats.scaling.shape_summary)
    rises_to_end: bool = False  # the best is the last point, proven better than an earlier one

    @property
    def summary(self) -> str:
        """The curve's shape in words, claiming only what the tests proved."""
        return self.shape

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "variant": self.variant,
            "parameter": self.parameter,
            "metric": self.metric,
            "unit": self.unit,
            "peak": self.peak,
            "declines_after_peak": self.declines_after_peak,
            "best": self.best,
            "flat_pct": self.flat_pct,
            "rises_to_end": self.rises_to_end,
            "summary": self.summary,
            "points": [vars(p) for p in self.points],
        }


class ArtifactSource(Protocol):
    """What a run's view reads after it was loaded: the run's artifacts (monitor series, profiles, snapshots —
    most of a run's bytes, read only by the section that shows them, and a series at a time where a section
    keeps a part of each). The view holds this, not a Store: it cannot reach another run, query or write."""

    def artifacts(self, kind: str | None = None) -> list[ArtifactRow]: ...
    def iter_artifacts(self, kind: str) -> Iterator[ArtifactRow]: ...


@dataclass(frozen=True)
class StoredArtifacts:
    """A stored run's artifacts (load_report's ArtifactSource)."""

    store: Store = field(repr=False)
    run_id: str

    def artifacts(self, kind: str | None = None) -> list[ArtifactRow]:
        return self.store.artifacts(self.run_id, kind)

    def iter_artifacts(self, kind: str) -> Iterator[ArtifactRow]:
        return self.store.iter_artifacts(self.run_id, kind)


@dataclass(frozen=True)
class RunReport:
    run: RunRecord
    cells: tuple[CellReport, ...]
    verdicts: tuple[Verdict, ...]
    findings: tuple[FindingRow, ...]
    scaling: tuple[Scaling, ...]
    confidence: float
    baseline: str
    source: ArtifactSource = field(repr=False, compare=False)  # the run's artifacts, read by the sections
    failures: tuple[FailureRate, ...] = ()  # failure rates of the workloads that had failures
    spreads: tuple[dict[str, Any], ...] = ()  # spread verdicts, when the plan asked ([run] spread = true)

    def artifacts(self, kind: str | None = None) -> list[ArtifactRow]:
        return self.source.artifacts(kind)

    @property
    def risk_note(self) -> str | None:
        """What --accept-risk overrode: errors only when the doctor found some (it is also passed just to run
        on a busy machine, where a banner claiming errors would not be true)."""
        if not self.run.accept_risk:
            return None
        errors = [f for f in self.findings if f.get("severity") == "error"]
        if errors:
            titles = "; ".join(sorted({str(f.get("title") or f.get("finding_id")) for f in errors}))
            return (
                f"RUN WITH --accept-risk: the doctor found errors that can invalidate these numbers: {titles}"
            )
        return "RUN WITH --accept-risk: the doctor found no errors before this run (its warnings are below)"

    @property
    def rerun_note(self) -> str | None:
        """Which run this one re-ran from its bundle (`fairmark run BUNDLE.json`), and how to hold them side by
        side."""
        r = (self.run.options or {}).get("rerun_of")
        if not isinstance(r, dict) or not r.get("run_id"):
            return None
        about = [
            f"commit {r['commit']}" if r.get("commit") else "",
            f"host {r['hostname']}" if r.get("hostname") else "",
        ]
        about += [
            f"fairmark {r['fairmark_version']}" if r.get("fairmark_version") else "",
            f"started {str(r['started_at'])[:19].replace('T', ' ')}" if r.get("started_at") else "",
        ]
        facts = ", ".join(a for a in about if a)
        return (
            f"re-run of run {r['run_id']}"
            + (f" ({facts})" if facts else "")
            + f" from its bundle {r.get('bundle')}; "
            f"`fairmark compare-runs {str(r['run_id'])[:8]} {self.run.id[:8]}` holds the two side by side"
        )

    @property
    def profiled_note(self) -> str | None:
        """Which trials are which, when the run had profilers attached."""
        n = sum(t.profiled for c in self.cells for t in c.trials)
        if not n:
            return None
        measured = sum(c.n_ok for c in self.cells)
        return (
            f"profiled trials: {n} extra trial(s) with profilers attached, run after the measured rounds and kept "
            f"apart — the profiles come from them; the {measured} measured trial(s) ran without profilers and are "
            "the only ones in the tables, verdicts and the regression gate"
        )

    @property
    def rss_note(self) -> str | None:
        """Said wherever this run's max_rss_kib is shown or exported when its trials stored fairmark's own memory
        there (before schema 9: `TrialRecord.legacy_rss`); `fairmark history` leaves those values out."""
        n = sum(1 for c in self.cells for t in c.trials if t.measured and t.legacy_rss)
        if not n or not any(c.values.get("max_rss_kib") for c in self.cells):
            return None
        return f"this run's {LEGACY_RSS} ({n} measured trial(s); `fairmark history` leaves them out)"

    def groups(self) -> dict[str, list[CellReport]]:
        out: dict[str, list[CellReport]] = defaultdict(list)
        for c in self.cells:
            out[c.group].append(c)
        return dict(out)


class RunArtifacts:
    """A run's artifacts grouped by cell: of the measured (non-warm-up) trials, and the profiles of the
    profiled trials (extra trials kept apart from the measured ones)."""

    def __init__(self, report: RunReport):
        measured = {t.id for c in report.cells for t in c.trials if not t.warmup or t.profiled}
        self.by_cell: dict[str, dict[str, list[ArtifactRow]]] = defaultdict(lambda: defaultdict(list))
        for a in report.artifacts():
            if a["trial_id"] in measured:
                self.by_cell[a["cell_key"] or ""][f"{a['kind']}/{a['name']}"].append(a)

    def entries(self, cell_key: str, kind_name: str) -> list[ArtifactRow]:
        """The artifacts themselves (with their trial_id), in the order `data` gives their contents."""
        return list(self.by_cell[cell_key][kind_name])

    def data(self, cell_key: str, kind_name: str) -> list[Any]:
        return [a["data"] if a["data"] is not None else a["text"] for a in self.by_cell[cell_key][kind_name]]


# A trial's measurement as reports and exports show it (the CSV export writes exactly these columns).
TRIAL_FIELDS = (
    "seq",
    "round",
    "warmup",
    "status",
    "wall_s",
    "user_s",
    "sys_s",
    "max_rss_kib",
    "max_rss_method",  # None with a max_rss_kib: fairmark's own memory (records.LEGACY_RSS)
    "exit_code",
    "signal",
    "error",
    "host",
    "boot_id",
)


def trial_dict(t: TrialRecord, samples: Mapping[str, float]) -> dict[str, Any]:
    """A trial as `--json` shows it: its id and start, its measurement (TRIAL_FIELDS, in their order), argv,
    samples and output tails. Written out (tests/test_report_trial_json.py holds it to TRIAL_FIELDS): a dict
    display is half the time of reading the fields by name, and a run's document holds every trial."""
    return {
        "id": t.id,
        "started_at": t.started_at.isoformat(),
        "seq": t.seq,
        "round": t.round,
        "warmup": t.warmup,
        "status": t.status,
        "wall_s": t.wall_s,
        "user_s": t.user_s,
        "sys_s": t.sys_s,
        "max_rss_kib": t.max_rss_kib,
        "max_rss_method": t.max_rss_method,
        "exit_code": t.exit_code,
        "signal": t.signal,
        "error": t.error,
        "host": t.host,
        "boot_id": t.boot_id,
        "profiled": t.profiled,
        "argv": list(t.argv) if t.argv is not None else None,
        "samples": dict(samples),
        "stdout_tail": t.stdout_tail,
        "stderr_tail": t.stderr_tail,
    }


def load_report(store: Store, run_ref: str, judged: RunVerdicts | None = None) -> RunReport:
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
    from fairmark.stats.spread import compare_spread

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
                names=(base.variant, other.variant),
            )
            if v is not None:
                head: JSONObject = {
                    "group": group,
                    "metric": metric,
                    "baseline": base.variant,
                    "variant": other.variant,
                }
                out.append(head | v.to_dict())
    return tuple(out)


# Units of metrics that count rare events per trial (kernel events, OOM kills): Poisson, not normal.
COUNT_UNITS = frozenset({"events", "kills"})


def _summary(values: list[float], unit: str, confidence: float) -> dict[str, Any]:
    """describe(); for a count of rare events the exact Poisson interval of the mean count per trial instead of
    the t-interval, which goes below zero ("0.33 ± 0.9 events") and has no upper bound for all-zero counts."""
    s = describe(values, confidence).to_dict()
    if unit in COUNT_UNITS and all(v >= 0 and float(v).is_integer() for v in values):
        from fairmark.stats.rates import poisson_ci

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
    elif len(primary) < 6:
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
