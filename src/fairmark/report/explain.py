"""Where the difference went (issue 35 item 2): for each significant verdict whose two cells have CPU profiles of
profiled trials, the sentence "B is +12% slower (+9% to +16%): +11.0 ms per trial in `f` (+9.1 to +12.8), the
rest within noise" and a table of the functions tested (stats/attribution_diff.py does the statistics).

A section of a run's report (report/sections.py): `show` prints each sentence and its table, the text report the
same, --json every function tested."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markup import escape

from fairmark.console import console
from fairmark.report.section import Section
from fairmark.stats.attribution_diff import AttributionDiff, FunctionDiff, ProfiledTrial, compare_profiles
from fairmark.stats.compare import TIME_UNITS, percent_texts

if TYPE_CHECKING:
    from fairmark.report.data import CellReport, RunReport
    from fairmark.report.text import Writer
    from fairmark.verdict.record import Verdict

TOP = 3  # functions named in the sentence
TABLE_ROWS = 12
NAME_WIDTH = (
    28  # the table fits 80 columns with show's indent of 4: function, space, A, B, difference, interval
)


def profiled_trials(report: RunReport, cell: CellReport) -> list[ProfiledTrial]:
    """A cell's profiled trials that left folded stacks, with their round and CPU time (user + system)."""
    by_id = {t.id: t for t in cell.trials if t.profiled and t.status == "ok"}
    out = []
    for a in report.artifacts("profile.cpu"):
        t = by_id.get(a["trial_id"] or "")
        if a["name"] != "folded" or t is None or t.user_s is None or t.sys_s is None or not a["text"]:
            continue
        out.append(ProfiledTrial(round=t.round, folded=a["text"], cpu_s=t.user_s + t.sys_s))
    return out


def _cell(report: RunReport, v: Verdict, variant: str) -> CellReport | None:
    return next(
        (
            c
            for c in report.cells
            if (c.group, c.workload, c.point, c.variant) == (v.group, v.workload, v.point, variant)
        ),
        None,
    )


def _ms(seconds: float, digits: int = 1) -> str:
    return f"{seconds * 1e3:+.{digits}f}"


def _head(v: Verdict) -> str:
    c = v.comparison
    texts = percent_texts(c.ratio, c.ratio_ci_low, c.ratio_ci_high, c.significant)
    if v.unit in TIME_UNITS and c.better == "lower":
        word = "slower" if c.ratio > 1 else "faster"
    else:
        word = "higher" if c.ratio > 1 else "lower"
    if texts is None:
        return f"{v.variant} is {word} than {v.baseline} on {v.metric}"
    return f"{v.variant} is {texts[0]} {word} ({texts[1]} to {texts[2]}) on {v.metric}"


def _named(f: FunctionDiff) -> str:
    where = " (kernel)" if f.space == "kernel" else ""
    return f"{_ms(f.diff_s)} ms per trial in `{f.function}`{where} ({_ms(f.low_s)} to {_ms(f.high_s)})"


def sentence(v: Verdict, d: AttributionDiff) -> str:
    """The verdict, then the functions whose CPU time per trial differs provably, and what share of the CPU
    time's difference they explain — or that none does, and where to look instead."""
    claimed = d.claimed("self")
    total = d.cpu_b_s - d.cpu_a_s
    head = _head(v)
    if not claimed:
        return (
            f"{head}: no function's CPU time per trial differs provably ({d.tested} tested, CPU time "
            f"{_ms(total)} ms per trial); the difference may be off-CPU (waiting for I/O, locks or sleep), which a "
            "CPU profile cannot see: see the syscall and lock profiles (--profile syscalls,locks)"
        )
    named = "; ".join(_named(f) for f in claimed[:TOP])
    more = f" and {len(claimed) - TOP} more" if len(claimed) > TOP else ""
    explained = sum(f.diff_s for f in claimed)
    # the CPU time per trial (rusage) is noisier than a function's share of it: a share far from 100% says so
    share = (
        f" ({100 * explained / total:.0f}% of the CPU time's {_ms(total)} ms per trial)"
        if total and 0 < explained / total <= 1.5
        else f" (the CPU time per trial differs by {_ms(total)} ms)"
    )
    return f"{head}: {named}{more}{share}, the rest within noise"


