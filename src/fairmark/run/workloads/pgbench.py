"""pgbench against a PostgreSQL 15 that fairmark manages — seed 003's database benchmark done its way.

setup: initdb into the workload's scratch directory (as `postgres` when root), start on a free loopback port
with a private socket directory, `pgbench -i -s SCALE` (its init steps include VACUUM). `restart = true`
restarts the server before every trial (seed 003: "crucial that the PostgreSQL server itself be restarted
between the benchmarks"). `fsync` is on by default; with it off the numbers measure memory, not durability
(≈ 4× here) — the setting is part of the workload's parameters and of `labels()`, so reports can say which."""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any

from fairmark.errors import PlanError
from fairmark.run.workloads import servers, tools
from fairmark.run.workloads.base import (
    Adapter,
    MetricSpec,
    ParamSpec,
    ParseError,
    RawOutput,
    SetupError,
    TrialContext,
    WorkloadContext,
)

MODES = {"tpcb": [], "select-only": ["-S"], "simple-update": ["-N"]}
TRANSPORTS = ("tcp", "unix")
_LINES = {
    "tps": r"^tps = ([\d.]+) \(without initial connection time\)",
    "latency_avg_ms": r"^latency average = ([\d.]+) ms",
    "failed_transactions": r"^number of failed transactions: (\d+)",
    "transactions": r"^number of transactions actually processed: (\d+)",
}


def postgres_server(ctx: WorkloadContext, fsync: bool) -> servers.PostgresServer:
    """Start the workload's PostgreSQL (shared by pgbench and sysbench-oltp); teardown stops and removes it."""
    server = servers.PostgresServer(ctx.scratch / "postgres", fsync=fsync)
    if ctx.listen_address:  # clients on other hosts too
        server = servers.PostgresServer(
            ctx.scratch / "postgres", fsync=fsync, address=ctx.listen_address, clients=ctx.client_addresses
        )
    return servers.start_in(ctx, server)


def check_bool(tool: str, params: dict[str, Any], *names: str) -> None:
    for name in names:
        if not isinstance(params[name], bool):
            raise PlanError(f"{tool}: {name} must be true or false, got {params[name]!r}", key=name)


class Pgbench(Adapter):
    name = "pgbench"
    summary = "pgbench TPC-B-like or select-only against a managed PostgreSQL: tps, latency, failures"
    packages = tools.packages(
        ("postgresql", "postgresql-contrib"),
        ("postgresql-server", "postgresql-contrib"),
        ("postgresql15-server",),
    )
    remote_client = True  # pgbench connects over TCP to the server on another host
    executables = ("pgbench", str(servers.PG_BIN / "postgres"), str(servers.PG_BIN / "initdb"))
    params = (
        ParamSpec("scale", 5, "", "pgbench -i -s: scale factor (100 000 accounts each)"),
        ParamSpec(
            "clients", 1, "connections", "pgbench -c: concurrent clients (sweep it for a scaling curve)"
        ),
        ParamSpec("threads", 0, "threads", "pgbench -j: client threads (0: min(clients, CPUs))"),
        ParamSpec(
            "duration_s", 10, "s", "pgbench -T: seconds per trial (seed 003: long runs on real hardware)"
        ),
        ParamSpec("mode", "tpcb", "", "tpcb, select-only (-S) or simple-update (-N)"),
        ParamSpec("fsync", True, "", "PostgreSQL fsync: off measures memory speed, not durable commits"),
        ParamSpec("restart", False, "", "restart the server before every trial (seed 003)"),
        ParamSpec("transport", "tcp", "", "tcp (127.0.0.1) or unix (the server's private socket directory)"),
    )
    metrics = (
        MetricSpec("tps", "transactions/s", "higher", "without initial connection time"),
        MetricSpec("latency_avg_ms", "ms", "lower"),
        MetricSpec("failed_transactions", "transactions", "lower"),
        MetricSpec("transactions", "transactions", "higher", "transactions processed in the trial"),
    )
    measures = ("cpu", "disk", "kernel")

    def check(self, params: dict[str, Any]) -> None:
        tools.require_positive_ints(self.name, params, ("scale", "clients", "duration_s"))
        tools.require_choice(self.name, params, "mode", MODES)
        tools.require_choice(self.name, params, "transport", TRANSPORTS)
        check_bool(self.name, params, "fsync", "restart")
        threads = params["threads"]
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise PlanError(f"pgbench: threads must be an integer ≥ 0, got {threads!r}", key="threads")
        if threads > params["clients"]:
            raise PlanError(
                f"pgbench: threads ({threads}) must be ≤ clients ({params['clients']})", key="threads"
            )

    @staticmethod
    def labels(params: dict[str, Any]) -> dict[str, str]:
        """What a report must state next to the numbers."""
        return {"fsync": "on" if params["fsync"] else "off (not durable)", "mode": params["mode"]}

    def setup(self, ctx: WorkloadContext) -> None:
        server = postgres_server(ctx, ctx.params["fsync"])
        argv = [
            "pgbench",
            *self._conn(server, "tcp"),  # loopback: the data set is loaded on the server's own host
            "-i",
            "-I",
            "dtgvp",
            "-q",
            "-s",
            str(ctx.params["scale"]),
        ]
        res = subprocess.run([*argv, "postgres"], capture_output=True, text=True, timeout=3600)
        if res.returncode != 0:
            raise SetupError(f"pgbench -i failed (status {res.returncode}): {res.stderr.strip()[-1500:]}")

    def before_trial(self, ctx: TrialContext) -> None:
        if ctx.params["restart"]:
            ctx.state["server"].restart()
        ctx.state["server"].check_alive()

    def command(self, ctx: TrialContext) -> list[str]:
        p = ctx.params
        if ctx.client_remote and p["transport"] == "unix":
            raise SetupError("pgbench: transport = unix cannot reach a server on another host (client_host)")
        threads = p["threads"] or min(p["clients"], _cpus())
        argv = [
            "pgbench",
            *self._conn(ctx.state["server"], p["transport"], ctx.client_remote),
            *MODES[p["mode"]],
        ]
        return [*argv, "-c", str(p["clients"]), "-j", str(threads), "-T", str(p["duration_s"]), "postgres"]

    @staticmethod
    def _conn(server: servers.PostgresServer, transport: str, remote: bool = False) -> list[str]:
        host = (
            str(server.socket_dir)
            if transport == "unix"
            else (server.address if remote else servers.LOOPBACK)
        )
        return ["-h", host, "-p", str(server.port), "-U", "postgres"]

    def parse(self, raw: RawOutput) -> dict[str, float]:
        out = {}
        for name, pattern in _LINES.items():
            m = re.search(pattern, raw.stdout, re.MULTILINE)
            if m:
                out[name] = tools.number(m.group(1), name)
        if "tps" not in out:
            tail = " / ".join(raw.stderr.strip().splitlines()[-2:])
            raise ParseError(
                "pgbench printed no 'tps = … (without initial connection time)' line" + f" ({tail})"
            )
        if out.get("transactions") == 0:
            raise ParseError("pgbench processed no transaction")
        return out

    def teardown(self, ctx: WorkloadContext) -> None:
        servers.stop_in(ctx)


def _cpus() -> int:
    return len(os.sched_getaffinity(0))  # the CPUs this run may use (a `cpus` sweep narrows them)
