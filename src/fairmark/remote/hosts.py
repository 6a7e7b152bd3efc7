"""A [hosts.NAME] as one of a run's machines: `RemoteHost` implements run/'s `Host` (fairmark.run.machine.host) over an SSH
connection to fairmark's agent there — the trials' executor, the variant's system changes (journaled there by the
agent), its boot, snapshot and reboot. `hosts_for` builds a run's hosts from its plan (cli/ calls it and hands them
to the runner); the run core never imports this package.

A variant's system changes travel generically: for every kind the agent applies (plan/kinds.py REMOTE_KEYS, from
the plan model's `VariantKind(remote=True)`), the agent's one `change` operation gets the kind, the variant's
value (`set`) and its name and environment; the kind's driver there — the same module as on the controller,
fairmark.run.variants.<kind> — makes it and answers what it applied and what a trial there gets ("prepared":
env, workdir, placement); the agent journals each original first and restores everything when the session
ends."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from fairmark.errors import EnvironmentRefused, PlanError
from fairmark.plan.kinds import REMOTE_KEYS, given
from fairmark.plan.load import check_hosts
from fairmark.remote.connection import (
    AgentError,
    ConnectionLost,
    HostConnection,
    HostSpec,
    reaches_this_machine,
)
from fairmark.remote.executor import RemoteExecutor
from fairmark.remote.probe import remote_snapshot
from fairmark.remote.profiling import RemoteProfile
from fairmark.remote.tooling import remote_adapter
from fairmark.run.machine.boots import HostDidNotReturn, WrongBoot, reboot_command
from fairmark.run.variants import driver
from fairmark.run.variants.driver import Prepared
from fairmark.run.variants.tunable import RevertError

if TYPE_CHECKING:
    from fairmark.plan.model import Boot, HostEntry, Plan, TuningSet, Variant
    from fairmark.run.hooks import Artifact, TrialHook
    from fairmark.run.machine.host import Host, HostRecord, Hosts, Snapshot
    from fairmark.run.spec import Measured, TrialSpec
    from fairmark.run.workloads.base import Adapter


def host_spec(name: str, entry: Any) -> HostSpec:
    return HostSpec(
        name,
        ssh=entry.ssh,
        ssh_options=tuple(entry.ssh_options),
        agent=tuple(entry.agent or ()),
        python=entry.python,
        become=tuple(entry.become or (("sudo", "-n") if entry.sudo else ())),
    )


def per_variant(kind: str) -> bool:
    """Whether the kind's change is the variant's own, as on the controller (a scratch file system, a CPU set, an
    environment: made at the variant's first block, kept until the session ends): its driver's scope. Such a
    kind is sent at every change of variant, with its name."""
    return str(driver.load(kind).SCOPE) == "variant"


def wire_changes(variant: Variant, tuning: Mapping[str, TuningSet] | None = None) -> dict[str, Any]:
    """The variant's value of every kind an agent applies, its [tuning.NAME] set's underneath as on the
    controller (run/variants/system.merged_changes: its own keys win, sysctl tables merge key by key), as JSON
    (as the plan model dumps it): what the kind's driver takes, there as here. None: the host's own."""
    from pydantic import BaseModel

    values = {k: getattr(variant, k) for k in REMOTE_KEYS}
    base = (tuning or {}).get(variant.tuning) if variant.tuning else None
    if base is not None:
        for k in REMOTE_KEYS:
            if k == "sysctl":
                values[k] = {**base.sysctl, **variant.sysctl}
            elif k not in variant.model_fields_set:
                values[k] = getattr(base, k)
    return {
        k: None if not given(v) else v.model_dump(mode="json") if isinstance(v, BaseModel) else v
        for k, v in values.items()
    }


def _env(variant: Variant) -> dict[str, str]:
    """The variant's own environment as its kinds' drivers there see it (malloc_debug joins what it sets)."""
    return {k: v for k, v in variant.env.items() if isinstance(v, str)}


class RemoteHost:
    """A [hosts.NAME]: one SSH connection (ControlMaster) and fairmark's agent at the other end. Implements
    fairmark.run.machine.host.Host."""

    local: bool = False

    def __init__(
        self,
        name: str,
        entry: HostEntry,
        *,
        path: str = "<plan>",
        monitor_interval_s: float | None = None,
        allow_concurrent: bool = False,
        tuning: Mapping[str, TuningSet] | None = None,
        variants: Sequence[Variant] = (),
        profiles: Sequence[str] = (),
    ):
        self.name, self.entry, self.path = name, entry, path
        self.tuning = dict(tuning or {})  # the plan's [tuning.NAME] sets, which a variant here may name
        # the plan's variants on this host: their changes are checked at connect, before any trial
        self.variants = list(variants)
        self.spec = host_spec(name, entry)
        self.monitor_interval_s, self.allow_concurrent = monitor_interval_s, allow_concurrent
        self.profiles = tuple(profiles)  # the run's profilers (cpu, locks, syscalls): each must work here
        self.conn: HostConnection | None = None
        self.executor: RemoteExecutor | None = None
        self.wanted: dict[str, Any] = {}  # kind → the value active there now (as sent)
        self.variant: str | None = None  # the variant whose changes are active there
        self.prepared: dict[str, Prepared] = {}  # kind → what the agent made ready for trials
        self.env: dict[str, str] = {}  # the active variant's environment (a driver may join it: malloc_debug)

    def _connection(self) -> HostConnection:
        if self.conn is None:
            raise EnvironmentRefused(f"host {self.name}: not connected")
        return self.conn

    def _executor(self) -> RemoteExecutor:
        if self.executor is None:
            raise EnvironmentRefused(f"host {self.name}: not connected")
        return self.executor

    @property
    def os(self) -> str:
        return str(self._connection().hello.get("os") or "")

    def connect(self) -> list[str]:
        self.conn = HostConnection(self.spec)  # kept before connecting: close() cleans up a failed attempt
        hello = self.conn.connect()
        self._lock()
        self._check_profilers()
        self._check_variants()
        self.executor = RemoteExecutor(
            self.conn, on_reconnect=self._reapply, monitor_interval_s=self.monitor_interval_s
        )
        return [f"host {self.name}: {line}" for line in hello.get("recovered", [])]

    def _check_variants(self) -> None:
        """Refuse before any trial what a variant here cannot change on this host (a missing sysctl, no cpufreq
        governor, no loop devices …), as the controller's own SystemState does at its start: the agent checks
        each variant's changes without making them. An agent without the check (older) leaves it to the
        variant's first block."""
        for variant in self.variants:
            changes = {k: v for k, v in wire_changes(variant, self.tuning).items() if v is not None}
            if not changes:
                continue
            self._need_root(variant.name, changes)
            try:
                refused = self._connection().call(
                    "check", changes=changes, variant=variant.name, env=_env(variant)
                )["refused"]
            except AgentError as exc:
                if "unknown op" in exc.message:
                    return
                raise
            if refused:
                kind, why = next(iter(refused.items()))
                raise EnvironmentRefused(
                    f"variant {variant.name!r} on host {self.name}: {kind}: {why}",
                    hint=f"remove {kind} from variant {variant.name!r}, or run it on a host that has it",
                )

    def _need_root(self, variant: str, changes: dict[str, Any]) -> None:
        """A variant's system changes need root there: an agent that logged in as a user without `sudo` would
        fail at its first block, after the other variants' trials."""
        uid = self._connection().hello.get("uid")
        if uid not in (None, 0):
            raise EnvironmentRefused(
                f"variant {variant!r} changes {', '.join(sorted(changes))} on host {self.name}, and the agent "
                f"there runs as uid {uid}, not root",
                hint=f"let it become root: `sudo = true` (sudo -n) or `become = [...]` in [hosts.{self.name}]",
            )

    def _lock(self) -> None:
        """The host's own lock (held by its agent for the session): one run measures a host at a time."""
        got = self._connection().call(
            "lock", owner={"pid": os.getpid(), "controller": socket.gethostname(), "plan": self.path}
        )
        if not got["held"] and not self.allow_concurrent:
            o = got.get("owner") or {}
            raise EnvironmentRefused(
                f"host {self.name} is in use by another fairmark run (controller {o.get('controller')}, "
                f"pid {o.get('pid')}, plan {o.get('plan')})",
                hint="wait for it, or pass --allow-concurrent to measure both at once (each perturbs the other)",
            )

    def _check_profilers(self) -> None:
        """Every profiler of the run must work on this host (its trials are profiled there, by its agent): one that
        cannot refuses the run before any trial, naming host and profiler — never an empty profile."""
        if not self.profiles:
            return
        try:
            got = self._connection().call("profilers", names=list(self.profiles))
        except AgentError as exc:
            raise EnvironmentRefused(
                f"host {self.name}: --profile {','.join(self.profiles)}: {exc.message}"
            ) from None
        missing = {name: why for name, why in got["unavailable"].items() if why}
        if missing:
            raise EnvironmentRefused(
                "; ".join(
                    f"host {self.name}: profiler {n} cannot work there: {why}" for n, why in missing.items()
                ),
                hint=f"install what it needs on {self.name}, or run without --profile {','.join(missing)}",
            )

    def profiled(self, profiler: TrialHook, servers: bool = True) -> TrialHook:
        """The hook of a profiled trial here: its agent runs the profiler around the trial on this host (with the
        workload's servers when they run here)."""
        return RemoteProfile(self.name, self._executor(), profiler, servers=servers)

    # -- the variant's system changes ---------------------------------------------------------------------------
    def activate(self, variant: Variant) -> None:
        """Make the variant's changes the active set on this host (the agent journals each original first)."""
        settle = False
        for kind, want in wire_changes(variant, self.tuning).items():
            own = per_variant(kind) and want is not None and self.variant != variant.name
            if not own and want == self.wanted.get(kind):
                continue
            down = self._executor().down
            if down is not None:
                raise down
            try:
                got = self._change(kind, want, variant.name, _env(variant))
            except AgentError as exc:
                raise EnvironmentRefused(
                    f"variant {variant.name!r} on host {self.name}: {exc.message}"
                ) from None
            self.wanted[kind], self.env = want, _env(variant)
            settle |= bool(got.get("applied")) and not per_variant(kind)
        self.variant = variant.name
        settle_s = self._settle_s(variant) if settle else 0.0
        if settle_s:  # as on the controller: caches, governors, the scheduler adapt before the block's trials
            time.sleep(settle_s)

    def _settle_s(self, variant: Variant) -> float:
        """How long the host settles after a machine-wide setting was applied, as on the controller
        (run/variants/system.py): the variant's settle_s, else its [tuning.NAME] set's, else the default."""
        from fairmark.run.variants.system import DEFAULT_SETTLE_S

        base = self.tuning.get(variant.tuning) if variant.tuning else None
        for settle_s in (variant.settle_s, base.settle_s if base is not None else None):
            if settle_s is not None:
                return settle_s
        return DEFAULT_SETTLE_S

    def _change(self, kind: str, want: Any, variant: str | None, env: dict[str, str]) -> dict[str, Any]:
        """The agent's `change` of one kind; what it made ready for trials is kept for `prepare`."""
        got = self._connection().call("change", kind=kind, set=want, variant=variant, env=env)
        self.prepared[kind] = Prepared.from_json(got.get("prepared"))
        return got

    def prepare(self, variant: Variant) -> Prepared:
        out = Prepared()
        for ready in self.prepared.values():
            out = out.merged(ready)
        return out

    def _reapply(self) -> None:
        """After a reconnection: the new agent applies what the lost one restored."""
        for kind, want in self.wanted.items():
            if want is not None:
                self._change(kind, want, self.variant, self.env)

    # -- trials -------------------------------------------------------------------------------------------------
    def execute(self, spec: TrialSpec) -> Measured:
        return self._executor()(spec)

    def take_artifacts(self) -> list[Artifact]:
        return self._executor().take_artifacts()

    def adapter(self, adapter: Adapter, workload: str, hosts: Hosts) -> Adapter:
        return remote_adapter(adapter, hosts, workload, self.path)

    def address(self) -> str:
        """Where clients on other hosts reach it: [hosts.NAME] address, else the address ssh connected to."""
        addr = self.entry.address or self._connection().hello.get("address")
        if not addr:
            raise EnvironmentRefused(
                f"host {self.name}: its address for clients on other hosts is unknown",
                hint=f'set address = "…" in [hosts.{self.name}]',
            )
        try:  # it goes into another host's pg_hba.conf and servers' command lines: an address, nothing more
            return str(ipaddress.ip_address(str(addr)))
        except ValueError:
            said = "[hosts] gives" if self.entry.address else "its agent reports"
            raise EnvironmentRefused(
                f"host {self.name}: {said} {str(addr)[:60]!r} as its address for clients, not an IP address",
                hint=f'set address = "…" (an IPv4 or IPv6 address) in [hosts.{self.name}]',
            ) from None

    # -- the machine --------------------------------------------------------------------------------------------
    def boot_id(self) -> str | None:
        return self._executor().last_boot_id or self._connection().hello.get("boot_id")

    def snapshot(self) -> Snapshot:
        return cast("Snapshot", remote_snapshot(self._connection()))  # the probe's dict, as run/host types it

    def on_this_machine(self) -> bool:
        """Whether it runs on the controller's machine (reached through loopback: a VM, a container)."""
        return reaches_this_machine(self.spec)

    def run(self, argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
        return self._connection().run(argv, timeout_s=timeout_s)

    def reboot(self, boot: Boot, previous: str, resume: list[str]) -> str:
        """Reboot the host (its agent restores its changes first) and wait for its next boot; a new session
        there. `resume` is for a machine that reboots itself: the controller here goes on."""
        conn = self._connection()
        try:
            conn.call("bye")  # the agent restores what it changed on the host (sysctls) and ends
        except (ConnectionLost, AgentError):
            pass
        argv = reboot_command(boot)
        try:
            res = conn.run(argv, timeout_s=60)
            # 255: ssh's own status when the host closed the connection while going down
            if res.returncode not in (0, 255) and res.returncode > 0:
                raise HostDidNotReturn(
                    f"host {self.name}: the reboot command `{' '.join(argv)}` failed "
                    f"(exit {res.returncode}): {(res.stderr or res.stdout).strip()[-400:]}"
                )
        except subprocess.TimeoutExpired:
            pass  # the connection hung while the host went down
        try:
            hello = conn.wait_reboot(previous, timeout_s=boot.timeout_s, poll_s=2.0)
        except ConnectionLost as exc:
            raise HostDidNotReturn(
                f"host {self.name} did not come back in a new boot within {boot.timeout_s:g} s after "
                f"`{' '.join(argv)}`: {exc.message}",
                hint="the run is interrupted; when the host is back, `fairmark resume RUN` switches and reboots "
                "it again for this block",
            ) from None
        self._new_session()
        return str(hello["boot_id"])

    def _new_session(self) -> None:
        """The new boot's agent: the host's run lock again, a fresh executor state, its changes applied anew."""
        self._lock()
        ex = self._executor()
        ex.down, ex.last_boot_id = None, None
        self.wanted.clear()
        self.prepared.clear()
        self.variant = None

    def guard(self, boot: Callable[[], str | None]) -> None:
        """A reconnection in the middle of a block (the link dropped, or the host rebooted on its own) must find
        the verified boot: else the trials that follow would run in an unverified one."""

        def check() -> None:
            now_id = self._connection().hello.get("boot_id")
            if boot() and now_id != boot():
                raise WrongBoot(
                    f"host {self.name} rebooted during a boot block (boot {boot()} → {now_id}): the run stops",
                    hint="`fairmark resume RUN` reboots into the variant again",
                )
            self._reapply()

        self._executor().on_reconnect = check

    def describe(self) -> HostRecord:
        boot = self.conn.hello.get("boot_id") if self.conn else None
        return {"ssh": self.spec.ssh, "boot_id": str(boot) if boot else None}

    def placement(self) -> str | None:
        """How a `cpus` variant's trials are placed here, as the agent found it (see agent._placement)."""
        return self.conn.hello.get("placement") if self.conn else None

    def close(self) -> None:
        """Undo the variants' changes here (the agent, newest first) and end the session; raises RevertError
        when the agent could not undo one (its journal keeps it: the next contact tries again)."""
        conn, self.conn = self.conn, None
        if conn is None:
            return
        problem = None
        try:
            if self.wanted and self.executor is not None and self.executor.down is None:
                conn.call("restore")
        except AgentError as exc:
            problem = exc.message
        except ConnectionLost:
            pass  # the agent restores at its end of input; a dead one's journal is undone at the next contact
        finally:
            conn.close()  # the agent restores what is left on "bye" (and on end of input)
        if problem:
            raise RevertError(
                f"host {self.name} is NOT as fairmark found it: {problem}",
                hint=f"its agent's journal keeps what is left: `fairmark doctor --host {self.spec.ssh}` retries",
            )


# -- a run's hosts ---------------------------------------------------------------------------------------------
def check_plan(plan: Plan, path: str = "<plan>") -> list[str]:
    """The hosts the plan's variants (and their clients) use, in order; refuses what cannot run there."""
    check_hosts(plan, path=path)  # the kinds an agent cannot apply there (plan/kinds.py: the table of kinds)
    # (variant, workload) → the host running the client
    client_host = plan.client_hosts()
    for (v, _w), c in client_host.items():
        if not plan.variant_named(v).host:
            raise PlanError(
                f"variant {v!r}: a client on host {c!r} needs the server on a host too: give the variant a host",
                path=path,
            )
    return sorted({h for h in [*(v.host for v in plan.variant), *client_host.values()] if h})


def command_hosts(plan: Plan) -> set[str]:
    """The hosts that run some trial's command: each cell's client host, else its variant's host (a host that
    only serves clients elsewhere runs none, and is not profiled)."""
    return {
        host
        for v in plan.variant
        for w in plan.workload
        if (host := v.client_host or w.client_host or v.host)
    }


def hosts_for(
    plan: Plan, path: str = "<plan>", *, hooks: Sequence[TrialHook] = (), allow_concurrent: bool = False
) -> dict[str, RemoteHost]:
    """The [hosts.NAME] a run of `plan` uses, not yet connected (the runner connects them): {} for a plan that
    runs on this machine alone. The system monitor runs on each host (its agent samples); so do the profilers on
    the hosts that run trials' commands, each checked there when the host is connected (remote.profiling)."""
    if not plan.remote:
        return {}
    interval = next((getattr(h, "interval_s", None) for h in hooks if h.name == "monitor.system"), None)
    profiles = [h.name.removeprefix("profile.") for h in hooks if h.name.startswith("profile.")]
    commands = command_hosts(plan)
    return {
        name: RemoteHost(
            name,
            plan.hosts[name],
            path=path,
            monitor_interval_s=interval,
            allow_concurrent=allow_concurrent,
            tuning=plan.tuning,
            profiles=profiles if name in commands else (),
            variants=[v for v in plan.variant if v.host == name],
        )
        for name in check_plan(plan, path)
    }


def _is_a_host(host: RemoteHost) -> Host:
    """Never called: mypy checks here that RemoteHost implements run/'s Host protocol (as run/machine/host.py checks
    LocalHost), so the seam cannot drift without a type error."""
    return host
