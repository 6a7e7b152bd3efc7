"""The dashboard's pictures, written as SVG text: a sparkline per series for the index and one chart per series
page (means, their CI band, change points, every point a link to its run).

Hand-written rather than matplotlib: a series page links each point to its run (matplotlib's SVG has no
per-point links), a picture needs its own `<title>` and `<desc>` for screen readers, and a site of 10 000
runs cannot afford 20 ms of matplotlib per picture. Every label is data (host, workload, tag values) and is
XML-escaped here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

CHART_W, CHART_H = 960, 320
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 30, 44  # the plot area's margins inside the chart
SPARK_W, SPARK_H = 140, 30


@dataclass(frozen=True)
class ChartPoint:
    mean: float
    half_width: float  # NaN when unknown (one trial)
    href: str | None  # the run's page
    label: str  # what the point's tooltip and accessible name say


@dataclass(frozen=True)
class ChartMark:
    index: int  # the first point after the change
    label: str  # "+10.2% [+8.1%, +12.4%]"
    title: str  # the full sentence (tooltip)
    anchor: str  # the id of the mark, linked from the change-point table and the index


def _finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if math.isfinite(v)]


def _extent(points: Sequence[ChartPoint]) -> tuple[float, float]:
    hw = [p.half_width if math.isfinite(p.half_width) else 0.0 for p in points]
    low = _finite([p.mean - h for p, h in zip(points, hw, strict=True)])
    high = _finite([p.mean + h for p, h in zip(points, hw, strict=True)])
    if not low:
        return 0.0, 1.0
    lo, hi = min(low), max(high)
    pad = (hi - lo) * 0.05 or abs(hi) * 0.05 or 1.0
    return lo - pad, hi + pad


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round values spanning [lo, hi]: steps of 1, 2 or 5 times a power of ten."""
    raw = (hi - lo) / max(count - 1, 1)
    if raw <= 0 or not math.isfinite(raw):
        return [lo]
    mag = 10 ** math.floor(math.log10(raw))
    ticks: list[float] = []
    # the largest round step that still gives three ticks (a step just above `raw` could give two: an axis of
    # two numbers reads as no scale)
    for m in (10, 5, 2, 1, 0.5, 0.2):
        step = m * mag
        first = math.ceil(lo / step) * step
        ticks = [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]
        if len(ticks) >= 3:
            break
    return ticks


def _tick_text(v: float) -> str:
    return f"{v:.4g}"


class _Scale:
    def __init__(self, n: int, lo: float, hi: float, w: float, h: float, left: float, top: float):
        self.n, self.lo, self.hi, self.w, self.h, self.left, self.top = n, lo, hi, w, h, left, top

    def x(self, i: float) -> float:
        return self.left + (self.w * (i + 0.5) / self.n if self.n else 0.0)

    def y(self, v: float) -> float:
        return self.top + self.h * (1 - (v - self.lo) / (self.hi - self.lo))


def _band_path(points: Sequence[ChartPoint], sc: _Scale) -> str:
    """The CI band as one closed path: upper edge left to right, lower edge back (runs without a CI are the
    mean itself)."""
    hw = [p.half_width if math.isfinite(p.half_width) else 0.0 for p in points]
    upper = [
        f"{_num(sc.x(i))},{_num(sc.y(p.mean + h))}" for i, (p, h) in enumerate(zip(points, hw, strict=True))
    ]
    lower = [
        f"{_num(sc.x(i))},{_num(sc.y(p.mean - h))}" for i, (p, h) in enumerate(zip(points, hw, strict=True))
    ]
    return "M" + " L".join(upper + lower[::-1]) + " Z"


def _line_path(points: Sequence[ChartPoint], sc: _Scale) -> str:
    return "M" + " L".join(f"{_num(sc.x(i))},{_num(sc.y(p.mean))}" for i, p in enumerate(points))


