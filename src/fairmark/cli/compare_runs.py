"""`fairmark compare-runs RUN_A RUN_B`: the same cells measured in two stored runs — across a reboot into another
kernel (seed 000: debug vs nodebug) or on another OS (seed 002) — compared with the same statistics as the
variants of one run.

The environment differences are shown first: two runs differ in more than the one thing the user changed, and a
difference that can invalidate the comparison (kernel, CPU, frequency policy, mitigations, file system, tool
versions, …) makes the command refuse (exit 3) unless the user states the intended difference with
`--because "kernel debug options"` (recorded in the output) or marks the keys with `--declare KEY`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from fairmark.cli.common import common_options, open_store
from fairmark.errors import EnvironmentRefused, InputError
from fairmark.plan.model import CONFIDENCE_LEVELS
from fairmark.probe.diff import comparison_findings, diff_snapshots
from fairmark.report.compare_runs import own_verdicts, show, show_differences
from fairmark.report.explain_units import explanations
from fairmark.verdict.judge import MIN_VALUES
from fairmark.verdict.match import match_cells
from fairmark.verdict.pairs import Side, across_runs
from fairmark.verdict.values import MeasuredCell, load_cells


@click.command("compare-runs", context_settings={"ignore_unknown_options": True})
@click.argument("run_args", nargs=-1, required=True, metavar="RUN_A RUN_B | A1 A2 … --vs B1 B2 …")
@click.option(
    "--because", metavar="TEXT", help='The intended difference between the runs, e.g. "kernel debug options".'
)
@click.option(
    "--declare",
    "declared",
    multiple=True,
    metavar="KEY",
    help="An environment key (prefix) that is the intended difference, e.g. os.kernel (repeatable).",
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="NAME",
    help="Compare this metric (repeatable; default: each cell's primary metric).",
)
@click.option("--all-metrics", is_flag=True, help="Compare every metric both runs measured.")
@click.option(
    "--confidence",
    type=click.Choice([f"{c:g}" for c in CONFIDENCE_LEVELS]),
    default="95",
    show_default=True,
    help="Confidence level (ministat's levels).",
)
@common_options
def compare_runs(
    run_args: tuple[str, ...],
    because: str | None,
    declared: tuple[str, ...],
    metrics: tuple[str, ...],
    all_metrics: bool,
    confidence: str,
) -> None:
    """Compare matching cells of stored runs (the first side is the baseline), environment differences first.

    `RUN_A RUN_B`: two runs. `A1 A2 … --vs B1 B2 …`: several runs per side, each made in its own boot (a kernel
    cannot change inside one): the verdict takes the boot as its unit (trials nested in boots), reports the
    variance at each level, and with one boot per side claims no difference."""
    store = open_store()
    names_a, names_b = split_sides(run_args)
    sides = [[store.get_run(r) for r in names_a], [store.get_run(r) for r in names_b]]
    ids = [r.id for side in sides for r in side]
    if len(set(ids)) != len(ids):
        raise InputError("a run is given twice; give each run once, on one side")
    runs = [sides[0][0], sides[1][0]]
    env = environment_check(runs[0], runs[1], declared=declared, because=because)
    cells = [[load_cells(store, r) for r in side] for side in sides]
    pairs = match_cells(cells[0][0], cells[1][0])
    if not pairs:
        raise InputError(
            f"runs {runs[0].id[:8]} and {runs[1].id[:8]} have no cell in common (same workload, variant and sweep "
            "point)",
            hint="compare runs of the same plan; `fairmark show RUN` lists a run's cells",
        )
    two = (Side(cells[0], runs[0].id[:8]), Side(cells[1], runs[1].id[:8]))
    verdicts = across_runs(pairs, two, metrics, all_metrics=all_metrics, confidence=float(confidence))
    if metrics and not verdicts:
        raise InputError(f"no metric named {', '.join(metrics)} with ≥ {MIN_VALUES} values in both runs")
    only = unmatched(pairs, cells[0][0], cells[1][0])

    explained = explanations(store, pairs, two, verdicts)
    show(runs, env, verdicts, because, only, sides, own_verdicts(store, runs), explained)


def split_sides(args: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """`RUN_A RUN_B` or `A1 … --vs B1 …` into the two sides' run names."""
    if "--vs" in args:
        i = args.index("--vs")
        a, b = list(args[:i]), list(args[i + 1 :])
    elif len(args) == 2:
        a, b = [args[0]], [args[1]]
    else:
        raise InputError(
            f"compare-runs takes RUN_A RUN_B, or A1 A2 … --vs B1 B2 …; got {len(args)} run(s) without --vs"
        )
    bad = [x for x in a + b if x.startswith("-")]
    if bad or not a or not b:
        raise InputError(
            f"compare-runs: {'unknown option ' + bad[0] if bad else 'a side has no run'}",
            hint="runs of side A, then --vs, then runs of side B (options before the runs)",
        )
    return a, b


