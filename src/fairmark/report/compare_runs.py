"""What `fairmark compare-runs` shows (cli/compare_runs.py decides what is compared and refuses): the
environment differences, the re-run line, each metric's table of A and B with the change, the levels of a
units-as-observation verdict, each run's own verdicts side by side for a re-run pair, and the --json document."""

from __future__ import annotations

from typing import Any

from fairmark.console import console, escape
from fairmark.report import explain_units
from fairmark.report.boots import levels_lines
from fairmark.report.load import load_report
from fairmark.report.views import in_unit, short_verdict
from fairmark.stats import format_value
from fairmark.stats.digits import scale_unit, shared_scale
from fairmark.store.db import RunRecord
from fairmark.verdict.judge import MIN_VALUES
from fairmark.verdict.levels import said_once
from fairmark.verdict.record import Verdict


def show(
    runs: list[RunRecord],
    env: dict[str, Any],
    verdicts: list[Verdict],
    because: str | None,
    only: dict[str, list[str]],
    sides: list[list[RunRecord]],
    own: list[dict[str, Any]] | None = None,
    explained: list[dict[str, Any]] | None = None,
) -> None:
    """`explained`: where each significant difference went, boots as the unit (report/explain_units)."""
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
                "explain": [explain_units.to_json(e) for e in explained or []],
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
    scales = _scales(verdicts)
    if verdicts:
        _table(verdicts, f"A = {label[0]} (baseline)   B = {label[1]}", scales)
    for v in verdicts:
        if v.comparison.levels:
            show_levels(v, scales[id(v)])
    for e in explained or []:
        sentence, rows = explain_units.lines(e)
        console.text(sentence)
        console.block(["  " + line for line in rows])
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


def _table(verdicts: list[Verdict], title: str, scales: dict[int, float | None]) -> None:
    """Per workload, sweep point and metric (as `show` lays out a run): each variant's mean in A and B and the
    change, one line each; the verdicts' sentences below, wrapped."""
    console.text(title)
    once, sentences = said_once([(v.comparison.sentence, v.comparison.levels) for v in verdicts])
    said = {id(v): s for v, s in zip(verdicts, sentences, strict=True)}
    if once:  # the same runs in every verdict: their arrangement in time said once, not in every sentence
        console.text(f"{once[0].upper()}{once[1:]}.")
    for (name, metric, better), members in _tables(verdicts).items():
        table = console.table("variant", "A mean ± CI", "B mean ± CI", "B vs A", wrap=("B vs A",))
        comps = [v.comparison for v in members]
        divisor, unit = scale_unit(scales[id(members[0])] or 0.0, comps[0].unit)
        for v, c in zip(members, comps, strict=True):
            change = short_verdict(c)  # the interval of the design that decided
            table.add_row(escape(v.variant), _mean(c.baseline, divisor), _mean(c.other, divisor), change)
        console.print()
        console.print_table(table, f"{name} — {metric}{in_unit(unit)} ({better} is better)")
        for v in members:
            console.text(f"  {v.variant}: {said[id(v)]}")


def _tables(verdicts: list[Verdict]) -> dict[tuple[str, str, str], list[Verdict]]:
    """The verdicts by table: workload and sweep point, metric, and which way is better."""
    groups: dict[tuple[str, str, str], list[Verdict]] = {}
    for v in verdicts:
        groups.setdefault((v.group, v.metric, v.comparison.better), []).append(v)
    return groups


def _scales(verdicts: list[Verdict]) -> dict[int, float | None]:
    """Each verdict's table's magnitude (the largest mean of it, A's and B's): what picks the table's prefix,
    and that of the run or boot means said below it — one unit for a value on the screen."""
    out: dict[int, float | None] = {}
    for members in _tables(verdicts).values():
        scale = shared_scale(
            x for v in members for x in (v.comparison.baseline.mean, v.comparison.other.mean)
        )
        out |= {id(v): scale for v in members}
    return out


def _json(v: Verdict) -> dict[str, Any]:
    head = {
        "workload": v.workload,
        "variant": v.variant,
        "point": [list(p) for p in v.point],
        "metric": v.metric,
    }
    return head | {"q_value": v.q_value} | v.comparison.to_dict()


def show_levels(v: Verdict, scale: float | None = None) -> None:
    """Per-unit means and the variance at each level: what the units-as-the-observation verdict rests on, in
    the prefix of the verdict's table (`scale`: _scales)."""
    # an sd is a spread, not an interval: "sd 0.016 s", never "0.016 ± 0.016 s" (the same lines as `show`)
    lines = levels_lines(v.comparison, v.comparison.unit, scale)
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
