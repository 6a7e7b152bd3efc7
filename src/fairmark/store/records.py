"""The store's records: one frozen type per kind of row it writes and gives back (cells, trials, samples), and
the typed shapes of what else it gives back (a run's options, the runs listing, findings, artifacts).

The trial path builds a `TrialRecord` and its `Sample`s once and the store writes exactly those; every reader
gets the same records back, so a field has one name and one type from the trial to the report. Units are in the
names (`wall_s`, `max_rss_kib`). JSON columns come back as tuples where they are sequences (a sweep point, an
argv), so a record is not changed by its reader.
"""

from __future__ import annotations

import collections
import datetime as dt
import itertools
import operator
import os
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Protocol, TypedDict

from fairmark.jsonvalue import Scalar as Scalar
from fairmark.plan.metric import BUILTIN_METRICS, Better, MetricSpec
from fairmark.plan.schedule import Point as Point
from fairmark.store.base import LEGACY_RSS as LEGACY_RSS
from fairmark.store.definitions import Definitions, legacy_definitions, legacy_tuning
from fairmark.store.owner import controller_gone

if TYPE_CHECKING:
    # A row as SQLAlchemy reads it: a Core table's values are untyped there; the records below are where the
    # column types (store/schema.py) become field types.
    from sqlalchemy import RowMapping

    from fairmark.jsonvalue import JSONObject as JSONObject
    from fairmark.jsonvalue import JSONValue as JSONValue


def new_id() -> str:
    """A random (version 4) UUID's text, as str(uuid.uuid4()) writes it: built from the bytes directly, a third
    of uuid4's time — one is made for every trial."""
    b = bytearray(os.urandom(16))
    b[6] = b[6] & 0x0F | 0x40  # version 4
    b[8] = b[8] & 0x3F | 0x80  # RFC 4122 variant
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def group_name(workload: str, point: Point) -> str:
    """The cells compared with each other: a workload at one sweep point, e.g. "net[parallel=4]"."""
    return workload + (f"[{','.join(f'{k}={v}' for k, v in point)}]" if point else "")


@dataclass(frozen=True, slots=True)
class CellRecord:
    """A cell of a run as stored: workload × variant × sweep point, its metrics (primary first) and how it ended.
    `id` is the store's (0 before it is stored: `Store.ensure_cells` gives the ids)."""

    key: str
    workload: str
    variant: str
    point: Point
    primary_metric: str
    metrics: tuple[MetricSpec, ...]
    command: tuple[str, ...] | None = None  # argv as run (the report's "how to reproduce")
    params: Mapping[str, JSONValue] | None = None  # a tool cell's resolved parameters
    labels: Mapping[str, str] | None = None  # what a report must state beside the numbers (e.g. fsync)
    # the loop count each trial was handed (a plan's `loops`; "auto": calibrated at the cell's first trial, None
    # until then); None for a workload without loops
    loops: int | None = None
    status: str = "active"  # active, done, abandoned
    stop_reason: str | None = None
    id: int = 0
    run_id: str = ""

    @property
    def group(self) -> str:
        return group_name(self.workload, self.point)

    def spec(self, metric: str) -> MetricSpec:
        """The metric's specification (an undeclared one: no unit, lower is better)."""
        return next((m for m in self.metrics if m.name == metric), MetricSpec(metric, "", "lower"))

    @property
    def verdict_metrics(self) -> tuple[str, ...]:
        """The metrics that get verdicts: as the run recorded it; in a store older than that flag, the primary
        metric and every one that is not an executor built-in (always recorded)."""
        return tuple(
            m.name
            for m in self.metrics
            if (
                m.verdict
                if m.verdict is not None
                else m.name == self.primary_metric or m.name not in BUILTIN_METRICS
            )
        )

    def row(self) -> dict[str, JSONValue]:
        """The columns the store writes for a new cell (its id is the store's, its run the one it is added to)."""
        return {
            "key": self.key,
            "workload": self.workload,
            "variant": self.variant,
            "point": [[k, v] for k, v in self.point],
            "primary_metric": self.primary_metric,
            "metrics": [dict(m.row()) for m in self.metrics],
            "command": list(self.command) if self.command is not None else None,
            "params": dict(self.params) if self.params is not None else None,
            "labels": dict(self.labels) if self.labels is not None else None,
            "loops": self.loops,
            "status": self.status,
            "stop_reason": self.stop_reason,
        }

    @classmethod
    def from_row(cls, row: RowMapping) -> CellRecord:
        point = row.get("point") or []
        metrics = row.get("metrics") or []
        command, loops = row.get("command"), row.get("loops")
        assert isinstance(point, list) and isinstance(metrics, list)
        return cls(
            key=str(row["key"]),
            workload=str(row["workload"]),
            variant=str(row["variant"]),
            point=tuple((str(p[0]), p[1]) for p in point),
            primary_metric=str(row["primary_metric"]),
            metrics=tuple(MetricSpec.from_row(m) for m in metrics),
            command=tuple(command) if isinstance(command, list) else None,
            params=row.get("params"),  # a JSON object, as written
            labels=row.get("labels"),
            loops=int(loops) if isinstance(loops, int) else None,
            status=str(row["status"]),
            stop_reason=row.get("stop_reason"),
            id=int(row["id"]),
            run_id=str(row["run_id"]),
        )


