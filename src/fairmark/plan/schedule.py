"""Plan → cells, and the seeded, interleaved order in which their trials run."""

from __future__ import annotations

import functools
import itertools
import math
import os
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from fairmark.errors import PlanError
from fairmark.jsonvalue import Scalar

if (
    TYPE_CHECKING
):  # the store's records take Point from here: reading a store loads no pydantic (`fairmark runs`)
    from fairmark.plan.model import Plan

Point: TypeAlias = tuple[tuple[str, Scalar], ...]  # a cell's sweep point: (parameter, value) pairs, in order

_POW2 = re.compile(r"^pow2:(\d+)\.\.(\d+)(x?)$")
_RANGE = re.compile(r"^(\d+)\.\.(\d+)(x?)$")


MAX_SWEEP_POINTS = 1024  # per sweep key: more is a typo ("1..10000000"), not a benchmark
MAX_CELLS = 10_000  # per plan: each cell needs several trials; more would never finish


def expand_sweep_values(key: str, values: list[Scalar] | str, ncpu: int | None = None) -> Sequence[Scalar]:
    """A sweep is a list, or a range relative to the machine: "pow2:1..4x" = 1, 2, 4 … up to 4 × CPUs,
    "1..8" = every integer from 1 to 8 ("1..2x" = 1 up to 2 × CPUs)."""
    if isinstance(values, list):
        if len(values) > MAX_SWEEP_POINTS:
            raise PlanError(
                f"sweep {key!r}: {len(values)} values; expected at most {MAX_SWEEP_POINTS}",
                key=f"sweep.{key}",
            )
        return values
    ncpu = ncpu or os.cpu_count() or 1
    for pattern, step in ((_POW2, "pow2"), (_RANGE, "range")):
        m = pattern.match(values.strip())
        if m:
            if (
                max(len(m.group(1)), len(m.group(2))) > 18
            ):  # beyond any machine, and int() of 5000 digits fails
                break
            lo, hi = int(m.group(1)), int(m.group(2)) * (ncpu if m.group(3) else 1)
            if lo < 1 or hi < lo:
                break
            if step == "range" and hi - lo + 1 > MAX_SWEEP_POINTS:
                raise PlanError(
                    f"sweep {key!r}: {values!r} is {hi - lo + 1} points; expected at most {MAX_SWEEP_POINTS}",
                    key=f"sweep.{key}",
                )
            if step == "range":
                return list(range(lo, hi + 1))
            out, v = [], 1
            while v <= hi:
                if v >= lo:
                    out.append(v)
                v *= 2
            return out
    raise PlanError(
        f"sweep {key!r}: cannot read {values!r}; expected a list, 'pow2:1..4x' (powers of two up to 4 × CPUs) "
        "or '1..8'",
        key=f"sweep.{key}",
    )


@dataclass(frozen=True)
class Cell:
    """workload × variant × sweep point. `key` is stable across resume and export."""

    workload: str
    variant: str
    point: Point = ()

    # Cached in the instance's dict, not fields (equality and hash stay the fields'): a run asks a cell for its
    # key several times at each trial.
    @functools.cached_property
    def point_label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.point)

    @functools.cached_property
    def group(self) -> str:
        """Cells with the same group are compared against each other (same workload and sweep point)."""
        return self.workload + (f"[{self.point_label}]" if self.point else "")

    @functools.cached_property
    def key(self) -> str:
        return f"{self.group}/{self.variant}"

    @property
    def params(self) -> dict[str, Scalar]:
        return dict(self.point)


def cells_of(plan: Plan, ncpu: int | None = None) -> list[Cell]:
    cells: list[Cell] = []
    for w in plan.workload:
        keys = list(w.sweep)
        grids = [expand_sweep_values(k, w.sweep[k], ncpu) for k in keys]
        count = math.prod(len(g) for g in grids) * len(plan.variant)
        if len(cells) + count > MAX_CELLS:
            raise PlanError(
                f"workload {w.name!r}: its sweep × variants make {count} cells (the plan "
                f"{len(cells) + count}); expected at most {MAX_CELLS}",
                key="sweep",
            )
        for combo in itertools.product(*grids) if keys else [()]:
            point = tuple(zip(keys, combo, strict=True))
            cells.extend(Cell(w.name, v.name, point) for v in plan.variant)
    return cells


@dataclass
class Order:
    """The seeded order of one round. Each round runs every active cell once, shuffled, so that drift in the
    machine (thermal, caches, a neighbour) cannot favour one variant. The seed is stored with the run.

    Rounds go in twos: round 2k+1 runs round 2k's order reversed, so that over every two rounds each cell ran at
    each place of the round equally often. With an order effect inside the round (the second trial of a round
    slower: caches, heat) and independent shuffles, the first rounds of a run can share one order by chance (5
    rounds: 1 in 16), the paired difference then carries the order effect whole, and a decision stop that looks
    early claims it as a difference (7.3% A/A false claims at a 6% order effect, CV 2%: docs/statistics.md)."""

    seed: int

    def round(self, workload: str, index: int, cells: list[Cell]) -> list[Cell]:
        if len(cells) < 2:  # nothing to shuffle: seeding the generator costs more than a short trial's record
            return list(cells)
        rng = random.Random(f"{self.seed}/{workload}/{index - index % 2}")
        shuffled = sorted(cells, key=lambda c: c.key)
        rng.shuffle(shuffled)
        return shuffled[::-1] if index % 2 else shuffled


def new_seed() -> int:
    return random.SystemRandom().randrange(1, 2**31)
