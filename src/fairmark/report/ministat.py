"""The ministat text view: legend, ASCII plot, N/Min/Max/Median/Avg/Stddev table and the Student's t block,
laid out character for character like ministat (Debian 20150715) so its users recognise it.

Where ministat is wrong fairmark is right by default and ministat-identical with `ministat_compat=True`:

* median: ministat prints the upper middle element for even N (1 2 3 10 → 3); fairmark the median (2.5);
* plot height: ministat shrinks the plot to the last data set's stack height and can erase points of earlier
  data sets (three equal values of the first set show as two); fairmark keeps every point.

The standard deviation is always the numerically stable one: ministat's sum-of-squares formula prints 0 for
1e8 + {0, 1, 2}.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fairmark.stats import Comparison, describe, ministat_median

SYMBOLS = " x+*%#@O"  # ministat's: data set i plots as SYMBOLS[i + 1]; overlapping points OR their numbers
MAX_DATASETS = len(SYMBOLS) - 1
DEFAULT_WIDTH = 74  # ministat's width when stdout is not a terminal
HEADER = "    N           Min           Max        Median           Avg        Stddev"

Dataset = tuple[str, Sequence[float]]


@dataclass
class _Frame:
    """Horizontal scale shared by all data sets: column = int((value − x0)/dx)."""

    x0: float
    dx: float
    width: int

    def col(self, value: float) -> int:
        return min(max(int((value - self.x0) / self.dx), 0), self.width - 1)


def _median(values: Sequence[float], compat: bool) -> float:
    return ministat_median(values) if compat else describe(values).median


def _frame(datasets: Sequence[Dataset], width: int) -> _Frame | None:
    lo, hi = math.inf, -math.inf
    for _, values in datasets:
        s = describe(values)
        sd = 0.0 if math.isnan(s.stddev) else s.stddev
        lo, hi = min(lo, s.min, s.mean - sd), max(hi, s.max, s.mean + sd)
    span = hi - lo
    if span == 0:
        return None
    dx = span / (width - 1.0)
    return _Frame(x0=lo - 0.5 * dx, dx=dx, width=width)


def _stack(frame: _Frame, values: Sequence[float]) -> list[tuple[int, int]]:
    """(row, column) of every point: equal columns stack upwards from row 1."""
    out, last, row = [], -1, 0
    for v in sorted(values):
        col = frame.col(v)
        row = row + 1 if col == last else 1
        last = col
        out.append((row, col))
    return out


def _bar(frame: _Frame, bar: list[str], values: Sequence[float], compat: bool) -> None:
    s = describe(values)
    if not math.isnan(s.stddev):
        left, right = frame.col(s.mean - s.stddev), frame.col(s.mean + s.stddev)
        bar[left] = bar[right] = "|"
        for i in range(left + 1, right):
            if bar[i] == " ":
                bar[i] = "_"
    bar[frame.col(_median(values, compat))] = "M"
    bar[frame.col(s.mean)] = "A"


def ascii_plot(
    datasets: Sequence[Dataset],
    width: int = DEFAULT_WIDTH,
    *,
    separate_bars: bool = False,
    ministat_compat: bool = False,
) -> list[str]:
    """ministat's plot as lines (frame included). `x`, `+`, `*`… per data set, overlapping points combine;
    `|___A_M___|` marks mean ± stddev, A the mean, M the median (a bar line per set with `separate_bars`).
    Only the first 7 data sets fit ministat's symbols; a last line says how many more were left out."""
    if not datasets:
        raise ValueError("no data sets to plot")
    if len(datasets) > MAX_DATASETS:
        shown = datasets[:MAX_DATASETS]
        lines = ascii_plot(shown, width, separate_bars=separate_bars, ministat_compat=ministat_compat)
        more = len(datasets) - MAX_DATASETS
        return [*lines, f"[{more} more data set(s) not plotted: the plot has symbols for {MAX_DATASETS}]"]
    if width < 3:
        raise ValueError(f"plot width must be at least 3 columns, got {width}")
    frame = _frame(datasets, width)
    if frame is None:
        return ["[no plot, span is zero width]"]
    rows: dict[int, list[int]] = {}
    height = 0
    bars = [[" "] * width for _ in range(len(datasets) if separate_bars else 1)]
    for k, (_, values) in enumerate(datasets):
        points = _stack(frame, values)
        need = max(row for row, _ in points) + 1
        if need > height:
            for r in range(height, need):
                rows[r] = [0] * width
        height = need if ministat_compat else max(height, need)
        for row, col in points:
            rows.setdefault(row, [0] * width)[col] |= k + 1
        _bar(frame, bars[k if separate_bars else 0], values, ministat_compat)
    rule = "+" + "-" * width + "+"
    body = ["|" + "".join(SYMBOLS[c] for c in rows[r]) + "|" for r in range(height - 1, 0, -1)]
    return [rule, *body, *("|" + "".join(b) + "|" for b in bars), rule]


