"""The read model of a stored run: everything a report shows, computed from the store alone.

Reports (terminal, text, HTML, exports) read only this, so a report can be made later, elsewhere, from an
imported bundle. Verdicts compare each variant's cell with the baseline variant's cell of the same group
(workload × sweep point) on the workload's declared metrics; Benjamini-Hochberg controls the false discovery
rate across all comparisons of the run.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from fairmark.plan.model import AA_SUFFIX, BUILTIN_METRICS, aa_twin_name
from fairmark.report.failures import FailureRate, errors_start, failed_cells, failure_rates, run_failure
from fairmark.stats import describe, sample_warnings
from fairmark.stats.judge import MIN_VALUES, Pair, aa_spread, enough, judge
from fairmark.stats.scaling import curve_shape, efficiency_applies, shape_summary
from fairmark.store.db import RunRecord, Store, jsonable_row


@dataclass(frozen=True)
class CellReport:
    id: int
    key: str
    group: str
    workload: str
    variant: str
    point: tuple[tuple[str, Any], ...]
    status: str
    stop_reason: str | None
    primary_metric: str
    metrics: tuple[dict[str, str], ...]  # [{name, unit, better}], primary first
    command: list[str] | None
    params: dict[str, Any] | None
    labels: dict[str, str] | None
    trials: tuple[dict[str, Any], ...]
    values: dict[str, list[float]]  # metric → values of ok, measured (non-warm-up) trials, in trial order
    rounds: dict[str, list[int]]  # metric → the round of each of those values (pairs cells by round)
    summaries: dict[str, dict[str, Any]]
    warnings: tuple[str, ...]
    boots: dict[str, list[Any]] = field(default_factory=dict)  # metric → the boot id of each of those values

    @property
    def n_ok(self) -> int:
        return sum(1 for t in self.trials if t["status"] == "ok" and not t["warmup"])

    @property
    def n_failed(self) -> int:
        return sum(1 for t in self.trials if t["status"] != "ok")

    def spec(self, metric: str) -> dict[str, str]:
        return next(
            (m for m in self.metrics if m["name"] == metric), {"name": metric, "unit": "", "better": "lower"}
        )

    @property
    def verdict_metrics(self) -> list[str]:
        """Declared metrics get verdicts; the executor's built-ins (always recorded) only when declared."""
        return [
            m["name"]
            for m in self.metrics
            if m.get("verdict", m["name"] == self.primary_metric or m["name"] not in BUILTIN_METRICS)
        ]


