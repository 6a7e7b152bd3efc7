"""`fairmark report --text / --markdown`: an 80-column report for a mailing list — ASCII plots, no colour.

Same content as the HTML report minus pictures: verdicts first, then per workload the variants' table, the
ministat plot, attribution and USE flags, a monitor digest and the top of the lock and syscall profiles;
then scaling, doctor findings and how to reproduce. Markdown wraps the same text in headings and fences.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fairmark.report import attribution as attr
from fairmark.report.data import CellReport, RunArtifacts, RunReport
from fairmark.report.profiles import cpu_line, cpu_view, scope_of
from fairmark.report.sections import SECTIONS
from fairmark.report.views import (
    cell_row,
    lock_rows,
    ministat_text,
    syscall_view,
    verdict_rows,
)
from fairmark.report.writer import WIDTH, Writer
from fairmark.stats import format_value
from fairmark.stats.digits import column_unit

NAME_W = 14


def _short(text: Any, width: int = NAME_W) -> str:
    s = str(text)
    return s if len(s) <= width else s[: width - 1] + "…"


def _verdicts(w: Writer, report: RunReport, attrs: dict) -> None:
    w.heading("Verdicts", 3)
    rows = verdict_rows(report, attrs)
    if not rows:
        w.para("No comparisons: a verdict needs two variants with at least 3 measured trials each.")
    for v in rows:
        w.para(f"{v['group']} {v['metric']}: {v['sentence']}", "* " if w.md else "- ")
        w.para(f"change {v['percent']}; means differ by {v['difference']}", "    ")
        if v["significant"] and not v["fdr_significant"]:
            w.para("not significant after false-discovery-rate control across the run", "    ")
        for extra in [*v["levels"], *v["warnings"], v["caveat"]]:
            if extra:
                w.para(extra, "    ")


def _bullets(w: Writer, heading: str, lines: list[str]) -> None:
    """A section of one bullet per line, or nothing when there are no lines."""
    if lines:
        w.heading(heading, 3)
        for line in lines:
            w.para(line, "- ")


def _table(cells: Sequence[CellReport], divisor: float) -> list[str]:
    """Columns as wide as their widest value (a number is never cut); the values bare, their unit in the
    heading."""
    rows = [cell_row(c, divisor=divisor) for c in cells]
    cols = [
        ("variant", "variant", "<"),
        ("n", "n", ">"),
        ("mean ± CI", "mean", "<"),
        ("median", "median", "<"),
        ("CV", "cv", ">"),
        ("fail", "failed", ">"),
    ]
    texts = [[_short(r[key], 24) if key == "variant" else str(r[key]) for _, key, _ in cols] for r in rows]
    widths = [max(len(head), *(len(row[i]) for row in texts)) for i, (head, _, _) in enumerate(cols)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(f"{v:{align}{w}}" for v, w, (_, _, align) in zip(values, widths, cols, strict=True))

    return [line([head for head, _, _ in cols]).rstrip()] + [line(row).rstrip() for row in texts]


def _cell(w: Writer, c: CellReport, arts: RunArtifacts, a: Any) -> None:
    if c.loops_note:
        w.para(f"[{c.variant}] {c.loops_note}", "  ")
    if a is not None:
        w.para(f"[{c.variant}] {a.sentence}", "  ")
        for f in a.flags:
            w.para(f"USE: {f.message}", "    ")
    series = arts.data(c.key, "monitor/system")
    digest = [
        f"{m['name']} {format_value(m['mean'], None, '%' if m['unit'] == '%' else '')}"
        for m in attr.monitor_summary(series)
        if m["name"] in ("CPU user", "CPU system", "CPU iowait", "run queue", "context switches")
    ]
    if digest:
        w.para(f"monitor ({c.variant}, means): " + ", ".join(digest), "    ")
    _profiles(w, c, arts)


def _profiles(w: Writer, c: CellReport, arts: RunArtifacts) -> None:
    sys_docs = arts.data(c.key, "profile.syscalls/summary")
    if sys_docs:
        view = syscall_view(sys_docs)
        lines = [f"    {'syscall':<18} {'calls':>10} {'errors':>7} {'seconds':>10} {'%time':>6}"]
        lines += [
            f"    {_short(r['syscall'], 18):<18} {r['calls']:>10} {r['errors']:>7} {format_value(r['seconds']):>10} "
            f"{r['pct']:>6.1f}"
            for r in view["rows"][:8]
        ]
        w.para(f"syscalls of {c.variant} ({view['source']}; {scope_of(sys_docs)}):", "    ")
        w.block(lines)
    locks = arts.data(c.key, "profile.locks/contention")
    if locks:
        rows = lock_rows(locks)[:5]
        scope = scope_of(locks)
        w.para(f"lock contention of {c.variant}, {scope}: " + ("none recorded" if not rows else ""), "    ")
        if rows:
            lines = [
                f"    {'lock / caller':<36} {'contended':>9} {'wait ms':>9} {'max µs':>9}"
            ]  # under its caption
            lines += [
                f"    {_short(r['lock'], 36):<36} {r['contended']:>9} {format_value(r['total_ms']):>9} "
                f"{format_value(r['max_us']):>9}"
                for r in rows
            ]
            w.block(lines)
    cpu = cpu_view(arts.data(c.key, "profile.cpu/meta"))
    if cpu:
        w.para(f"CPU profile of {c.variant}: {cpu_line(cpu)}", "    ")
    if arts.data(c.key, "profile.cpu/folded"):
        w.para(
            f"CPU flame graph of {c.variant}: in the HTML report (`fairmark report RUN --html FILE`)", "    "
        )


def _scaling(w: Writer, report: RunReport) -> None:
    if not report.scaling:
        return
    w.heading("Scaling", 3)
    for s in report.scaling:
        divisor, unit = column_unit((p.mean for p in s.points), s.unit)
        in_unit = f" in {unit}" if unit else ""
        w.para(f"{s.workload} / {s.variant} vs {s.parameter} ({s.metric}{in_unit}): {s.summary}", "")
        efficiency = any(p.efficiency is not None for p in s.points)  # CPU/thread sweeps only
        means = [
            format_value(p.mean / divisor, None if p.ci_half_width is None else p.ci_half_width / divisor)
            for p in s.points
        ]
        mw = max(len("mean ± CI"), *map(len, means))
        head = f"  {s.parameter[:10]:>10}  {'n':>3}  {'mean ± CI':<{mw}} {'speedup':>8}"
        lines = [head + (f" {'effic.':>7}" if efficiency else "")]
        for p, mean in zip(s.points, means, strict=True):
            eff = "—" if p.efficiency is None else f"{100 * p.efficiency:.0f}%"
            line = f"  {_short(p.value, 10):>10}  {p.n:>3}  {mean:<{mw}} {p.speedup:>8.3g}"
            lines.append(line + (f" {eff:>7}" if efficiency else ""))
        w.block(lines)


def _failures(w: Writer, report: RunReport) -> None:
    from fairmark.report.failures import lines, spread_lines
    from fairmark.report.pagecache import lines as page_cache_lines

    _bullets(w, "Page cache (file-system results the disk cannot have produced)", page_cache_lines(report))
    _bullets(w, "Spread (Brown–Forsythe; CV ratio with a percentile bootstrap CI)", spread_lines(report))
    _bullets(w, "Failures (measured trials; warm-ups not counted)", lines(report))


def _failed(w: Writer, report: RunReport) -> None:
    """Cells that measured nothing, with the first error lines of their first failed trial."""
    from fairmark.report.failures import failed_cells, run_failure

    found = failed_cells(report.cells)
    if not found:
        return
    verdict = run_failure(report)
    w.heading("FAILED: " + verdict if verdict else "Cells with no successful trial", 3)
    for f in found:
        w.para(f.sentence, "- ")
        if f.lines:
            w.block(["    " + line for line in f.lines])


FOLD = "↪ "


def _fold(lines: Sequence[str], markdown: bool) -> list[str]:
    """Quoted text kept whole but within the width: a long line goes on after FOLD on the next (in Markdown a
    fenced block scrolls instead, and a copy is exact)."""
    if markdown:
        return list(lines)
    out = []
    for line in lines:
        out.append(line[:WIDTH])
        rest = line[WIDTH:]
        while rest:
            out.append(FOLD + rest[: WIDTH - len(FOLD)])
            rest = rest[WIDTH - len(FOLD) :]
    return out


def _reproduce(w: Writer, report: RunReport) -> None:
    run = report.run
    w.heading("How to reproduce", 3)
    w.para(
        f"fairmark {run.fairmark_version}, seed {run.seed}, plan {run.plan_path} (sha256 {run.plan_sha256[:16]})"
    )
    w.para("command line:")
    w.block(_fold(["  " + run.command_line], w.md))
    w.para(
        f"elsewhere, from its bundle: `fairmark export {run.id[:8]}`, then `fairmark run fairmark-{run.id}.json` "
        f"(this plan text, seed and scale), then `fairmark compare-runs {run.id[:8]} last`"
    )
    w.para(
        "plan:"
        if w.md
        else f"plan (a line longer than {WIDTH} columns goes on after {FOLD.strip()} on the next):"
    )
    w.block(_fold(run.plan_text.rstrip("\n").splitlines(), w.md))


def _header(w: Writer, report: RunReport, _: TextContext) -> None:
    run = report.run
    w.heading(f"fairmark run {run.id}" + (f" — {run.title}" if run.title else ""), 2)
    w.para(
        f"status {run.status}, host {run.hostname}, started {run.started_at:%Y-%m-%d %H:%M:%S}, "
        f"confidence {report.confidence:g}%, baseline {report.baseline}"
    )
    if report.risk_note:
        w.para(f"!!! {report.risk_note} !!!")
    if (run.options or {}).get("quick"):
        w.para("quick run: few trials and short parameters — a first look, not a result to quote")
    if report.rerun_note:
        w.para(report.rerun_note)
    if report.profiled_note:
        w.para(report.profiled_note)
    if report.rss_note:
        w.para(report.rss_note)


def _groups(w: Writer, report: RunReport, ctx: TextContext) -> None:
    for group, cells in report.groups().items():
        metric = cells[0].primary_metric
        spec = cells[0].spec(metric)
        divisor, unit = column_unit(((c.summaries.get(metric) or {}).get("mean") for c in cells), spec.unit)
        w.heading(f"{group} — {metric}" + (f" in {unit}" if unit else "") + f", {spec.better} is better", 3)
        w.block(_table(cells, divisor))
        plot = ministat_text(cells, metric)
        if plot:
            w.blank()
            w.block(plot.splitlines())
        for c in cells:
            _cell(w, c, ctx.arts, ctx.attrs.get(c.key))


class TextContext:
    """What several sections of one run's text read: its artifacts by cell, and each cell's attribution."""

    def __init__(self, report: RunReport):
        self.arts = RunArtifacts(report)
        self.attrs = attr.attribute_cells(report, self.arts)


# What the text and Markdown reports show of each section (report/sections.py), in the sections' order.
PARTS: dict[str, Callable[[Writer, RunReport, TextContext], None]] = {
    "header": _header,
    "failed": lambda w, r, _: _failed(w, r),
    "verdicts": lambda w, r, ctx: _verdicts(w, r, ctx.attrs),
    "groups": _groups,
    "scaling": lambda w, r, _: _scaling(w, r),
    "failures": lambda w, r, _: _failures(w, r),
    "reproduce": lambda w, r, _: _reproduce(w, r),
}


def _run(w: Writer, report: RunReport) -> None:
    ctx = TextContext(report)
    for section in SECTIONS:
        if section.text:
            section.text(w, report)
        elif section.name in PARTS:
            PARTS[section.name](w, report, ctx)


def render_text(reports: Sequence[RunReport], *, markdown: bool = False) -> str:
    w = Writer(markdown)
    for r in reports:
        _run(w, r)
    return "\n".join(line.rstrip() for line in w.lines).strip("\n") + "\n"