def legend(datasets: Sequence[Dataset]) -> list[str]:
    return [f"{SYMBOLS[k + 1]} {name}" for k, (name, _) in enumerate(datasets[:MAX_DATASETS])]


def vitals_line(index: int, values: Sequence[float], *, ministat_compat: bool = False) -> str:
    s = describe(values)
    line = f"{SYMBOLS[index + 1]} {s.n:3d} {s.min:13.8g} {s.max:13.8g} "
    line += f"{_median(values, ministat_compat):13.8g} {s.mean:13.8g}"
    return line + (f" {s.stddev:13.8g}" if s.n > 1 else "")


def relative_block(c: Comparison) -> list[str]:
    """ministat's Student's t lines for one comparison, in its printf formats (%g: 6 significant digits)."""
    if not c.ministat_significant:
        return [f"No difference proven at {c.confidence:.1f}% confidence"]
    return [
        f"Difference at {c.confidence:.1f}% confidence",
        f"\t{c.difference:g} +/- {c.half_width:g}",
        f"\t{c.percent:g}% +/- {c.percent_half_width:g}%",
        f"\t(Student's t, pooled s = {c.pooled_stddev:g})",
    ]


def render(
    datasets: Sequence[Dataset],
    comparisons: Sequence[Comparison] = (),
    *,
    width: int = DEFAULT_WIDTH,
    plot: bool = True,
    relative: bool = True,
    separate_bars: bool = False,
    ministat_compat: bool = False,
) -> list[str]:
    """The whole ministat output: legend, plot, table; `comparisons[i]` is data set i + 1 vs the first."""
    _check(datasets)
    lines = legend(datasets)
    if plot:
        lines += ascii_plot(datasets, width, separate_bars=separate_bars, ministat_compat=ministat_compat)
    lines.append(HEADER)
    for k, (_, values) in enumerate(datasets):
        lines.append(vitals_line(k, values, ministat_compat=ministat_compat))
        if relative and k > 0 and k - 1 < len(comparisons):
            lines += relative_block(comparisons[k - 1])
    return lines


def _check(datasets: Sequence[Dataset]) -> None:
    if not datasets:
        raise ValueError("no data sets to plot")
    if len(datasets) > MAX_DATASETS:
        raise ValueError(f"at most {MAX_DATASETS} data sets fit ministat's symbols, got {len(datasets)}")


def ratio_text(c: Comparison) -> str:
    """'chameleon/iguana = 1.8, 95% CI [0.66, 6.4]' from the Welch/Fieller result, digits as the CI supports."""
    from fairmark.stats import format_pair

    w = c.welch
    head = f"{c.name_other}/{c.name_baseline} = "
    low, high = w["ratio_ci_low"], w["ratio_ci_high"]
    if math.isnan(low) or math.isnan(high):
        return head + f"{w['ratio']:.4g}, {c.confidence:g}% CI unbounded"
    hw = (high - low) / 2
    ratio, lo_t, hi_t = (format_pair(v, hw)[0] for v in (w["ratio"], low, high))
    return head + f"{ratio}, {c.confidence:g}% CI [{lo_t}, {hi_t}]"


def verdict_lines(c: Comparison) -> list[str]:
    """fairmark's reading of one comparison: the sentence, Welch's ratio CI, the rank-test cross-check, the
    warnings and, where fairmark's numbers differ from ministat's, a note saying so."""
    w, u = c.welch, c.mann_whitney
    alpha = 1.0 - c.confidence / 100.0
    if u.get("min_p", 0.0) >= alpha:
        agree = f"it cannot reach p < {alpha:g} with these n"
    else:
        agree = ("agrees" if u["significant"] == c.significant else "DISAGREES") + " with Student's t"
    welch_p = "n/a" if math.isnan(w["p_value"]) else f"{w['p_value']:.2g}"
    exact = "exact " if u.get("exact") else ""
    lines = [
        c.sentence,
        f"    Welch's t: {ratio_text(c)} (p = {welch_p}); Student's t p = {c.student_p:.2g}",
        f"    Mann-Whitney U = {u['u']:g}, {exact}p = {u['p_value']:.2g} ({agree})",
    ]
    lines += [f"    warning: {text}" for text in c.warnings]
    if c.ministat_note:
        lines.append(f"    note: {c.ministat_note}")
    return lines