@dataclass(frozen=True)
class Verdict:
    group: str
    workload: str
    point: tuple[tuple[str, Any], ...]
    metric: str
    unit: str
    baseline: str
    variant: str
    comparison: dict[str, Any]
    fdr_significant: bool

    @property
    def significant(self) -> bool:
        return bool(self.comparison["significant"])

    @property
    def sentence(self) -> str:
        return str(self.comparison["sentence"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "workload": self.workload,
            "point": [list(p) for p in self.point],
            "metric": self.metric,
            "unit": self.unit,
            "baseline": self.baseline,
            "variant": self.variant,
            "fdr_significant": self.fdr_significant,
        } | self.comparison


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


@dataclass(frozen=True)
class RunReport:
    run: RunRecord
    cells: tuple[CellReport, ...]
    verdicts: tuple[Verdict, ...]
    findings: tuple[dict[str, Any], ...]
    scaling: tuple[Scaling, ...]
    confidence: float
    baseline: str
    store: Store = field(repr=False, compare=False)
    failures: tuple[FailureRate, ...] = ()  # failure rates of the workloads that had failures
    spreads: tuple[dict[str, Any], ...] = ()  # spread verdicts, when the plan asked ([run] spread = true)

    def artifacts(self, kind: str | None = None) -> list[dict[str, Any]]:
        return self.store.artifacts(self.run.id, kind)

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
    def profiled_note(self) -> str | None:
        """Which trials are which, when the run had profilers attached."""
        n = sum(bool(t.get("profiled")) for c in self.cells for t in c.trials)
        if not n:
            return None
        measured = sum(c.n_ok for c in self.cells)
        return (
            f"profiled trials: {n} extra trial(s) with profilers attached, run after the measured rounds and kept "
            f"apart — the profiles come from them; the {measured} measured trial(s) ran without profilers and are "
            "the only ones in the tables, verdicts and the regression gate"
        )

    def groups(self) -> dict[str, list[CellReport]]:
        out: dict[str, list[CellReport]] = defaultdict(list)
        for c in self.cells:
            out[c.group].append(c)
        return dict(out)

    def to_dict(self, *, trials: bool = True) -> dict[str, Any]:
        run = self.run.to_dict()
        return (
            {
                "run": run,
                "confidence": self.confidence,
                "baseline": self.baseline,
                "findings": [jsonable_row(f) for f in self.findings],
                "cells": [_cell_dict(c, trials) for c in self.cells],
                "verdicts": [v.to_dict() for v in self.verdicts],
                "scaling": [s.to_dict() for s in self.scaling],
                "profiled_note": self.profiled_note,
                "failures": [f.to_dict() for f in self.failures],
                "failed_cells": [f.to_dict() for f in failed_cells(self.cells)],
                "run_failure": run_failure(self),
                "errors_start": errors_start(self.failures),
                "spread": list(self.spreads),
                "page_cache": _page_cache(self),
            }
            | _stability(self)
            | _hosts(self)
            | _boots(self)
            | _profiles(self)
        )


def _profiles(r: RunReport) -> dict[str, Any]:
    """Runs with profilers: each cell's profiles, their scope and the workload's share of the CPU samples."""
    if not any(str(h).startswith("profile.") for h in (r.run.options or {}).get("hooks") or ()):
        return {}
    from fairmark.report.profiles import cell_json

    arts = RunArtifacts(r)
    cells = [doc for c in r.cells if (doc := cell_json(c.key, c.variant, arts))]
    return {"profiles": cells} if cells else {}


def _page_cache(r: RunReport) -> list[dict[str, Any]]:
    from fairmark.report.pagecache import flags

    return flags(r)


def _stability(r: RunReport) -> dict[str, Any]:
    """Stability runs' kernel events and verdicts (only for runs with a stability workload)."""
    if not any("kernel_events" in c.values for c in r.cells):
        return {}
    from fairmark.report.stability import kernel_events, stability

    return {"kernel_events": kernel_events(r), "stability": stability(r)}


def _hosts(r: RunReport) -> dict[str, Any]:
    """Runs on hosts: the hosts, where each cell ran, how the hosts' environments differ."""
    from fairmark.remote.report import hosts_json

    return hosts_json(r)


def _boots(r: RunReport) -> dict[str, Any]:
    """A boot-variant run's boots, each with what was verified (only for such runs)."""
    from fairmark.report.boots import boot_records

    records = boot_records(r)
    return {"boots": records} if records else {}


class RunArtifacts:
    """A run's artifacts grouped by cell: of the measured (non-warm-up) trials, and the profiles of the
    profiled trials (extra trials kept apart from the measured ones)."""

    def __init__(self, report: RunReport):
        measured = {t["id"] for c in report.cells for t in c.trials if not t["warmup"] or t.get("profiled")}
        self.by_cell: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
        for a in report.artifacts():
            if a["trial_id"] in measured:
                self.by_cell[a["cell_key"]][f"{a['kind']}/{a['name']}"].append(a)

    def entries(self, cell_key: str, kind_name: str) -> list[dict[str, Any]]:
        """The artifacts themselves (with their trial_id), in the order `data` gives their contents."""
        return list(self.by_cell[cell_key][kind_name])

    def data(self, cell_key: str, kind_name: str) -> list[Any]:
        return [a["data"] if a["data"] is not None else a["text"] for a in self.by_cell[cell_key][kind_name]]


def _cell_dict(c: CellReport, trials: bool) -> dict[str, Any]:
    d: dict[str, Any] = {
        "key": c.key,
        "group": c.group,
        "workload": c.workload,
        "variant": c.variant,
        "point": [list(p) for p in c.point],
        "status": c.status,
        "stop_reason": c.stop_reason,
        "primary_metric": c.primary_metric,
        "metrics": list(c.metrics),
        "command": c.command,
        "params": c.params,
        "labels": c.labels,
        "n_ok": c.n_ok,
        "n_failed": c.n_failed,
        "summaries": c.summaries,
        "warnings": list(c.warnings),
        "values": c.values,
    }
    if trials:
        d["trials"] = [_trial_dict(t) for t in c.trials]
    return d


# A trial's measurement as reports and exports show it (the CSV export writes exactly these columns).
TRIAL_FIELDS = (
    "seq", "round", "warmup", "status", "wall_s", "user_s", "sys_s", "max_rss_kib", "exit_code", "signal", "error",
    "host", "boot_id",
)  # fmt: skip


def _trial_dict(t: dict[str, Any]) -> dict[str, Any]:
    keep = ("id", "started_at", *TRIAL_FIELDS, "profiled", "argv", "samples", "stdout_tail", "stderr_tail")
    return jsonable_row({k: t.get(k) for k in keep})


def _group(workload: str, point: list[list[Any]]) -> str:
    return workload + (f"[{','.join(f'{k}={v}' for k, v in point)}]" if point else "")


def load_report(store: Store, run_ref: str) -> RunReport:
    run = store.get_run(run_ref)
    policy = (run.options or {}).get("policy", {})
    confidence = float(policy.get("confidence", 95.0))
    baseline = policy.get("baseline") or run.baseline
    samples_by_trial: dict[str, dict[str, float]] = defaultdict(dict)
    for s in store.samples(run.id):
        samples_by_trial[s["trial_id"]][s["metric"]] = s["value"]
    trials_by_cell: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for t in store.trials(run.id):
        t["samples"] = samples_by_trial.get(t["id"], {})
        trials_by_cell[t["cell_id"]].append(t)
    cells = tuple(_cell(c, trials_by_cell.get(c["id"], []), confidence) for c in store.cells(run.id))
    calibrations = {key: row["data"] for key, row in store.calibrations(run.host_id).items()}
    # A plan with boot variants measured each variant in its own boots: the boot is the verdict's unit.
    by_boot = any((v or {}).get("boot") for v in ((run.options or {}).get("variants") or {}).values())
    verdicts = _verdicts(cells, baseline, confidence, None, calibrations, by_boot)
    verdicts = _with_wrap_costs(verdicts, (run.options or {}).get("wrap_costs") or {})
    return RunReport(
        run=run,
        cells=cells,
        verdicts=verdicts,
        findings=tuple(store.findings(run.id)),
        scaling=_scaling(cells, confidence),
        confidence=confidence,
        baseline=baseline,
        store=store,
        failures=failure_rates(cells, confidence),
        spreads=_spreads(cells, baseline, confidence) if policy.get("spread") else (),
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
            v = compare_spread(base.values.get(metric, []), other.values.get(metric, []),
                               confidence=confidence, names=(base.variant, other.variant))  # fmt: skip
            if v is not None:
                out.append({"group": group, "metric": metric, "baseline": base.variant,
                            "variant": other.variant} | v.to_dict())  # fmt: skip
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


def _cell(c: dict[str, Any], trials: list[dict[str, Any]], confidence: float) -> CellReport:
    metrics = tuple(c["metrics"] or [])
    values: dict[str, list[float]] = {m["name"]: [] for m in metrics}
    rounds: dict[str, list[int]] = {m["name"]: [] for m in metrics}
    boots: dict[str, list[Any]] = {m["name"]: [] for m in metrics}
    for t in trials:
        if t["status"] == "ok" and not t["warmup"]:
            for name, v in t["samples"].items():
                values.setdefault(name, []).append(v)
                rounds.setdefault(name, []).append(t["round"])
                boots.setdefault(name, []).append(t.get("boot_id"))
    units = {m["name"]: m.get("unit", "") for m in metrics}
    summaries = {m: _summary(v, units.get(m, ""), confidence) for m, v in values.items() if len(v) >= 1}
    primary = values.get(c["primary_metric"], [])
    unit = next((m.get("unit") or "" for m in metrics if m["name"] == c["primary_metric"]), "")
    warnings = tuple(sample_warnings(primary, unit=unit)) if enough(primary) else ()
    if not enough(primary):
        warnings = (f"only {len(primary)} measured trial(s): no statistics (ministat needs ≥ {MIN_VALUES})",)
    elif len(primary) < 6:
        warnings += (f"only {len(primary)} measured trials: the CI is wide; 6 or more are advised",)
    point = tuple((k, v) for k, v in c["point"])
    return CellReport(
        id=c["id"],
        key=c["key"],
        group=_group(c["workload"], c["point"]),
        workload=c["workload"],
        variant=c["variant"],
        point=point,
        status=c["status"],
        stop_reason=c["stop_reason"],
        primary_metric=c["primary_metric"],
        metrics=metrics,
        command=c["command"],
        params=c.get("params"),
        labels=c.get("labels"),
        trials=tuple(trials),
        values=values,
        rounds=rounds,
        summaries=summaries,
        warnings=warnings,
        boots=boots,
    )


def _verdicts(
    cells: tuple[CellReport, ...],
    baseline: str,
    confidence: float,
    first_stage: int | None = None,
    calibrations: dict[tuple[str, str], dict[str, Any]] | None = None,
    by_boot: bool = False,
) -> tuple[Verdict, ...]:
    """Each group's variants against its baseline cell on the declared metrics, judged together (FDR across
    the run) by `fairmark.stats.judge`, paired by round (the run's length was set by its first `first_stage`
    rounds), with what `fairmark calibrate` measured on this host; an A/A twin is judged first, as the
    calibration of the others."""
    by_group: dict[str, list[CellReport]] = defaultdict(list)
    for c in cells:
        by_group[c.group].append(c)
    context = (baseline, confidence, first_stage, calibrations or {}, by_boot)
    pairs = [p for members in by_group.values() for p in _group_pairs(members, *context)]
    return tuple(
        Verdict(group=a.group, workload=a.workload, point=a.point, metric=m, unit=a.spec(m)["unit"],
                baseline=a.variant, variant=b.variant, comparison=j.to_dict(), fdr_significant=j.fdr_significant)
        for j in judge(pairs, confidence=confidence)
        for a, b, m in [j.pair.tag]
    )  # fmt: skip


def _with_wrap_costs(verdicts: tuple[Verdict, ...], costs: dict[str, dict[str, Any]]) -> tuple[Verdict, ...]:
    """Beside each time verdict of a variant with its own `wrap`: what the wrapper costs on this machine (measured
    around a no-op before the run), flagged when the difference lies within it (issue 11 item 1)."""
    if not costs:
        return verdicts
    from dataclasses import replace

    from fairmark.report.wrapcost import note

    out = []
    for v in verdicts:
        cost = costs.get(v.variant)
        text = note(cost, v.variant, v.baseline, v.comparison, v.metric) if cost else None
        out.append(replace(v, comparison=v.comparison | {"wrap_cost": cost | {"note": text}}) if text else v)
    return tuple(out)


def _group_pairs(
    members: list[CellReport],
    baseline: str,
    confidence: float,
    first_stage: int | None,
    calibrations: dict[tuple[str, str], dict[str, Any]],
    by_boot: bool = False,
) -> list[Pair]:
    base = next((c for c in members if c.variant == baseline), members[0])
    twin = next((c for c in members if c.variant == aa_twin_name(base.variant)), None)
    others = ([twin] if twin else []) + [c for c in members if c is not base and c is not twin]
    pairs, seen = [], set()
    for metric in base.verdict_metrics:
        # An adapter may declare the same numbers twice (compress_mb_s is compress_mb_s_L1 when one level is
        # run): judge them once, so the FDR count is not inflated by copies.
        fingerprint = tuple(tuple(c.values.get(metric, [])) for c in members)
        if fingerprint in seen:
            continue
        seen.add(fingerprint)
        spec = base.spec(metric)
        aa = (
            aa_spread(base.values.get(metric, []), twin.values.get(metric, []), confidence=confidence,
                      better=spec["better"])
            if twin else None
        )  # fmt: skip
        for other in others:
            pairs.append(
                Pair(base.values.get(metric, []), other.values.get(metric, []), better=spec["better"],
                     unit=spec["unit"], name_baseline=base.variant, name_other=other.variant,
                     aa_percent_half_width=None if other is twin else aa,
                     calibration=other.variant.endswith(AA_SUFFIX), tag=(base, other, metric),
                     rounds=(base.rounds.get(metric, []), other.rounds.get(metric, [])),
                     first_stage=first_stage if first_stage is not None else _first_stage(base, other),
                     host_calibration=None if other is twin else calibrations.get((base.group, metric)),
                     units=(base.boots.get(metric, []), other.boots.get(metric, [])) if by_boot else None)
            )  # fmt: skip
    return pairs


def _first_stage(*cells: CellReport) -> int | None:
    """The first stage the compared cells' length was planned from (their stop reason says so); None when it was
    not chosen from the data (a fixed budget, failures = "measure", boot blocks): then all rounds' spread alone
    decides, without the two-stage rule's cost in power (issue 23 item 12)."""
    from fairmark.stats.stopping import first_stage_of

    stages = {first_stage_of(c.stop_reason) for c in cells}
    return stages.pop() if len(stages) == 1 else None


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
        higher = spec["better"] == "higher"
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
                unit=spec["unit"],
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


def store_verdicts(store: Store, run_id: str) -> RunReport:
    """Compute the run's verdicts, keep them in the store, and return the report they came from."""
    report = load_report(store, run_id)
    store.replace_verdicts(
        run_id,
        [
            {
                "group": v.group,
                "metric": v.metric,
                "baseline": v.baseline,
                "variant": v.variant,
                "significant": v.significant,
                "sentence": v.sentence,
                "data": v.to_dict(),
            }
            for v in report.verdicts
        ],
    )
    return report