# -- environment ---------------------------------------------------------------------------------------------
def environment_check(run_a, run_b, *, declared: tuple[str, ...], because: str | None) -> dict[str, Any]:
    """Differences between the runs (plan, --quick) and their environments before they started; refuse on
    undeclared ones that can invalidate the comparison, unless --because states the intended difference."""
    diffs, findings = run_differences(run_a, run_b, declared)
    a, b = run_a.env_before, run_b.env_before
    missing = ", ".join(r.id[:8] for r in (run_a, run_b) if not r.env_before)
    if missing:
        findings.append(
            _finding("comparison-unknown-environment", f"run(s) {missing} have no environment snapshot")
        )
    else:
        diffs += diff_snapshots(a, b)
        findings += [f.to_dict() for f in comparison_findings(a, b, declared=declared)]
    blocking = [f for f in findings if f["severity"] == "error"]
    env = {
        "differences": diffs,
        "findings": findings,
        "unknown": missing or None,
        "accepted": blocking if because else [],
    }
    if blocking and not because:
        show_differences(run_a, run_b, env)
        raise EnvironmentRefused(
            f"the runs differ in {len(blocking)} way(s) that can invalidate the comparison: "
            + "; ".join(f["evidence"] for f in blocking[:5]),
            hint='name the intended difference: --because "kernel debug options" (or --declare KEY for each key)',
        )
    return env


def run_differences(run_a, run_b, declared: tuple[str, ...]) -> tuple[list[dict], list[dict]]:
    """The same plan at the same scale, or the cells measure different things under the same names."""
    facts = {
        "plan.sha256": (run_a.plan_sha256, run_b.plan_sha256),
        "run.quick": (bool((run_a.options or {}).get("quick")), bool((run_b.options or {}).get("quick"))),
    }
    diffs, findings = [], []
    for key, (va, vb) in facts.items():
        if va == vb:
            continue
        diffs.append({"key": key, "a": va, "b": vb, "category": "validity"})
        if not any(key == d or key.startswith(d + ".") for d in declared):
            findings.append(_finding("comparison-plan", f"{key}: {va!r} vs {vb!r}"))
    return diffs, findings


def _finding(rule: str, evidence: str) -> dict[str, str]:
    why = {
        "comparison-plan": "different plans or scales measure different work under the same cell names",
        "comparison-unknown-environment": "without a snapshot, what else differed between the runs is unknown",
    }[rule]
    return {
        "id": rule,
        "severity": "error",
        "title": why,
        "evidence": evidence,
        "why": why,
        "fix": 'state the intended difference with --because "…" (or --declare KEY)',
    }


# -- cells ---------------------------------------------------------------------------------------------------
def unmatched(
    pairs: list[tuple[MeasuredCell, MeasuredCell]],
    cells_a: Sequence[MeasuredCell],
    cells_b: Sequence[MeasuredCell],
) -> dict[str, list[str]]:
    """Cells measured in only one of the runs: said, so a missing comparison is not mistaken for 'no change'."""
    paired_a, paired_b = {a.cell.key for a, _ in pairs}, {b.cell.key for _, b in pairs}
    return {
        "a": [c.cell.key for c in cells_a if c.cell.key not in paired_a],
        "b": [c.cell.key for c in cells_b if c.cell.key not in paired_b],
    }


commands = [compare_runs]
