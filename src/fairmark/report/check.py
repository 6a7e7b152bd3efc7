"""`fairmark check`'s read model: a run against a baseline, judged by the same machinery as a run's variants.

Two kinds of baseline:

* `variant` (or `variant:NAME`, NAME the run's baseline): the run's own interleaved comparison — the verdicts a
  run stores, paired by round. The strongest evidence there is: both sides saw the same machine at the same
  moments.
* `tag:k=v[,k=v]` (the last `last` finished runs with these tags on the run's host that started before the run
  checked — so a check gives the same answer before and after later runs land, and a re-run of a red CI job
  cannot come back green on runs made since) or `run:ID[,ID…]`: other runs. The run is then the unit of the verdict (stats.levels): each run's mean is one observation, so the
  run-to-run variance of the baseline — load, boot, layout — is in the verdict, as it must be when the two
  sides were measured at different times. One baseline run claims nothing (no run-to-run variance is known). A
  tag baseline with no run yet (the first day of a CI history) is not an error: the check is *skipped*, says
  why, and passes (its JUnit holds one skipped test case).

A cell is a regression that trips the gate only when it is *proven* worse beyond the threshold: significant
after the Benjamini-Hochberg correction across all the cells checked, and the whole CI of the change beyond
the threshold (a one-sided test of "worse by more than the threshold" at half the level). A significant change
whose CI reaches inside the threshold is shown as a possible regression and does not trip the gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from fairmark.errors import InputError
from fairmark.plan.model import AA_SUFFIX
from fairmark.report.explain import where_by_cell
from fairmark.report.load import load_report
from fairmark.store.db import RunRecord
from fairmark.verdict import rule
from fairmark.verdict.compare import Comparison
from fairmark.verdict.pairs import against_runs
from fairmark.verdict.record import Verdict
from fairmark.verdict.rule import worse_interval_pct
from fairmark.verdict.run import RunVerdicts, run_verdicts
from fairmark.verdict.values import MeasuredCell, load_cells

REGRESSION, POSSIBLE, IMPROVEMENT, UNCHANGED, UNJUDGED = (
    "regression",
    "possible regression",
    "improvement",
    "no change proven",
    "not judged",
)


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
    # (workload, metric) → that metric's own threshold (a plan's `fail_on_pct`), in place of threshold_pct
    thresholds: Mapping[tuple[str, str], float] = field(default_factory=dict)

    def threshold_of(self, workload: str, metric: str) -> float:
        return self.thresholds.get((workload, metric), self.threshold_pct)


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
    verdict: Verdict | None  # None: a side had too few values to be judged
    threshold_pct: float = 3.0  # the gate's threshold for this metric (--threshold, or its fail_on_pct)
    # a regression's profiled trials: where its difference went (report/explain.where); "" without profiles
    where: str = ""

    @property
    def comparison(self) -> Comparison | None:
        return self.verdict.comparison if self.verdict else None

    @property
    def worse_pct_bound(self) -> float | None:
        """The CI end of the worsening nearest to zero, in % (None: unbounded, unknown or not judged)."""
        ci = worse_interval_pct(self.verdict.comparison) if self.verdict else None
        return ci[0] if ci else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "cell": self.cell,
            "metric": self.metric,
            "unit": self.unit,
            "better": self.better,
            "status": self.status,
            "sentence": self.sentence,
            "comparison": self.verdict.comparison_dict() if self.verdict else None,
            "worse_pct_bound": self.worse_pct_bound,
            "threshold_pct": self.threshold_pct,
            "where": self.where or None,
        }


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
    tags: dict[str, str] = field(default_factory=dict)  # the checked run's (its commit among them)
    skipped: str = ""  # why nothing was checked (no baseline yet); "" when checked

    @property
    def regressions(self) -> list[Case]:
        return [c for c in self.cases if c.status == REGRESSION]

    @property
    def failed(self) -> bool:
        return bool(self.regressions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "hostname": self.hostname,
            "against": self.against,
            "baseline_runs": list(self.baseline_runs),
            "design": self.design,
            "threshold_pct": self.threshold_pct,
            "confidence": self.confidence,
            "failed": self.failed,
            "cases": [c.to_dict() for c in self.cases],
            "notes": list(self.notes),
            "tags": self.tags,
            "skipped": self.skipped,
        }


def classify(v: Verdict | None, threshold_pct: float) -> str:
    """What the gate makes of a verdict (verdict.rule: the one rule of run, check and bisect)."""
    if v is None:
        return UNJUDGED
    if rule.proven_better(v):
        return IMPROVEMENT
    if rule.regression_proven(v, threshold_pct):
        return REGRESSION
    return POSSIBLE if rule.proven_worse(v) else UNCHANGED


def check(store: Any, run_ref: str, opts: CheckOptions) -> CheckResult:
    """The run's cells against the baseline, every comparison judged together; nothing is written."""
    judged = run_verdicts(store, run_ref)
    tags = store.tags([judged.run.id])[judged.run.id]
    if opts.against.kind == "variant":
        return replace(_with_where(store, _against_variant(judged, opts)), tags=tags)
    base_ids = _baseline_ids(store, judged.run, opts)
    if not base_ids:
        return _no_baseline(judged, opts, tags)
    cells = [load_cells(store, store.get_run(r)) for r in base_ids]
    return replace(_against_runs(judged, base_ids, cells, opts), tags=tags)


