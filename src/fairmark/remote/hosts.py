"""The hosts of one run: a connection per [hosts.NAME] the plan uses, the executor of each variant's trials,
the sysctls a variant sets on its host (journaled there by the agent), and the hosts' environment snapshots.

The runner asks: `executor(variant)` (None: the controller itself runs the trial), `host_of(variant)`,
`boot_id(variant)`, `activate(variant)`, `snapshots()`, `close()`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fairmark.errors import EnvironmentRefused, PlanError
from fairmark.remote.connection import AgentError, HostConnection, HostSpec
from fairmark.remote.executor import RemoteExecutor

if TYPE_CHECKING:
    from fairmark.plan.model import Plan


def host_spec(name: str, entry: Any) -> HostSpec:
    return HostSpec(
        name,
        ssh=entry.ssh,
        ssh_options=tuple(entry.ssh_options),
        agent=tuple(entry.agent or ()),
        python=entry.python,
    )


class RemoteHosts:
    def __init__(self, plan: Plan, path: str = "<plan>", hooks: Any = (), allow_concurrent: bool = False):
        self.plan, self.path, self.allow_concurrent = plan, path, allow_concurrent
        # The system monitor runs on each host (its agent samples); other hooks (profilers) stay local only.
        self.monitor_interval_s = next((h.interval_s for h in hooks if h.name == "monitor.system"), None)
        self.variant_host = {v.name: v.host for v in plan.variant}
        from fairmark.plan.kinds import REMOTE_KEYS, VARIANT_KINDS

        for v in plan.variant:
            # the kinds an agent does not apply (plan/kinds.py: so far it applies sysctls only)
            other = [
                k
                for k in VARIANT_KINDS
                if k not in REMOTE_KEYS and v.host and getattr(v, k) not in (None, False, {})
            ]
            if other or (v.host and v.tuning):
                raise PlanError(
                    f"variant {v.name!r}: on host {v.host!r} only sysctl changes are supported so far "
                    f"(not {', '.join(other) or 'tuning sets'})",
                    path=path,
                )
        # (variant, workload) → the host running the client, where it is not the variant's host
        self.client_host = {
            (v.name, w.name): v.client_host or w.client_host
            for v in plan.variant
            for w in plan.workload
            if (v.client_host or w.client_host)
        }
        for (v, _w), c in self.client_host.items():
            if not self.variant_host[v]:
                raise PlanError(
                    f"variant {v!r}: a client on host {c!r} needs the server on a host too: give the "
                    "variant a host",
                    path=path,
                )
        used = sorted({h for h in [*self.variant_host.values(), *self.client_host.values()] if h})
        self.specs = {n: host_spec(n, plan.hosts[n]) for n in used}
        self.conns: dict[str, HostConnection] = {}
        self.executors: dict[str, RemoteExecutor] = {}
        self.wanted: dict[str, dict[str, str]] = {}  # host → the sysctls active there now
        self.recovered: list[str] = []

    @property
    def names(self) -> list[str]:
        return list(self.specs)

    @property
    def changes_system(self) -> bool:
        """Whether a variant changes a host's sysctls: trials then run in A B B A blocks, as locally."""
        from fairmark.plan.kinds import REMOTE_KEYS, VARIANT_KINDS

        wide = [k for k in REMOTE_KEYS if VARIANT_KINDS[k].machine_wide]
        return any(v.host and any(getattr(v, k) for k in wide) for v in self.plan.variant)

    def connect(self) -> None:
        for name, spec in self.specs.items():
            conn = HostConnection(spec)
            self.conns[name] = conn
            hello = conn.connect()
            self.recovered += [f"host {name}: {line}" for line in hello.get("recovered", [])]
            if hello.get("launcher"):  # no launcher there: its trials record no peak RSS (agent.launcher)
                self.recovered.append(f"host {name}: max_rss_kib is not measured: {hello['launcher']}")
            self._lock(name, conn)
            self.executors[name] = RemoteExecutor(
                conn, on_reconnect=lambda n=name: self._reapply(n), monitor_interval_s=self.monitor_interval_s
            )

    def _lock(self, name: str, conn: HostConnection) -> None:
        """The host's own lock (held by its agent for the session): one run measures a host at a time."""
        import os
        import socket

        got = conn.call(
            "lock", owner={"pid": os.getpid(), "controller": socket.gethostname(), "plan": self.path}
        )
        if not got["held"] and not self.allow_concurrent:
            o = got.get("owner") or {}
            raise EnvironmentRefused(
                f"host {name} is in use by another fairmark run (controller {o.get('controller')}, "
                f"pid {o.get('pid')}, plan {o.get('plan')})",
                hint="wait for it, or pass --allow-concurrent to measure both at once (each perturbs the other)",
            )

    def host_of(self, variant: str) -> str | None:
        return self.variant_host.get(variant)

    def client_of(self, variant: str, workload: str) -> str | None:
        """The host running this cell's client when it is not the variant's host (client_host)."""
        c = self.client_host.get((variant, workload))
        return c if c and c != self.host_of(variant) else None

    def executor(self, variant: str, workload: str | None = None) -> RemoteExecutor | None:
        host = (self.client_of(variant, workload) if workload else None) or self.host_of(variant)
        return self.executors[host] if host else None

    def address(self, host: str) -> str:
        """Where clients on other hosts reach `host`: [hosts.NAME] address, else the address ssh connected to."""
        entry = self.plan.hosts[host]
        addr = entry.address or self.conns[host].hello.get("address")
        if not addr:
            raise EnvironmentRefused(
                f"host {host}: its address for clients on other hosts is unknown",
                hint=f'set address = "…" in [hosts.{host}]',
            )
        return str(addr)

    def labels(self, variant: str, workload: str) -> dict[str, str]:
        """Where each side of a cell ran, for the report."""
        host = self.host_of(variant)
        if not host:
            return {}
        client = self.client_of(variant, workload)
        return {"host": host, "client host": client or host} if client else {"host": host}

    def boot_id(self, variant: str) -> str | None:
        host = self.host_of(variant)
        if not host:
            return None
        ex = self.executors[host]
        return ex.last_boot_id or self.conns[host].hello.get("boot_id")

    def activate(self, variant: str) -> None:
        """Make the variant's sysctls the active set on its host (the agent journals each original first)."""
        host = self.host_of(variant)
        if not host:
            return
        from fairmark.run.variants.sysctl import value_text

        want = {k: value_text(v) for k, v in self.plan.variant_named(variant).sysctl.items()}
        if want != self.wanted.get(host, {}):
            down = self.executors[host].down
            if down is not None:
                raise down
            try:
                self.conns[host].call("sysctl", set=want)
            except AgentError as exc:
                raise EnvironmentRefused(f"variant {variant!r} on host {host}: {exc.message}") from None
            self.wanted[host] = want

    def _reapply(self, host: str) -> None:
        if self.wanted.get(host):
            self.conns[host].call("sysctl", set=self.wanted[host])

    def snapshots(self) -> dict[str, dict[str, Any]]:
        from fairmark.remote.probe import remote_snapshot

        return {name: remote_snapshot(conn) for name, conn in self.conns.items()}

    def close(self) -> None:
        for conn in self.conns.values():
            conn.close()  # the agent restores its sysctls on "bye" (and on end of input)
        self.conns.clear()

    def describe(self) -> dict[str, dict[str, Any]]:
        """What the run records about its hosts (`fairmark runs --host NAME` filters on these names)."""
        snaps = getattr(self, "snaps", {})
        return {
            n: {
                "ssh": s.ssh,
                "boot_id": self.conns[n].hello.get("boot_id") if n in self.conns else None,
                "host_id": (snaps.get(n) or {}).get("identity", {}).get("host_id"),
            }
            for n, s in self.specs.items()
        }

    def store_snapshots(self, store: Any, run_id: str) -> None:
        for name, snap in getattr(self, "snaps", {}).items():
            store.add_artifact(run_id, kind="env.host", name=name, content_type="application/json", data=snap)


