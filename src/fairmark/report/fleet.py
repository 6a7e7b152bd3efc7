"""The fleet view (issue 32 item 5): after `fairmark run PLAN --hosts a,b,c`, which hosts differ from the rest of
the fleet beyond the noise, per cell (stats/fleet.py), and how the odd hosts differ in what their snapshots
record (hardware, kernel, settings) — "which of my 50 boxes is the odd one?".

A fleet's runs carry the tag fleet=ID (one run per host, made by remote/fleet.py); `fairmark compare-hosts`
shows the newest fleet, or the one named."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from fairmark.console import console
from fairmark.errors import UsageError
from fairmark.probe.hosts import hardware_differences, software_differences
from fairmark.stats.fleet import MIN_HOSTS, HostDeviation, odd_hosts
from fairmark.store.db import Store
from fairmark.verdict.compare import percent_texts


@dataclass(frozen=True)
class FleetCell:
    """One cell (workload × variant, its primary metric) across the fleet's hosts."""

    key: str
    metric: str
    hosts: list[HostDeviation]


@dataclass
class FleetView:
    fleet: str
    runs: dict[str, str]  # host → its run id
    cells: list[FleetCell] = field(default_factory=list)
    differences: dict[str, list[str]] = field(default_factory=dict)  # odd host → how its snapshot differs

    @property
    def odd(self) -> list[str]:
        return sorted({h.host for c in self.cells for h in c.hosts if h.odd})


def fleet_runs(store: Store, fleet: str | None) -> tuple[str, dict[str, str]]:
    """(fleet id, host → run id) of the named fleet, or of the newest one."""
    if fleet is None:
        recent = store.list_runs(limit=200)
        tags = store.tags([r["id"] for r in recent])  # one query, not one a run
        fleet = next((tags[r["id"]]["fleet"] for r in recent if "fleet" in tags.get(r["id"], {})), None)
        if fleet is None:
            raise UsageError("no fleet run in this store: `fairmark run PLAN --hosts a,b,c` makes one")
    runs = store.list_runs(limit=10_000, tags={"fleet": fleet})
    if not runs:
        raise UsageError(f"no run of fleet {fleet!r} in this store (`fairmark runs` lists the runs and tags)")
    out: dict[str, str] = {}
    for r in reversed(runs):  # the newest run of each host wins (a resumed or repeated one)
        hosts = list((store.get_run(r["id"]).options or {}).get("hosts") or {})
        out[hosts[0] if hosts else r["hostname"]] = r["id"]
    return fleet, out


def fleet_view(store: Store, fleet: str | None = None, alpha: float = 0.05) -> FleetView:
    fleet_id, runs = fleet_runs(store, fleet)
    view = FleetView(fleet_id, runs)
    values: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(dict)
    for host, run_id in runs.items():
        for key, metric, vals in _cell_values(store, run_id):
            values[(key, metric)][host] = vals
    for (key, metric), by_host in sorted(values.items()):
        view.cells.append(FleetCell(key, metric, odd_hosts(by_host, alpha=alpha)))
    view.differences = {h: _differences(store, runs, h) for h in view.odd}
    return view


def _cell_values(store: Store, run_id: str) -> list[tuple[str, str, list[float]]]:
    """(cell key, its primary metric, the values of its measured trials) of one run."""
    values = store.sample_values(run_id)
    trials = [t for t in store.trials(run_id) if not t.warmup and t.status == "ok"]
    out = []
    for cell in store.cells(run_id):
        vals = [values.get(t.id, {}).get(cell.primary_metric) for t in trials if t.cell_id == cell.id]
        out.append((cell.key, cell.primary_metric, [v for v in vals if v is not None]))
    return out


def _differences(store: Store, runs: dict[str, str], odd: str) -> list[str]:
    """How the odd host's snapshot differs from the fleet's other hosts' (hardware and software facts)."""
    snaps: dict[str, dict[str, Any]] = {}
    for host, run_id in runs.items():
        got = [a["data"] for a in store.artifacts(run_id, kind="env.host") if a["name"] == host]
        if got and isinstance(got[0], dict):
            snaps[host] = got[0]
    if odd not in snaps:
        return []
    out: list[str] = []
    for other in (h for h in snaps if h != odd):
        pair = {odd: snaps[odd], other: snaps[other]}
        out += [d for d in [*hardware_differences(pair, []), *software_differences(pair, [])] if d not in out]
    return out


def render(view: FleetView) -> None:
    if console.json_mode:
        console.emit_json(as_json(view))
        return
    console.text(f"fleet {view.fleet}: {len(view.runs)} hosts ({', '.join(sorted(view.runs))})")
    for cell in view.cells:
        console.text(f"\n{cell.key} ({cell.metric}), each host against the others:")
        if not cell.hosts:
            console.text(f"  needs {MIN_HOSTS} or more hosts with 2 or more measured trials: not judged")
        for h in sorted(cell.hosts, key=lambda d: d.q):
            mark = "ODD " if h.odd else "    "
            texts = percent_texts(h.ratio, h.ratio_lo, h.ratio_hi, h.odd)  # the verdicts' digits
            change, low, high = texts or (_pct(h.ratio), _pct(h.ratio_lo), _pct(h.ratio_hi))
            console.text(f"  {mark}{h.host:<12} {change} ({low} to {high}), n={h.n}, q={h.q:.2g}")
    if not view.odd:
        console.text(
            "\nno host differs from the fleet beyond the noise (5% false discovery rate across hosts)"
        )
        return
    console.text(f"\nodd host(s): {', '.join(view.odd)}")
    for host, diffs in view.differences.items():
        if diffs:
            console.text(f"  {host} differs from the others in: " + "; ".join(diffs))
        else:
            console.text(
                f"  {host}: its snapshot records no difference from the others (hardware, kernel, settings): "
                "the cause is outside what fairmark records (load, firmware, a process, the network)"
            )


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def as_json(view: FleetView) -> dict[str, Any]:
    return {
        "fleet": view.fleet,
        "runs": view.runs,
        "odd": view.odd,
        "cells": [
            {"key": c.key, "metric": c.metric, "hosts": [vars(h) for h in c.hosts]} for c in view.cells
        ],
        "differences": view.differences,
    }
