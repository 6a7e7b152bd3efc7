"""A benchmark tool's results as fairmark judges them: one series of values per benchmark and unit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Better = Literal["lower", "higher"]


def better_for_unit(unit: str) -> Better:
    """Which direction is an improvement, from the unit alone: a rate (MB/s, items/s, ops/s) is better higher;
    a time, a size or a count per operation (ns/op, B/op, allocs/op, s) lower."""
    u = unit.strip().lower()
    if u.endswith(("/s", "/sec", "per_second", "/second")) or u in ("ops", "mb/s", "b/s"):
        return "higher"
    return "lower"


@dataclass(frozen=True)
class Series:
    """One benchmark's values in one unit, in the order the tool wrote them. `group`: what separates
    benchmarks of the same name (a Go package), "" when nothing does."""

    name: str
    unit: str
    values: tuple[float, ...]
    group: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.group, self.name, self.unit)

    @property
    def better(self) -> Better:
        return better_for_unit(self.unit)


@dataclass(frozen=True)
class Results:
    """What one file holds: the tool that wrote it, its configuration lines (goos, goarch, cpu …), and its
    series in the order they first appear."""

    path: str
    tool: str
    series: tuple[Series, ...]
    config: dict[str, str] = field(default_factory=dict)
