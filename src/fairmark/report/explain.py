"""Where the difference went (issue 35 item 2): for each significant verdict whose two cells have CPU profiles of
profiled trials, the sentence "B is +12% slower (+9% to +16%): +11.0 ms per trial in `f` (+9.1 to +12.8), the
rest within noise" and a table of the functions tested (stats/attribution_diff.py does the statistics).

A section of a run's report (report/sections.py): `show` prints each sentence and its table, the text report the
same, --json every function tested."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fairmark.console import console, escape
from fairmark.report.section import Context, Section
from fairmark.stats.attribution_diff import (
    AttributionDiff,
    FunctionDiff,
    ProfiledTrial,
    compare_profiles,
    compare_units,
    frame_space,
)
from fairmark.stats.profile_looks import legacy_looks
from fairmark.verdict.compare import TIME_UNITS, percent_texts

if TYPE_CHECKING:
    from fairmark.report.data import CellReport, RunReport
    from fairmark.report.writer import Writer
    from fairmark.verdict.record import Verdict

BOOTS = "boots as the unit"  # the verdict's design in a boot run (stats.levels)
TOP = 3  # functions named in the sentence
TABLE_ROWS = 12
NAME_WIDTH = (
    28  # the table fits 80 columns with show's indent of 4: function, space, A, B, difference, interval
)


def _profiled(report: RunReport, cell: CellReport) -> list[tuple[str | None, ProfiledTrial]]:
    """A cell's profiled trials that left folded stacks, each with its boot id."""
    by_id = {t.id: t for t in cell.trials if t.profiled and t.status == "ok"}
    out = []
    for a in report.artifacts("profile.cpu"):
        t = by_id.get(a["trial_id"] or "")
        if a["name"] != "folded" or t is None or t.user_s is None or t.sys_s is None or not a["text"]:
            continue
        out.append((t.boot_id, ProfiledTrial(round=t.round, folded=a["text"], cpu_s=t.user_s + t.sys_s)))
    return out


def profiled_trials(report: RunReport, cell: CellReport) -> list[ProfiledTrial]:
    """A cell's profiled trials that left folded stacks, with their round and CPU time (user + system)."""
    return [p for _, p in _profiled(report, cell)]


def profiled_boots(report: RunReport, cell: CellReport) -> list[list[ProfiledTrial]]:
    """The same, one list per boot (a boot run's unit: run.loop.bootrun profiles every boot)."""
    units: dict[str | None, list[ProfiledTrial]] = {}
    for boot, p in _profiled(report, cell):
        units.setdefault(boot, []).append(p)
    return list(units.values())


def run_looks(options: Mapping[str, Any] | None) -> tuple[int, ...]:
    """The looks the run's CPU-profiled rounds took, as its options stored them (run.loop.profiled): α is split
    over them. A run recorded before they were stored looked after every round (stats.profile_looks); one from
    before max_profiled, or a boot run (a fixed number of profiled trials per boot), took a fixed number."""
    opts = options or {}
    if "profile_looks" in opts:
        return tuple(int(n) for n in opts["profile_looks"])
    policy = opts.get("policy") or {}
    variants = (opts.get("variants") or {}).values()
    if "max_profiled" not in policy or any(isinstance(v, dict) and v.get("boot") for v in variants):
        return ()
    return legacy_looks(int(policy["profiled_trials"]), int(policy["max_profiled"]))


def _compared(report: RunReport, v: Verdict, base: CellReport, other: CellReport) -> AttributionDiff | None:
    """Where the verdict's difference went, with the verdict's unit: profiled trials paired by round, at the
    level of each of the run's looks, or, when the verdict took boots as its unit (a boot run: a fixed number
    of profiled trials in each boot), each boot's mean per function as one observation."""
    if v.comparison.design == BOOTS:
        return compare_units(profiled_boots(report, base), profiled_boots(report, other))
    looks = run_looks(report.run.options)
    return compare_profiles(profiled_trials(report, base), profiled_trials(report, other), looks=looks)


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


def _ms_short(seconds: float) -> str:
    """At most 6 characters, so that an interval from 2 profiled trials (t with 1 degree of freedom: seconds
    wide) still fits the table's 80 columns: ±999.9, then whole milliseconds, then powers of ten."""
    ms = seconds * 1e3
    if abs(ms) < 999.95:
        return f"{ms:+.1f}"
    if abs(ms) < 99999.5:
        return f"{ms:+.0f}"
    mantissa, exponent = f"{ms:+.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _head(v: Verdict) -> str:
    c = v.comparison
    texts = percent_texts(c.ratio, c.ratio_ci_low, c.ratio_ci_high, c.significant)
    if v.unit in TIME_UNITS and c.better == "lower":
        word = "slower" if c.ratio > 1 else "faster"
    else:
        word = "higher" if c.ratio > 1 else "lower"
    if texts is None:
        return f"{v.variant} is {word} than {v.baseline} on {v.metric}"
    if c.ratio < 1:  # "-95% faster" would be a double negative
        return f"{v.variant} is {word}: {texts[0]} ({texts[1]} to {texts[2]}) on {v.metric}"
    return f"{v.variant} is {texts[0]} {word} ({texts[1]} to {texts[2]}) on {v.metric}"


