"""The sections of a run's report, in the one order every renderer shows them (issue 33 item 5): the terminal
(report/terminal.render), text and Markdown (report/text.render_text), --json (report/data.RunReport.to_dict)
and HTML (report/html.render_html: each section's template, report/templates/sections/NAME.html.j2) each
iterate SECTIONS and show the sections they have a part for; a renderer shows no section out of this order
(tests/test_architecture.py).

A section's parts are written in its own module (a `Section` with `terminal`, `text`, `json`, `html`: the
hosts, boots, variants, stability and findings sections), or — for the sections written before this list — in
each renderer's table of parts by name (terminal.PARTS, text.PARTS, data.JSON_PARTS, and html.run_view for their
templates). A new section is its module with its parts, its template if HTML shows it, and its entry here."""

from __future__ import annotations

from fairmark.report import boots, explain, findings, hosts, profiled, stability, variants
from fairmark.report.section import Section

SECTIONS: tuple[Section, ...] = (
    Section(
        "header"
    ),  # the run: its facts and notes (--accept-risk, quick, a re-run, profiled trials, old RSS)
    Section("failed"),  # cells with no successful trial, with their first error lines
    Section("verdicts"),  # every comparison in a sentence
    explain.SECTION,  # where a significant difference went: per-function CPU time differences (profiles)
    hosts.SECTION,  # where each side of each cell ran, and how the hosts' environments differ
    boots.SECTION,  # a boot run's boots, each verified
    variants.SECTION,  # what each variant changes
    Section(
        "groups"
    ),  # each workload and sweep point: the table, ministat's plot, each cell (its profiles too)
    profiled.SECTION,  # --profile: what was profiled, the top of each cell's profiles, where the flame graphs are
    Section("scaling"),  # each swept parameter's curve
    stability.SECTION,  # kernel events and survival of stability workloads
    Section("failures"),  # the page cache, the spread, failed trials' rates
    Section("summary"),  # how many comparisons, significant, surviving Benjamini-Hochberg
    findings.SECTION,  # the doctor's findings before and between rounds
    Section("reproduce"),  # how to run it again
)
NAMES: tuple[str, ...] = tuple(s.name for s in SECTIONS)
