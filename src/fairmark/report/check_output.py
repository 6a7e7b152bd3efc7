"""What CI systems show of `fairmark check`: JUnit XML (one test case per checked cell and metric, a proven
regression is a failure, a cell that could not be judged is skipped) and a Markdown summary (GitHub's job
summary, a merge-request comment)."""

from __future__ import annotations

import datetime as dt
import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from fairmark.report.check import POSSIBLE, REGRESSION, UNJUDGED, Case, CheckResult
from fairmark.stats.digits import format_value
from fairmark.verdict.compare import Comparison
from fairmark.verdict.compare import change_text as percent_change_text


def _pct(value: float) -> str:
    # two significant digits below 1% (an A/A change of a few hundredths of a percent is not "-0.0%"); no sign
    # on none at all (a metric the same in every trial read "+0%")
    if value == 0:
        return "0%"
    return f"{value:+.2g}%" if abs(value) < 1 else f"{value:+.1f}%"


def change_text(change: float | None, low: float | None, high: float | None) -> str:
    """'+9.7% [+9.2%, +10.3%]': the change and the interval of the test that decided (the ratio's, in %), all
    three rounded to the digits that interval supports; the change is the ratio's (of geometric means on the log
    scale), so it always lies inside its interval."""
    if change is None:
        return "–"
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return _pct(change)
    # one rounding of each, as the verdict's sentence has it (verdict.compare.percent_texts): to the interval's
    # width alone a change of +3% in [-40%, +60%] read "0%", and a bound of -99.4% "-100%"
    ends = (100 * (low - 1), 100 * (high - 1))
    hw = (ends[1] - ends[0]) / 2 or None
    pct, lo, hi = (percent_change_text(v, hw) for v in (change, *ends))
    return f"{pct} [{lo}, {hi}]"


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def fmt_change(c: Comparison | Mapping[str, Any] | None) -> str:
    """A verdict's change and its interval (see change_text); from a Comparison, or from one as stored (a
    bisect's outcome, a history change point: publish reads those back as dicts, JSON's null for nan)."""
    if c is None:
        return "–"
    if isinstance(c, Mapping):
        ratio, percent = c.get("ratio"), c.get("percent")
        low, high = c.get("ratio_ci_low"), c.get("ratio_ci_high")
        change = 100 * (ratio - 1) if ratio is not None and math.isfinite(ratio) else percent
        return change_text(_finite(change), _finite(low), _finite(high))
    change = c.change_percent if math.isfinite(c.ratio) else c.percent
    return change_text(_finite(change), _finite(c.ratio_ci_low), _finite(c.ratio_ci_high))


def _means(c: Comparison | None) -> tuple[str, str]:
    """Each side's mean ± its CI half-width, rounded to the digits the CI supports."""
    if c is None:
        return "–", "–"
    return (
        format_value(c.baseline.mean, c.baseline.ci_half_width, c.unit),
        format_value(c.other.mean, c.other.ci_half_width, c.unit),
    )


def _title(r: CheckResult) -> str:
    base, head = r.tags.get("ab.base"), r.tags.get("ab.head")
    if base and head:  # `fairmark ab`: the two commits are what the reader wants to see
        return f"fairmark ab {head[:12]} against its base {base[:12]} (run {r.run_id[:8]})"
    return f"fairmark check {r.run_id[:8]} against {r.against}"


