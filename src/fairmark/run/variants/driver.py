"""The variant kinds' drivers: one module per kind, `fairmark.run.variants.<kind>`, found by the kind's name.

The kinds table (plan/kinds.py, from the plan model's fields) names the kinds; each kind's module is its driver,
used alike by the controller (system.py: SystemState) and by the agent on a host (remote/agent.py: its one
`change` operation), which is shipped the same modules (remote/connection.py derives the list from here). A
driver module has:

  KIND    its kind's name (the module's own name: a check that the module found is a driver)
  ORDER   where its changes go in a variant's sequence (sysctls first, CPU hotplug after the other settings,
          the variant's own file system and CPU set last); undone in the reverse order
  SCOPE   "block": machine-wide, one value at a time, undone when another variant's block starts;
          "variant": the variant's own (a scratch file system, a CPU set, an environment), made at its first
          use and kept until the run ends
  check(value, ctx) -> Change
          refuse (EnvironmentRefused, with the reason) what cannot be done here, changing nothing; else the
          change, ready to apply

A Change applies itself into a Journal (each original on disk, fsync'd, before it is changed), says what its
trials get (`Prepared`), and undoes its own entries. `undo_entry` undoes any journal entry without a live
object — what `fairmark restore` and a host's next agent do with a dead process's journal — including the
entry types of journals written before the drivers (an agent's "sysctl").

Standard library only (and fairmark's own shipped modules): the agent imports this on hosts without fairmark.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Literal, Protocol

from fairmark.run.variants.journal import Journal, JournalEntry

PACKAGE = "fairmark.run.variants"
Scope = Literal["block", "variant"]


@dataclass(frozen=True)
class Prepared:
    """What a variant's changes made ready for its trials: an environment, a working directory (its scratch
    file system), a placement (a cpuset cgroup to join, CPUs to run on). Travels as JSON (`to_json`)."""

    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None
    cgroup: str | None = None
    cpus: tuple[int, ...] = ()

    def merged(self, other: Prepared) -> Prepared:
        return Prepared(
            env={**self.env, **other.env},
            workdir=other.workdir or self.workdir,
            cgroup=other.cgroup or self.cgroup,
            cpus=other.cpus or self.cpus,
        )

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.env:
            out["env"] = dict(self.env)
        if self.workdir:
            out["workdir"] = self.workdir
        if self.cgroup:
            out["placement"] = {"cgroup": self.cgroup}
        elif self.cpus:
            out["placement"] = {"cpus": list(self.cpus)}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object] | None) -> Prepared:
        data = data or {}
        env, place = data.get("env"), data.get("placement")
        place = place if isinstance(place, Mapping) else {}
        cgroup, cpus, workdir = place.get("cgroup"), place.get("cpus"), data.get("workdir")
        return cls(
            env={str(k): str(v) for k, v in env.items()} if isinstance(env, Mapping) else {},
            workdir=str(workdir) if workdir else None,
            cgroup=str(cgroup) if cgroup else None,
            cpus=tuple(int(c) for c in cpus) if isinstance(cpus, list) else (),
        )


@dataclass(frozen=True)
class Context:
    """What a driver knows besides its kind's value: the variant, the machine, the variant's other values."""

    variant: str
    freebsd: bool = field(default_factory=lambda: sys.platform.startswith("freebsd"))
    state_dir: str = ""  # where scratch images go (a mount's image_dir wins)
    env: Mapping[str, str | bool] = field(default_factory=dict)  # the variant's own environment
    changes: Mapping[str, object] = field(default_factory=dict)  # the variant's values of every kind


class Change(Protocol):
    """One kind's change for one variant, checked against this machine."""

    @property
    def scope(self) -> str:
        """Its driver's SCOPE: "block" (machine-wide) or "variant" (the variant's own)."""
        ...

    @property
    def needs_root(self) -> bool: ...

    def describe(self) -> list[str]:
        """What it will change, for --dry-run and the report."""
        ...

    def apply(self, journal: Journal) -> list[str]:
        """Make it (journaled first; nothing left half-made when it raises); what it changed now, [] when
        nothing was to change or it is made already."""
        ...

    def prepared(self, journal: Journal, dry_run: bool = False) -> Prepared:
        """What its trials get (made now if it is made lazily)."""
        ...

    def undo(self, journal: Journal) -> tuple[list[str], list[str]]:
        """Put back what it made: (what was done, the problems); an entry that could not be undone stays
        journaled."""
        ...


class Driver(Protocol):
    KIND: str
    ORDER: int
    SCOPE: Scope

    def check(self, value: object, ctx: Context) -> Change: ...


def load(kind: str) -> ModuleType:
    """The driver module of `kind`; ValueError for a name that is no driver (the agent takes names from the
    wire)."""
    if not kind.isidentifier() or kind.startswith("_"):
        raise ValueError(f"no such kind of system change: {kind!r}")
    try:
        module = importlib.import_module(f"{PACKAGE}.{kind}")
    except ImportError:
        raise ValueError(f"no such kind of system change here: {kind!r}") from None
    if getattr(module, "KIND", None) != kind or not callable(getattr(module, "check", None)):
        raise ValueError(f"no such kind of system change: {kind!r}")
    return module


