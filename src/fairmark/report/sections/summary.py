"""How many comparisons the run made, how many are significant, and how many survive Benjamini-Hochberg
across the run (the terminal's last word on the verdicts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fairmark.console import console
from fairmark.report.section import Context, Section

if TYPE_CHECKING:
    from fairmark.report.data import RunReport


def _terminal(r: RunReport, _: Context) -> None:
    significant = [v for v in r.verdicts if v.significant]
    survive = sum(v.fdr_significant for v in r.verdicts)
    if r.verdicts:
        console.print()
        console.text(
            f"{len(r.verdicts)} comparison(s), {len(significant)} significant at {r.confidence:g}%; "
            f"{survive} survive{'s' if survive == 1 else ''} Benjamini-Hochberg (FDR {100 - r.confidence:g}%) "
            "across the run"
        )


SECTION = Section("summary", terminal=_terminal)
