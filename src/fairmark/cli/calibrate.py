"""`fairmark calibrate PLAN [--runs K]`: K interleaved A/A runs of each workload (the baseline against an exact
twin of itself, the plan's trial counts and stopping), stored per host and workload: the measured false-positive
rate with its CI, and the change a run of this plan detects here with 80% power. Later verdicts on this host
show them."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from typing import Any

import click

from fairmark.cli._lockwait import lock_first, wait_lock_option
from fairmark.cli.common import common_options, guard_options, open_store
from fairmark.console import console

CALIBRATION_TAG = "calibration"  # tag of every A/A run `calibrate` stores: "K/N" (so `runs` tells them apart)


def aa_plan(plan: Any, path: str = "") -> Any:
    """The plan with only its baseline variant and an exact twin of it, titled as the calibration it is."""
    from fairmark.plan.model import aa_twin_name

    base = plan.variant_named(plan.baseline)
    twin = base.model_copy(update={"name": aa_twin_name(plan.baseline)})
    run = plan.run.model_copy(update={"baseline": plan.baseline}) if plan.run.baseline else plan.run
    title = f"A/A calibration: {plan.title or path or 'plan'}"
    return plan.model_copy(update={"variant": [base, twin], "run": run, "title": title})


def _aa_verdicts(judged: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The A/A twin's verdicts of a run (verdict.run.RunVerdicts), as the calibration summarizes them."""
    return {(v.workload, v.group, v.metric): v.comparison_dict() for v in judged.verdicts if v.calibration}


def _rows(found: dict[tuple[str, str, str], list[dict[str, Any]]], run_ids, host, loaded, confidence, policy):
    from fairmark.stats.calibration import summarize

    rows = []
    for (workload, group, metric), comps in found.items():
        data = summarize(comps, confidence=confidence) | {
            "run_ids": run_ids,
            "min_trials": policy.min_trials,
            "max_trials": policy.max_trials,
            "target_ci_pct": policy.target_ci_pct,
        }
        rows.append(
            {
                "host_id": host[0],
                "hostname": host[1],
                "workload": workload,
                "group": group,
                "metric": metric,
                "plan_path": loaded.path,
                "confidence": confidence,
                "runs": data["runs"],
                "false_positives": data["false_positives"],
                "data": data,
            }
        )
    return rows


def _line(row: dict[str, Any]) -> str:
    """A workload's false-positive rate with its CI and the change it detects: sizes and rates in two
    significant digits, never in exponent notation ('±140%', was '±1.4e+02%')."""
    from fairmark.stats.digits import format_spread
    from fairmark.verdict.compare import detectable_text

    d = row["data"]
    low, high = d["false_positive_ci"]
    mde = d["mde_percent"]
    head = f"{row['group']} {row['metric']}: "
    if mde == 0:
        return head + "the same value in every trial (nothing to calibrate)"
    said = f"{d['false_positives']} of {d['runs']} A/A runs called different"
    if mde is None and d.get("constant"):  # zstd's compression ratio: "0 of 3 called different" said nothing
        return head + "the same value in every trial (nothing to calibrate)"
    if mde is None:
        return head + said
    pct = (format_spread(100 * x, "%") for x in (d["false_positive_rate"], low, high))
    rate, lo, hi = pct
    # on the log scale a factor either way ("-47% or +90%"); a calibration stored without its scale: "±90%"
    size = detectable_text(mde, d.get("scale") == "log")
    return (
        f"{head}{said} ({rate}, 95% CI {lo[:-1]}–{hi}; α = {100 * d['alpha']:g}%); detects "
        f"{size} with 80% power at {_span(d['trials_per_side'])} trials per side"
    )


def _span(fewest_most: list[int]) -> str:
    """ "5" or "3–5": "5–5 trials per side" said one number twice."""
    low, high = fewest_most
    return f"{low}" if low == high else f"{low}–{high}"


