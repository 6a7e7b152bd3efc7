"""Every comparison of the run in a sentence: the change with the interval of the design that decided, its
warnings and what the monitors say may have caused it (the terminal prints each under its workload's table:
report/sections/groups.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fairmark.report.section import Context, Section
from fairmark.report.views import verdict_rows

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.report.writer import Writer


def _text(w: Writer, report: RunReport, ctx: Context) -> None:
    w.heading("Verdicts", 3)
    rows = verdict_rows(report, ctx.attributions)
    if not rows:
        w.para("No comparisons: a verdict needs two variants with at least 3 measured trials each.")
    for v in rows:
        w.para(f"{v['group']} {v['metric']}: {v['sentence']}", "* " if w.md else "- ")
        if v["difference"]:  # none for a metric that never varied: its sentence says so
            w.para(f"change {v['percent']}; means differ by {v['difference']}", "    ")
        if v["significant"] and not v["fdr_significant"]:
            w.para("not significant after false-discovery-rate control across the run", "    ")
        for extra in [*v["levels"], *v["warnings"], v["caveat"]]:
            if extra:
                w.para(extra, "    ")


def _json(r: RunReport, _: Context) -> dict[str, Any]:
    return {"verdicts": [v.to_dict() for v in r.verdicts]}


def _html(r: RunReport, ctx: Context) -> list[dict[str, Any]]:
    return verdict_rows(r, ctx.attributions)


SECTION = Section("verdicts", text=_text, json=_json, html=_html)
