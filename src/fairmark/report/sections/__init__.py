"""The sections of a run's report, in the one order every renderer shows them (issue 33 item 5): the terminal
(report/terminal.render), text and Markdown (report/text.render_text), --json (report/jsondoc.run_json) and
HTML (report/html.render_html: each section's template, report/templates/sections/NAME.html.j2) each iterate
SECTIONS and show each section's part for them (tests/test_architecture.py).

A section is a module with its `Section` (report/section.py: its terminal, text, json and html parts) and, if
the HTML report shows it, its template. The sections written with this list are in this package, one module
each; the hosts, boots, variants, profiled, stability, findings and explain sections are in report/ beside the helpers
other commands share with them. A new section is its module, its template and its entry here."""

from __future__ import annotations

from fairmark.report import boots, explain, findings, hosts, profiled, stability, variants
from fairmark.report.section import Section
from fairmark.report.sections import failed, failures, groups, header, reproduce, scaling, summary, verdicts

SECTIONS: tuple[Section, ...] = (
    header.SECTION,  # the run: its facts and notes (--accept-risk, quick, a re-run, profiled trials, old RSS)
    failed.SECTION,  # cells with no successful trial, with their first error lines
    verdicts.SECTION,  # every comparison in a sentence
    explain.SECTION,  # where a significant difference went: per-function CPU time differences (profiles)
    hosts.SECTION,  # where each side of each cell ran, and how the hosts' environments differ
    boots.SECTION,  # a boot run's boots, each verified
    variants.SECTION,  # what each variant changes
    groups.SECTION,  # each workload and sweep point: the table, ministat's plot, each cell (its profiles too)
    profiled.SECTION,  # --profile: what was profiled, the top of each cell's profiles, where the flame graphs are
    scaling.SECTION,  # each swept parameter's curve
    stability.SECTION,  # kernel events and survival of stability workloads
    failures.SECTION,  # the page cache, the spread, failed trials' rates
    summary.SECTION,  # how many comparisons, significant, surviving Benjamini-Hochberg
    findings.SECTION,  # the doctor's findings before and between rounds
    reproduce.SECTION,  # how to run it again
)
NAMES: tuple[str, ...] = tuple(s.name for s in SECTIONS)