def _named(f: FunctionDiff) -> str:
    where = " (kernel)" if f.space == "kernel" else ""
    return f"{_ms(f.diff_s)} ms per trial in `{f.function}`{where} ({_ms(f.low_s)} to {_ms(f.high_s)})"


def sentence(v: Verdict, d: AttributionDiff) -> str:
    """The verdict, then where its difference went (`where`)."""
    return f"{_head(v)}: {where(d)}"


def where(d: AttributionDiff) -> str:
    """The functions whose CPU time per trial differs provably, and what share of the CPU time's difference
    they explain — or that none does, and where to look instead."""
    claimed = d.claimed("self")
    total = d.cpu_b_s - d.cpu_a_s
    if not claimed and (few := _too_few(d)):
        return few
    if not claimed:
        return (
            f"no function's CPU time per trial differs provably ({d.tested} tested, CPU time "
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
    return f"{named}{more}{share}, the rest within noise"


DESIGNS = {"paired": "profiled trials, paired by round", "units": "boots (runs) as the unit"}


def _design(d: AttributionDiff) -> str:
    return f"{d.n_a} + {d.n_b} {DESIGNS.get(d.design, 'profiled trials, unpaired (Welch)')}"


def level(d: AttributionDiff, over: bool = True) -> str:
    """The claims' false discovery rate: at this look, and in all, when the adaptive rounds looked more than
    once (stats.profile_looks). `over`: with the functions it is over, the total in parentheses (the table and
    sentences); without, the total after a comma (the flame graph's title, itself in parentheses)."""
    each = f"FDR {100 * d.alpha:.2g}%" + (f" over {d.tested} functions" if over else "")
    if len(d.looks) <= 1 or d.alpha_in_all is None:
        return each
    look, in_all = f"at look {d.look + 1} of {len(d.looks)}", f"{100 * d.alpha_in_all:.2g}% in all"
    return f"{each} {look} ({in_all})" if over else f"{each} {look}, {in_all}"


def _too_few(d: AttributionDiff) -> str | None:
    """Nothing claimed although the CPU time per trial moved (by a tenth or more) and one function carries most
    of the move: not off-CPU time, but too few units to prove it (2 + 2 boots give Welch intervals about one
    degree of freedom wide, FDR-adjusted over every function: ±25 s around a −2 s difference, run 06e9b747 of
    bench/explain_qemu.py). Says so, with that function, instead of pointing off-CPU; None otherwise."""
    total = d.cpu_b_s - d.cpu_a_s
    own = [f for f in d.functions if f.mode == "self"]
    top = max(own, key=lambda f: abs(f.diff_s), default=None)
    if top is None or abs(total) < 0.1 * max(d.cpu_a_s, d.cpu_b_s) or top.diff_s * total <= 0:
        return None
    if abs(top.diff_s) < abs(total) / 2:
        return None
    more = "more boots (min_boots) or runs" if d.design == "units" else "more profiled trials (max_profiled)"
    return (
        f"no function's CPU time per trial differs provably with {_design(d)} ({level(d)}), though the CPU "
        f"time differs by {_ms(total)} ms per trial, of which "
        f"{_named(top)}: too few to prove it; {more} would"
    )


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
        trials_b = profiled_trials(report, other)
        d = _compared(report, v, base, other)
        if d is None:
            continue
        seen.add(key)
        out.append({"verdict": v, "diff": d, "sentence": sentence(v, d), "trials_b": trials_b})
    return out


def where_by_cell(report: RunReport) -> dict[tuple[str, str], str]:
    """(group, variant) -> where its significant difference from the baseline went (check's and bisect's line
    when the gate trips: a CI log that says which function regressed)."""
    return {(e["verdict"].group, e["verdict"].variant): where(e["diff"]) for e in explanations(report)}


def table(d: AttributionDiff) -> list[str]:
    """80 columns: each function's self time per trial on A and B (ms), the difference and its interval; claimed
    functions first in the sentence's order (AttributionDiff.claimed), then the largest differences."""
    rows = sorted(
        (f for f in d.functions if f.mode == "self"),
        key=lambda f: (not f.claimed, -f.proven_s, -abs(f.diff_s)),
    )
    head = f"{'function (self)':<{NAME_WIDTH}} {'A ms':>8} {'B ms':>8} {'B-A ms':>8}  interval"
    lines = [head]
    for f in rows[:TABLE_ROWS]:
        name = f.function + (" [k]" if f.space == "kernel" else "")
        name = name if len(name) <= NAME_WIDTH - 2 else name[: NAME_WIDTH - 3] + "…"
        mark = "*" if f.claimed else " "
        interval = f"{_ms_short(f.low_s)} to {_ms_short(f.high_s)}"
        lines.append(
            f"{mark}{name:<{NAME_WIDTH - 1}} {f.a_s * 1e3:8.1f} {f.b_s * 1e3:8.1f} {_ms_short(f.diff_s):>8}  {interval}"
        )
    rest = len(rows) - TABLE_ROWS
    foot = f"* claimed: {level(d)}; {_design(d)}"
    lines += (
        [foot] if len(foot) <= 76 else [f"* claimed: {level(d)};", f"  {_design(d)}"]
    )  # 80 with the indent
    if rest > 0:
        lines.append(f"  {rest} more functions tested: --json has them all")
    return lines


def _title(e: dict[str, Any]) -> str:
    v = e["verdict"]
    return f"{v.workload} {v.baseline} -> {v.variant}"


def _terminal(r: RunReport, _: Context) -> None:
    shown = explanations(r)
    if not shown:
        return
    console.print("[bold]where the difference went[/bold] (CPU profiles of the profiled trials)")
    for e in shown:
        console.print(f"  {escape(console.wrap(e['sentence'], first=2, indent='    '))}")
        for line in table(e["diff"]):
            console.print(f"    {escape(line)}", overflow="ignore", crop=False)


def _text(w: Writer, r: RunReport, _: Context) -> None:
    shown = explanations(r)
    if not shown:
        return
    w.heading("Where the difference went", 3)
    for e in shown:
        w.para(f"{_title(e)}: {e['sentence']}")
        w.block(table(e["diff"]))


def _json(r: RunReport, _: Context) -> dict[str, Any]:
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
            }
            | d.to_dict()
        )
    return out


