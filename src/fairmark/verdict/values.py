"""A cell's measured values, each labelled with where it was measured — its round, run, boot and host — read from
the store's records once. Every verdict is built from these: the labels say which values pair up (a round of one
run) and at which level the sides differ (runs ⊂ boots ⊂ hosts), so the design follows from the data."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the records only in annotations: `compare` of files loads no store (issue 31 item 7)
    from fairmark.store.records import CellRecord, RunReader, RunRecord, TrialRecord


@dataclass(frozen=True)
class Labelled:
    """One metric's values of one cell, in trial order, each with its unit labels (same order)."""

    values: tuple[float, ...] = ()
    rounds: tuple[int, ...] = ()
    runs: tuple[str, ...] = ()
    boots: tuple[str | None, ...] = ()  # the measuring host's boot (None: not recorded)
    hosts: tuple[
        str | None, ...
    ] = ()  # the machine the run recorded (its host_id; the trial's [hosts.NAME] is
    # in its TrialRecord)

    def __len__(self) -> int:
        return len(self.values)

    def __add__(self, other: Labelled) -> Labelled:
        """Pooled: the values of several runs, each keeping its labels."""
        return Labelled(
            self.values + other.values,
            self.rounds + other.rounds,
            self.runs + other.runs,
            self.boots + other.boots,
            self.hosts + other.hosts,
        )

    def level(self, name: str) -> tuple[str | None, ...]:
        """The units of each value at a level: "run", "boot" or "host"."""
        return {"run": self.runs, "boot": self.boots, "host": self.hosts}[name]


@dataclass(frozen=True)
class MeasuredCell:
    """A stored cell, its trials (all of them, failed and warm-up included), each trial's samples, and each
    metric's values of its measured trials (ok, neither warm-up nor profiled), labelled."""

    cell: CellRecord
    trials: tuple[TrialRecord, ...]
    samples: Mapping[str, Mapping[str, float]]  # trial id → metric → value
    metrics: Mapping[str, Labelled] = field(default_factory=dict)
    # when each of its runs and boots started (epoch seconds of its first measured trial), by their label:
    # runs or boots as the unit are then seen in time order (stats.timeorder)
    starts: Mapping[str, float] = field(default_factory=dict)

    def labelled(self, metric: str) -> Labelled:
        return self.metrics.get(metric) or Labelled()

    def values(self, metric: str) -> tuple[float, ...]:
        return self.labelled(metric).values


def measure(
    cell: CellRecord,
    trials: Sequence[TrialRecord],
    samples: Mapping[str, Mapping[str, float]],
    host_id: str | None = None,
) -> MeasuredCell:
    """The cell's values per metric: its declared metrics first (empty when nothing was measured), then any other
    metric a trial yielded, in the order the trials ran; `host_id`: the run's machine."""
    counted = [t for t in trials if t.measured]
    yielded = [samples.get(t.id, {}) for t in counted]
    metrics: dict[str, Labelled] = {m.name: Labelled() for m in cell.metrics}
    shapes = set(map(tuple, yielded))
    if len(shapes) == 1:  # every trial yielded the same metrics (the common case): a metric at a time
        labels = (
            tuple(t.round for t in counted),
            tuple(t.run_id for t in counted),
            tuple(t.boot_id for t in counted),
            (host_id,) * len(counted),
        )
        for name in shapes.pop():
            metrics[name] = Labelled(tuple(map(operator.itemgetter(name), yielded)), *labels)
    elif shapes:
        metrics |= _by_trial(counted, yielded, host_id)
    own = {t.id: samples.get(t.id, {}) for t in trials}
    return MeasuredCell(cell, tuple(trials), own, metrics, _starts(counted))


def _starts(trials: Sequence[TrialRecord]) -> dict[str, float]:
    out: dict[str, float] = {}
    for t in trials:
        when = t.started_at.timestamp()
        for unit in (t.run_id, t.boot_id):
            if unit is not None and when < out.get(unit, math.inf):
                out[unit] = when
    return out


def starts_of(cells: Iterable[MeasuredCell]) -> dict[str, float]:
    """The start of every run and boot of these cells (the earliest of their trials)."""
    out: dict[str, float] = {}
    for c in cells:
        for unit, when in c.starts.items():
            out[unit] = min(when, out.get(unit, math.inf))
    return out


def _by_trial(
    counted: Sequence[TrialRecord], yielded: Sequence[Mapping[str, float]], host_id: str | None
) -> dict[str, Labelled]:
    """Each metric's values and labels, collected a trial at a time (trials that yielded different metrics)."""
    columns: dict[str, tuple[list[float], list[int], list[str], list[str | None], list[str | None]]] = {}
    for t, values in zip(counted, yielded, strict=True):
        for name, value in values.items():
            vals, rounds, runs, boots, hosts = columns.setdefault(name, ([], [], [], [], []))
            vals.append(value)
            rounds.append(t.round)
            runs.append(t.run_id)
            boots.append(t.boot_id)
            hosts.append(host_id)
    return {
        name: Labelled(tuple(vals), tuple(rounds), tuple(runs), tuple(boots), tuple(hosts))
        for name, (vals, rounds, runs, boots, hosts) in columns.items()
    }


def load_cells(store: RunReader, run: RunRecord) -> tuple[MeasuredCell, ...]:
    """Every cell of a stored run with its trials and labelled values: three reads of the store."""
    samples = store.sample_values(run.id)
    trials: dict[int, list[TrialRecord]] = {}
    for t in store.trials(run.id):
        trials.setdefault(t.cell_id, []).append(t)
    return tuple(measure(c, trials.get(c.id, []), samples, run.host_id) for c in store.cells(run.id))