def loops_text(loops: int, calibration: Mapping[str, object] | None = None) -> str:
    """A cell's loop count as the run note and the reports state it; with a `loops = "auto"` calibration (the
    artifact run.trials.loops stores), what it found: one iteration's CPU time and the process start's share of a trial."""
    text = f"{loops:,} loops a trial".replace(",", " ")
    if not calibration:
        return text
    from fairmark.stats.digits import format_value

    loop_s, start_s = float(calibration["loop_s"]), float(calibration["start_s"])  # type: ignore[arg-type]
    steps = calibration.get("steps")
    on = f" of {calibration['calibrated_on']}" if calibration.get("calibrated_on") else ""  # the group's one
    share = start_s / (start_s + loops * loop_s) if loops * loop_s > 0 else 1.0
    return (
        f'{text} (loops = "auto", calibrated in {len(steps) if isinstance(steps, list) else "?"} trials{on} on their '
        f"CPU time: one iteration ≈ {format_value(loop_s, unit='s')}, the process start ≈ "
        f"{format_value(start_s, unit='s')}, {100 * share:.0f}% of a trial)"
    )


@dataclass(frozen=True, slots=True)
class TrialRecord:
    """One trial as stored: what ran (argv, where), how it ended, and what it cost. Failed and timed-out trials
    keep their raw output (the tails) as evidence; warm-up and profiled trials never enter a statistic."""

    run_id: str
    cell_id: int
    seq: int  # the trial's place in the whole run
    round: int  # warm-up rounds are negative
    warmup: bool  # also true for a profiled trial: never in statistics
    status: str  # ok, failed, timeout
    started_at: dt.datetime
    wall_s: float | None = None
    user_s: float | None = None
    sys_s: float | None = None
    max_rss_kib: int | None = None
    # "launcher": the workload's own peak (fairmark.run.launch.launcher); None on a trial stored before schema 9,
    # whose max_rss_kib included fairmark's own memory (`legacy_rss`), or with no peak measured
    max_rss_method: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    error: str | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    argv: tuple[str, ...] | None = None
    host: str | None = None  # the [hosts.NAME] the trial ran on; None: the controller itself
    boot_id: str | None = None  # that host's boot (Linux boot_id, FreeBSD kern.boottime)
    profiled: bool = False  # an extra trial with profilers attached (--profile), kept apart
    id: str = field(default_factory=new_id)

    @property
    def legacy_rss(self) -> bool:
        """A peak RSS stored before fairmark measured the workload's own: fairmark's memory, not the workload's."""
        return self.max_rss_kib is not None and self.max_rss_method is None

    @property
    def measured(self) -> bool:
        """A trial whose values count: it succeeded and is neither warm-up nor profiled."""
        return self.status == "ok" and not self.warmup

    def row(self) -> dict[str, object]:
        out = dict(zip(TRIAL_COLUMNS, self.values(), strict=True))
        out["argv"] = list(self.argv) if self.argv is not None else None
        return out

    def values(self) -> tuple[object, ...]:
        """The trial's columns (TRIAL_COLUMNS) in their order, as the record holds them (argv a tuple: JSON
        writes it as the list `row` gives)."""
        return _trial_values(self)

    @classmethod
    def from_row(cls, row: RowMapping) -> TrialRecord:
        argv = row.get("argv")
        argv = tuple(argv) if isinstance(argv, list) else None
        return cls(**{**row, "argv": argv, "profiled": bool(row.get("profiled"))})

    @classmethod
    def from_columns(cls, columns: Sequence[Sequence[object]]) -> list[TrialRecord]:
        """Trials from one list of values per field (TRIAL_COLUMNS' order, as the store converts them), each as
        `from_row` makes it: the argv a tuple, `profiled` a bool. Positional: a dict and a keyword call per trial
        were a fifth of the read."""
        cols = dict(zip(TRIAL_COLUMNS, columns, strict=True))
        cols["argv"] = [tuple(a) if isinstance(a, list) else None for a in cols["argv"]]
        cols["profiled"] = list(map(bool, cols["profiled"]))
        n = len(cols["id"])
        if any(len(values) != n for values in cols.values()):
            raise ValueError("columns of different lengths")
        setters = _TRIAL_SETTERS if cls is TrialRecord else _slot_setters(cls)
        if setters is None:
            return list(itertools.starmap(cls, zip(*cols.values(), strict=True)))
        # A field at a time over all trials: each slot's own setter (what the frozen __init__ calls for it) mapped
        # over its column, in C; __init__ called per trial was ~3 µs of a 2000-trial run's read, a trial.
        trials = list(map(object.__new__, itertools.repeat(cls, n)))
        for name, values in cols.items():
            collections.deque(map(setters[name], trials, values), maxlen=0)
        return trials