def local_part(plan: Plan) -> Plan:
    """The plan as the controller's own SystemState sees it: remote variants change nothing here."""
    variants = [v.model_copy(update={"sysctl": {}}) if v.host else v for v in plan.variant]
    return plan.model_copy(update={"variant": variants})


def gate_hosts(runner: Any, runtimes: list[Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The doctor's gate for a run on hosts: each host's snapshot judged, hardware differences between hosts
    refused unless the plan declares them. Returns (the run's env_before, findings tagged with their host)."""
    from fairmark.probe import diagnose
    from fairmark.probe.hosts import hardware_differences
    from fairmark.run.variants.basic import intended_env

    remote: RemoteHosts = runner.remote
    remote.snaps = snaps = remote.snapshots()
    found = []
    for name, snap in snaps.items():
        for f in diagnose(snap, intended_env=intended_env(runner.plan.variant)):
            d = f.to_dict()
            d["evidence"] = f"host {name}: {d['evidence']}"
            found.append(d)
    local = any(not h for h in remote.variant_host.values())
    if len(snaps) + local > 1:
        hosts = dict(snaps)
        if local:
            from fairmark.probe import take_snapshot

            hosts["(controller)"] = take_snapshot("/")
        diff = hardware_differences(hosts, list(runner.plan.declare))
        found += _software_findings(hosts, list(runner.plan.declare))
        if diff:
            raise EnvironmentRefused(
                "the hosts differ in hardware, so the comparison would be of hardware, not of operating systems: "
                + "; ".join(diff),
                hint="compare like with like, or declare the difference as the point of the plan, e.g. "
                f"declare = {sorted({d.split(':')[0] for d in diff})!r}",
            )
    errors = [f for f in found if f["severity"] == "error"]
    if errors and not runner.options.accept_risk:
        lines = "; ".join(f"{f['title']} ({f['evidence']})" for f in errors)
        raise EnvironmentRefused(
            f"the environment would invalidate this benchmark: {lines}",
            hint="fix it (see `fairmark doctor --host NAME`), or pass --accept-risk",
        )
    env_before = next(iter(snaps.values()))
    return env_before, found


def _software_findings(hosts: dict[str, dict[str, Any]], declared: list[str]) -> list[dict[str, Any]]:
    """A warning for each undeclared OS or kernel difference between the hosts: the verdict would be about it."""
    from fairmark.probe.hosts import software_differences

    return [
        {
            "id": "hosts-differ",
            "severity": "warn",
            "title": "the hosts run different software",
            "evidence": d,
            "why": "a verdict between these hosts measures this difference too",
            "fix": f'declare = ["{d.split(":")[0]}"] in the plan if it is the point of the comparison',
        }
        for d in software_differences(hosts, declared)
    ]
