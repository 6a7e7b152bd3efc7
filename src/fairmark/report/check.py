"""`fairmark check`'s read model: a run against a baseline, judged by the same machinery as a run's variants.

Two kinds of baseline:

* `variant` (or `variant:NAME`, NAME the run's baseline): the run's own interleaved comparison — the verdicts a
  run stores, paired by round. The strongest evidence there is: both sides saw the same machine at the same
  moments.
* `tag:k=v[,k=v]` (the last `last` finished runs with these tags on the run's host) or `run:ID[,ID…]`: other
  runs. The run is then the unit of the verdict (stats.levels): each run's mean is one observation, so the
  run-to-run variance of the baseline — load, boot, layout — is in the verdict, as it must be when the two
  sides were measured at different times. One baseline run claims nothing (no run-to-run variance is known).

A cell is a regression that trips the gate only when it is *proven* worse beyond the threshold: significant
after the Benjamini-Hochberg correction across all the cells checked, and the whole CI of the change beyond
the threshold (a one-sided test of "worse by more than the threshold" at half the level). A significant change
whose CI reaches inside the threshold is shown as a possible regression and does not trip the gate.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from fairmark.errors import InputError
from fairmark.plan.model import AA_SUFFIX
from fairmark.report.data import CellReport, RunReport, load_report
from fairmark.stats.judge import Pair, judge

REGRESSION, POSSIBLE, IMPROVEMENT, UNCHANGED, UNJUDGED = (
    "regression", "possible regression", "improvement", "no change proven", "not judged",
)  # fmt: skip


@dataclass(frozen=True)
class Against:
    kind: str  # "variant" | "tag" | "run"
    tags: dict[str, str] = field(default_factory=dict)
    runs: tuple[str, ...] = ()
    variant: str = ""
    text: str = ""


def parse_against(text: str) -> Against:
    """'variant[:NAME]', 'tag:k=v[,k=v]' or 'run:ID[,ID]' (a bare run id is 'run:ID')."""
    kind, sep, rest = text.partition(":")
    if kind == "variant":
        return Against("variant", variant=rest, text=text)
    if kind == "tag" and sep:
        tags = {}
        for item in filter(None, (p.strip() for p in rest.split(","))):
            k, eq, v = item.partition("=")
            if not eq or not k.strip():
                raise InputError(
                    f"--against {text!r}: {item!r} is not KEY=VALUE", hint="e.g. tag:branch=main"
                )
            tags[k.strip()] = v
        if not tags:
            raise InputError(f"--against {text!r}: no tag given", hint="e.g. tag:branch=main")
        return Against("tag", tags=tags, text=text)
    ids = rest if kind == "run" and sep else text
    runs = tuple(filter(None, (p.strip() for p in ids.split(","))))
    if not runs or (sep and kind != "run"):
        raise InputError(
            f"--against {text!r}: expected variant[:NAME], tag:KEY=VALUE[,KEY=VALUE] or run:ID[,ID]",
            hint="e.g. --against tag:branch=main (the last runs of main on this host)",
        )
    return Against("run", runs=runs, text=text)


@dataclass(frozen=True)
class CheckOptions:
    against: Against
    threshold_pct: float = 3.0
    last: int = 10  # runs in a tag baseline
    any_host: bool = False  # a tag baseline may take runs of other hosts


@dataclass(frozen=True)
class Case:
    """One cell's metric: the verdict and what the gate makes of it."""

    workload: str
    cell: str  # group and variant, e.g. "alloc/B" or "zstd[level=1]/nodebug"
    metric: str
    unit: str
    better: str
    status: str  # REGRESSION | POSSIBLE | IMPROVEMENT | UNCHANGED | UNJUDGED
    sentence: str
    comparison: dict[str, Any] | None
    worse_pct_bound: (
        float | None
    )  # the CI end of the worsening nearest to zero, in % (None: unbounded/unknown)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class CheckResult:
    run_id: str
    hostname: str
    against: str
    baseline_runs: tuple[str, ...]
    design: str
    threshold_pct: float
    confidence: float
    cases: tuple[Case, ...]
    notes: tuple[str, ...] = ()

    @property
    def regressions(self) -> list[Case]:
        return [c for c in self.cases if c.status == REGRESSION]

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run_id, "hostname": self.hostname, "against": self.against,
                "baseline_runs": list(self.baseline_runs), "design": self.design,
                "threshold_pct": self.threshold_pct, "confidence": self.confidence, "failed": self.failed,
                "cases": [c.to_dict() for c in self.cases], "notes": list(self.notes)}  # fmt: skip