def junit_xml(r: CheckResult, *, elapsed_s: float = 0.0) -> str:
    """JUnit XML as Jenkins, GitLab and GitHub test reporters read it (testsuites > testsuite > testcase)."""
    failures = sum(c.status == REGRESSION for c in r.cases)
    skipped = sum(c.status == UNJUDGED for c in r.cases) + bool(r.skipped)
    counts = {"tests": str(len(r.cases) + bool(r.skipped)), "failures": str(failures), "errors": "0"}
    root = ET.Element("testsuites", {"name": "fairmark check", **counts, "time": f"{elapsed_s:.3f}"})
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": _title(r),
            **counts,
            "skipped": str(skipped),
            "time": f"{elapsed_s:.3f}",
            "timestamp": dt.datetime.now(dt.UTC).replace(microsecond=0, tzinfo=None).isoformat(),
            "hostname": r.hostname or "localhost",
        },
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("run", r.run_id),
        ("commit", r.tags.get("commit", "")),
        ("against", r.against),
        ("design", r.design),
        ("threshold_pct", f"{r.threshold_pct:g}"),
        ("confidence", f"{r.confidence:g}"),
        ("baseline_runs", ",".join(r.baseline_runs)),
    ):
        if value or name != "commit":  # no commit tag: no property (an empty value reads as a commit "")
            ET.SubElement(props, "property", {"name": name, "value": value})
    for key, value in sorted(r.tags.items()):  # every tag of the run, as `fairmark runs --tag` takes it
        ET.SubElement(props, "property", {"name": f"tag.{key}", "value": value})
    for c in r.cases:
        _testcase(suite, c, r)
    if r.skipped:  # no baseline yet: one skipped case says why (a suite of no case reads as "no tests ran")
        case = ET.SubElement(
            suite, "testcase", {"classname": "fairmark.check", "name": "baseline", "time": "0"}
        )
        ET.SubElement(case, "skipped", {"message": r.skipped})
    if r.notes:
        ET.SubElement(suite, "system-out").text = "\n".join(r.notes)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _testcase(suite: ET.Element, c: Case, r: CheckResult) -> None:
    attrs = {"classname": f"fairmark.{c.workload}", "name": f"{c.cell} {c.metric}", "time": "0"}
    case = ET.SubElement(suite, "testcase", attrs)
    if c.status == REGRESSION:
        message = f"regression beyond {c.threshold_pct:g}%: {fmt_change(c.comparison)}"
        fail = ET.SubElement(case, "failure", {"message": message, "type": "regression"})
        fail.text = c.sentence + (f"\nwhere it went: {c.where}" if c.where else "")
    elif c.status == UNJUDGED:
        ET.SubElement(case, "skipped", {"message": c.sentence})
    else:
        ET.SubElement(case, "system-out").text = f"{c.status}: {c.sentence}"


def markdown(r: CheckResult) -> str:
    if r.skipped:
        return f"## {_title(r)}\n\n**skipped**: {_md_escape(r.skipped)}\n"
    own = any(c.threshold_pct != r.threshold_pct for c in r.cases)
    beyond = f"{r.threshold_pct:g}%" + (
        " (a metric's own fail_on_pct where the plan gives one)" if own else ""
    )
    verdict = (
        f"**FAILED**: {len(r.regressions)} proven regression(s) beyond {beyond}"
        if r.failed
        else f"**passed**: no regression proven beyond {beyond}"
    )
    lines = [
        f"## {_title(r)}",
        "",
        f"{verdict} ({r.confidence:g}% confidence, {r.design}"
        + (f"; baseline runs {', '.join(b[:8] for b in r.baseline_runs)}" if r.baseline_runs else "")
        + ").",
        "",
        "| cell | metric | baseline | this run | change [CI] | verdict |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    mark = {REGRESSION: "❌ ", POSSIBLE: "⚠️ "}
    for c in r.cases:
        base, mine = _means(c.comparison)
        row = [c.cell, c.metric, base, mine, fmt_change(c.comparison), mark.get(c.status, "") + c.status]
        lines.append("| " + " | ".join(_md_escape(x) for x in row) + " |")
    lines.append("")
    for c in r.cases:
        if c.status in (REGRESSION, POSSIBLE):
            lines.append(f"- {_md_escape(c.cell)} {c.metric}: {_md_escape(c.sentence)}")
            if c.where:
                lines.append(f"  - where it went: {_md_escape(c.where)}")
    lines += [f"- {_md_escape(n)}" for n in r.notes]
    return "\n".join(lines).rstrip() + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
