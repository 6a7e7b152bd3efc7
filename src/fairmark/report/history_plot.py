"""`fairmark history --html/--png`: each series' means with their CI band, change points marked."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from fairmark.report.plots import PALETTE, label, to_svg


def figure(history: list[dict[str, Any]], workload: str) -> Figure:
    rows = max(len(history), 1)
    fig = Figure(figsize=(9, 2.6 * rows))
    for i, s in enumerate(history):
        ax = fig.add_subplot(rows, 1, i + 1)
        x = list(range(len(s["points"])))
        mean = [p["mean"] for p in s["points"]]
        hw = [p["ci_half_width"] if math.isfinite(p["ci_half_width"]) else 0.0 for p in s["points"]]
        ax.fill_between(
            x,
            [m - h for m, h in zip(mean, hw, strict=True)],
            [m + h for m, h in zip(mean, hw, strict=True)],
            color=PALETTE[0],
            alpha=0.25,
            linewidth=0,
            label="95% CI of the run's mean",
        )
        ax.plot(x, mean, marker="o", markersize=3, color=PALETTE[0], label="mean")
        for cp in s["change_points"]:
            ax.axvline(cp["index"] - 0.5, color=PALETTE[3], linestyle="--", linewidth=1)
            pct = f"{cp['percent']:+.1f}%" if cp.get("percent") is not None else ""
            ax.annotate(
                label(f"{pct} p={cp['p_value']:.3g}"),
                (cp["index"] - 0.5, max(mean)),
                color=PALETTE[3],
                fontsize=7,
                ha="left",
                va="top",
            )
        unit = f" ({s['unit']})" if s["unit"] else ""
        ax.set_title(label(f"{workload} {s['cell']} {s['metric']}{unit} on {s['host']}"), loc="left")
        ax.set_xlabel("run (oldest → newest)")
        ax.legend(loc="lower left", fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


def write_png(history: list[dict[str, Any]], workload: str, path: str) -> None:
    figure(history, workload).savefig(path, format="png", dpi=100)


def write_html(history: list[dict[str, Any]], workload: str, path: str) -> None:
    svg = to_svg(figure(history, workload))
    items = "".join(
        f"<li>{html.escape(s['host'])} {html.escape(s['cell'])} {html.escape(s['metric'])}: change at run "
        f"{html.escape(' → '.join(cp['between']))}, p = {cp['p_value']:.3g}: {html.escape(cp['sentence'])}</li>"
        for s in history
        for cp in s["change_points"]
    )
    doc = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>fairmark history: {html.escape(workload)}</title>"
        f"</head><body><h1>History of {html.escape(workload)}</h1>{svg}"
        f"<h2>Change points</h2><ul>{items or '<li>none at this level</li>'}</ul></body></html>"
    )
    Path(path).write_text(doc, encoding="utf-8")
