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
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from fairmark.run.profiles.base import find_tool
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


def to_svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML declaration and DOCTYPE: the SVG is inlined in HTML


def save_png(fig: Figure, directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (re.sub(r"[^A-Za-z0-9_.=+-]+", "_", name)[:120] + ".png")
    fig.savefig(path, format="png", dpi=120, bbox_inches="tight")
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
    return fig


def scaling_plot(curves: Sequence[Any]) -> Figure:
    """Mean with its CI band per variant along the swept parameter; the peak is a star; speedup below."""
    fig = Figure(figsize=(5.5, 3.4))
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    for i, c in enumerate(curves):
        colour = PALETTE[i % len(PALETTE)]
        xs = list(range(len(c.points))) if not _numeric(c) else [p.value for p in c.points]
        mean = np.array([p.mean for p in c.points])
        hw = np.nan_to_num(np.array([p.ci_half_width for p in c.points]))
        top.plot(xs, mean, marker="o", ms=3, color=colour, label=label(c.variant))
        top.fill_between(xs, mean - hw, mean + hw, color=colour, alpha=0.2, lw=0)
        peak = next(k for k, p in enumerate(c.points) if p.value == c.peak)
        top.plot([xs[peak]], [mean[peak]], marker="*", ms=10, color=colour)
        bottom.plot(xs, [p.speedup for p in c.points], marker="o", ms=3, color=colour)
    first = curves[0]
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
    t, offset, cols = [], 0.0, {k: [] for k in ("user", "system", "iowait", "steal", "runq")}
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


def monitor_plot(series: Sequence[Mapping[str, Any]], ncpu: int) -> Figure:
    """CPU share by state (stacked, whole machine) and the run queue against the number of CPUs."""
    d = concat_series(series)
    fig = Figure(figsize=(5.5, 2.2))
    cpu_ax, rq_ax = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    states = [k for k in CPU_COLOURS if not np.all(np.isnan(d[k]))]
    cpu_ax.stackplot(
        d["t"],
        *[np.nan_to_num(d[k]) for k in states],
        labels=states,
        colors=[CPU_COLOURS[k] for k in states],
        step="pre",
    )
    cpu_ax.set_ylim(0, 100)
    cpu_ax.set_ylabel("CPU %")
    cpu_ax.legend(loc="upper right", ncol=4, frameon=False, fontsize=6)
    rq_ax.step(d["t"], d["runq"], where="pre", color="#333333", lw=0.8)
    rq_ax.axhline(ncpu, color="#c44e52", lw=0.6, ls="--")
    rq_ax.set_ylabel("run q")
    rq_ax.set_xlabel("seconds (trials end to end)")
    _lean(cpu_ax, 2)
    _lean(rq_ax, 2)
    return fig


# -- flame graphs: inferno renders them; fairmark never draws its own -------------------------------------


def flame_renderer() -> str | None:
    return find_tool("inferno-flamegraph") or find_tool("flamegraph.pl")


def flamegraph_svg(folded: str, title: str, *, diff_of: str | None = None) -> tuple[str, str] | None:
    """SVG text and the renderer's name; `diff_of` = baseline folded stacks for a differential graph
    (red: more samples in `folded` than in the baseline, blue: fewer). None when no renderer is installed."""
    tool = flame_renderer()
    if tool is None or not folded.strip():
        return None
    if diff_of is not None:
        folded = _diff_folded(diff_of, folded)
        if folded is None:
            return None
    argv = [tool, "--title", title]
    if tool.endswith("inferno-flamegraph"):
        argv += ["--minwidth", "0.1", "--deterministic"]  # tiny frames out: the report stays small
    proc = subprocess.run(
        argv, input=folded, capture_output=True, text=True, timeout=FLAME_TIMEOUT_S, check=False
    )
    if proc.returncode != 0 or "<svg" not in proc.stdout:
        return None
    return proc.stdout, Path(tool).name


def _diff_folded(before: str, after: str) -> str | None:
    tool = find_tool("inferno-diff-folded") or find_tool("difffolded.pl")
    if tool is None:
        return None
    import tempfile

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