def worse_bound_pct(comp: dict[str, Any]) -> float | None:
    """How much worse the other side is at least (the CI end nearest to 'no change'), in % of the baseline."""
    low, high = comp.get("ratio_ci_low"), comp.get("ratio_ci_high")
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return None
    return 100.0 * (low - 1.0) if comp.get("better") == "lower" else 100.0 * (1.0 - high)


def classify(comp: dict[str, Any] | None, fdr_significant: bool, threshold_pct: float) -> str:
    if comp is None:
        return UNJUDGED
    if not (fdr_significant and comp.get("significant")):
        return UNCHANGED
    if comp.get("change") == "better":
        return IMPROVEMENT
    bound = worse_bound_pct(comp)
    return REGRESSION if bound is not None and bound > threshold_pct else POSSIBLE


def check(store: Any, run_ref: str, opts: CheckOptions) -> CheckResult:
    """The run's cells against the baseline, every comparison judged together; nothing is written."""
    report = load_report(store, run_ref)
    if opts.against.kind == "variant":
        return _against_variant(report, opts)
    base_ids = _baseline_ids(store, report, opts)
    return _against_runs(report, [load_report(store, r) for r in base_ids], opts)


def _baseline_ids(store: Any, report: RunReport, opts: CheckOptions) -> list[str]:
    run, a = report.run, opts.against
    if a.kind == "tag":
        ids = store.baseline_runs(
            a.tags, host_id=None if opts.any_host else run.host_id, last=opts.last, exclude=run.id
        )
        if not ids:
            where = "" if opts.any_host else f" on this run's host ({run.hostname or run.host_id[:12]})"
            raise InputError(
                f"no finished run tagged {a.text[4:]}{where} besides {run.id[:8]}: no baseline to check against",
                hint="`fairmark runs --tag KEY=VALUE` lists them; tag baseline runs with `fairmark run --tag`",
            )
        return ids
    ids = [store.get_run(r).id for r in a.runs]
    if run.id in ids:
        raise InputError(f"run {run.id[:8]} is both the run checked and its baseline")
    other_hosts = [r[:8] for r in ids if store.get_run(r).host_id != run.host_id]
    if other_hosts and not opts.any_host:
        raise InputError(
            f"baseline run(s) {', '.join(other_hosts)} ran on another machine than {run.id[:8]}",
            hint="a history never mixes machines unless asked: --any-host",
        )
    return ids


def _against_variant(report: RunReport, opts: CheckOptions) -> CheckResult:
    name = opts.against.variant
    if name and name != report.baseline:
        raise InputError(
            f"--against variant:{name}: the run's baseline variant is {report.baseline!r}; the run's own "
            "verdicts compare every variant with it",
            hint=f"--against variant (or variant:{report.baseline})",
        )
    verdicts = [v for v in report.verdicts if not v.variant.endswith(AA_SUFFIX)]
    cases = tuple(
        _case(
            v.workload,
            f"{v.group}/{v.variant}",
            v.metric,
            v.comparison,
            v.fdr_significant,
            opts.threshold_pct,
        )
        for v in verdicts
    )
    if not cases:  # a gate that checked nothing must not pass silently
        raise InputError(
            f"run {report.run.id[:8]} has no variant besides its baseline {report.baseline!r} to check",
            hint="check it against other runs: --against tag:branch=main (or run:ID)",
        )
    return CheckResult(report.run.id, report.run.hostname, f"variant:{report.baseline}", (),
                       "interleaved in one run, paired by round", opts.threshold_pct, report.confidence, cases)  # fmt: skip


