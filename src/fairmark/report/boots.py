"""What a report shows of a run with boot variants (issue 14): each boot (its variant, id, how long it took to
come back, what was verified) and, per verdict with boots as the unit, the per-boot means and the variance at
each level (between boots, within a boot) that the verdict rests on."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fairmark.console import console
from fairmark.report.section import Context, Section
from fairmark.stats.describe import mean_ci, pooled_var
from fairmark.stats.digits import format_cv, format_pair, format_spread, scale_unit, shared_scale, unit_suffix

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.report.writer import Writer
    from fairmark.stats.levels import Levels
    from fairmark.verdict.compare import Comparison


def boot_records(report: RunReport) -> list[dict[str, Any]]:
    """The newest record of each boot block, in boot order (run.loop.bootrun writes them)."""
    latest: dict[int, dict[str, Any]] = {}
    for a in report.artifacts("boot"):
        data = a["data"]
        if isinstance(data, dict) and isinstance(block := data.get("block"), int):
            latest[block] = data
    return [latest[i] for i in sorted(latest)]


def boot_lines(report: RunReport) -> list[str]:
    out = []
    for rec in boot_records(report):
        what = {
            "verified": "verified",
            "wrong": "REFUSED (not this variant)",
            "rebooting": "rebooting, not back",
        }
        status = what.get(rec.get("phase", ""), rec.get("phase", ""))
        took = f" after {rec['seconds']:g} s" if rec.get("seconds") is not None else ""
        where = f" on host {rec['host']}" if rec.get("host") else ""
        line = f"boot {rec['block'] + 1} ({rec['variant']}{where}): {status}{took}; boot id {rec.get('boot_id') or '—'}"
        evidence = (rec.get("check") or {}).get("evidence") or []
        if rec.get("phase") == "verified":  # its boot id is on the line already
            evidence = [e for e in evidence if not e.startswith("boot id:")]
        out.append(line + (f" — {'; '.join(evidence)}" if evidence else ""))
    return out


def levels_lines(comparison: Comparison, unit: str, scale: float | None = None) -> list[str]:
    """Per-unit means and each side's sd at each level, on the scale the verdict tests (logarithms: in %, the sd
    of the log ×100; else in the values' unit), of a verdict judged with boots (or hosts, runs) as the unit.
    `scale`: the magnitude that picks the means' prefix, that of the table these lines follow (its means'
    digits.shared_scale), so that a mean is in one unit on one screen ("0.46" in a table in s, not "460 ms"
    below it); by default the unit means' own. An sd, a spread, takes its own ("sd 12 ms" of means in s)."""
    if comparison.levels is None:
        return []
    lv = comparison.levels.levels
    level, log = lv.unit, lv.scale == "log"
    sides = (lv.baseline, lv.other)
    # one prefix for every mean of the line, each mean at the digits of its own CI: the "mean ± CI" a run's table
    # shows ("28450 ± 250" there, "28580" of "28600 ± 500" here, when every mean took half the pooled sd); a unit
    # of one trial at half the pooled sd
    var_t, df_t = pooled_var([*lv.groups_baseline, *lv.groups_other])
    sd_t = math.sqrt(var_t) if df_t else 0.0
    ref = shared_scale([*lv.unit_means_baseline, *lv.unit_means_other]) if scale is None else scale
    divisor, shown = scale_unit(ref or 0.0, unit)
    suffix = unit_suffix(shown)

    def half(g: Any) -> float | None:
        hw = mean_ci(g, comparison.confidence)[2] if len(g) > 1 else sd_t / 2
        return hw / divisor if hw and math.isfinite(hw) else None

    def means(xs: tuple[float, ...], groups: tuple[Any, ...]) -> str:
        halves = (
            [half(g) for g in groups] if len(groups) == len(xs) else [sd_t / 2 / divisor or None] * len(xs)
        )
        return ", ".join(format_pair(x / divisor, h)[0] + suffix for x, h in zip(xs, halves, strict=True))

    def sd(x: float) -> str:  # a zero spread in the means' prefix ("0 ms"), not the base unit's
        if not math.isfinite(x):
            return "unknown"
        if log:
            return format_cv(x)  # "130%", not "1.3e+02%"
        return f"0{suffix}" if x == 0 else format_spread(x, unit)

    names = (comparison.name_baseline, comparison.name_other)
    per_side = "; ".join(
        f"{n}: between-{level} sd {sd(s.sd_unit)}, within-{level} sd {sd(s.sd_trial)}"
        for n, s in zip(names, sides, strict=True)
        if s is not None
    )
    tested = "; sd of the logarithm ×100, the scale the verdict tests" if log else ""
    return [
        f"{level} means — {names[0]}: {means(lv.unit_means_baseline, lv.groups_baseline)}; "
        f"{names[1]}: {means(lv.unit_means_other, lv.groups_other)}",
        f"{per_side} ({lv.units_baseline} vs {lv.units_other} {level}s, {_trial_counts(lv)}{tested})",
    ]


def _trial_counts(lv: Levels) -> str:
    """'16 trials, 8 per boot' when every unit has as many; else each side's own ('15 and 5 trials' of two runs,
    '30 trials: 8 and 3–5 per boot'), never their mean as if it were every unit's."""
    counts = [sorted(len(g) for g in side) for side in (lv.groups_baseline, lv.groups_other)]
    if not all(counts) or len({c for side in counts for c in side}) <= 1:
        return f"{lv.trials} trials, {lv.trials_per_unit:.3g} per {lv.unit}"
    if all(len(side) == 1 for side in counts):
        return f"{counts[0][0]} and {counts[1][0]} trials"
    a, b = (f"{side[0]}" if side[0] == side[-1] else f"{side[0]}–{side[-1]}" for side in counts)
    return f"{lv.trials} trials: {a} and {b} per {lv.unit}"


# -- the section: a boot run's boots (report/sections.py) ------------------------------------------------------
def _terminal(r: RunReport, _: Context) -> None:
    boots = boot_lines(r)
    if boots:
        console.print()
        console.text("boots (A B B A …; the verdicts take the boot as their unit):")
        for line in boots:
            console.text(f"  {line}")


def _text(w: Writer, r: RunReport, _: Context) -> None:
    boots = boot_lines(r)
    if boots:
        w.heading("Boots (A B B A …; the verdicts take the boot as their unit)", 3)
        for line in boots:
            w.para(line, "- ")


def _json(r: RunReport, _: Context) -> dict[str, Any]:
    """A boot-variant run's boots, each with what was verified (only for such runs)."""
    records = boot_records(r)
    return {"boots": records} if records else {}


SECTION = Section("boots", terminal=_terminal, text=_text, json=_json)
