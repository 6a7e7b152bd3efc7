"""What `--profile` found, where `run` ends and `show` looks (issue 34 item 3): `run --profile cpu` ended with "16
extra trial(s)" and nothing more — only `report` showed the profiles. Each profiled cell gets what was profiled
(which profilers, how many trials, of which processes, on which host), the top of it (the functions that held
the CPU samples, the most contended locks, the system calls that took the time) and where the flame graphs
are. A few lines per cell, at most 80 columns; `report --text` and the HTML report have the whole tables.

A section of a run's report (report/sections.py): the terminal's part only — the text report shows each
cell's profiles in its groups, --json has them under "profiles"."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from fairmark.console import console, escape
from fairmark.probe.which import find_tool
from fairmark.report.data import RunArtifacts
from fairmark.report.profiles import cpu_view, scope_of, where
from fairmark.report.section import Context, Section
from fairmark.report.views import lock_rows, syscall_view

if TYPE_CHECKING:
    from fairmark.report.data import CellReport, RunArtifacts, RunReport

TOP = 5  # functions per cell
NAME = 44  # a function's name is cut here: its line stays within 80 columns
KINDS = (
    ("cpu", "profile.cpu/meta"),
    ("locks", "profile.locks/contention"),
    ("syscalls", "profile.syscalls/summary"),
)


def self_shares(folded: list[str]) -> list[tuple[str, float]]:
    """(function, share of the samples) of the leaf frames — the functions on the CPU when sampled — largest
    first; a kernel frame (inferno's `_[k]`) is marked "(kernel)"."""
    counts: Counter[str] = Counter()
    for text in folded:
        for line in str(text).splitlines():
            stack, _, n = line.rpartition(" ")
            if stack and n.isdigit():
                leaf = stack.rpartition(";")[2]
                counts[leaf.removesuffix("_[k]") + (" (kernel)" if leaf.endswith("_[k]") else "")] += int(n)
    total = sum(counts.values())
    return [(name, n / total) for name, n in counts.most_common()] if total else []


def _trials(n: int) -> str:
    return f"{n} trial" + ("" if n == 1 else "s")


def _cut(name: str, width: int = NAME) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _cpu(c: CellReport, arts: RunArtifacts) -> list[str]:
    view = cpu_view(arts.data(c.key, "profile.cpu/meta"))
    folded = [str(f) for f in arts.data(c.key, "profile.cpu/folded") if f]
    if view is None and not folded:
        return []
    on = f" on host {', '.join(view['hosts'])}" if view and view.get("hosts") else ""
    share = view.get("workload_share") if view else None
    whose = "all the machine's" if view and view["scope"] == "system-wide" else "the workload's"
    head = f"cpu ({_trials(view['trials'] if view else len(folded))}{on}): {whose} processes"
    if share is not None:
        head += f", {100 * share:.0f}% of the busy CPUs' samples"
    top = self_shares(folded)[:TOP]
    lines = [head + ("; on the CPU when sampled:" if top else "; no stacks were recorded")]
    lines += [f"  {100 * s:5.1f}%  {_cut(name)}" for name, s in top]
    return lines


def _locks(c: CellReport, arts: RunArtifacts) -> list[str]:
    docs = arts.data(c.key, "profile.locks/contention")
    if not docs:
        return []
    rows = lock_rows(docs)[:2]
    top = "; ".join(f"{_cut(r['lock'], 30)} {r['contended']}× {r['total_ms']:.3g} ms" for r in rows)
    return [f"locks ({_trials(len(docs))}, {scope_of(docs)}): {top or 'no contention recorded'}"]


def _syscalls(c: CellReport, arts: RunArtifacts) -> list[str]:
    docs = arts.data(c.key, "profile.syscalls/summary")
    if not docs:
        return []
    rows = syscall_view(docs)["rows"][:3]
    top = ", ".join(f"{r['syscall']} {r['pct']:.0f}%" for r in rows)
    return [f"syscalls ({_trials(len(docs))}{where(docs)}): {top or 'none recorded'} of their time"]


def cell_lines(c: CellReport, arts: RunArtifacts) -> list[str]:
    """What a cell's profiled trials found, a few lines (empty when it has no profile)."""
    return [*_cpu(c, arts), *_locks(c, arts), *_syscalls(c, arts)]


def _heading(r: RunReport, kinds: list[str]) -> str:
    n = sum(t.profiled for c in r.cells for t in c.trials)
    return (
        f"profiled: {', '.join(kinds)} — {n} extra trial(s) after the measured rounds, kept out of the tables "
        "and verdicts; per cell, what held the CPU samples and where the time went:"
    )


def _flame_line(r: RunReport) -> str:
    ref = r.run.id[:8]
    where_ = (
        f"flame graphs (one per cell, and each against its baseline): `fairmark report {ref} --html FILE`"
    )
    if not (find_tool("inferno-flamegraph") or find_tool("flamegraph.pl")):
        where_ += " — it needs inferno-flamegraph or flamegraph.pl, not found here"
    return where_ + f"; the whole tables: `fairmark report {ref} --text`"


def _terminal(r: RunReport, _: Context) -> None:
    if not any(t.profiled for c in r.cells for t in c.trials):
        return
    arts = RunArtifacts(r)
    per_cell = [(c, cell_lines(c, arts)) for c in r.cells]
    kinds = [k for k, name in KINDS if any(arts.data(c.key, name) for c in r.cells)]
    console.print()
    console.print(escape(console.wrap(_heading(r, kinds or ["no profile recorded"]))))
    for c, lines in per_cell:
        if lines:
            console.print(f"  [bold]{escape(c.key)}[/bold]")
            for line in lines:
                console.print(f"    {escape(console.wrap(line, first=4, indent='      '))}")
    if any(arts.data(c.key, "profile.cpu/folded") for c in r.cells):
        console.print(escape(console.wrap(_flame_line(r), indent="  ")))


SECTION = Section("profiled", terminal=_terminal)