def _case(
    workload: str, cell: str, metric: str, comp: dict[str, Any] | None, fdr: bool, threshold: float
) -> Case:
    status = classify(comp, fdr, threshold)
    unit = (comp or {}).get("unit", "")
    better = (comp or {}).get("better", "")
    sentence = comp["sentence"] if comp else "fewer than 3 measured values on a side: not judged"
    if status == POSSIBLE:
        sentence += f" (not proven worse by more than the {threshold:g}% threshold)"
    return Case(workload, cell, metric, unit, better, status, sentence, comp,
                worse_bound_pct(comp) if comp else None)  # fmt: skip


def _cell_key(c: CellReport, with_variant: bool) -> tuple[str, str, str]:
    return (
        c.workload,
        c.variant if with_variant else "",
        json.dumps([list(p) for p in c.point], default=str),
    )


def _against_runs(report: RunReport, baselines: list[RunReport], opts: CheckOptions) -> CheckResult:
    """Each cell's primary metric: the baseline runs' values against the run's, each run one unit."""
    mine = [c for c in report.cells if not c.variant.endswith(AA_SUFFIX)]
    single = len({c.variant for c in mine}) == 1
    pairs, unmatched = [], []
    for cell in mine:
        metric, spec = cell.primary_metric, cell.spec(cell.primary_metric)
        base_vals, base_units, base_boots = [], [], []
        for b in baselines:
            same = _matching(cell, b, single)
            vals = same.values.get(metric, []) if same else []
            base_vals += vals
            base_units += [b.run.id] * len(vals)
            base_boots += same.boots.get(metric, [None] * len(vals)) if same else []
        if not base_vals:
            unmatched.append(f"{cell.group}/{cell.variant}")
            continue
        vals = cell.values.get(metric, [])
        pairs.append(
            Pair(base_vals, vals, better=spec["better"], unit=spec["unit"], name_baseline="baseline",
                 name_other=report.run.id[:8], tag=(cell, metric),
                 labels={"run": (base_units, [report.run.id] * len(vals)),
                         "boot": (base_boots, cell.boots.get(metric, [None] * len(vals)))})
        )  # fmt: skip
    if not pairs:
        raise InputError(
            f"no cell of run {report.run.id[:8]} was measured in the baseline run(s) "
            f"{', '.join(b.run.id[:8] for b in baselines)}: nothing to check",
            hint="a baseline is runs of the same plan (same workloads, variants and sweep points)",
        )
    judged = {id(j.pair): j for j in judge(pairs, confidence=report.confidence)}
    cases = []
    for p in pairs:
        cell, metric = p.tag  # type: ignore[misc]
        j = judged.get(id(p))
        cases.append(_case(cell.workload, f"{cell.group}/{cell.variant}", metric,
                           j.to_dict() if j else None, bool(j and j.fdr_significant), opts.threshold_pct))  # fmt: skip
    notes = [f"not in any baseline run (not checked): {', '.join(unmatched)}"] if unmatched else []
    if len(baselines) < 2:
        notes.append("one baseline run: its run-to-run variance is unknown, so no verdict can be proven; "
                     "a baseline of several runs (--last) can")  # fmt: skip
    return CheckResult(report.run.id, report.run.hostname, opts.against.text, tuple(b.run.id for b in baselines),
                       f"{len(baselines)} baseline run(s) against this run, runs as the unit", opts.threshold_pct,
                       report.confidence, tuple(cases), tuple(notes))  # fmt: skip


def _matching(cell: CellReport, baseline: RunReport, single: bool) -> CellReport | None:
    """The baseline run's cell measuring the same thing (same workload, variant and sweep point; runs of one
    variant each match on workload and point, whatever their variants are called)."""
    key = _cell_key(cell, True)
    found = next((c for c in baseline.cells if _cell_key(c, True) == key), None)
    if found is None and single and len({c.variant for c in baseline.cells}) == 1:
        key = _cell_key(cell, False)
        found = next((c for c in baseline.cells if _cell_key(c, False) == key), None)
    return found