def sparkline(means: Sequence[float], mark: int | None, ident: str, title: str) -> str:
    """A trend line of `means` (oldest first), `mark`: the index where the latest change point falls."""
    points = [ChartPoint(m, math.nan, None, "") for m in means]
    lo, hi = _extent(points)
    sc = _Scale(len(points), lo, hi, SPARK_W - 4, SPARK_H - 6, 2, 3)
    marker = ""
    if mark is not None and 0 < mark < len(points):
        x = _num((sc.x(mark - 1) + sc.x(mark)) / 2)
        marker = f'<line class="cp" x1="{x}" x2="{x}" y1="1" y2="{SPARK_H - 1}"/>'
    last = points[-1] if points else None
    dot = (
        f'<circle class="last" cx="{_num(sc.x(len(points) - 1))}" cy="{_num(sc.y(last.mean))}" r="2"/>'
        if last
        else ""
    )
    return (
        f'<svg class="spark" width="{SPARK_W}" height="{SPARK_H}" viewBox="0 0 {SPARK_W} {SPARK_H}" role="img" '
        f'aria-labelledby="{ident}"><title id="{ident}">{escape(title)}</title>{marker}'
        f'<path class="line" d="{_line_path(points, sc) if points else ""}"/>{dot}</svg>'
    )


def _axes(sc: _Scale, ticks: Sequence[float], x_labels: Sequence[tuple[int, str]], y_title: str) -> list[str]:
    bottom = sc.top + sc.h
    out = [
        f'<line class="axis" x1="{sc.left}" x2="{sc.left}" y1="{sc.top}" y2="{_num(bottom)}"/>',
        f'<line class="axis" x1="{sc.left}" x2="{_num(sc.left + sc.w)}" y1="{_num(bottom)}" y2="{_num(bottom)}"/>',
    ]
    for v in ticks:
        y = _num(sc.y(v))
        out.append(f'<line class="grid" x1="{sc.left}" x2="{_num(sc.left + sc.w)}" y1="{y}" y2="{y}"/>')
        out.append(
            f'<text class="tick" x="{sc.left - 6}" y="{y}" text-anchor="end" dy="0.35em">{_tick_text(v)}</text>'
        )
    for i, text in x_labels:
        out.append(
            f'<text class="tick" x="{_num(sc.x(i))}" y="{_num(bottom + 16)}" text-anchor="middle">{escape(text)}</text>'
        )
    out.append(f'<text class="axis-title" x="{sc.left}" y="{sc.top - 12}">{escape(y_title)}</text>')
    return out


def _marks(marks: Sequence[ChartMark], sc: _Scale) -> list[str]:
    out = []
    for k, m in enumerate(marks):
        x = _num((sc.x(m.index - 1) + sc.x(m.index)) / 2)
        y = sc.top + 12 + 14 * (k % 3)  # neighbouring labels on different lines
        out.append(
            f'<g class="cp" id="{escape(m.anchor)}" data-index="{m.index}"><title>{escape(m.title)}</title>'
            f'<line x1="{x}" x2="{x}" y1="{sc.top}" y2="{_num(sc.top + sc.h)}"/>'
            f'<text x="{x}" y="{_num(y)}" dx="4">{escape(m.label)}</text></g>'
        )
    return out


def _dots(points: Sequence[ChartPoint], sc: _Scale) -> list[str]:
    """Every point, a link to its run for the pointer; not in the tab order (the table below the chart is the
    keyboard's and the screen reader's way to the same runs)."""
    r = 3 if len(points) <= 300 else 1.6
    out = ['<g class="points">']
    for i, p in enumerate(points):
        dot = f'<circle cx="{_num(sc.x(i))}" cy="{_num(sc.y(p.mean))}" r="{r}"><title>{escape(p.label)}</title></circle>'
        out.append(f'<a href="{escape(p.href)}" tabindex="-1">{dot}</a>' if p.href else dot)
    out.append("</g>")
    return out


def chart(
    points: Sequence[ChartPoint],
    marks: Sequence[ChartMark],
    *,
    ident: str,
    title: str,
    desc: str,
    y_title: str,
    x_labels: Sequence[tuple[int, str]],
) -> str:
    """A series: the CI band of each run's mean, the means joined, change points as dashed lines with the
    shift's size ± CI, and every point linked to its run."""
    lo, hi = _extent(points)
    sc = _Scale(len(points), lo, hi, CHART_W - LEFT - RIGHT, CHART_H - TOP - BOTTOM, LEFT, TOP)
    parts = [
        f'<svg class="chart" viewBox="0 0 {CHART_W} {CHART_H}" role="img" '
        f'aria-labelledby="{ident}-t {ident}-d"><title id="{ident}-t">{escape(title)}</title>'
        f'<desc id="{ident}-d">{escape(desc)}</desc>',
        *_axes(sc, _nice_ticks(lo, hi), x_labels, y_title),
    ]
    if points:
        parts += [
            f'<path class="band" d="{_band_path(points, sc)}"/>',
            f'<path class="line" d="{_line_path(points, sc)}"/>',
        ]
    parts += _marks(marks, sc) + _dots(points, sc) + ["</svg>"]
    return "".join(parts)


