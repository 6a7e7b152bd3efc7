"""`fairmark compare` of other tools' results (go test -bench, hyperfine, pyperf, Google Benchmark, criterion):
benchstat's layout — one table per package and unit, one row per benchmark, a geometric-mean row — with
fairmark's statistics: each row's change is its own verdict (Welch's t on the logarithms, or Yuen's trimmed t
where stats.robust's rule says so) with its interval, and q the Benjamini-Hochberg false discovery rate across
every row of the command. A benchmark with fewer than 3 values on a side says it cannot be judged; the others are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fairmark.console import console
from fairmark.formats.model import Results, Series
from fairmark.stats.describe import describe
from fairmark.stats.digits import column_unit, format_cv, format_pair, format_value
from fairmark.stats.robust import DESIGN as ROBUST
from fairmark.verdict.compare import Comparison, change_text, percent_texts
from fairmark.verdict.judge import MIN_VALUES, Judgement
from fairmark.verdict.pairs import SeriesPair, judge_series

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONObject

Key = tuple[str, str, str]  # (group, name, unit)
UNPROVEN, ROBUST_MARK = "~", "†"  # a row's marks: not proven after FDR control; Yuen's t decided
JUDGED = ""  # a row with a verdict (no mark of its own): the legend then says what a verdict is
MARKS = (UNPROVEN, ROBUST_MARK, JUDGED)


@dataclass(frozen=True)
class Row:
    key: Key
    series: tuple[Series | None, ...]  # one per file (None: the file has no such benchmark)
    judged: tuple[Judgement[tuple[int, int]] | None, ...]  # one per file after the first


def compare_results(files: Sequence[Results], *, confidence: float) -> list[Row]:
    """Every benchmark and unit of the first file (or, for one hyperfine file, every command against the
    first) judged against the same one in each other file."""
    columns = _columns(files)
    keys = list(dict.fromkeys(k for col in columns for k in col))
    pairs = [
        SeriesPair(
            base.values, other.values, base.better, base.unit, (_label(files, 0), _label(files, j)), (i, j)
        )
        for i, key in enumerate(keys)
        if (base := columns[0].get(key)) is not None
        for j in range(1, len(columns))
        if (other := columns[j].get(key)) is not None
    ]
    by_tag = {j.pair.tag: j for j in judge_series(pairs, confidence=confidence)}
    return [
        Row(
            key,
            tuple(col.get(key) for col in columns),
            tuple(by_tag.get((i, j)) for j in range(1, len(columns))),
        )
        for i, key in enumerate(keys)
    ]


def _commands(files: Sequence[Results]) -> bool:
    """One hyperfine file of several commands: each command is a column (the first the baseline)."""
    return len(files) == 1 and files[0].tool == "hyperfine" and len(files[0].series) > 1


def _columns(files: Sequence[Results]) -> list[dict[Key, Series]]:
    if _commands(files):
        # one hyperfine file of several commands: each command is a column, its rows matched by unit
        return [{("", "time", s.unit): s} for s in files[0].series]
    return [{s.key: s for s in f.series} for f in files]


def _label(files: Sequence[Results], j: int) -> str:
    if _commands(files):
        return files[0].series[j].name
    return files[j].path


def render(files: Sequence[Results], rows: Sequence[Row], *, confidence: float) -> None:
    """The tables, one per group and unit, each closed by its geomean row; then the notes."""
    names = [_label(files, j) for j in range(len(_columns(files)))]
    for line in _config_lines(files):
        console.print(line, highlight=False)
    notes: list[str] = []
    for group, unit in dict.fromkeys((r.key[0], r.key[2]) for r in rows):
        mine = [r for r in rows if r.key[0] == group and r.key[2] == unit]
        table = console.table("benchmark", *_headers(names), right=tuple(names))
        # one prefix for the table, named in its title ("µs", not "0.00013 ± 27%" under "s")
        div, shown = column_unit(
            [float(np.median(s.values)) for r in mine for s in r.series if s and s.values], unit
        )
        for r in mine:
            table.add_row(r.key[1], *_cells(r, notes, div))
        if len(mine) > 1:
            table.add_row("geomean", *_geomean(mine, len(names), div))
        better = mine[0].series[0].better if mine[0].series[0] else "lower"
        title = f"{shown or 'value'} ({better} is better)" + (f", pkg: {group}" if group else "")
        console.print_table(table, title)
    console.print(console.wrap(_legend(notes, confidence)), highlight=False)


def _legend(notes: Sequence[str], confidence: float) -> str:
    """The notes under the tables: "~" and "†" explained only when a row shows them (`notes` holds each row's
    mark, MARKS, and the sentences of rows that could not be judged); what a verdict is only when a row has one."""
    said = "; ".join(dict.fromkeys(n[0].upper() + n[1:] for n in notes if n not in MARKS))
    unproven = (
        f"{UNPROVEN}: no difference proven at {confidence:g}% confidence. " if UNPROVEN in notes else ""
    )
    robust = (
        f"; {ROBUST_MARK} Yuen's t on 20%-trimmed means, where outliers were flagged or the rank test disagreed"
        if ROBUST_MARK in notes
        else ""
    )
    verdicts = (
        f"{unproven}Each change is fairmark's verdict for that benchmark (Welch's t on the logarithms{robust}), "
        "with its interval; q: the false discovery rate across all rows (Benjamini-Hochberg). "
        if JUDGED in notes
        else ""
    )
    return f"{verdicts}Medians ± the half-width of their {confidence:g}% interval." + (
        f" {said}." if said else ""
    )


def _headers(names: Sequence[str]) -> list[str]:
    out = [names[0]]
    for name in names[1:]:
        out += [name, f"vs {names[0]}"]
    return out


def _center(s: Series | None, div: float = 1.0) -> str:
    """The median at the digits its interval's half-width allows, and that half-width in % (two digits)."""
    if s is None:
        return "—"
    if len(s.values) < 2:
        return f"{format_value(s.values[0] / div)} (n=1)" if s.values else "(n=0)"
    d = describe(s.values)
    if math.isfinite(d.median_ci_low) and d.median:
        half = (d.median_ci_high - d.median_ci_low) / 2
        shown = format_pair(d.median / div, half / div)[0] if half > 0 else format_value(d.median / div)
        return f"{shown} ± {format_cv(half / abs(d.median))}"
    return format_value(d.median / div)