def explanations(report: RunReport) -> list[dict[str, Any]]:
    """One explanation per compared pair of cells with a significant verdict (its first metric that is one)."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for v in report.verdicts:
        key = (v.group, v.workload, v.point, v.baseline, v.variant)
        if key in seen or not v.fdr_significant:
            continue
        base, other = _cell(report, v, v.baseline), _cell(report, v, v.variant)
        if base is None or other is None:
            continue
        d = compare_profiles(profiled_trials(report, base), profiled_trials(report, other))
        if d is None:
            continue
        seen.add(key)
        out.append({"verdict": v, "diff": d, "sentence": sentence(v, d)})
    return out


def table(d: AttributionDiff) -> list[str]:
    """80 columns: each function's self time per trial on A and B (ms), the difference and its interval; claimed
    functions first, then the largest differences."""
    rows = sorted((f for f in d.functions if f.mode == "self"), key=lambda f: (not f.claimed, -abs(f.diff_s)))
    head = f"{'function (self)':<{NAME_WIDTH}} {'A ms':>8} {'B ms':>8} {'B-A ms':>8}  interval"
    lines = [head]
    for f in rows[:TABLE_ROWS]:
        name = f.function + (" [k]" if f.space == "kernel" else "")
        name = name if len(name) <= NAME_WIDTH - 2 else name[: NAME_WIDTH - 3] + "…"
        mark = "*" if f.claimed else " "
        interval = f"{_ms(f.low_s)} to {_ms(f.high_s)}"
        lines.append(
            f"{mark}{name:<{NAME_WIDTH - 1}} {f.a_s * 1e3:8.1f} {f.b_s * 1e3:8.1f} {_ms(f.diff_s):>8}  {interval}"
        )
    rest = len(rows) - TABLE_ROWS
    design = "paired by round" if d.design == "paired" else "unpaired (Welch)"
    lines.append(
        f"* claimed: FDR {100 * d.alpha:g}% over {d.tested} functions; {d.n_a} + {d.n_b} profiled trials, {design}"
    )
    if rest > 0:
        lines.append(f"  {rest} more functions tested: --json has them all")
    return lines


def _title(e: dict[str, Any]) -> str:
    v = e["verdict"]
    return f"{v.workload} {v.baseline} -> {v.variant}"


def _terminal(r: RunReport) -> None:
    shown = explanations(r)
    if not shown:
        return
    console.print("[bold]where the difference went[/bold] (CPU profiles of the profiled trials)")
    for e in shown:
        console.print(f"  {escape(console.wrap(e['sentence'], first=2, indent='    '))}")
        for line in table(e["diff"]):
            console.print(f"    {escape(line)}", overflow="ignore", crop=False)


def _text(w: Writer, r: RunReport) -> None:
    shown = explanations(r)
    if not shown:
        return
    w.heading("Where the difference went", 3)
    for e in shown:
        w.para(f"{_title(e)}: {e['sentence']}")
        w.block(table(e["diff"]))


def _json(r: RunReport) -> dict[str, Any]:
    out: dict[str, list[dict[str, Any]]] = {"explain": []}
    for e in explanations(r):
        v, d = e["verdict"], e["diff"]
        out["explain"].append(
            {
                "group": v.group,
                "workload": v.workload,
                "baseline": v.baseline,
                "variant": v.variant,
                "metric": v.metric,
                "sentence": e["sentence"],
                "design": d.design,
                "profiled_trials": [d.n_a, d.n_b],
                "cpu_s_per_trial": [d.cpu_a_s, d.cpu_b_s],
                "alpha": d.alpha,
                "tested": d.tested,
                "functions": [f.to_dict() for f in d.functions],
            }
        )
    return out


SECTION = Section("explain", terminal=_terminal, text=_text, json=_json)
