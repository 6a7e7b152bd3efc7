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
from rich.markup import escape

from fairmark.cli.common import common_options, open_store
from fairmark.console import console
from fairmark.errors import EnvironmentRefused, InputError
from fairmark.plan.model import CONFIDENCE_LEVELS
from fairmark.stats import format_value
from fairmark.stats.digits import column_unit
from fairmark.stats.judge import MIN_VALUES
from fairmark.store.db import RunRecord
from fairmark.verdict.match import match_cells
from fairmark.verdict.pairs import Side, across_runs
from fairmark.verdict.record import Verdict
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
    show(runs, env, verdicts, because, only, sides, own_verdicts(store, runs))


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
    from fairmark.probe import comparison_findings, diff_snapshots

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


# -- output --------------------------------------------------------------------------------------------------
def show(
    runs: list[RunRecord],
    env: dict[str, Any],
    verdicts: list[Verdict],
    because: str | None,
    only: dict[str, list[str]],
    sides: list[list[RunRecord]],
    own: list[dict[str, Any]] | None = None,
) -> None:
    if console.json_mode:
        console.emit_json(
            {
                "a": runs[0].id,
                "b": runs[1].id,
                "because": because,
                "runs_a": [r.id for r in sides[0]],
                "runs_b": [r.id for r in sides[1]],
                "environment": env,
                "rerun": rerun_line(runs),
                "own_verdicts": own or [],
                "only_in": only,
                "comparisons": [_json(v) for v in verdicts],
            }
        )
        return
    show_differences(runs[0], runs[1], env)
    rerun = rerun_line(runs)
    if rerun:
        console.text(rerun)
    if because:
        console.text(f"intended difference (--because): {because}")
    for f in env["accepted"]:
        console.warn(f"accepted as part of the intended difference: {f['evidence']}")
    label = [" + ".join(r.id[:8] for r in side) for side in sides]
    if verdicts:
        _table(verdicts, f"A = {label[0]} (baseline)   B = {label[1]}")
    for v in verdicts:
        if v.comparison.levels:
            show_levels(v)
    if not verdicts:
        console.text(f"no metric has ≥ {MIN_VALUES} counted values in both runs: nothing to compare")
    for side, keys in only.items():
        if keys:
            run = runs[0] if side == "a" else runs[1]
            console.text(f"only in {run.id[:8]} (not compared): {', '.join(keys)}")
    reproduced(own or [])


def rerun_line(runs: list[RunRecord]) -> str | None:
    """When one run re-ran the other from its bundle (`fairmark run BUNDLE.json`): said, with whether it ran on
    the same machine — the comparison is then a reproduction, not a change."""
    for a, b in (runs, runs[::-1]):
        r = (b.options or {}).get("rerun_of")
        if isinstance(r, dict) and r.get("run_id") == a.id:
            where = "the same machine" if b.host_id and b.host_id == a.host_id else "another machine"
            what = (
                "its plan text, seed and scale"
                if b.seed == a.seed
                else f"its plan text and scale, seed {b.seed}"
            )
            return f"{b.id[:8]} re-ran {a.id[:8]} from its bundle ({what}) on {where}"
    return None


def own_verdicts(store: Any, runs: list[RunRecord]) -> list[dict[str, Any]]:
    """When one run re-ran the other from its bundle: each run's own verdicts (a variant against its baseline,
    within the run) side by side. On another machine the times differ; what a reproduction reproduces is the
    change, and whether it is proven."""
    if not rerun_line(runs):
        return []
    from fairmark.report.data import load_report
    from fairmark.report.terminal import short_verdict

    own = [
        {(v.group, v.variant, v.metric): v for v in load_report(store, r.id).verdicts if not v.calibration}
        for r in runs
    ]
    out = []
    for key, va in own[0].items():
        vb = own[1].get(key)
        if vb is not None:
            a, b = (v.comparison.change if v.significant else "not proven" for v in (va, vb))
            row = {"group": key[0], "variant": key[1], "metric": key[2], "baseline": va.baseline}
            out.append(
                row | {"a": short_verdict(va.comparison), "b": short_verdict(vb.comparison), "same": a == b}
            )
    return out


