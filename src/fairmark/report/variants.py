"""What each variant of a run changes (env, sysctl, wrapper, CPUs …): a section of its report
(report/sections.py) — the text report lists the settings that differ, the HTML report tables them all."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fairmark.report.attribution import variant_definitions
from fairmark.report.section import Context, Section
from fairmark.report.views import flatten

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.report.writer import Writer


def variant_table(report: RunReport) -> dict[str, Any]:
    """What the plan changes per variant (env, sysctl, wrapper, CPUs …), keys that differ first."""
    defs = variant_definitions(report)
    names = [n for n in dict.fromkeys(c.variant for c in report.cells) if n in defs]
    opts: dict[str, Any] = dict(report.run.options or {})
    placed: dict[str, str] = opts.get("placement") or {}  # how `cpus` was made (run/machine/host.py)
    flats = {
        n: flatten({k: v for k, v in defs[n].items() if k not in ("name", "description")})
        | ({"cpus placement": placed[n]} if n in placed else {})
        for n in names
    }
    keys = sorted({k for f in flats.values() for k in f})
    rows: list[dict[str, Any]] = [{"key": k, "values": [flats[n].get(k, "—") for n in names]} for k in keys]
    rows = [r for r in rows if any(v not in ("—", "null", "{}", "[]", "false") for v in r["values"])]
    for r in rows:
        r["differ"] = len(set(r["values"])) > 1
    return {"names": names, "rows": sorted(rows, key=lambda r: not r["differ"])}


def _text(w: Writer, report: RunReport, _: Context) -> None:
    table = variant_table(report)
    differ = [r for r in table["rows"] if r["differ"]]
    placed = [r for r in table["rows"] if r["key"] == "cpus placement" and not r["differ"]]
    if differ or placed:
        w.heading("What the variants change", 3)
        for i, name in enumerate(table["names"]):
            parts = [f"{r['key']}={r['values'][i]}" for r in [*differ, *placed] if r["values"][i] != "—"]
            w.para(f"{name}: " + (", ".join(parts) or "(as the system is)"), "- ")


SECTION = Section("variants", text=_text, html=lambda r, _: variant_table(r))