def aa_runs(
    requests: Callable[[int], Any], store: Any, runs: int, note: Callable[[str], None] = console.note
) -> tuple[dict[tuple[str, str, str], list[dict[str, Any]]], list[str], tuple[str, str]]:
    """K A/A runs in this process, one after another, each a run of its own: `requests(k)` is run k's RunRequest
    (assemble.py: its hooks are built afresh for each run, as for each `fairmark run`). The twin's comparisons
    by (workload, group, metric), the run ids and the host."""
    from fairmark.assemble import execute_run

    found: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    run_ids: list[str] = []
    host = ("", "")
    for k in range(runs):
        result = execute_run(requests(k), store)
        run_ids.append(result.run_id)
        host = (result.verdicts.run.host_id, result.verdicts.run.hostname)
        for key, comp in _aa_verdicts(result.verdicts).items():
            found.setdefault(key, []).append(comp)
        hits = sum(1 for c in found.values() if c[-1]["significant"])
        note(f"A/A run {k + 1}/{runs} ({run_ids[-1][:8]}): {hits} of {len(found)} called different")
    return found, run_ids, host


@click.command()
@click.argument("plan", type=click.Path(dir_okay=False))
@click.option(
    "--runs",
    "runs",
    type=click.IntRange(min=2),
    default=20,
    show_default=True,
    metavar="K",
    help="A/A runs of each workload.",
)
@click.option("--quick", is_flag=True, help="The plan's [quick] trial counts.")
@guard_options(
    "Run despite doctor errors; every report will say so.",
    "Do not sample vmstat-like monitors during trials (calibrates runs made with --no-monitors).",
)
@wait_lock_option
@common_options
def calibrate(
    plan: str,
    runs: int,
    quick: bool,
    accept_risk: bool,
    allow_concurrent: bool,
    no_monitors: bool,
    monitor_interval: float,
    wait_lock: float,
) -> None:
    """Measure this machine's false-positive rate and detectable change for each workload of PLAN: K A/A runs
    (the baseline against an exact twin, interleaved, the plan's trial counts, the monitors `run` samples unless
    --no-monitors). Stored per host and workload; later verdicts on this host show them."""
    lock_first(wait_lock, allow_concurrent=allow_concurrent)  # before the imports a refusal need not pay for
    from fairmark.assemble import RunRequest, host_lock
    from fairmark.plan.load import LoadedPlan, load_plan

    loaded = load_plan(plan)
    aa = LoadedPlan(plan=aa_plan(loaded.plan, loaded.path), path=loaded.path, text=loaded.text)
    store = open_store()
    command = shlex.join(["fairmark", *sys.argv[1:]])

    def request(k: int) -> RunRequest:
        # the trial hooks a `fairmark run` of the plan has (issue 39: calibrate ran without the monitors run
        # samples by default, so the rate it stored was that of a harness the runs did not use)
        return RunRequest(
            aa,
            quick=quick,
            accept_risk=accept_risk,
            command_line=command,
            tags={CALIBRATION_TAG: f"{k + 1}/{runs}"},
            monitors=not no_monitors,
            monitor_interval=monitor_interval,
            allow_concurrent=allow_concurrent,
            hold_lock=False,  # held here across the K runs
        )

    with host_lock(loaded.path, "calibrate", allow_concurrent=allow_concurrent, wait_s=wait_lock):
        found, run_ids, host = aa_runs(request, store, runs)
    policy = aa.plan.policy(quick)
    rows = _rows(found, run_ids, host, loaded, policy.confidence, policy)
    store.add_calibrations(rows)
    if console.json_mode:
        console.emit_json(
            {
                "host_id": host[0],
                "hostname": host[1],
                "calibrations": [r | {"created_at": None} for r in rows],
            }
        )
        return
    show(rows, host)


def show(rows: list[dict[str, Any]], host: tuple[str, str]) -> None:
    """One line per workload and metric: the false-positive rate with its CI and the detectable change."""
    for row in rows:
        console.text(_line(row))
    console.note(
        f"stored for host {host[1]} ({host[0][:12]}); later verdicts of these workloads here show it"
    )


commands = [calibrate]
