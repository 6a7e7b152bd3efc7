"""The probe gate: the environment snapshot and the doctor's verdict before a run writes anything (refused on
an error unless --accept-risk), the cheap volatile samples between rounds, and the snapshot after the run."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from fairmark.errors import EnvironmentRefused
from fairmark.plan.model import Plan
from fairmark.probe.doctor import diagnose, diagnose_volatile
from fairmark.probe.hosts import hardware_differences, software_findings
from fairmark.probe.snapshot import host_identity, take_snapshot, volatile_part, volatile_snapshot
from fairmark.run.prerun import wrapcost
from fairmark.run.trials.prepare import WorkloadRuntime, workload_info
from fairmark.run.variants.basic import intended_env
from fairmark.run.workloads import versions_to_record
from fairmark.store.db import Store

if TYPE_CHECKING:
    from fairmark.run.machine.host import Hosts, Snapshot

VOLATILE_EVERY_S = 10.0  # the volatile probe samples for ~0.2 s; keep it off the hot path


@dataclass
class Gate:
    """`hosts` are the run's machines (run.machine.host.Hosts: this one, and the [hosts.NAME] its variants use);
    `options` its RunOptions (accept_risk, probe)."""

    plan: Plan
    options: Any
    hosts: Hosts
    programs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # whose versions the snapshots record

    def record_programs(self, runtimes: list[WorkloadRuntime]) -> None:
        """The programs the workloads run (not the workloads' names): their versions go into the snapshots."""
        self.programs = versions_to_record((rt.workload, rt.adapter, rt.params) for rt in runtimes)

    def check(self, runtimes: list[WorkloadRuntime]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """(the run's env_before, the doctor's findings); raises EnvironmentRefused on an error finding."""
        if not self.options.probe:
            return None, []
        if self.hosts.remote:
            return self._check_hosts()

        self.record_programs(runtimes)
        snap = take_snapshot("/", tools=self.programs, workdir=os.getcwd())
        intended = intended_env(self.plan.variant)
        found = [
            f.to_dict() for f in diagnose(snap, intended_env=intended, workloads=workload_info(runtimes))
        ]
        errors = [f for f in found if f["severity"] == "error"]
        if errors and not self.options.accept_risk:
            lines = "; ".join(f"{f['title']} ({f['evidence']})" for f in errors)
            raise EnvironmentRefused(
                f"the environment would invalidate this benchmark: {lines}",
                hint="fix it (see `fairmark doctor`), or pass --accept-risk to run anyway; "
                "every report of the run will then say so",
            )
        return snap, found

    def _check_hosts(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The gate of a run on hosts: each host's snapshot judged, hardware differences between the machines
        refused unless the plan declares them. Returns (the run's env_before, findings tagged with their host)."""

        snaps = self.hosts.snapshots()
        found = competing_here(self.hosts.here)  # first: the machine a guest's CPUs are
        for name, snap in snaps.items():
            for f in diagnose(snap, intended_env=intended_env(self.plan.variant)):
                d = f.to_dict()
                d["evidence"] = f"host {name}: {d['evidence']}"
                found.append(d)
        local = any(not h for h in self.hosts.variant_host.values())
        if len(snaps) + local > 1:
            machines = dict(snaps)
            if local:
                machines["(controller)"] = cast("Snapshot", take_snapshot("/"))
            diff = hardware_differences(machines, list(self.plan.declare))
            found += software_findings(machines, list(self.plan.declare))
            if diff:
                raise EnvironmentRefused(
                    "the hosts differ in hardware, so the comparison would be of hardware, not of operating "
                    "systems: " + "; ".join(diff),
                    hint="compare like with like, or declare the difference as the point of the plan, e.g. "
                    f"declare = {sorted({d.split(':')[0] for d in diff})!r}",
                )
        errors = [f for f in found if f["severity"] == "error"]
        if errors and not self.options.accept_risk:
            lines = "; ".join(f"{f['title']} ({f['evidence']})" for f in errors)
            raise EnvironmentRefused(
                f"the environment would invalidate this benchmark: {lines}",
                hint="fix it (see `fairmark doctor --host NAME`), or pass --accept-risk",
            )
        return dict(next(iter(snaps.values()))), found

    def baselines(self, runtimes: list[WorkloadRuntime]) -> dict[str, Any]:
        """What this machine does apart from the change, measured before the first trial (run options)."""
        from fairmark.run.prerun import devicebase  # psutil, through the workloads' tools

        # a variant's own wrap is inside its measured time only: its cost here is shown beside the verdicts
        wrap_costs = wrapcost.measure(self.plan.variant) if self.options.probe else {}
        # what the disk under a file-system workload can do: a result beyond it measured the page cache
        devices = devicebase.for_runtimes(runtimes) if self.options.probe and not self.hosts.remote else {}
        return {"wrap_costs": wrap_costs, "device_baselines": devices}

    def after(self, status: str) -> dict[str, Any] | None:
        """The snapshot after a finished local run (None otherwise)."""
        if not self.options.probe or status != "done" or self.hosts.remote:
            return None

        return take_snapshot("/", tools=self.programs)


COMPETING = ("load", "pressure")  # what this machine's work does to a guest's trials on it
HERE_NAME = "this-machine"  # its volatile samples' name when it is watched only for the guests on it


def competing_here(guests: list[str], snap: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """This machine's load and CPU pressure when hosts run on it (`guests`: VMs or containers reached through
    loopback): their CPUs are this machine's, and a guest's own load average does not see the work here (a TCG
    guest read 0.70 on 1 CPU while this machine ran at load 15-20). Named as this machine's."""
    if not guests:
        return []
    found = []
    for f in diagnose_volatile(snap if snap is not None else volatile_snapshot()):
        if f.id in COMPETING:
            d = f.to_dict()
            d["evidence"] = f"{here_label(guests)}: {d['evidence']}"
            found.append(d)
    return found


def here_label(guests: list[str]) -> str:
    return f"this machine (host {', '.join(guests)} runs on it)"


@dataclass
class VolatileWatch:
    """Between rounds (at most every VOLATILE_EVERY_S), sample the cheap, volatile environment: a neighbour
    that starts using the CPU, steal time, swapping, a changed governor — each noticed once and stored as a
    finding of phase "between"."""

    enabled: bool
    env_before: dict[str, Any] | None = None
    noticed: set[str] = field(default_factory=set)  # findings already reported (before the run or earlier)
    last: float = 0.0
    scrub: Callable[[Any], Any] = lambda doc: (
        doc
    )  # the run's Scrubber.json: a finding's evidence may quote env
    # Each host's own watch, for a run whose variants run on hosts: its snapshot taken there by its agent and
    # diffed against its own snapshot before the run — never against this controller's (issue 32).
    hosts: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)
    hosts_before: dict[str, dict[str, Any]] = field(default_factory=dict)
    local: bool = True  # whether some variant runs on this machine (else the controller is not watched)
    here: list[str] = field(default_factory=list)  # hosts that run on this machine: it is watched for them

    def follow(self, hosts: Any) -> None:
        """Watch where the run's variants run: each host whose variants run there, sampled by its agent and
        judged against its own state before the run; this machine only when a variant runs here."""
        used = {h for h in hosts.variant_host.values() if h}
        if not used:
            return
        self.here = [h for h in hosts.here if h in used]
        self.local = any(not h for h in hosts.variant_host.values())
        if self.local or self.here:
            self.env_before = None  # the gate's snapshot is a host's: no baseline of this machine's
        self.hosts = {n: hosts.remote[n].snapshot for n in sorted(used)}
        self.hosts_before = {n: s for n, s in getattr(hosts, "snaps", {}).items() if n in used}

    def sample(self, store: Store, run_id: str, note: Any) -> None:
        if not self.enabled or time.monotonic() - self.last < VOLATILE_EVERY_S:
            return

        if self.local or self.here:
            before = volatile_part(self.env_before) if self.env_before else None
            self._judge(store, run_id, note, None, volatile_snapshot(), before)
        for name, take in self.hosts.items():
            before = self.hosts_before.get(name)
            self._judge(
                store, run_id, note, name, volatile_part(take()), volatile_part(before) if before else None
            )
        self.last = time.monotonic()

    def _judge(
        self,
        store: Store,
        run_id: str,
        note: Any,
        host: str | None,
        snap: dict[str, Any],
        baseline: dict[str, Any] | None,
    ) -> None:
        """One machine's sample: stored, and what is new in it noticed once (labelled with its host). This machine,
        watched only for the guests on it, is stored under its own name and says only what competes with them
        (load, CPU pressure): its THP or governor are not the guests' (issue 32 item 2)."""
        name = str(snap.get("taken_at", ""))
        for_guests = host is None and not self.local and bool(self.here)
        store.add_artifact(
            run_id,
            kind="env.volatile",
            name=f"{host} {name}" if host else f"{HERE_NAME} {name}" if for_guests else name,
            content_type="application/json",
            data=self.scrub(snap | ({"host": host} if host else {})),  # the busiest processes are named in it
        )
        new = [f.to_dict() for f in diagnose_volatile(snap, baseline)]
        if host:
            for f in new:
                f["id"], f["evidence"] = f"{host}:{f['id']}", f"host {host}: {f['evidence']}"
        elif self.here:  # this machine, watched for the guests on it
            new = [f for f in new if f["id"] in COMPETING] if for_guests else new
            for f in new:
                f["evidence"] = f"{here_label(self.here)}: {f['evidence']}"
        new = [f for f in new if f["severity"] != "info" and f["id"] not in self.noticed]
        for f in new:
            self.noticed.add(f["id"])
            note(f"between rounds: {f['title']}: {f['evidence']}")
        store.add_findings(run_id, "between", self.scrub(new))


def host_id(snap: dict[str, Any] | None) -> str:
    if not snap:
        return ""

    return host_identity(snap)


def hostname(snap: dict[str, Any] | None) -> str:
    if not snap:
        return ""
    host = snap.get("host", {})
    return str(host.get("hostname", "")) if isinstance(host, dict) else ""
