"""The pages' contents as plain data for the templates: the index's rows, a series page, a bisect page, the
list of runs. Links are relative, so the site works from any directory, from a web server or from file://."""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from fairmark.report.check_output import fmt_change
from fairmark.report.history import HistoryOptions, series_view
from fairmark.report.publish import svg
from fairmark.report.publish.source import BisectSource, SeriesSource
from fairmark.stats import format_value
from fairmark.stats.digits import scale_unit

SPARK_POINTS = 100  # the index's trend line: the last runs of each series
_HEX = re.compile(r"^[0-9a-fA-F]{7,64}$")


@dataclass(frozen=True)
class Links:
    """Where pages are, and how a commit becomes a link (`--repo-url https://…/commit/{sha}`)."""

    run_ids: frozenset[str]  # the runs that have a page in this site
    repo_url: str | None = None

    def run(self, run_id: str, root: str) -> str | None:
        return f"{root}runs/{run_id}.html" if run_id in self.run_ids else None

    def commit(self, sha: str | None) -> dict[str, Any] | None:
        if not sha:
            return None
        text = sha[:12] if _HEX.match(sha) else sha
        href = self.repo_url.replace("{sha}", quote(sha, safe="")) if self.repo_url else None
        return {"text": text, "href": href, "full": sha}


def series_slug(s: SeriesSource) -> str:
    key = "\0".join((s.series.host, s.series.cell, s.series.metric))
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{s.series.host}--{s.series.cell}--{s.series.metric}")
    return f"{readable[:80].strip('-')}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def series_name(s: SeriesSource) -> str:
    return f"{s.series.cell} {s.series.metric} on {s.series.host}"


def _shift(cp: dict[str, Any]) -> str:
    low, high = cp["ratio_ci"] or (None, None)
    return fmt_change({"percent": cp["percent"], "ratio_ci_low": low, "ratio_ci_high": high})


def _when(text: str) -> str:
    return text[:16].replace("T", " ")


def _point_label(p: dict[str, Any], value: str, commit: dict[str, Any] | None) -> str:
    tail = f" commit {commit['text']}" if commit else ""
    return f"{_when(p['started_at'])} run {p['run_id'][:8]}{tail}: {value} (n = {p['n']})"


def _cp_rows(view: dict[str, Any], links: Links, root: str) -> list[dict[str, Any]]:
    points = view["points"]
    rows = []
    for k, cp in enumerate(view["change_points"], start=1):
        before, after = points[cp["index"] - 1], points[cp["index"]]
        rows.append(
            {
                "anchor": f"cp-{k}",
                "index": cp["index"],
                "shift": _shift(cp),
                "change": cp["change"],
                "sentence": cp["sentence"],
                "p_value": cp["p_value"],
                "new": cp.get("new", False),
                "before": {
                    "run": before["run_id"],
                    "href": links.run(before["run_id"], root),
                    "commit": links.commit(before["tags"].get("commit")),
                    "when": _when(before["started_at"]),
                },
                "after": {
                    "run": after["run_id"],
                    "href": links.run(after["run_id"], root),
                    "commit": links.commit(after["tags"].get("commit")),
                    "when": _when(after["started_at"]),
                },
            }
        )
    return rows


