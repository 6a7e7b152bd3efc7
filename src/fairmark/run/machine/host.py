"""The machines a run's trials run on, as the run core sees them: `Host` is the interface, run/ owns it and never
imports remote/. `LocalHost` is the controller itself (the variants' journaled system changes of run/variants/,
the local executor, its boot and the boot hook that resumes a run after rebooting it); a [hosts.NAME] is a
`fairmark.remote.hosts.RemoteHost` (its SSH connection and fairmark's agent there), which assemble.py builds and hands
to the runner. `Hosts` is one run's machines: the controller, always, and a Host per [hosts.NAME] its variants
(or their clients) use, with the plan's answer to "where does this variant run?"

Adding a capability to hosts means a method here and its two implementations; a kind of system change on a
remote host needs neither (docs/architecture.md, "Adding things").
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, TypedDict, cast

from fairmark.errors import EnvironmentRefused, FairmarkError
from fairmark.jsonvalue import JSONObject
from fairmark.plan.kinds import REMOTE_KEYS, VARIANT_KINDS
from fairmark.plan.model import SystemChanges
from fairmark.probe.snapshot import take_snapshot
from fairmark.run.launch.executor import execute_spec
from fairmark.run.machine.boots import HostDidNotReturn, reboot_command
from fairmark.run.spec import Measured, TrialSpec
from fairmark.run.variants.boothook import install
from fairmark.run.variants.cpus import CpuSet, cpuset_problem
from fairmark.run.variants.driver import Prepared
from fairmark.run.variants.journal import default_state_dir
from fairmark.run.variants.system import SystemState, merged_changes

if TYPE_CHECKING:
    from fairmark.plan.model import Boot, Plan, Variant
    from fairmark.run.hooks import Artifact, TrialHook
    from fairmark.run.spec import Executor
    from fairmark.run.variants.boothook import Kind
    from fairmark.run.workloads.base import Adapter
    from fairmark.store.db import Store


class SnapshotIdentity(TypedDict, total=False):
    host_id: str | None  # the machine's identity across runs (probe/snapshot.py)
    inputs: JSONObject


class Snapshot(TypedDict, total=False):
    """An environment snapshot (fairmark.probe.take_snapshot; a host's through its agent: remote/probe.py): the
    sections a run reads by name; each section is JSON, stored and compared as the probe made it."""

    schema: int
    taken_at: str
    source: JSONObject
    identity: SnapshotIdentity
    host: JSONObject
    cpu: JSONObject
    memory: JSONObject
    os: JSONObject
    kernel_config: JSONObject
    cpufreq: JSONObject
    mitigations: JSONObject
    fs: JSONObject
    load: JSONObject
    thermal: JSONObject
    malloc: JSONObject
    toolchain: JSONObject
    tools: JSONObject
    env: JSONObject
    sysctl: JSONObject


def snapshot_json(snap: Snapshot) -> JSONObject:
    """A snapshot as the store keeps it (its sections are JSON already: the probe made them so)."""
    return cast(JSONObject, snap)


class HostRecord(TypedDict, total=False):
    """What a run records about one of its hosts (Host.describe; Hosts.describe adds its identity)."""

    ssh: str
    boot_id: str | None
    host_id: str | None


class Host(Protocol):
    """One machine a run's trials run on: this one (LocalHost) or a [hosts.NAME] (remote.hosts.RemoteHost)."""

    @property
    def name(self) -> str | None:
        """Its [hosts.NAME]; None: the controller itself."""
        ...

    @property
    def local(self) -> bool:
        """Whether it is the controller: trial hooks (monitors, profilers) and the launcher's placement work here."""
        ...

    @property
    def os(self) -> str:
        """Its operating system: "linux", "freebsd" …"""
        ...

    def connect(self) -> list[str]:
        """Start its session; one line per change a dead run had left there, undone now."""
        ...

    def activate(self, variant: Variant) -> None:
        """Undo the previous variant's changes here and apply this one's (each original journaled first)."""
        ...

    def prepare(self, variant: Variant) -> Prepared:
        """What a trial of the active variant gets: an environment, a working directory, a placement."""
        ...

    def execute(self, spec: TrialSpec) -> Measured:
        """The executor: run one trial's spec there and measure it."""
        ...

    def take_artifacts(self) -> list[Artifact]:
        """What was measured there beside the last trial (an agent's monitor series, a profile), handed over once."""
        ...

    def profiled(self, profiler: TrialHook, servers: bool = True) -> TrialHook:
        """The hook a profiled trial of `profiler` runs with when its command runs on this machine; `servers`:
        the workload's servers run here too (not so for a client on another host: client_host)."""
        ...

    def adapter(self, adapter: Adapter, workload: str, hosts: Hosts) -> Adapter:
        """The workload's tool adapter as trials on this machine use it."""
        ...

    def boot_id(self) -> str | None:
        """The boot its last trial ran in (before any trial: the boot it is in)."""
        ...

    def snapshot(self) -> Snapshot:
        """Its environment snapshot now."""
        ...

    def run(self, argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
        """A plain command there, outside any trial (a boot switch)."""
        ...

    def reboot(self, boot: Boot, previous: str, resume: list[str]) -> str:
        """Reboot it into its next boot and return the new boot's id; this machine's own reboot ends this
        process instead, after arranging for `resume` to continue the run in the next boot."""
        ...

    def guard(self, boot: Callable[[], str | None]) -> None:
        """From now on a reconnection must find the machine still in boot `boot()` (a boot block's)."""
        ...

    def describe(self) -> HostRecord:
        """What the run records about it."""
        ...

    def close(self) -> None:
        """Undo every change it made (raising if one cannot be undone) and end its session; idempotent."""
        ...


# -- this machine ----------------------------------------------------------------------------------------------
def boot_id() -> str:
    """Changes at every boot: Linux's random boot_id, FreeBSD's kern.boottime (and the host's hostid). The agent
    has its own copy (remote/agent.py is shipped alone, without fairmark); a test keeps the two equal."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        pass
    try:
        out = subprocess.run(
            ["sysctl", "-n", "kern.boottime", "kern.hostuuid"],
            capture_output=True,
            text=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
            env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin:/sbin:/usr/sbin")},
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return " ".join(out.stdout.split()) if out.returncode == 0 else ""


@functools.cache
def local_boot_id() -> str | None:
    """This machine's boot: the unit of boots as a statistical level (stats.levels). Cached: no process outlives
    the boot it started in."""
    return boot_id() or None


def local_part(plan: Plan) -> Plan:
    """The plan as the controller's own system state sees it: a variant on a host changes nothing here."""

    fields = SystemChanges.model_fields
    blank = {k: fields[k].get_default(call_default_factory=True) for k in VARIANT_KINDS}
    variants = [v.model_copy(update=blank) if v.host else v for v in plan.variant]
    return plan.model_copy(update={"variant": variants})


class LocalHost:
    """The controller itself: the variants' system changes (run/variants/system.py, journaled), the local
    executor (or a test's), its own boot, and a reboot through the one-shot boot hook."""

    name: str | None = None
    local: bool = True
    os: str = platform.system().lower()

    def __init__(self, plan: Plan, *, execute: Executor = execute_spec):
        self.system = SystemState(plan, state_dir=default_state_dir())
        self._execute = execute

    @property
    def changes_system(self) -> bool:
        return self.system.changes_system

    def connect(self) -> list[str]:
        return []  # what a killed fairmark left here is restored before any command (cli/main.py)

    def activate(self, variant: Variant) -> None:
        self.system.activate(variant.name)

    def prepare(self, variant: Variant) -> Prepared:
        return self.system.prepare(variant.name)

    def execute(self, spec: TrialSpec) -> Measured:
        return self._execute(spec)

    def take_artifacts(self) -> list[Artifact]:
        return []  # the trial hooks measure here, around the trial

    def profiled(self, profiler: TrialHook, servers: bool = True) -> TrialHook:
        return profiler  # it runs here, around the trial (a client on another host is never here)

    def adapter(self, adapter: Adapter, workload: str, hosts: Hosts) -> Adapter:
        return adapter

    def boot_id(self) -> str | None:
        return local_boot_id()

    def snapshot(self) -> Snapshot:
        return cast(Snapshot, take_snapshot("/", workdir=os.getcwd()))  # the probe's dict, as typed here

    def run(self, argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, check=False, stdin=subprocess.DEVNULL
        )

    def reboot(self, boot: Boot, previous: str, resume: list[str]) -> str:
        """Install the one-shot boot hook that runs `resume` in the next boot, reboot, and wait to be ended."""
        kind, root = hook_kind()
        install(self.system.journal, resume, kind=kind, root=root)
        reboot = reboot_command(boot)
        res = self.run(reboot, timeout_s=60)
        if res.returncode != 0:
            raise HostDidNotReturn(
                f"this machine's reboot command `{' '.join(reboot)}` failed (exit "
                f"{res.returncode}): {(res.stderr or res.stdout).strip()[-400:]}"
            )
        _await_shutdown(boot.timeout_s)
        raise HostDidNotReturn(
            f"this machine did not go down within {boot.timeout_s:g} s after `{' '.join(reboot)}`",
            hint="the boot hook is removed; check the reboot command, then `fairmark resume RUN`",
        )

    def guard(self, boot: Callable[[], str | None]) -> None:
        pass  # no connection to lose: a trial that ran in another boot is caught by the boot run itself

    def describe(self) -> HostRecord:
        return {}

    def close(self) -> None:
        self.system.close()


def hook_kind() -> tuple[Kind, str]:
    """Which one-shot boot hook this machine takes, and the root it is installed under ($FAIRMARK_BOOTHOOK_ROOT:
    a sysroot in tests). Refused where nothing would run it after the reboot."""
    root = os.environ.get("FAIRMARK_BOOTHOOK_ROOT", "/")
    if sys.platform.startswith("freebsd"):
        return "rc.d", root
    if os.path.isdir(os.path.join(root, "run/systemd/system")):
        return "systemd", root
    raise EnvironmentRefused(
        "boot variants on this machine need systemd (its one-shot unit resumes the run after each reboot), "
        "and this machine does not run systemd",
        hint='run the plan from another machine with the variants on a host: host = "NAME" and [hosts.NAME]',
    )


def _await_shutdown(timeout_s: float) -> None:
    """Wait for the shutdown to end this process. Its SIGTERM must not run the run's clean-up, which would
    remove the boot hook and mark the run finished: everything is already stored, so exit at once."""
    before = {sig: signal.signal(sig, lambda *_: os._exit(0)) for sig in (signal.SIGTERM, signal.SIGHUP)}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(0.5)
    for sig, handler in before.items():
        signal.signal(sig, handler)


# -- one run's machines -----------------------------------------------------------------------------------------
def _is_a_host(host: LocalHost) -> Host:
    """Never called: mypy checks here that LocalHost implements the Host protocol (remote/hosts.py checks
    RemoteHost), so the seam cannot drift without a type error."""
    return host


class Hosts:
    """The machines of one run: the controller (`local`, always: every variant's local half is activated here,
    and a variant on a host changes nothing here) and `remote`, a Host per [hosts.NAME] the plan's variants or
    their clients use (built by assemble.py: remote.hosts.hosts_for). The runner, the trial path, the stage, the gate
    and the boot run ask this object where a variant runs; none of them imports remote/."""

    def __init__(
        self, plan: Plan, remote: Mapping[str, Host] | None = None, *, execute: Executor = execute_spec
    ):
        self.plan = plan
        self.remote: dict[str, Host] = dict(remote or {})
        self.variant_host = {v.name: v.host for v in plan.variant}
        # (variant, workload) → the host running the client, where it is not the variant's host
        self.client_host = plan.client_hosts()
        used = {h for h in [*self.variant_host.values(), *self.client_host.values()] if h}
        if used - set(self.remote):
            raise FairmarkError(
                f"the plan's variants run on host(s) {', '.join(sorted(used - set(self.remote)))}, which this "
                "run was not given (fairmark.assemble builds a run's hosts: fairmark.remote.hosts.hosts_for)"
            )
        self.local = LocalHost(local_part(plan), execute=execute)
        self.snaps: dict[str, Snapshot] = {}  # each host's snapshot, taken by the gate

    # -- where a variant runs
    def host_of(self, variant: str) -> str | None:
        return self.variant_host.get(variant)

    def client_of(self, variant: str, workload: str) -> str | None:
        """The host running this cell's client when it is not the variant's host (client_host)."""
        c = self.client_host.get((variant, workload))
        return c if c and c != self.host_of(variant) else None

    def of(self, variant: str) -> Host:
        """The machine a variant's system changes and servers are on."""
        host = self.host_of(variant)
        return self.remote[host] if host else self.local

    def runs(self, variant: str, workload: str) -> Host:
        """The machine that runs a trial's command: the cell's client host, else the variant's machine."""
        client = self.client_of(variant, workload)
        return self.remote[client] if client else self.of(variant)

    def labels(self, variant: str, workload: str) -> dict[str, str]:
        """Where each side of a cell ran, for the report."""
        host = self.host_of(variant)
        if not host:
            return {}
        client = self.client_of(variant, workload)
        return {"host": host, "client host": client or host} if client else {"host": host}

    @functools.cached_property
    def changes_system(self) -> bool:
        """Whether a variant changes machine-wide state here or on its host: trials then run in A B B A blocks.
        Worked out once: the plan and its variants' changes stay what they are for the run, and the runner
        asks at every round."""
        wide = [k for k in REMOTE_KEYS if VARIANT_KINDS[k].machine_wide]
        there = any(
            v.host and any(merged_changes(self.plan, v).get(k) not in (None, {}) for k in wide)
            for v in self.plan.variant
        )
        return self.local.changes_system or (bool(self.remote) and there)

    # -- the run's life cycle
    def connect(self) -> list[str]:
        return [line for host in self.remote.values() for line in host.connect()]

    def activate(self, variant: Variant) -> None:
        """The variant's changes become the active ones: here always (a variant on a host undoes the previous
        variant's here), and on its host."""
        self.local.activate(variant)
        host = self.of(variant.name)
        if host is not self.local:
            host.activate(variant)

    def prepare(self, variant: Variant) -> Prepared:
        return self.of(variant.name).prepare(variant)

    def adapter(self, adapter: Adapter, workload: str) -> Adapter:
        """A tool workload's adapter: the real one, or, when variants run on hosts, the stand-in that runs its
        life cycle there (one for every host of the workload)."""
        hosted = [self.remote[v.host] for v in self.plan.variant if v.host]
        return hosted[0].adapter(adapter, workload, self) if hosted else adapter

    def snapshots(self) -> dict[str, Snapshot]:
        """Each host's environment snapshot (kept: the run records them and each host's identity)."""
        self.snaps = {name: host.snapshot() for name, host in self.remote.items()}
        return self.snaps

    @functools.cached_property
    def here(self) -> list[str]:
        """The hosts that run on this machine (a VM or container reached through loopback): their trials compete
        with the work here, which their own load average does not show."""
        return [n for n, h in sorted(self.remote.items()) if getattr(h, "on_this_machine", lambda: False)()]

    def describe(self) -> dict[str, HostRecord]:
        """What the run records about its hosts (`fairmark runs --host NAME` filters on these names)."""
        out: dict[str, HostRecord] = {}
        for name, host in self.remote.items():
            record = host.describe()
            record["host_id"] = self.snaps.get(name, {}).get("identity", {}).get("host_id")
            out[name] = record
        return out

    def placement(self, note: Callable[[str], None] = print) -> dict[str, str]:
        """How each `cpus` variant's trials are placed ("cpuset v1", "cpuset v2", "affinity: WHY"): the run
        records it, the report shows it, and an affinity fallback, which a trial's child can widen, is said
        now (`note`) with its reason."""
        out: dict[str, str] = {}
        for v in self.plan.variant:
            if v.host:
                how = getattr(self.remote[v.host], "placement", lambda: None)()
                if how and merged_changes(self.plan, v).get("cpus") is not None:
                    out[v.name] = f"{how} (host {v.host})"
            elif (r := self.local.system.variants.get(v.name)) and isinstance(c := r.change("cpus"), CpuSet):
                out[v.name] = c.method if c.use_cgroup else f"affinity: {cpuset_problem() or 'not asked for'}"
        for variant, how in out.items():
            if how.startswith("affinity"):
                note(
                    f"warning: variant {variant}'s cpus are set by CPU affinity, which a child can widen ({how})"
                )
        return out

    def store_snapshots(self, store: Store, run_id: str) -> None:
        for name, snap in self.snaps.items():
            store.add_artifact(
                run_id, kind="env.host", name=name, content_type="application/json", data=snapshot_json(snap)
            )

    def close(self) -> None:
        """Undo every change here, then on each host (each agent restores what it changed there)."""
        try:
            self.local.close()
        finally:
            for host in self.remote.values():
                try:
                    host.close()
                except BaseException:
                    for other in self.remote.values():  # every host's session still ends (idempotent)
                        with contextlib.suppress(Exception):
                            other.close()
                    raise