def _cells(r: Row, notes: list[str], div: float) -> list[str]:
    out = [_center(r.series[0], div)]
    for j, judged in enumerate(r.judged, start=1):
        out += [_center(r.series[j], div), _change(r, j, judged, notes)]
    return out


def _change(r: Row, j: int, judged: Judgement[tuple[int, int]] | None, notes: list[str]) -> str:
    base, other = r.series[0], r.series[j]
    if base is None or other is None:
        return "missing"
    if judged is None:
        least = min(len(base.values), len(other.values))
        notes.append(f"cannot be judged: fewer than {MIN_VALUES} values on a side (go test -count=1?)")
        return f"cannot be judged (n={least})"
    c = judged.comparison
    notes.append(JUDGED)
    mark = ROBUST_MARK if c.design == ROBUST else ""
    if mark:
        notes.append(mark)
    n = f"n={c.n_baseline}+{c.n_other}"
    if not judged.fdr_significant:
        notes.append(UNPROVEN)
        return f"{UNPROVEN} {c.interval}{mark} q={judged.q_value:.2g} {n}"
    return f"{c.interval}{mark} {_word(c)} q={judged.q_value:.2g} {n}"


TIMES = ("ns", "us", "µs", "ms", "s", "sec", "ns/op", "sec/op", "s/op", "ns real_time", "ns cpu_time")


def _word(c: Comparison) -> str:
    """faster/slower for a time, better/worse for anything else."""
    if c.unit in TIMES or c.unit.endswith(("_time", "s/op")):
        return {"better": "faster", "worse": "slower"}.get(c.change, "")
    return c.change if c.change != "none" else ""


def _geomean(rows: Sequence[Row], columns: int, div: float) -> list[str]:
    """Each column's geometric mean of the benchmarks' medians over the rows every column has (positive
    values only), and the geometric mean of the rows' verdict ratios — a summary, not a test. Each is rounded
    as the house rounds a value: to the digits of its interval's half-width, here on the log scale the root of
    the sum of the rows' squared half-widths over their count (rows taken as independent)."""
    full = [r for r in rows if all(s is not None and s.values and min(s.values) > 0 for s in r.series)]
    if not full:
        return [""] * (2 * columns - 1)
    centers = [_center_mean([r.series[j] for r in full], div) for j in range(columns)]  # type: ignore[misc]
    out = [centers[0]]
    for j in range(1, columns):
        cs = [r.judged[j - 1].comparison for r in full if r.judged[j - 1] is not None]  # type: ignore[union-attr]
        cs = [c for c in cs if math.isfinite(c.ratio) and c.ratio > 0]
        out += [centers[j], _ratio_mean(cs)]
    return out


def _log_mean(pairs: Sequence[tuple[float, float, float]]) -> tuple[float, float | None]:
    """exp(mean log value) of (value, interval low, high) triples, and its half-width on the log scale (None
    when a row has no interval)."""
    centre = math.exp(float(np.mean([math.log(v) for v, _, _ in pairs])))
    halves = [(math.log(hi) - math.log(lo)) / 2 for _, lo, hi in pairs if 0 < lo <= hi and math.isfinite(hi)]
    if len(halves) < len(pairs):
        return centre, None
    return centre, math.sqrt(sum(h * h for h in halves)) / len(pairs)


def _center_mean(series: Sequence[Series], div: float) -> str:
    ds = [describe(s.values) for s in series]
    centre, hw = _log_mean([(d.median, d.median_ci_low, d.median_ci_high) for d in ds])
    centre /= div
    return format_pair(centre, centre * math.expm1(hw))[0] if hw else format_value(centre)


def _ratio_mean(cs: Sequence[Comparison]) -> str:
    if not cs:
        return ""
    g, hw = _log_mean([(c.ratio, c.ratio_ci_low, c.ratio_ci_high) for c in cs])
    texts = percent_texts(g, g * math.exp(-hw), g * math.exp(hw), False) if hw else None
    return texts[0] if texts else change_text(100.0 * (g - 1.0), None)


def _config_lines(files: Sequence[Results]) -> list[str]:
    seen: dict[str, list[str]] = {}
    for f in files:
        for k, v in f.config.items():
            if k != "pkg" and v not in seen.setdefault(k, []):
                seen[k].append(v)
    return [f"{k}: {' | '.join(v)}" for k, v in seen.items()]


def to_json(files: Sequence[Results], rows: Sequence[Row]) -> JSONObject:
    names = [_label(files, j) for j in range(len(_columns(files)))]
    return {
        "files": [{"path": f.path, "tool": f.tool, "config": dict(f.config)} for f in files],
        "columns": list(names),
        "rows": [
            {
                "group": r.key[0],
                "benchmark": r.key[1],
                "unit": r.key[2],
                "n": [len(s.values) if s else None for s in r.series],
                "comparisons": [
                    None
                    if j is None
                    else {
                        **j.comparison.to_dict(),
                        "q_value": j.q_value,
                        "significant_fdr": j.fdr_significant,
                    }
                    for j in r.judged
                ],
            }
            for r in rows
        ],
    }
