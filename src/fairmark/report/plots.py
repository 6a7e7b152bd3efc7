"""The report's pictures: matplotlib figures (inline SVG, optional PNG) and flame graphs by inferno.

Figures are kept lean (few ticks, text as SVG text rather than glyph paths) because a 50-workload report has
150 of them and must render in seconds. Labels come from plans and tools: `$` is escaped so matplotlib never
reads a variant name as mathtext; SVG text is XML-escaped by matplotlib itself.
"""

from __future__ import annotations

import base64
import io
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import tempfile

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Polygon
from matplotlib.ticker import MaxNLocator

from fairmark.probe.which import find_tool
from fairmark.stats import describe

matplotlib.rcParams.update(
    {
        "svg.fonttype": "none",  # text stays text: 5x smaller files, selectable, searchable
        "font.size": 8,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "figure.dpi": 100,
    }
)
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")
CPU_COLOURS = {"user": "#4c72b0", "system": "#c44e52", "iowait": "#dd8452", "steal": "#8c8c8c"}
FLAME_TIMEOUT_S = 60


def label(text: Any) -> str:
    return str(text).replace("$", r"\$")


_PATH_DATA = re.compile(r' d="([^"]*)"')
_LONG_DECIMAL = re.compile(r"(\.\d)\d+")


def to_svg(fig: Figure) -> str:
    # No bbox_inches="tight": it draws the figure twice. Margins are set by each plot instead.
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # drop the XML declaration and DOCTYPE: the SVG is inlined in HTML
    # Path coordinates to 0.1 pt: invisible on screen and paper, and a third of the report's size.
    return _PATH_DATA.sub(lambda m: ' d="' + _LONG_DECIMAL.sub(r"\1", m.group(1)) + '"', text)