# -- HTML: B's flame graph coloured only where a function's difference is proven ----------------------------

GREY = {"user": "rgb(190,190,190)", "kernel": "rgb(214,214,214)"}


def palette(d: AttributionDiff, folded: str) -> dict[str, str]:
    """Every frame of `folded` -> its colour: red where the function's own (self) CPU time per trial is proven
    higher on B, blue where proven lower, deeper the larger its share of the largest proven difference; grey
    (lighter for the kernel) where no difference is proven — a frame's width alone says nothing about A."""
    claimed = {(f.function, f.space): f.diff_s for f in d.claimed("self")}
    top = max((abs(x) for x in claimed.values()), default=1.0) or 1.0
    colours = {"": GREY["user"]}  # inferno's root frame ("all")
    for line in folded.splitlines():
        stack, _, _ = line.rpartition(" ")
        for frame in stack.split(";"):
            if frame in colours:
                continue
            diff = claimed.get(frame_space(frame))
            if diff is None:
                colours[frame] = GREY[frame_space(frame)[1]]
                continue
            pale = round(150 * (1 - abs(diff) / top))
            colours[frame] = f"rgb(255,{pale},{pale})" if diff > 0 else f"rgb({pale},{pale},255)"
    return colours


def _flame_view(e: dict[str, Any]) -> dict[str, str]:
    from fairmark.report import plots  # matplotlib: the HTML report's alone (tests/test_architecture.py)

    v, d = e["verdict"], e["diff"]
    folded = plots.merge_folded([t.folded for t in e["trials_b"]])
    title = f"{v.workload}: {v.variant} vs {v.baseline}, coloured where proven ({level(d, over=False)})"
    made = plots.flamegraph_svg(folded, title, palette=palette(d, folded))
    if made is None:
        return {"missing": "no flame graph renderer: `cargo install inferno` (or FlameGraph on PATH)"}
    return {"uri": plots.svg_data_uri(made[0]), "renderer": made[1]}


def _html(r: RunReport, _: Context) -> list[dict[str, Any]]:
    return [
        {
            "title": _title(e),
            "sentence": e["sentence"],
            "table": table(e["diff"]),
            "variant": e["verdict"].variant,
            "baseline": e["verdict"].baseline,
            "flame": _flame_view(e),
        }
        for e in explanations(r)
    ]


SECTION = Section("explain", terminal=_terminal, text=_text, json=_json, html=_html)