TRIAL_COLUMNS = tuple(f.name for f in fields(TrialRecord))


def _slot_setters(cls: type) -> dict[str, Callable[[object, object], None]] | None:
    """Each field's slot setter, when every field is a slot and there is nothing else for __init__ to do (no
    __post_init__); None otherwise (then records are made by __init__)."""
    setters = {}
    for f in fields(cls):
        slot = cls.__dict__.get(f.name)
        if not isinstance(slot, types.MemberDescriptorType) or hasattr(cls, "__post_init__"):
            return None
        setters[f.name] = slot.__set__
    return setters


_TRIAL_SETTERS = _slot_setters(TrialRecord)


_trial_values = operator.attrgetter(*TRIAL_COLUMNS)  # one C call for the ~20 columns of a trial


@dataclass(frozen=True, slots=True)
class Sample:
    """One metric value of one trial."""

    trial_id: str
    cell_id: int
    metric: str
    value: float
    unit: str
    better: Better

    def row(self, run_id: str) -> dict[str, object]:
        return {
            "run_id": run_id,
            "cell_id": self.cell_id,
            "trial_id": self.trial_id,
            "metric": self.metric,
            "value": self.value,
            "unit": self.unit,
            "better": self.better,
        }


# The columns of a sample's row (Sample.row) in order: its run's id, then `sample_row_values`.
SAMPLE_COLUMNS = ("run_id", "cell_id", "trial_id", "metric", "value", "unit", "better")
sample_row_values = operator.attrgetter(*SAMPLE_COLUMNS[1:])


class RunOptions(TypedDict, total=False):
    """A run's options as the runner stored them (a run stored before a key was added lacks it)."""

    quick: bool
    calibrate: bool
    policy: JSONObject  # the run policy as resolved (plan.model.RunPolicy's fields)
    baseline: str | None
    variants: dict[str, JSONObject]  # name → the variant's definition (plan.model.Variant's fields)
    tuning: dict[str, JSONObject]  # the plan's [tuning.NAME] sets
    hooks: list[str]
    wrap_costs: dict[str, JSONObject]  # variant → what its own `wrap` costs here (run/prerun/wrapcost.py)
    device_baselines: JSONObject  # what the disks can do (run/prerun/devicebase.py)
    hosts: dict[str, JSONObject]  # [hosts.NAME] → what the run recorded of it
    rerun_of: JSONObject  # the bundle's run this one re-ran
    controller: JSONObject  # the process that ran it (run/owner.py): a kill -9 leaves it "running"


class RunListing(TypedDict):
    """A run as `fairmark runs` lists it (Store.list_runs, store/quick.py)."""

    id: str
    title: str
    plan_path: str
    started_at: dt.datetime
    ended_at: dt.datetime | None
    status: str
    hostname: str
    accept_risk: bool
    cells: int
    trials: int
    trials_ok: int
    hosts: list[str]  # the [hosts.NAME] its trials ran on
    tags: dict[str, str]
    controller_gone: bool  # "running" in the store, but its controller died (run/owner.py)


class FindingRow(TypedDict):
    """An environment finding as stored (probe's checks, before, between or after the run)."""

    id: int
    run_id: str
    phase: str  # before, between, after
    finding_id: str
    severity: str
    title: str
    evidence: str
    why: str
    fix: str


class ArtifactRow(TypedDict):
    """What a run keeps beside its numbers: a JSON document (`data`) or a text (SVG, folded stacks, tables)."""

    id: int
    run_id: str
    trial_id: str | None
    cell_key: str | None
    kind: str
    name: str
    content_type: str
    data: JSONValue
    text: str | None


def jsonable_row(row: Mapping[str, object]) -> dict[str, object]:
    """A store row with its timestamps as ISO 8601 text (JSON has no datetime), everything else as is."""
    return {k: (v.isoformat() if isinstance(v, dt.datetime) else v) for k, v in row.items()}