def _with_where(store: Any, result: CheckResult) -> CheckResult:
    """Each regression of the run's own comparison with where it went, when the run took CPU profiles (its
    profiled trials, paired by round: report/explain). Against other runs there is none: one run's profiles
    against others' would take trials for the unit, where the verdict takes runs."""
    if not result.regressions or not store.artifacts(result.run_id, "profile.cpu"):
        return result
    where = where_by_cell(load_report(store, result.run_id))
    cases = tuple(
        replace(c, where=where.get((c.verdict.group, c.verdict.variant), ""))
        if c.status == REGRESSION and c.verdict
        else c
        for c in result.cases
    )
    return replace(result, cases=cases)


def _no_baseline(judged: RunVerdicts, opts: CheckOptions, tags: dict[str, str]) -> CheckResult:
    """A tag baseline without a run yet: nothing to check against, which is not a failure of the run."""
    run = judged.run
    where = "" if opts.any_host else f" on this run's host ({run.hostname or run.host_id[:12]})"
    reason = (
        f"no baseline yet: no finished run tagged {opts.against.text[4:]}{where} started before run "
        f"{run.id[:8]} (`fairmark runs --tag KEY=VALUE` lists them); this run can be the next check's baseline"
    )
    return CheckResult(
        run.id,
        run.hostname,
        opts.against.text,
        (),
        "no baseline",
        opts.threshold_pct,
        judged.design.confidence,
        (),
        tags=tags,
        skipped=reason,
    )


def _baseline_ids(store: Any, run: RunRecord, opts: CheckOptions) -> list[str]:
    a = opts.against
    if a.kind == "tag":
        host = None if opts.any_host else run.host_id
        return store.baseline_runs(
            a.tags, host_id=host, last=opts.last, exclude=run.id, before=run.started_at
        )
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


def _against_variant(judged: RunVerdicts, opts: CheckOptions) -> CheckResult:
    name, baseline, run = opts.against.variant, judged.design.baseline, judged.run
    if name and name != baseline:
        raise InputError(
            f"--against variant:{name}: the run's baseline variant is {baseline!r}; the run's own "
            "verdicts compare every variant with it",
            hint=f"--against variant (or variant:{baseline})",
        )
    cases = tuple(
        _case(v.workload, f"{v.group}/{v.variant}", v.metric, v, opts.threshold_of(v.workload, v.metric))
        for v in judged.verdicts
        if not v.variant.endswith(AA_SUFFIX)
    )
    if not cases:  # a gate that checked nothing must not pass silently
        raise InputError(
            f"run {run.id[:8]} has no variant besides its baseline {baseline!r} to check",
            hint="check it against other runs: --against tag:branch=main (or run:ID)",
        )
    design = "interleaved in one run, paired by round"
    confidence = judged.design.confidence
    return CheckResult(
        run.id, run.hostname, f"variant:{baseline}", (), design, opts.threshold_pct, confidence, cases
    )


FDR_UNPROVEN = "no change proven after false-discovery-rate control across the check"


def _case(workload: str, cell: str, metric: str, v: Verdict | None, threshold: float) -> Case:
    status = classify(v, threshold)
    c = v.comparison if v else None
    sentence = c.sentence if c else "fewer than 3 measured values on a side: not judged"
    if status == POSSIBLE:
        sentence += f" (not proven worse by more than the {threshold:g}% threshold)"
    elif v is not None and c is not None and c.significant and not v.fdr_significant:
        # the table says "no change proven", and so must the sentence below it first: one that read "is lower
        # (worse) … -7.1%" and took it back only after eight lines of detail was read as a regression
        sentence = f"{FDR_UNPROVEN}; alone: {sentence}"
    unit, better = (c.unit, c.better) if c else ("", "")
    return Case(workload, cell, metric, unit, better, status, sentence, v, threshold)


def _against_runs(
    judged: RunVerdicts, base_ids: list[str], baselines: list[tuple[MeasuredCell, ...]], opts: CheckOptions
) -> CheckResult:
    """Each cell's primary metric: the baseline runs' values against the run's, each run one unit."""
    run = judged.run
    mine = [c for c in judged.cells if not c.cell.variant.endswith(AA_SUFFIX)]
    checks, unmatched = against_runs(mine, baselines, name=run.id[:8], confidence=judged.design.confidence)
    if not checks:
        raise InputError(
            f"no cell of run {run.id[:8]} was measured in the baseline run(s) "
            f"{', '.join(r[:8] for r in base_ids)}: nothing to check",
            hint="a baseline is runs of the same plan (same workloads, variants and sweep points)",
        )
    cases = tuple(
        _case(
            k.cell.cell.workload,
            f"{k.cell.cell.group}/{k.cell.cell.variant}",
            k.metric,
            k.verdict,
            opts.threshold_of(k.cell.cell.workload, k.metric),
        )
        for k in checks
    )
    not_checked = ", ".join(f"{c.cell.group}/{c.cell.variant}" for c in unmatched)
    notes = [f"not in any baseline run (not checked): {not_checked}"] if unmatched else []
    if len(baselines) < 2:
        notes.append(
            "one baseline run: its run-to-run variance is unknown, so no verdict can be proven; "
            "a baseline of several runs (--last) can"
        )
    design = f"{len(baselines)} baseline run(s) against this run, runs as the unit"
    return CheckResult(
        run.id,
        run.hostname,
        opts.against.text,
        tuple(base_ids),
        design,
        opts.threshold_pct,
        judged.design.confidence,
        cases,
        tuple(notes),
    )
