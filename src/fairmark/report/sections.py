"""The sections of a run's report, in the one order every renderer shows them (issue 33 item 5): the terminal
(report/terminal.PARTS), text and Markdown (report/text.PARTS), HTML (report/html.render_html: the template of
each, report/templates/sections/NAME.html.j2) and --json (report/data.JSON_PARTS) each iterate SECTIONS and show
the sections they have a part for; a renderer shows no section out of this order, and has no part named
otherwise (tests/test_architecture.py). A new section is its name here, its module in report/ (what it computes
from the RunReport), and its part in the renderers that show it."""

from __future__ import annotations

SECTIONS: tuple[str, ...] = (
    "header",  # the run: its facts and notes (--accept-risk, quick, a re-run, profiled trials, old peak RSS)
    "failed",  # cells with no successful trial, with their first error lines
    "verdicts",  # every comparison in a sentence
    "hosts",  # where each side of each cell ran, and how the hosts' environments differ
    "boots",  # a boot run's boots, each verified
    "variants",  # what each variant changes
    "groups",  # each workload and sweep point: the table, ministat's plot, each cell (its profiles too)
    "scaling",  # each swept parameter's curve
    "stability",  # kernel events and survival of stability workloads
    "failures",  # the page cache, the spread, failed trials' rates
    "summary",  # how many comparisons, significant, surviving Benjamini-Hochberg
    "findings",  # the doctor's findings before and between rounds
    "reproduce",  # how to run it again
)