@dataclass(frozen=True)
class RunRecord:
    id: str
    plan_path: str
    plan_text: str
    plan_sha256: str
    title: str
    seed: int
    host_id: str
    hostname: str
    started_at: dt.datetime
    ended_at: dt.datetime | None
    status: str
    command_line: str
    fairmark_version: str
    accept_risk: bool
    options: RunOptions
    env_before: JSONObject | None  # the environment snapshot (probe/) before the first trial
    env_after: JSONObject | None
    notes: list[JSONValue]

    def to_dict(self) -> dict[str, object]:
        return jsonable_row(vars(self)) | {"controller_gone": self.controller_gone}

    @property
    def controller_gone(self) -> bool:
        """The store says "running" but the process that ran it is dead (kill -9, `timeout`)."""
        return controller_gone(self.status, self.options)

    @property
    def baseline(self) -> str:
        """The baseline variant the run resolved ("" when unknown: the first variant of each group)."""
        return self._definitions().get("baseline") or ""

    @property
    def variant_definitions(self) -> dict[str, JSONObject]:
        """Each variant's definition as the run resolved it (name → the plan model's fields)."""
        return dict(self._definitions().get("variants") or {})

    @property
    def tuning_sets(self) -> dict[str, JSONObject]:
        """The plan's [tuning.NAME] sets as the run stored them (a variant's definition names its set)."""
        opts: RunOptions = self.options or {}
        if "tuning" in opts:
            return dict(opts["tuning"] or {})
        return legacy_tuning(self.plan_text)

    def _definitions(self) -> Definitions:
        opts: RunOptions = self.options or {}
        if "baseline" in opts and "variants" in opts:
            return {"baseline": opts["baseline"], "variants": opts["variants"]}
        return legacy_definitions(self.plan_text, self.plan_path)


def values_by_trial(
    trial_ids: list[str], metrics: list[str], values: list[float]
) -> dict[str, dict[str, float]]:
    """trial id → metric → value, from a run's samples read as three columns in the order they were stored (by
    cell, as the cells' index holds them): each trial's in that order (`Store.sample_values`, and `show`'s reader
    of an SQLite store, store/quickrun.py)."""
    uniform = _uniform_samples(trial_ids, metrics)
    if uniform is not None:  # every trial the same metrics in the same order: a column per metric
        k = len(uniform)
        per_trial = zip(*(values[i::k] for i in range(k)), strict=True)
        each = map(dict, map(zip, itertools.repeat(uniform), per_trial))
        return dict(zip(trial_ids[::k], each, strict=True))
    out: dict[str, dict[str, float]] = {}
    rows = zip(trial_ids, metrics, values, strict=True)
    for trial_id, group in itertools.groupby(rows, key=operator.itemgetter(0)):  # a trial's are together
        got = {metric: value for _, metric, value in group}
        found = out.get(trial_id)
        if found is None:
            out[trial_id] = got
        else:  # (a trial whose samples came apart: merged, as one row at a time would)
            found.update(got)
    return out


def _uniform_samples(trial_ids: list[str], metrics: list[str]) -> tuple[str, ...] | None:
    """The metrics every trial has, in the order each has them, when the samples are k a trial, a trial's
    together, each trial once (the usual run); None otherwise."""
    k = next((i for i, t in enumerate(trial_ids) if t != trial_ids[0]), len(trial_ids))
    if not k or len(trial_ids) % k:
        return None
    firsts = trial_ids[::k]
    if len(set(firsts)) != len(firsts) or any(trial_ids[i::k] != firsts for i in range(1, k)):
        return None
    if any(len(set(metrics[i::k])) != 1 for i in range(k)):
        return None
    return tuple(metrics[:k])


class RunReader(Protocol):
    """What a run's verdicts and report read of a store (verdict/run.py, report/load.py): `Store`, or on an SQLite
    file of this schema version store/quickrun.SqliteRun, which reads it without SQLAlchemy."""

    url: str

    def get_run(self, ref: str) -> RunRecord: ...

    def calibrations(self, host_id: str) -> dict[tuple[str, str], JSONObject]: ...

    def cells(self, run_id: str) -> list[CellRecord]: ...

    def trials(self, run_id: str) -> list[TrialRecord]: ...

    def sample_values(self, run_id: str) -> dict[str, dict[str, float]]: ...

    def findings(self, run_id: str) -> list[FindingRow]: ...

    def artifacts(self, run_id: str, kind: str | None = None) -> list[ArtifactRow]: ...

    def iter_artifacts(self, run_id: str, kind: str) -> Iterator[ArtifactRow]: ...