def series_page(
    src: SeriesSource, opts: HistoryOptions, links: Links
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the series page's view, the index row): change points computed here, once."""
    view = series_view(src.series, opts)
    commits = [links.commit(p["tags"].get("commit")) for p in view["points"]]
    values = [_value(p, view["unit"]) for p in view["points"]]
    cps = _cp_rows(view, links, "../")
    page = {
        "workload": src.workload,
        "name": series_name(src),
        "view": view,
        "chart": _chart(src, view, cps, commits, values, links, opts),
        "change_points": cps,
        "rows_html": _rows_html(view, cps, commits, values, links),
        "alpha": opts.alpha,
        "window": opts.window,
    }
    return page, index_row(src, series_slug(src), view, cps, commits, links)


def _chart(
    src: SeriesSource,
    view: dict[str, Any],
    cps: list[dict[str, Any]],
    commits: list[dict[str, Any] | None],
    values: list[str],
    links: Links,
    opts: HistoryOptions,
) -> str:
    points = view["points"]
    # the unit the tables use (ms, MB/s…), not the stored base unit: an axis in s beside a table in ms misleads
    d, shown = scale_unit(max((abs(p["mean"]) for p in points), default=0.0), view["unit"])
    dots = [
        svg.ChartPoint(
            p["mean"] / d, p["ci_half_width"] / d, links.run(p["run_id"], "../"), _point_label(p, v, c)
        )
        for p, v, c in zip(points, values, commits, strict=True)
    ]
    marks = [
        svg.ChartMark(r["index"], r["shift"], f"change point: {r['sentence']}", f"mark-{r['anchor']}")
        for r in cps
    ]
    unit_text = f" ({shown})" if shown else ""
    return svg.chart(
        dots,
        marks,
        ident="chart",
        title=f"{src.workload}: {series_name(src)}",
        desc=_chart_desc(view, cps, opts),
        y_title=f"{view['metric']}{unit_text}, {view['better']} is better",
        x_labels=_x_labels(points, opts.order_tag),
    )


def commit_html(c: dict[str, Any] | None) -> str:
    """A commit as the templates' `commit` macro writes it (for the long tables built here)."""
    if not c:
        return '<span class="muted">—</span>'
    code = f"<code>{escape(c['text'])}</code>"
    return f'<a href="{escape(c["href"])}">{code}</a>' if c["href"] else code


def _rows_html(
    view: dict[str, Any],
    cps: list[dict[str, Any]],
    commits: list[dict[str, Any] | None],
    values: list[str],
    links: Links,
) -> Markup:
    """Every point, newest first, each with its run and commit: the chart's contents as a table's rows. Built
    here, not by the template: a series of 5 000 runs is 5 000 rows, 6 s through Jinja's macros, 0.1 s so."""
    starts = {r["index"]: r["anchor"] for r in cps}
    points, out = view["points"], []
    for i in range(len(points) - 1, -1, -1):
        p, anchor = points[i], starts.get(i)
        href = links.run(p["run_id"], "../")
        run = f"<code>{escape(p['run_id'][:8])}</code>"
        run = f'<a href="{escape(href)}">{run}</a>' if href else run
        mark = f' <a href="#{anchor}">change point</a>' if anchor else ""
        row_class = ' class="cp-row"' if anchor else ""
        out.append(
            f'<tr{row_class}><th scope="row">{i + 1}</th><td>{_when(p["started_at"])}</td><td>{run}</td>'
            f'<td>{commit_html(commits[i])}</td><td class="num">{p["n"]}</td>'
            f'<td class="num">{escape(values[i])}{mark}</td></tr>'
        )
    return Markup("\n".join(out))


def _value(p: dict[str, Any], unit: str) -> str:
    hw = p["ci_half_width"]
    return format_value(p["mean"], hw if math.isfinite(hw) else None, unit)


def _chart_desc(view: dict[str, Any], cps: list[dict[str, Any]], opts: HistoryOptions) -> str:
    points = view["points"]
    text = (
        f"{len(points)} runs from {_when(points[0]['started_at'])} to {_when(points[-1]['started_at'])}; "
        f"the latest mean is {_value(points[-1], view['unit'])}. "
    )
    if not cps:
        # a series too short for any p-value to reach α says so: "no change point" would read as evidence
        return text + (
            f"{view['too_short']}." if view.get("too_short") else f"No change point at α = {opts.alpha:g}."
        )
    return text + " ".join(
        f"Change point {k}: {r['shift']} between run {r['before']['run'][:8]} and run {r['after']['run'][:8]}."
        for k, r in enumerate(cps, start=1)
    )


def _x_labels(points: list[dict[str, Any]], order_tag: str | None) -> list[tuple[int, str]]:
    """Five points along the axis: by the ordering tag's value, else their start (a date, or a time of day
    when the series fits in one day)."""
    n = len(points)
    picks = sorted({0, n - 1, *(round(k * (n - 1) / 4) for k in range(1, 4))}) if n > 1 else [0]
    if order_tag:
        return [(i, f"{order_tag} {points[i]['tags'].get(order_tag, '–')}") for i in picks]
    one_day = points[0]["started_at"][:10] == points[-1]["started_at"][:10]
    return [(i, points[i]["started_at"][11:16] if one_day else points[i]["started_at"][:10]) for i in picks]


def index_row(
    src: SeriesSource,
    slug: str,
    view: dict[str, Any],
    cps: list[dict[str, Any]],
    commits: list[dict[str, Any] | None],
    links: Links,
) -> dict[str, Any]:
    """What the index shows of a series (kept in the manifest: an unchanged series is not computed again)."""
    points, unit = view["points"], view["unit"]
    last = points[-1]
    tail = points[-SPARK_POINTS:]
    latest_cp = cps[-1] if cps else None
    offset = len(points) - len(tail)
    mark = latest_cp["index"] - offset if latest_cp and latest_cp["index"] > offset else None
    spark_title = f"trend of the last {len(tail)} runs: {_value(tail[0], unit)} to {_value(last, unit)}" + (
        f"; change point {latest_cp['shift']}" if latest_cp else ""
    )
    href = f"series/{slug}.html"
    return {
        "host": view["host"],
        "workload": src.workload,
        "primary": src.primary == view["metric"],
        "too_short": bool(view.get("too_short")),
        "cell": view["cell"],
        "metric": view["metric"],
        "unit": unit,
        "better": view["better"],
        "href": href,
        "points": len(points),
        "latest": {
            "value": _value(last, unit),
            "n": last["n"],
            "href": links.run(last["run_id"], ""),
            "commit": commits[-1],
            "when": _when(last["started_at"]),
        },
        "spark": svg.sparkline([p["mean"] for p in tail], mark, f"spark-{slug}", spark_title),
        "cp": None
        if latest_cp is None
        else {
            "shift": latest_cp["shift"],
            "change": latest_cp["change"],
            "href": f"{href}#{latest_cp['anchor']}",
            "before": latest_cp["before"]["commit"] or {"text": latest_cp["before"]["run"][:8]},
            "after": latest_cp["after"]["commit"] or {"text": latest_cp["after"]["run"][:8]},
            "count": len(cps),
            "new": sum(c["new"] for c in cps),
        },
    }


def run_row(row: dict[str, Any], links: Links, root: str) -> dict[str, Any]:
    return {
        "id": row["id"],
        "href": links.run(row["id"], root),
        "when": _when(row["started_at"].isoformat()),
        "title": row["title"],
        "status": row["status"],
        "host": ", ".join(row["hosts"]) or row["hostname"],
        "tags": " ".join(f"{k}={v}" for k, v in sorted(row["tags"].items())),
        "cells": row["cells"],
        "trials": f"{row['trials_ok']}/{row['trials']}",
        "commit": links.commit(row["tags"].get("commit")),
    }


def _step_runs(run_ids: list[str], links: Links) -> list[dict[str, Any]]:
    return [{"id": r[:8], "href": links.run(r, "../")} for r in run_ids]


def _stored_steps(result: dict[str, Any], links: Links) -> list[dict[str, Any]]:
    """The steps as `fairmark bisect` judged them (pooled over each step's runs)."""
    out = []
    for k, s in enumerate(result.get("steps") or []):
        comp = s.get("comparison")
        out.append(
            {
                "no": k,
                "commit": links.commit(s["commit"]),
                "subject": s.get("subject", ""),
                "answer": s["answer"],
                "change": fmt_change(comp) if comp else "–",
                "worse": bool(comp and comp.get("change") == "worse"),
                "sentence": comp.get("sentence", "") if comp else "",
                "runs": _step_runs(list(s.get("runs") or []), links),
                "note": s.get("note", ""),
            }
        )
    return out


def _runs_by_step(b: BisectSource, links: Links, verdicts: Any) -> list[dict[str, Any]]:
    """A bisect that stored no outcome (it did not finish): its runs by step, each with its own verdicts."""
    steps: dict[str, dict[str, Any]] = {}
    for row in b.runs:
        tags = row["tags"]
        step = steps.setdefault(
            tags.get("bisect.step", "?"),
            {"no": tags.get("bisect.step", "?"), "commit": links.commit(tags.get("commit")), "runs": []},
        )
        sentences = [f"{v['group']} {v['metric']}: {v['sentence']}" for v in verdicts(row["id"])]
        step["runs"].append({"id": row["id"][:8], "href": links.run(row["id"], "../"), "verdicts": sentences})
    return list(steps.values())


def bisect_page(b: BisectSource, links: Links, verdicts: Any) -> dict[str, Any]:
    """`verdicts`: run id → its stored verdicts (only read for a bisect without a stored outcome)."""
    r = b.result
    first_tags = b.runs[0]["tags"]
    page: dict[str, Any] = {
        "id": b.id,
        "started": _when(b.started_at.isoformat()),
        "runs": len(b.runs),
        "good": links.commit(r["good"] if r else first_tags.get("bisect.good")),
        "bad": links.commit(r["bad"] if r else first_tags.get("commit")),
        "result": r is not None,
    }
    if r is None:
        return page | {"steps_by_run": _runs_by_step(b, links, verdicts)}
    steps = _stored_steps(r, links)
    first_bad = next((s for s in steps if r.get("first_bad") and s["commit"]["full"] == r["first_bad"]), None)
    return page | {
        "target": r.get("target") or "",
        "threshold_pct": r.get("threshold_pct"),
        "regression": {"change": fmt_change(r["regression"]), "sentence": r["regression"].get("sentence", "")}
        if r.get("regression")
        else None,
        "first_bad": first_bad,
        "candidates": [links.commit(c) for c in r.get("candidates") or []],
        "steps": steps,
        "cleanup_problems": list(r.get("cleanup_problems") or []),
    }


def bisect_row(page: dict[str, Any]) -> dict[str, Any]:
    """The index's line for a bisect."""
    if not page["result"]:
        outcome = "did not finish: no outcome stored"
    elif page["first_bad"]:
        outcome = "first bad commit"
    elif page["regression"] is None:
        outcome = "no proven regression between the ends"
    else:
        outcome = "the first bad commit is one of " + str(len(page["candidates"])) + " (skips)"
    return {
        "href": f"bisects/{page['id']}.html",
        "started": page["started"],
        "good": page["good"],
        "bad": page["bad"],
        "target": page.get("target", ""),
        "outcome": outcome,
        "first_bad": page["first_bad"]["commit"] if page.get("first_bad") else None,
        "runs": page["runs"],
    }