def ordered(kinds: Iterable[str]) -> list[tuple[str, ModuleType]]:
    """The kinds' drivers in the order their changes are made."""
    return sorted(((k, load(k)) for k in kinds), key=lambda kd: int(kd[1].ORDER))


# -- changes made of settings: values in kernel files (Linux) or sysctls (FreeBSD) ------------------------------
class Setting(Protocol):
    label: str
    want: str
    entry_id: str | None

    def describe(self) -> str: ...
    def apply(self, journal: Journal) -> None: ...
    def revert(self, journal: Journal) -> str | None: ...


class Settings:
    """A machine-wide change made of settings (tunable.FileSetting, sysctl.FreeBSDSysctl), applied in order
    and undone in reverse; a setting that already holds its value is left alone (nothing to put back)."""

    scope: Scope = "block"
    needs_root = True

    def __init__(self, settings: Sequence[Setting]):
        self.settings = list(settings)

    def describe(self) -> list[str]:
        return [s.describe() for s in self.settings if not getattr(s, "guard", False)]

    def apply(self, journal: Journal) -> list[str]:
        done: list[Setting] = []
        for s in self.settings:
            try:
                s.apply(journal)  # journaled (fsync'd) first
            except BaseException:
                for d in reversed(done):  # nothing left half-applied
                    d.revert(journal)
                raise
            done.append(s)
        return [f"{s.label} → {s.want}" for s in done if s.entry_id and not getattr(s, "guard", False)]

    def prepared(self, journal: Journal, dry_run: bool = False) -> Prepared:
        return Prepared()

    def undo(self, journal: Journal) -> tuple[list[str], list[str]]:
        done, problems = [], []
        for s in reversed(self.settings):
            if s.entry_id is None:
                continue
            original = getattr(s, "original", None) or journal.get(s.entry_id).get("original")
            problem = s.revert(journal)
            if problem:
                problems.append(problem)
            elif not getattr(s, "guard", False):
                done.append(f"restored {s.label} = {original}")
        return done, problems


# -- undo of one journal entry, whoever wrote it (a live run, a killed one, an agent, an older fairmark) --------
def _undo_file(entry: JournalEntry) -> tuple[str, str | None]:
    from fairmark.run.variants.tunable import undo_file

    return undo_file(entry)


def _undo_freebsd_sysctl(entry: JournalEntry) -> tuple[str, str | None]:
    from fairmark.run.variants.sysctl import undo_freebsd

    return undo_freebsd(entry)


def _undo_scratch(entry: JournalEntry) -> tuple[str, str | None]:
    from fairmark.run.variants.mount import undo_scratch

    return undo_scratch(entry)


def _undo_cgroup(entry: JournalEntry) -> tuple[str, str | None]:
    from fairmark.run.variants.cpus import undo_cgroup

    return undo_cgroup(entry)


def _undo_boot_hook(entry: JournalEntry) -> tuple[str, str | None]:
    from fairmark.run.variants.boothook import undo_hook

    return undo_hook(entry)


def _undo_agent_sysctl(entry: JournalEntry) -> tuple[str, str | None]:
    """An agent's sysctl entry from before the drivers ({name, original, want}): a /proc/sys file on Linux, the
    sysctl command on FreeBSD — what the sysctl driver journals now as "file" / "freebsd-sysctl"."""
    from fairmark.run.variants.sysctl import linux_path

    if sys.platform.startswith("freebsd"):
        return _undo_freebsd_sysctl(entry)
    name = str(entry["name"])
    return _undo_file({"path": linux_path(name), "original": entry["original"], "label": f"sysctl {name}"})


UNDO = {
    "file": _undo_file,
    "freebsd-sysctl": _undo_freebsd_sysctl,
    "scratch": _undo_scratch,
    "cgroup": _undo_cgroup,
    "boot-hook": _undo_boot_hook,
    "sysctl": _undo_agent_sysctl,
}


def undo_entry(entry: JournalEntry) -> tuple[str, str | None]:
    """Undo one journal entry: (what was done, the problem or None). Idempotent."""
    kind = entry.get("type")
    undo = UNDO.get(str(kind))
    if undo is None:
        return f"unknown journal entry {kind!r}", f"unknown journal entry type {kind!r}: {entry}"
    return undo(entry)


def sweep(journal: Journal) -> list[tuple[str, str | None]]:
    """Undo every entry left in `journal`, newest first (what no live change holds: a boot hook, a dead process's
    changes): (what was done, the problem or None) for each; an entry that could not be undone stays."""
    out = []
    for entry in reversed(list(journal.entries)):
        done, problem = undo_entry(entry)
        out.append((done, problem))
        if problem:
            continue
        if "id" in entry:
            journal.remove(str(entry["id"]))
        else:  # an entry of an older agent's journal (no ids)
            journal.drop(entry)
    return out
