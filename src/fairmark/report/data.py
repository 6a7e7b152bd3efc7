"""The read model of a stored run: everything a report shows, computed from the store alone (report/load.py
makes it; this module holds no Store and imports none).

Reports (terminal, text, HTML, exports) read only this, so a report can be made later, elsewhere, from an
imported bundle. Verdicts compare each variant's cell with the baseline variant's cell of the same group
(workload × sweep point) on the workload's declared metrics; Benjamini-Hochberg controls the false discovery
rate across all comparisons of the run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fairmark.plan.metric import MetricSpec
from fairmark.store.records import LEGACY_RSS, ArtifactRow, CellRecord, FindingRow, Point, TrialRecord
from fairmark.verdict.record import Verdict as Verdict
from fairmark.verdict.values import MeasuredCell

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONValue
    from fairmark.report.failures import FailureRate
    from fairmark.store.db import RunRecord


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
        """Failed trials, warm-ups included; not the profiled ones (never counted: their own line says them)."""
        return sum(1 for t in self.trials if t.status != "ok" and not t.profiled)

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
    shape: str = ""  # the shape in words (report/shape.shape_summary)
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
        # a failed profiled trial's profile is of the failure, not of the workload: it is left out
        measured = {
            t.id for c in report.cells for t in c.trials if not t.warmup or (t.profiled and t.status == "ok")
        }
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