STRIP_W, STRIP_ROW = 560, 34
PALETTE = ("#24508f", "#a04a10", "#2f7a3f", "#a8231b", "#5b3f99", "#6b5138", "#a13a82", "#55555a")


@dataclass(frozen=True)
class _Linear:
    """Value → x: [lo, hi] onto [a, b]."""

    lo: float
    hi: float
    a: float
    b: float

    def __call__(self, v: float) -> float:
        return self.a + (self.b - self.a) * (v - self.lo) / (self.hi - self.lo)


def _strip_row(k: int, values: Sequence[float], mean: float, hw: float, x: _Linear) -> list[str]:
    colour = PALETTE[k % len(PALETTE)]
    y = 6 + STRIP_ROW * k + STRIP_ROW / 2
    x0, xm = x(0.0), x(mean)
    out = [
        f'<rect x="{_num(min(x0, xm))}" y="{_num(y - 10)}" width="{_num(abs(xm - x0))}" height="20" '
        f'fill="{colour}" fill-opacity="0.3"/>'
    ]
    if math.isfinite(hw):
        lo, hi = _num(x(mean - hw)), _num(x(mean + hw))
        out.append(
            f'<path d="M{lo},{_num(y)} H{hi} M{lo},{_num(y - 4)} V{_num(y + 4)} M{hi},{_num(y - 4)} V{_num(y + 4)}" '
            'stroke="#1d1d1f" fill="none"/>'
        )
    n = len(values)
    for i, v in enumerate(values):
        dy = -7 + 14 * i / (n - 1) if n > 1 else 0.0
        out.append(f'<circle cx="{_num(x(v))}" cy="{_num(y + dy)}" r="2" fill="{colour}"/>')
    return out


def strip(datasets: Sequence[tuple[str, Sequence[float]]], metric: str, unit: str, better: str) -> str:
    """What report/plots.strip_plot draws — per variant a bar to the mean, the mean's 95% CI, every measured
    trial as a dot — as plain SVG with a title (a run page of a published site draws it in well under 1 ms)."""
    from fairmark.stats import describe, format_value

    summaries = [describe(values) for _, values in datasets]
    hws = [s.ci_half_width if s.n > 1 else math.nan for s in summaries]
    left = min(240, 16 + 7 * max((len(str(n)) for n, _ in datasets), default=1))
    highs = [
        max(*v, s.mean + (h if math.isfinite(h) else 0.0))
        for (_, v), s, h in zip(datasets, summaries, hws, strict=True)
    ]
    lo = min(0.0, *(min(v) for _, v in datasets))
    x = _Linear(lo, max(highs) * 1.04 if max(highs) > lo else lo + 1.0, left, STRIP_W - 14)
    axis_y, label = (
        6 + STRIP_ROW * len(datasets),
        f"{metric} ({unit}, {better} is better)" if unit else f"{metric} ({better} is better)",
    )
    title = f"{label}: " + "; ".join(
        f"{name} {format_value(s.mean, h if math.isfinite(h) else None, unit)} over {s.n} trials"
        for (name, _), s, h in zip(datasets, summaries, hws, strict=True)
    )
    height = axis_y + 36
    parts = [
        f'<svg class="strip" width="{STRIP_W}" height="{height}" viewBox="0 0 {STRIP_W} {height}" role="img">'
        f'<title>{escape(title)}</title><line x1="{left}" x2="{STRIP_W - 14}" y1="{axis_y}" y2="{axis_y}" stroke="#55555a"/>'
    ]
    for v in _nice_ticks(x.lo, x.hi):
        parts.append(
            f'<text x="{_num(x(v))}" y="{axis_y + 14}" text-anchor="middle" font-size="11" fill="#55555a">{_tick_text(v)}</text>'
        )
    for k, ((name, values), s, h) in enumerate(zip(datasets, summaries, hws, strict=True)):
        parts.append(
            f'<text x="{left - 6}" y="{_num(6 + STRIP_ROW * k + STRIP_ROW / 2)}" text-anchor="end" dy="0.35em" font-size="11">{escape(name)}</text>'
        )
        parts += _strip_row(k, values, s.mean, h, x)
    parts.append(
        f'<text x="{_num((left + STRIP_W) / 2)}" y="{axis_y + 30}" text-anchor="middle" font-size="11">{escape(label)}</text></svg>'
    )
    return "".join(parts)
