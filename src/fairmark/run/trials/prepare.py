"""Preparation of a run, before anything is written: each workload's adapter, its parameters resolved once per
cell (workload params ⊕ the variant's ⊕ the sweep point, checked by the adapter), its metrics, and the rows the
store keeps for its cells. A bad parameter or a missing executable is refused here, naming the plan's key."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairmark.errors import EnvironmentRefused, PlanError
from fairmark.plan.load import Locator
from fairmark.plan.metric import LOOP_METRIC_SPECS
from fairmark.plan.model import BUILTIN_METRIC_SPECS, MetricSpec, Plan, Workload
from fairmark.plan.schedule import Cell, cells_of, expand_sweep_values
from fairmark.run.variants.basic import command_for
from fairmark.run.workloads import adapter_for, data_set_info
from fairmark.run.workloads.base import Adapter
from fairmark.store.records import CellRecord

if TYPE_CHECKING:
    from fairmark.run.machine.host import Hosts
    from fairmark.run.trials.secrets import Scrubber


@dataclass
class CellState:
    cell: Cell
    id: int
    status: str = "active"
    reason: str | None = None
    values: list[float] = field(default_factory=list)  # primary metric, measured ok trials, in order
    value_rounds: list[int] = field(default_factory=list)  # the round of each of `values` (the pairs' key)
    failures: int = 0
    rounds_done: set[int] = field(default_factory=set)
    params: dict[str, Any] = field(default_factory=dict)  # a tool cell's resolved parameters
    loops: int | None = None  # the loop count its trials are handed (`loops = "auto"`: None until calibrated)
    loop_start_s: float | None = (
        None  # `loops = "auto"`: the calibrated process start's CPU time (run.trials.loops)
    )


@dataclass
class WorkloadRuntime:
    workload: Workload
    adapter: Adapter | None
    params: dict[str, Any]
    metric_specs: dict[str, MetricSpec]  # by name; the first is primary
    cells: list[CellState]
    declared: list[str]  # the plan's or adapter's metrics (built-ins only when declared): they get verdicts

    @property
    def primary(self) -> str:
        return next(iter(self.metric_specs))


def build_runtimes(
    plan: Plan,
    plan_path: Path | str,
    *,
    quick: bool,
    hosts: Hosts | None = None,
    stored: dict[str, int] | None = None,
    check_executables: bool = True,
    text: str = "",
) -> list[WorkloadRuntime]:
    """One runtime per workload of `plan`; `stored` maps cell keys to the ids a resumed run already has.
    `check_executables=False` (a dry run of a plan whose tools run on hosts) checks everything but whether the
    tools are installed here; `text` (the plan's TOML) gives a refused parameter its line. `hosts`: the run's
    machines (a tool workload's adapter runs on the hosts its variants name; a dry run has none)."""
    cells = cells_of(plan)
    out = []
    where = _Where(plan, plan_path, text)
    for w in plan.workload:
        adapter: Adapter | None = None
        params: dict[str, Any] = {}
        if w.tool:
            adapter, params = _tool_adapter(
                plan, where, w, quick=quick, hosts=hosts, check_executables=check_executables
            )
            specs = {m.name: m for m in adapter.metrics}
        else:
            specs = {m.name: m.spec for m in w.metrics}
        # verdicts are given for these (by default the time: per loop when the trials loop); built-ins are also kept
        declared = list(specs) or ["wall_s_per_loop" if w.loops is not None else "wall_s"]
        for m in (*LOOP_METRIC_SPECS, *BUILTIN_METRIC_SPECS) if w.loops is not None else BUILTIN_METRIC_SPECS:
            specs.setdefault(m.name, m)
        own = [c for c in cells if c.workload == w.name]
        cell_params = {c.key: cell_params_of(plan, where, adapter, params, c) for c in own} if adapter else {}
        fixed = w.loops if isinstance(w.loops, int) else None  # "auto": calibrated at each cell's first trial
        states = [
            CellState(c, (stored or {}).get(c.key, -1), params=cell_params.get(c.key, {}), loops=fixed)
            for c in own
        ]
        out.append(WorkloadRuntime(w, adapter, params, specs, states, declared))
    return out


@dataclass(frozen=True)
class _Where:
    """Where a tool parameter comes from in the plan's file, for an error that names its file, line and key."""

    plan: Plan
    path: Path | str
    text: str

    def error(self, exc: PlanError, loc: tuple, key: str) -> PlanError:
        line = Locator(self.text).line(loc) if self.text else None
        return PlanError(exc.detail, path=str(self.path), line=line, key=key)

    def workload(self, name: str) -> int:
        return next(i for i, w in enumerate(self.plan.workload) if w.name == name)

    def variant(self, name: str) -> int:
        return next(i for i, v in enumerate(self.plan.variant) if v.name == name)


def _tool_adapter(
    plan: Plan,
    where: _Where,
    w: Workload,
    *,
    quick: bool,
    hosts: Hosts | None,
    check_executables: bool = True,
) -> tuple[Adapter, dict[str, Any]]:
    """The tool workload's adapter (as the machines its variants run on use it: Hosts.adapter) and its
    parameters at the sweep's first point; refused when the tool's executables are missing."""
    adapter = adapter_for(w.tool or "")
    if hosts:
        adapter = hosts.adapter(adapter, w.name)
    i = where.workload(w.name)
    try:
        adapter.resolve(dict(w.params))  # the workload's own first: its line is the one to name
        if quick:
            adapter.resolve(dict(w.params) | plan.quick.params.get(w.name, {}))
    except PlanError as exc:
        loc = ("quick", "params") if quick and plan.quick.params.get(w.name) else ("workload", i, "params")
        raise where.error(exc, loc, f'workload[{i}] "{w.name}".params') from None
    base = dict(w.params) | (plan.quick.params.get(w.name, {}) if quick else {})
    sweep_keys = [k for k in w.sweep if k != "cpus"]
    try:
        params = adapter.resolve(base | {k: expand_sweep_values(k, w.sweep[k])[0] for k in sweep_keys})
    except PlanError as exc:
        raise where.error(exc, ("workload", i, "sweep"), f'workload[{i}] "{w.name}".sweep') from None
    missing = adapter.missing_executables() if check_executables else []
    if missing:
        pkgs = ", ".join(adapter.packages.get("debian", ())) or "its package"
        raise EnvironmentRefused(
            f"workload {w.name!r}: tool {w.tool!r} needs {', '.join(missing)} (Debian: {pkgs})",
            hint=f"run `fairmark setup {where.path}` to install what the plan needs",
        )
    return adapter, params


def cell_params_of(
    plan: Plan, where: _Where, adapter: Adapter, params: dict[str, Any], cell: Cell
) -> dict[str, Any]:
    """Workload params ⊕ the variant's params for this workload ⊕ the sweep point, checked by the adapter."""
    own = plan.variant_named(cell.variant).params.get(cell.workload, {})
    try:
        return adapter.resolve(params | own | {k: v for k, v in cell.point if k != "cpus"})
    except PlanError as exc:
        j = where.variant(cell.variant)
        loc, key = (
            ("variant", j, "params"),
            f'variant[{j}] "{cell.variant}".params.{cell.workload} (cell {cell.key})',
        )
        raise where.error(exc, loc if own else ("workload", where.workload(cell.workload)), key) from None


def cell_rows(
    plan: Plan, rt: WorkloadRuntime, scrub: Scrubber, hosts: Hosts | None = None
) -> list[CellRecord]:
    """What the store keeps about each cell of `rt`: its metrics (which get verdicts), the scrubbed command,
    the resolved parameters and the labels a report must state beside the numbers."""
    rows = []
    for cs in rt.cells:
        constant = rt.adapter.constant_metrics(cs.params) if rt.adapter else frozenset()
        metrics = tuple(
            replace(m.judged(n in rt.declared), constant=m.constant or n in constant)
            for n, m in rt.metric_specs.items()
        )
        command = command_for(rt.workload, plan.variant_named(cs.cell.variant)) or []
        labels = (_labels(rt.adapter, cs.params) or {}) | (
            hosts.labels(cs.cell.variant, rt.workload.name) if hosts else {}
        )
        rows.append(
            CellRecord(
                key=cs.cell.key,
                workload=cs.cell.workload,
                variant=cs.cell.variant,
                point=tuple(cs.cell.point),
                primary_metric=rt.primary,
                metrics=metrics,
                command=scrub.argv(command) or None,
                params=cs.params or None,
                labels=labels or None,
                loops=cs.loops,
            )
        )
    return rows


def workload_info(runtimes: list[WorkloadRuntime]) -> list[dict[str, Any]]:
    """What the doctor needs to judge a workload's test size and directory (the adapters already resolved)."""
    info = []
    for rt in runtimes:
        item: dict[str, Any] = {
            "name": rt.workload.name,
            "measures": list(rt.adapter.measures) if rt.adapter else [],
        }
        info.append(item | data_set_info(rt.workload, rt.adapter, rt.params))
    return info


def _labels(adapter: Adapter | None, params: dict[str, Any]) -> dict[str, str] | None:
    """What a report must state beside this cell's numbers (e.g. whether PostgreSQL ran with fsync)."""
    labels = getattr(adapter, "labels", None)
    return dict(labels(params)) if adapter and labels and params else None
