"""The ministat text view: legend, ASCII plot, N/Min/Max/Median/Avg/Stddev table and the Student's t block,
laid out character for character like ministat (Debian 20150715) so its users recognise it.

With `ministat_compat=True` every number is computed the way ministat computes it, so the bytes are ministat's:
the sums of the values and of their squares in input order (Avg = Σy/n, Var = (Σy² − (Σy)²/n)/(n − 1), whose
cancellation prints "-nan" for three equal values like 0.1), the upper middle element as the median, the plot
height of the last data set, IEEE division (a zero baseline mean prints "inf%"), C's printf of nan ("-nan" when
the sign bit is set). By default fairmark is right where ministat is wrong:

* median: ministat prints the upper middle element for even N (1 2 3 10 → 3); fairmark the median (2.5);
* plot height: ministat shrinks the plot to the last data set's stack height and can erase points of earlier
  data sets (three equal values of the first set show as two); fairmark keeps every point;
* the standard deviation is the numerically stable one (ministat's sum-of-squares formula prints 0 for
  1e8 + {0, 1, 2} and -nan for 0.1, 0.1, 0.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairmark.stats import Summary, describe, ministat_median
from fairmark.stats.tdist import ministat_t
from fairmark.verdict.compare import Comparison

SYMBOLS = " x+*%#@O"  # ministat's: data set i plots as SYMBOLS[i + 1]; overlapping points OR their numbers
_SYMBOL_TABLE = bytes(SYMBOLS, "ascii").ljust(256, b"?")  # cell value → its symbol, in one bytes.translate
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


@dataclass(frozen=True)
class Vitals:
    """One data set's line of the table, and what the plot and the t block are computed from."""

    n: int
    min: float
    max: float
    median: float
    avg: float
    stddev: float  # nan for n < 2 (and, in compat mode, wherever ministat's formula gives nan)
    var: float


def vitals(values: Sequence[float], compat: bool) -> Vitals:
    """fairmark's numbers, or (compat) ministat's: its sums in input order and its variance formula."""
    if not compat:
        return _of(describe(values))
    sy = syy = 0.0
    for y in values:  # sequential, as ministat adds each point when it reads it (not numpy's pairwise sum)
        y = float(y)
        sy += y
        syy += y * y
    n = len(values)
    var = (syy - sy * sy / n) / (n - 1.0) if n > 1 else math.nan
    return Vitals(
        n, float(min(values)), float(max(values)), ministat_median(values), sy / n, c_sqrt(var), var
    )


def _of(s: Summary) -> Vitals:
    return Vitals(s.n, s.min, s.max, s.median, s.mean, s.stddev, s.stddev * s.stddev)


# The CPU's default NaN, as C's sqrt(-1) and 0.0/0.0 produce it: on x86 its sign bit is set and glibc prints
# "-nan" (inf − inf is computed by the same hardware).
NAN_DEFAULT = math.inf - math.inf


def c_sqrt(x: float) -> float:
    """C's sqrt: a negative argument gives the default NaN (printed "-nan"), not an exception."""
    if math.isnan(x):
        return x
    return math.sqrt(x) if x >= 0 else NAN_DEFAULT


def c_div(a: float, b: float) -> float:
    """IEEE division as C does it: x/0 is ±inf, 0/0 the default NaN."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return NAN_DEFAULT
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def c_g(x: float, spec: str = "g") -> str:
    """C's printf of a double with `spec` (e.g. "13.8g"): like Python's, but nan keeps its sign ("-nan")."""
    if math.isnan(x):
        text = "-nan" if math.copysign(1.0, x) < 0 else "nan"
        width = spec.split(".")[0].rstrip("g")
        return text.rjust(int(width)) if width else text
    return format(x, spec)


def _frame(stats: Sequence[Vitals], width: int, compat: bool) -> _Frame | None:
    # ministat starts its plot's ends at ±1e292, not ±inf: data all beyond 1e292 is drawn from there
    lo, hi = (1e292, -1e292) if compat else (math.inf, -math.inf)
    for s in stats:
        ends = [s.min, s.max]
        if not math.isnan(s.stddev):  # ministat's comparisons with nan are false: such a point is skipped
            ends += [s.avg - s.stddev, s.avg + s.stddev]
        elif not compat:
            ends += [s.avg]
        lo, hi = min(lo, *ends), max(hi, *ends)
    span = hi - lo
    if span == 0:
        return None
    dx = span / (width - 1.0)
    return _Frame(x0=lo - 0.5 * dx, dx=dx, width=width)


def _stack(frame: _Frame, values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of every point: equal columns stack upwards from row 1 (ministat's loop, vectorised: a
    million points take milliseconds)."""
    # in place, in 32-bit integers: the temporaries of 100 000 points were a third of `compare`'s peak memory
    x = np.sort(np.asarray(values, dtype=float))
    x -= frame.x0
    x /= frame.dx
    cols = x.astype(np.int64)  # C's truncation
    del x
    np.clip(cols, 0, frame.width - 1, out=cols)
    cols = cols.astype(np.int32)
    rows = np.arange(cols.size, dtype=np.int32)
    start = np.where(np.r_[True, cols[1:] != cols[:-1]], rows, 0)
    np.maximum.accumulate(start, out=start)
    rows -= start
    rows += 1
    return rows, cols