def save_png(fig: Figure, directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (re.sub(r"[^A-Za-z0-9_.=+-]+", "_", name)[:120] + ".png")
    fig.savefig(path, format="png", dpi=120)
    return path


def _lean(ax: Any, y_bins: int = 4) -> None:
    ax.yaxis.set_major_locator(MaxNLocator(y_bins))
    ax.tick_params(length=2, pad=1)


def strip_plot(
    datasets: Sequence[tuple[str, Sequence[float]]], metric: str, unit: str, better: str
) -> Figure:
    """Bar = mean, error bar = 95% CI of the mean, dots = every measured trial (nothing hidden)."""
    fig = Figure(figsize=(5.5, 0.5 + 0.45 * max(len(datasets), 2)))
    ax = fig.add_subplot()
    for i, (_, values) in enumerate(datasets):
        s = describe(values)
        err = s.ci_half_width if s.n > 1 else 0.0
        colour = PALETTE[i % len(PALETTE)]
        ax.barh(i, s.mean, height=0.6, color=colour, alpha=0.35, xerr=err, error_kw={"capsize": 3, "lw": 1})
        offsets = np.linspace(-0.22, 0.22, len(values)) if len(values) > 1 else np.zeros(1)
        ax.scatter(values, i + offsets, s=6, color=colour, zorder=3, linewidths=0)
    ax.set_yticks(range(len(datasets)), [label(n) for n, _ in datasets])
    ax.invert_yaxis()
    ax.xaxis.set_major_locator(MaxNLocator(5))
    ax.tick_params(length=2, pad=1)
    ax.set_xlabel(
        label(f"{metric} ({unit}, {better} is better)" if unit else f"{metric} ({better} is better)")
    )
    longest = max((len(str(n)) for n, _ in datasets), default=1)
    height = fig.get_figheight()
    left = min(0.45, 0.04 + 0.0115 * longest)
    fig.subplots_adjust(left=left, right=0.97, top=1 - 0.1 / height, bottom=0.45 / height)
    return fig


def scaling_plot(curves: Sequence[Any], failures: Sequence[Any] = ()) -> Figure:
    """Mean with its CI band per variant along the swept parameter; the peak is a star, a sweep value where
    every trial failed a red dotted line; speedup below."""
    fig = Figure(figsize=(5.5, 3.4))
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    fig.subplots_adjust(left=0.14, right=0.97, top=0.95, bottom=0.13, hspace=0.12)
    for i, c in enumerate(curves):
        colour = PALETTE[i % len(PALETTE)]
        xs = list(range(len(c.points))) if not _numeric(c) else [p.value for p in c.points]
        mean = np.array([p.mean for p in c.points])
        hw = np.nan_to_num(np.array([p.ci_half_width for p in c.points]))
        top.plot(xs, mean, marker="o", ms=3, color=colour, label=label(c.variant))
        top.fill_between(xs, mean - hw, mean + hw, color=colour, alpha=0.2, lw=0)
        peak = next((k for k, p in enumerate(c.points) if c.peak is not None and p.value == c.peak), None)
        if peak is not None:  # only a proven peak gets a star
            top.plot([xs[peak]], [mean[peak]], marker="*", ms=10, color=colour)
        bottom.plot(xs, [p.speedup for p in c.points], marker="o", ms=3, color=colour)
    first = curves[0]
    for x in failures if _numeric(first) else ():
        for ax in (top, bottom):
            ax.axvline(x, color="#c44e52", ls=":", lw=1)
        top.annotate("failed", (x, 1.0), xycoords=("data", "axes fraction"), color="#c44e52", fontsize=7)
    if not _numeric(first):
        bottom.set_xticks(range(len(first.points)), [label(p.value) for p in first.points])
    top.set_ylabel(label(f"{first.metric} ({first.unit})" if first.unit else first.metric))
    bottom.set_ylabel("speedup")
    bottom.set_xlabel(label(first.parameter))
    top.legend(frameon=False, fontsize=7)
    for ax in (top, bottom):
        _lean(ax, 4)
    return fig


def _numeric(curve: Any) -> bool:
    return all(isinstance(p.value, int | float) and not isinstance(p.value, bool) for p in curve.points)


def concat_series(series: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Trials' monitor series end to end on one time axis, as `vmstat 1` over the whole cell would show."""
    t: list[float] = []
    offset = 0.0
    cols: dict[str, list[float]] = {k: [] for k in ("user", "system", "iowait", "steal", "runq")}
    for s in series:
        ts = s.get("t_s") or []
        t += [offset + x for x in ts]
        offset += ts[-1] if ts else 0.0
        cpu, gauges = s.get("cpu_pct") or {}, s.get("gauges") or {}
        for k in ("user", "system", "iowait", "steal"):
            cols[k] += _fill(cpu.get(k), len(ts))
        cols["runq"] += _fill(gauges.get("runq"), len(ts))
    return {"t": np.array(t, dtype=float)} | {k: np.array(v, dtype=float) for k, v in cols.items()}


def _fill(values: Sequence[float | None] | None, n: int) -> list[float]:
    if not values:
        return [np.nan] * n
    return [np.nan if v is None else float(v) for v in values]


MAX_POINTS = 600  # per line; longer series are thinned evenly (the table keeps exact means and peaks)


def _thin(d: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    n = len(d["t"])
    if n <= MAX_POINTS:
        return d
    idx = np.linspace(0, n - 1, MAX_POINTS).astype(int)
    return {k: v[idx] for k, v in d.items()}


# Figure-fraction boxes of the two bands of a monitor plot: (left, bottom, width, height).
CPU_BOX = (0.01, 0.42, 0.98, 0.44)
EVENT_COLOUR = "#7b2cbf"
RUNQ_BOX = (0.01, 0.04, 0.98, 0.24)


def _place(
    box: tuple[float, float, float, float], x: np.ndarray, y: np.ndarray, y_max: float, t: np.ndarray
) -> np.ndarray:
    """Data → figure fractions inside `box`; `t` (the whole time axis) fixes the horizontal scale."""
    left, bottom, width, height = box
    span = (t[-1] - t[0]) or 1.0
    return np.column_stack((left + width * (x - t[0]) / span, bottom + height * np.clip(y / y_max, 0, 1)))


def monitor_plot(
    series: Sequence[Mapping[str, Any]], ncpu: int, marks: Sequence[tuple[float, str]] = ()
) -> Figure:
    """CPU share by state (stacked, whole machine) above the run queue, sparkline style; `marks` are kernel
    events (seconds on the same end-to-end axis, kind), drawn as labelled vertical lines across both.

    Drawn with figure-level patches instead of Axes: an Axes builds tick objects even when hidden, which
    made a monitor plot ten times slower than the patches it shows."""
    d = _thin(concat_series(series))
    fig = Figure(figsize=(5.5, 1.5))
    t = d["t"]
    if len(t) < 2:
        t = np.array([0.0, 1.0])
        d = {k: np.repeat(v[:1] if len(v) else np.array([np.nan]), 2) for k, v in d.items()} | {"t": t}
    # A state that never happened (no iowait, no steal) is left out of the picture, not drawn as zero.
    states = [k for k in CPU_COLOURS if np.nansum(d[k]) > 0] or ["user"]
    lower = np.zeros(len(t))
    for state in states:
        upper = lower + np.nan_to_num(d[state])
        forward, back = _place(CPU_BOX, t, upper, 100.0, t), _place(CPU_BOX, t[::-1], lower[::-1], 100.0, t)
        outline = np.vstack((forward, back))
        fig.add_artist(
            Polygon(outline, closed=True, color=CPU_COLOURS[state], lw=0, transform=fig.transFigure)
        )
        lower = upper
    runq = np.nan_to_num(d["runq"])
    peak = float(runq.max()) if runq.size else 0.0
    top = max(peak, float(ncpu)) * 1.2 or 1.0
    line = _place(RUNQ_BOX, t, runq, top, t)
    fig.add_artist(Line2D(line[:, 0], line[:, 1], color="#333333", lw=0.8, transform=fig.transFigure))
    ncpu_y = _place(RUNQ_BOX, t[[0, -1]], np.array([ncpu, ncpu], dtype=float), top, t)
    fig.add_artist(
        Line2D(ncpu_y[:, 0], ncpu_y[:, 1], color="#c44e52", lw=0.6, ls="--", transform=fig.transFigure)
    )
    _monitor_labels(fig, states, len(series), float(t[-1]), peak, ncpu)
    _event_marks(fig, marks, t)
    return fig


def _event_marks(fig: Figure, marks: Sequence[tuple[float, str]], t: np.ndarray) -> None:
    """Each kernel event where it happened on the timeline: a line through both panels (purple: the CPU panel's
    system share is already red), its kind under the run queue."""
    bottom, top = RUNQ_BOX[1], CPU_BOX[1] + CPU_BOX[3]
    for at, kind in marks:
        x = float(_place(CPU_BOX, np.array([min(max(at, t[0]), t[-1])]), np.zeros(1), 1.0, t)[0, 0])
        fig.add_artist(Line2D([x, x], [bottom, top], color=EVENT_COLOUR, lw=0.9, transform=fig.transFigure))
        fig.text(x, 0.0, kind, color=EVENT_COLOUR, fontsize=5, ha="center", va="bottom")


def _monitor_labels(
    fig: Figure, states: Sequence[str], trials: int, end_s: float, peak: float, ncpu: int
) -> None:
    fig.text(0.01, 0.9, f"CPU % by state, 0–100; {trials} trial(s) end to end, {end_s:.3g} s", fontsize=7)
    for k, state in enumerate(reversed(states)):
        fig.text(
            0.99 - 0.08 * k, 0.9, state, color=CPU_COLOURS[state], fontsize=7, ha="right", fontweight="bold"
        )
    fig.text(0.01, 0.3, f"run queue (peak {peak:.3g}; dashed: {ncpu} CPUs)", fontsize=6)


# -- flame graphs: inferno renders them; fairmark never draws its own -------------------------------------


def flame_renderer() -> str | None:
    return find_tool("inferno-flamegraph") or find_tool("flamegraph.pl")


def flamegraph_svg(
    folded: str, title: str, *, diff_of: str | None = None, palette: Mapping[str, str] | None = None
) -> tuple[str, str] | None:
    """SVG text and the renderer's name; `diff_of` = baseline folded stacks for a differential graph
    (red: more samples in `folded` than in the baseline, blue: fewer); `palette`: frame name -> "rgb(r,g,b)",
    every frame's colour (both renderers' consistent palette, palette.map). None when no renderer is installed."""
    tool = flame_renderer()
    if tool is None or not folded.strip():
        return None
    if diff_of is not None:
        diff = _diff_folded(diff_of, folded)
        if diff is None:
            return None
        folded = diff
    argv = [tool, "--title", title]
    if tool.endswith("inferno-flamegraph"):
        argv += ["--minwidth", "0.1", "--deterministic"]  # tiny frames out: the report stays small

    with tempfile.TemporaryDirectory(prefix="fairmark-flame-") as tmp:
        if palette is not None:  # --cp reads (and writes back) palette.map in the working directory
            Path(tmp, "palette.map").write_text("".join(f"{k}->{v}\n" for k, v in palette.items()))
            argv.append("--cp")
        proc = subprocess.run(
            argv, input=folded, capture_output=True, text=True, timeout=FLAME_TIMEOUT_S, check=False, cwd=tmp
        )
    if proc.returncode != 0 or "<svg" not in proc.stdout:
        return None
    return proc.stdout, Path(tool).name


def _diff_folded(before: str, after: str) -> str | None:
    tool = find_tool("inferno-diff-folded") or find_tool("difffolded.pl")
    if tool is None:
        return None

    with tempfile.TemporaryDirectory(prefix="fairmark-diff-") as tmp:
        a, b = Path(tmp) / "a.folded", Path(tmp) / "b.folded"
        a.write_text(before)
        b.write_text(after)
        proc = subprocess.run([tool, "-n", str(a), str(b)], capture_output=True, text=True, check=False)
    return proc.stdout if proc.returncode == 0 else None


def svg_data_uri(svg: str) -> str:
    """Flame graphs carry their own JavaScript; as an <img> source it can never run inside the report."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def merge_folded(texts: Sequence[str]) -> str:
    """Sum the counts of identical stacks over trials."""
    counts: dict[str, int] = {}
    for text in texts:
        for line in text.splitlines():
            stack, _, n = line.rpartition(" ")
            if stack and n.isdigit():
                counts[stack] = counts.get(stack, 0) + int(n)
    return "".join(f"{k} {v}\n" for k, v in sorted(counts.items()))
