"""`cpus = N | "LIST"`: the trial's whole process tree on those CPUs (`online_cpus`, CPU hotplug, is its own kind).

`cpus` uses a cpuset cgroup when fairmark may create one — cgroup v1's /sys/fs/cgroup/cpuset, else a child of
the cgroup v2 root with the cpuset controller enabled for it (every current distribution's default): the trial
joins it before exec, so every child inherits it and no child can widen its own affinity. Without it (not root,
no cpuset controller) it falls back to CPU affinity, which children inherit but may widen: the variant's
description says so, and why. Servers a tool
adapter starts before the trial are outside the tree; `online_cpus` limits the whole machine instead.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from fairmark.errors import EnvironmentRefused
from fairmark.run.variants.driver import Context, Prepared
from fairmark.run.variants.journal import Journal, JournalEntry
from fairmark.run.variants.tunable import read_value, write_value

KIND, ORDER, SCOPE = "cpus", 70, "variant"
CPU_ROOT = "/sys/devices/system/cpu"
CPUSET_ROOT = "/sys/fs/cgroup/cpuset"
CGROUP2_ROOT = "/sys/fs/cgroup"


def parse_cpu_list(text: str) -> list[int]:
    """'0-2,5' → [0, 1, 2, 5] (the kernel's list format, also used by taskset -c)."""
    out: set[int] = set()
    for part in text.replace(" ", "").strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


def format_cpu_list(cpus: list[int]) -> str:
    """[0, 1, 2, 5] → '0-2,5'."""
    parts: list[str] = []
    for cpu in sorted(set(cpus)):
        if parts and cpu == _last(parts) + 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{cpu}"
        else:
            parts.append(str(cpu))
    return ",".join(parts)


def _last(parts: list[str]) -> int:
    return int(parts[-1].split("-")[-1])


def online_cpu_ids(root: str = CPU_ROOT) -> list[int]:
    path = Path(root) / "online"
    if path.exists():
        return parse_cpu_list(path.read_text())
    return list(range(os.cpu_count() or 1))


def present_cpu_ids(root: str = CPU_ROOT) -> list[int]:
    path = Path(root) / "present"
    return parse_cpu_list(path.read_text()) if path.exists() else online_cpu_ids(root)


def resolve_cpus(spec: int | str, online: list[int]) -> list[int]:
    """A count means the first N online CPUs; a list must name online CPUs only."""
    if isinstance(spec, int):
        if spec > len(online):
            raise EnvironmentRefused(f"cpus = {spec}: only {len(online)} CPU(s) are online here")
        return online[:spec]
    wanted = parse_cpu_list(spec)
    missing = sorted(set(wanted) - set(online))
    if missing:
        raise EnvironmentRefused(
            f"cpus = {spec!r}: CPU(s) {format_cpu_list(missing)} are not online here "
            f"(online: {format_cpu_list(online)})"
        )
    return wanted


# -- cpus: cpuset cgroup or taskset ----------------------------------------------------------------------
def cpuset_hierarchy(v1_root: str = CPUSET_ROOT, v2_root: str = CGROUP2_ROOT) -> tuple[str, int] | None:
    """Where a cpuset cgroup can be made here: the v1 cpuset hierarchy, else a cgroup v2 root offering the
    cpuset controller; with its version. None: neither."""
    if (Path(v1_root) / "cpuset.mems").exists() and (Path(v1_root) / "cgroup.procs").exists():
        return v1_root, 1
    try:
        if "cpuset" in (Path(v2_root) / "cgroup.controllers").read_text().split():
            return v2_root, 2
    except OSError:
        pass
    return None


def cpuset_problem(v1_root: str = CPUSET_ROOT, v2_root: str = CGROUP2_ROOT) -> str | None:
    """Why trials cannot be placed by a cpuset cgroup here (None: they can)."""
    if os.geteuid() != 0:
        return "not root: only root makes a cpuset cgroup"
    if cpuset_hierarchy(v1_root, v2_root) is None:
        return (
            f"no cpuset controller: no cgroup v1 cpuset at {v1_root}, and no cgroup v2 at {v2_root} "
            "offering cpuset in cgroup.controllers"
        )
    return None


def cpuset_usable(cpuset_root: str | None = None) -> bool:
    if cpuset_root is not None:  # a given v1 hierarchy (tests' fixture trees)
        return os.geteuid() == 0 and cpuset_hierarchy(cpuset_root, "/nonexistent") is not None
    return cpuset_problem() is None


@dataclass
class CpuSet:
    """The CPUs one variant's trials run on, and how (a cgroup, created lazily and kept until close)."""

    variant: str
    cpus: list[int]
    use_cgroup: bool
    cpuset_root: str = ""  # "": the hierarchy found here (cpuset_hierarchy)
    entry_id: str | None = None
    path: str | None = None
    version: int = 0  # the cgroup version of cpuset_root (0: affinity)
    scope: ClassVar[str] = SCOPE

    @property
    def needs_root(self) -> bool:
        return self.use_cgroup

    def __post_init__(self) -> None:
        if not self.use_cgroup:
            return
        if not self.cpuset_root:
            found = cpuset_hierarchy()
            if found is None:
                self.use_cgroup = False
                return
            self.cpuset_root, self.version = found
        elif not self.version:
            self.version = 2 if (Path(self.cpuset_root) / "cgroup.controllers").exists() else 1

    @property
    def method(self) -> str:
        """How the trials are placed, as the run records it: "cpuset v1", "cpuset v2" or "affinity"."""
        return f"cpuset v{self.version}" if self.use_cgroup else "affinity"

    def description(self) -> str:
        n = len(self.cpus)
        where = f"trial processes on CPU(s) {format_cpu_list(self.cpus)} ({n} CPU{'s' if n > 1 else ''}"
        if self.use_cgroup:
            return f"{where}, via a cpuset cgroup, cgroup v{self.version})"
        why = cpuset_problem() or "a cpuset cgroup was not asked for"
        return f"{where}, via CPU affinity, which a child can widen: {why})"

    def describe(self) -> list[str]:
        return [self.description()]

    def apply(self, journal: Journal) -> list[str]:
        return []  # its cgroup is made at the first trial's placement (`prepared`)

    def prepared(self, journal: Journal, dry_run: bool = False) -> Prepared:
        """Where the launcher puts the trial's process before it execs the command (fairmark.run.spec:
        `place_cgroup` / `place_cpus`): no wrapper process, so this side carries nothing the other lacks."""
        if not self.use_cgroup:
            return Prepared(cpus=tuple(self.cpus))  # sched_setaffinity, inherited by the whole tree
        if self.path is None and not dry_run:
            self.create(journal)
        return Prepared(cgroup=self.path or self.cpuset_root + "/fairmark-…")

    def undo(self, journal: Journal) -> tuple[list[str], list[str]]:
        if self.entry_id is None:
            return [], []
        done, problem = undo_cgroup(journal.get(self.entry_id))
        if problem:
            return [done], [problem]
        journal.remove(self.entry_id)
        self.entry_id, self.path = None, None
        return [done], []

    def create(self, journal: Journal) -> None:
        name = f"fairmark-{os.getpid()}-{self.variant}"
        path = f"{self.cpuset_root}/{name}"
        entry: dict[str, Any] = {"type": "cgroup", "path": path, "label": f"cpuset cgroup {name}"}
        control = f"{self.cpuset_root}/cgroup.subtree_control"
        enable = self.version == 2 and "cpuset" not in read_value(control).split()
        if enable:  # the root's children get cpuset files only once the root enables the controller for them
            entry["disable_cpuset"] = control
        self.entry_id = journal.add(entry)
        if enable:
            write_value(control, "+cpuset")
        os.mkdir(path)
        mems = "cpuset.mems" if self.version == 1 else "cpuset.mems.effective"  # a v2 root has only these
        write_value(f"{path}/cpuset.mems", read_value(f"{self.cpuset_root}/{mems}"))
        write_value(f"{path}/cpuset.cpus", format_cpu_list(self.cpus))
        self.path = path


def check(value: object, ctx: Context) -> CpuSet:
    """The driver (driver.py): the CPUs must be online here — within what `online_cpus` keeps online."""
    online = online_cpu_ids()
    keep = ctx.changes.get("online_cpus")
    if isinstance(keep, int) and keep:  # the CPU set must fit in what stays online
        online = online[:keep]
    if not isinstance(value, int | str):
        raise EnvironmentRefused(f'cpus: a count or a list such as "0-1,3", not {value!r}')
    return CpuSet(ctx.variant, resolve_cpus(value, online), use_cgroup=cpuset_usable())


def undo_cgroup(entry: JournalEntry) -> tuple[str, str | None]:
    """Move any process left in the cgroup to its parent and remove it. Idempotent."""
    path = Path(entry["path"])
    if not path.exists():
        return f"{entry['label']} is gone", None
    parent_procs = path.parent / "cgroup.procs"
    for attempt in range(20):
        # cgroup v2: a profiled trial's cgroup inside this one (run.profiles.base.TrialCgroup), left by a kill
        for child in [c for c in path.iterdir() if c.is_dir()] + [path]:
            for pid in (child / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):  # it may exit meanwhile
                    write_value(parent_procs, pid)
            if child != path:
                with contextlib.suppress(OSError):
                    child.rmdir()
        try:
            path.rmdir()
            return f"removed {entry['label']}{_disable_cpuset(entry)}", None
        except OSError as exc:
            if exc.errno != errno.EBUSY or attempt == 19:
                return f"{entry['label']}: not removed", f"cannot remove {path}: {exc.strerror}"
            time.sleep(0.05)  # an exiting process leaves the cgroup a moment later
    return f"{entry['label']}: not removed", f"cannot remove {path}"


def _disable_cpuset(entry: dict[str, Any]) -> str:
    """cgroup v2: take back the cpuset controller fairmark enabled for the root's children, unless another
    child uses it now (the kernel refuses then: it stays, and that is said)."""
    control = entry.get("disable_cpuset")
    if not control:
        return ""
    try:
        write_value(control, "-cpuset")
    except (OSError, EnvironmentRefused):
        return " (the cpuset controller stays enabled for the root's children: another cgroup uses it)"
    return " and disabled the cpuset controller it had enabled"