def reproduced(rows: list[dict[str, Any]]) -> None:
    """The table of own_verdicts (none for runs that are not a re-run pair)."""
    if not rows:
        return
    table = console.table("cell", "metric", "A", "B", "", wrap=("A", "B"))
    for r in rows:
        same = "same verdict" if r["same"] else "DIFFERENT verdict"
        table.add_row(escape(f"{r['group']}/{r['variant']}"), escape(r["metric"]), r["a"], r["b"], same)
    console.print()
    console.print_table(table, "each run's own verdicts: a variant against its baseline, within the run")
    same = sum(r["same"] for r in rows)
    console.text(f"{same} of {len(rows)} verdict(s) the same in both runs")


def _table(verdicts: list[Verdict], title: str) -> None:
    """Per workload, sweep point and metric (as `show` lays out a run): each variant's mean in A and B and the
    change, one line each; the verdicts' sentences below, wrapped."""
    from fairmark.report.terminal import in_unit, short_verdict

    console.text(title)
    groups: dict[tuple[str, str, str], list[Verdict]] = {}
    for v in verdicts:
        groups.setdefault((v.group, v.metric, v.comparison.better), []).append(v)
    for (name, metric, better), members in groups.items():
        table = console.table("variant", "A mean ± CI", "B mean ± CI", "B vs A", wrap=("B vs A",))
        comps = [v.comparison for v in members]
        divisor, unit = column_unit(
            [x for c in comps for x in (c.baseline.mean, c.other.mean)], comps[0].unit
        )
        for v, c in zip(members, comps, strict=True):
            change = short_verdict(c)  # the interval of the design that decided
            table.add_row(escape(v.variant), _mean(c.baseline, divisor), _mean(c.other, divisor), change)
        console.print()
        console.print_table(table, f"{name} — {metric}{in_unit(unit)} ({better} is better)")
        for v in members:
            console.text(f"  {v.variant}: {v.comparison.sentence}")


def _json(v: Verdict) -> dict[str, Any]:
    head = {
        "workload": v.workload,
        "variant": v.variant,
        "point": [list(p) for p in v.point],
        "metric": v.metric,
    }
    return head | {"q_value": v.q_value} | v.comparison.to_dict()


def show_levels(v: Verdict) -> None:
    """Per-unit means and the variance at each level: what the units-as-the-observation verdict rests on."""
    from fairmark.report.boots import levels_lines

    # an sd is a spread, not an interval: "sd 0.016 s", never "0.016 ± 0.016 s" (the same lines as `show`)
    lines = levels_lines(v.comparison, v.comparison.unit)
    cell = v.group + (f"/{v.variant}" if v.variant else "")
    console.text(f"{cell} {v.metric}: " + "; ".join(lines))


def show_differences(run_a, run_b, env: dict[str, Any]) -> None:
    if console.json_mode:
        return
    if env["unknown"]:
        console.warn(f"no environment snapshot for run(s) {env['unknown']}: other differences are unknown")
    diffs = [d for d in env["differences"] if d["category"] != "info"]
    if not diffs:
        if not env["unknown"]:
            console.text(f"environment: no relevant difference between {run_a.id[:8]} and {run_b.id[:8]}")
        return
    table = console.table(
        "category", "key", run_a.id[:8], run_b.id[:8], wrap=("key", run_a.id[:8], run_b.id[:8])
    )
    for d in diffs:
        table.add_row(d["category"], escape(d["key"]), escape(_fmt(d["a"])), escape(_fmt(d["b"])))
    console.print_table(table, "differences between the runs (plan, environment before each run)")


def _mean(summary, divisor: float) -> str:
    """The mean ± its CI, bare (the table's title has the unit), rounded to the digits the CI supports."""
    return format_value(summary.mean / divisor, summary.ci_half_width / divisor)


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


commands = [compare_runs]
