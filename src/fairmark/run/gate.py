"""The probe gate: the environment snapshot and the doctor's verdict before a run writes anything (refused on
an error unless --accept-risk), the cheap volatile samples between rounds, and the snapshot after the run."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from fairmark.errors import EnvironmentRefused
from fairmark.plan.model import Plan
from fairmark.run.prepare import WorkloadRuntime, workload_info
from fairmark.run.workloads import versions_to_record
from fairmark.store.db import Store

VOLATILE_EVERY_S = 10.0  # the volatile probe samples for ~0.2 s; keep it off the hot path


@dataclass
class Gate:
    """`remote` is the run's RemoteHosts (or None); `options` its RunOptions (accept_risk, probe). The remote
    gate reads .plan, .remote and .options of this object."""

    plan: Plan
    options: Any
    remote: Any = None
    programs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # whose versions the snapshots record

    def record_programs(self, runtimes: list[WorkloadRuntime]) -> None:
        """The programs the workloads run (not the workloads' names): their versions go into the snapshots."""
        self.programs = versions_to_record((rt.workload, rt.adapter, rt.params) for rt in runtimes)

    def check(self, runtimes: list[WorkloadRuntime]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """(the run's env_before, the doctor's findings); raises EnvironmentRefused on an error finding."""
        if not self.options.probe:
            return None, []
        if self.remote:
            from fairmark.remote.hosts import gate_hosts

            return gate_hosts(self, runtimes)
        from fairmark.probe import diagnose, take_snapshot  # the probe is heavy; a resumed run needs none
        from fairmark.run.variants.basic import intended_env

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

    def baselines(self, runtimes: list[WorkloadRuntime]) -> dict[str, Any]:
        """What this machine does apart from the change, measured before the first trial (run options)."""
        from fairmark.run import devicebase, wrapcost

        # a variant's own wrap is inside its measured time only: its cost here is shown beside the verdicts
        wrap_costs = wrapcost.measure(self.plan.variant) if self.options.probe else {}
        # what the disk under a file-system workload can do: a result beyond it measured the page cache
        devices = devicebase.for_runtimes(runtimes) if self.options.probe and not self.remote else {}
        return {"wrap_costs": wrap_costs, "device_baselines": devices}

    def after(self, status: str) -> dict[str, Any] | None:
        """The snapshot after a finished local run (None otherwise)."""
        if not self.options.probe or status != "done" or self.remote:
            return None
        from fairmark.probe import take_snapshot

        return take_snapshot("/", tools=self.programs)


@dataclass
class VolatileWatch:
    """Between rounds (at most every VOLATILE_EVERY_S), sample the cheap, volatile environment: a neighbour
    that starts using the CPU, steal time, swapping, a changed governor — each noticed once and stored as a
    finding of phase "between"."""

    enabled: bool
    env_before: dict[str, Any] | None = None
    noticed: set[str] = field(default_factory=set)  # findings already reported (before the run or earlier)
    last: float = 0.0

    def sample(self, store: Store, run_id: str, note: Any) -> None:
        if not self.enabled or time.monotonic() - self.last < VOLATILE_EVERY_S:
            return
        from fairmark.probe.doctor import diagnose_volatile
        from fairmark.probe.snapshot import volatile_part, volatile_snapshot

        snap = volatile_snapshot()
        self.last = time.monotonic()
        store.add_artifact(
            run_id,
            kind="env.volatile",
            name=str(snap.get("taken_at", "")),
            content_type="application/json",
            data=snap,
        )
        baseline = volatile_part(self.env_before) if self.env_before else None
        new = [f.to_dict() for f in diagnose_volatile(snap, baseline)]
        new = [f for f in new if f["severity"] != "info" and f["id"] not in self.noticed]
        for f in new:
            self.noticed.add(f["id"])
            note(f"between rounds: {f['title']}: {f['evidence']}")
        store.add_findings(run_id, "between", new)


def host_id(snap: dict[str, Any] | None) -> str:
    if not snap:
        return ""
    from fairmark.probe import host_identity

    return host_identity(snap)


def hostname(snap: dict[str, Any] | None) -> str:
    if not snap:
        return ""
    host = snap.get("host", {})
    return str(host.get("hostname", "")) if isinstance(host, dict) else ""