def _bar(frame: _Frame, bar: list[str], s: Vitals) -> None:
    if not math.isnan(s.stddev):
        left, right = frame.col(s.avg - s.stddev), frame.col(s.avg + s.stddev)
        bar[left] = bar[right] = "|"
        for i in range(left + 1, right):
            if bar[i] == " ":
                bar[i] = "_"
    bar[frame.col(s.median)] = "M"
    bar[frame.col(s.avg)] = "A"


def ascii_plot(
    datasets: Sequence[Dataset],
    width: int = DEFAULT_WIDTH,
    *,
    separate_bars: bool = False,
    ministat_compat: bool = False,
    stats: Sequence[Vitals] | None = None,
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
    stats = stats or [vitals(values, ministat_compat) for _, values in datasets]
    frame = _frame(stats, width, ministat_compat)
    if frame is None:
        return ["[no plot, span is zero width]"]
    stacks = [_stack(frame, values) for _, values in datasets]
    grid = np.zeros((max(int(r.max()) for r, _ in stacks) + 1, width), dtype=np.uint8)
    height = 0
    bars = [[" "] * width for _ in range(len(datasets) if separate_bars else 1)]
    for k, (rows, cols) in enumerate(stacks):
        need = int(rows.max()) + 1
        if (
            need > height
        ):  # ministat clears only the rows it adds (rows above a lowered height keep their points)
            grid[height:need] = 0
        height = need if ministat_compat else max(height, need)
        grid[rows, cols] |= k + 1  # one point per (row, column) of a set: no ufunc.at needed (85 ms at 2×10⁵)
        _bar(frame, bars[k if separate_bars else 0], stats[k])
    rule = "+" + "-" * width + "+"
    # every row translated at once (a 100 000-line set stacks thousands of rows)
    text = grid[height - 1 : 0 : -1].tobytes().translate(_SYMBOL_TABLE).decode("ascii")
    body = ["|" + text[i : i + width] + "|" for i in range(0, len(text), width)]
    return [rule, *body, *("|" + "".join(b) + "|" for b in bars), rule]


def legend(datasets: Sequence[Dataset]) -> list[str]:
    return [f"{SYMBOLS[k + 1]} {name}" for k, (name, _) in enumerate(datasets[:MAX_DATASETS])]


def vitals_line(
    index: int, values: Sequence[float], *, ministat_compat: bool = False, s: Vitals | None = None
) -> str:
    s = s or vitals(values, ministat_compat)
    line = f"{SYMBOLS[index + 1]} {s.n:3d} {c_g(s.min, '13.8g')} {c_g(s.max, '13.8g')} "
    line += f"{c_g(s.median, '13.8g')} {c_g(s.avg, '13.8g')}"
    return line + (f" {c_g(s.stddev, '13.8g')}" if s.n > 1 else "")


def relative_block(c: Comparison) -> list[str]:
    """ministat's Student's t lines for one comparison, in its printf formats (%g: 6 significant digits)."""
    if not c.ministat_significant:
        return [f"No difference proven at {c.confidence:.1f}% confidence"]
    return _difference_lines(
        c.confidence, c.difference, c.half_width, c.percent, c.percent_half_width, c.pooled_stddev
    )


def _difference_lines(confidence, d, e, pct, pct_e, spool) -> list[str]:
    return [
        f"Difference at {confidence:.1f}% confidence",
        f"\t{c_g(d)} +/- {c_g(e)}",
        f"\t{c_g(pct)}% +/- {c_g(pct_e)}%",
        f"\t(Student's t, pooled s = {c_g(spool)})",
    ]


def relative_block_compat(other: Sequence[float], baseline: Sequence[float], confidence: float) -> list[str]:
    """ministat's Relative(): its arithmetic, operation for operation, so every digit (and nan, inf) is its."""
    ds, rs = vitals(other, True), vitals(baseline, True)
    df = ds.n + rs.n - 2
    t = ministat_t(confidence, df)
    spool = c_sqrt(((ds.n - 1) * ds.var + (rs.n - 1) * rs.var) / df)
    s = spool * math.sqrt(1.0 / ds.n + 1.0 / rs.n)
    d = ds.avg - rs.avg
    e = t * s
    if not abs(d) > e:  # nan compares false: "No difference"
        return [f"No difference proven at {confidence:.1f}% confidence"]
    return _difference_lines(confidence, d, e, c_div(d * 100, rs.avg), c_div(e * 100, rs.avg), spool)


def render(
    datasets: Sequence[Dataset],
    comparisons: Sequence[Comparison] = (),
    *,
    width: int = DEFAULT_WIDTH,
    plot: bool = True,
    relative: bool = True,
    separate_bars: bool = False,
    ministat_compat: bool = False,
    confidence: float = 95.0,
) -> list[str]:
    """The whole ministat output: legend, plot, table; `comparisons[i]` is data set i + 1 vs the first (in
    compat mode the t blocks are computed here, ministat's way, at `confidence`)."""
    _check(datasets)
    stats = [vitals(values, ministat_compat) for _, values in datasets[len(comparisons) + 1 :]]
    if ministat_compat or not comparisons:
        stats = [vitals(values, ministat_compat) for _, values in datasets]
    else:  # the comparisons described every set already (a sort and a median's rank per 100 000 values)
        stats = [_of(comparisons[0].baseline), *(_of(c.other) for c in comparisons), *stats]
    lines = legend(datasets)
    if plot:
        lines += ascii_plot(
            datasets, width, separate_bars=separate_bars, ministat_compat=ministat_compat, stats=stats
        )
    lines.append(HEADER)
    for k, (_, values) in enumerate(datasets):
        lines.append(vitals_line(k, values, ministat_compat=ministat_compat, s=stats[k]))
        if relative and k > 0 and ministat_compat:
            lines += relative_block_compat(values, datasets[0][1], confidence)
        elif relative and k > 0 and k - 1 < len(comparisons):
            lines += relative_block(comparisons[k - 1])
    return lines


def _check(datasets: Sequence[Dataset]) -> None:
    if not datasets:
        raise ValueError("no data sets to plot")
    if len(datasets) > MAX_DATASETS:
        raise ValueError(f"at most {MAX_DATASETS} data sets fit ministat's symbols, got {len(datasets)}")


def test_text(c: Comparison) -> str:
    """Which test decided fairmark's verdict, with its df and p, beside ministat's pooled Student t."""
    scale = " on the logarithms" if c.scale == "log" else ""
    if c.constant:
        what = "no t test (no spread): the rank test decides"
    else:
        name = {"Welch": "Welch's t", "paired by round": "Student's t on the pairs"}.get(c.design, c.design)
        p = "n/a" if not math.isfinite(c.p_value) else f"{c.p_value:.2g}"
        what = f"{name}{scale}, df {c.df:.3g}, p = {p}"
    return f"    verdict: {what}; ministat's pooled Student t: p = {c.student_p:.2g}"


def verdict_lines(c: Comparison) -> list[str]:
    """fairmark's reading of one comparison: the sentence, the test that decided it, the rank-test
    cross-check, the warnings and, where fairmark's numbers differ from ministat's, a note saying so."""
    u = c.mann_whitney
    alpha = 1.0 - c.confidence / 100.0
    if u.get("min_p", 0.0) >= alpha:
        agree = f"it cannot reach p < {alpha:g} with these n"
    else:
        agree = ("agrees" if u["significant"] == c.significant else "DISAGREES") + " with the verdict"
    exact = "exact " if u.get("exact") else ""
    lines = [
        c.sentence,
        test_text(c),
        f"    Mann-Whitney U = {u['u']:g}, {exact}p = {u['p_value']:.2g} ({agree})",
    ]
    lines += [f"    warning: {text}" for text in c.warnings]
    if c.ministat_note:
        lines.append(f"    note: {c.ministat_note}")
    return lines
