"""sysbench OLTP against the managed PostgreSQL — seed 002's database SMP-scaling curve (sweep `threads`).

setup starts PostgreSQL (see pgbench.py) and runs `sysbench TEST prepare`; each trial is `sysbench TEST run`;
teardown stops the server and removes its data. MySQL/MariaDB (the seed's other curve) would be the `mysql`
driver against a managed mariadbd; it is refused with a clear error until that server is managed here."""

from __future__ import annotations

import re
import subprocess
from typing import Any

from fairmark.errors import PlanError
from fairmark.run import servers, tools
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
from fairmark.run.workloads.pgbench import check_bool, postgres_server

TESTS = ("oltp_read_only", "oltp_read_write", "oltp_write_only", "oltp_point_select", "oltp_update_index")
_PER_SEC = r"^\s*{label}:\s+\d+\s+\(([\d.]+) per sec\.\)"
_LATENCY = r"^\s*{label}:\s+([\d.]+)\s*$"
_LINES = {
    "tps": _PER_SEC.format(label="transactions"),
    "qps": _PER_SEC.format(label="queries"),
    "ignored_errors_s": _PER_SEC.format(label="ignored errors"),
    "reconnects_s": _PER_SEC.format(label="reconnects"),
    "latency_avg_ms": _LATENCY.format(label="avg"),
    "latency_p95_ms": _LATENCY.format(label="95th percentile"),
    "latency_max_ms": _LATENCY.format(label="max"),
}


class SysbenchOltp(Adapter):
    name = "sysbench-oltp"
    summary = (
        "sysbench oltp_read_only / oltp_read_write against a managed PostgreSQL: transactions/s vs threads"
    )
    packages = tools.packages(
        ("sysbench", "postgresql"), ("sysbench", "postgresql-server"), ("sysbench", "postgresql15-server")
    )
    executables = ("sysbench", str(servers.PG_BIN / "postgres"), str(servers.PG_BIN / "initdb"))
    params = (
        ParamSpec("test", "oltp_read_only", "", f"one of {', '.join(TESTS)}"),
        ParamSpec("threads", 1, "threads", "sysbench --threads (sweep it: seed 002's curve)"),
        ParamSpec("time_s", 10, "s", "sysbench --time per trial"),
        ParamSpec("tables", 4, "tables", "sysbench --tables"),
        ParamSpec("table_size", 10000, "rows", "sysbench --table-size (rows per table)"),
        ParamSpec("db", "pgsql", "", "database: pgsql (the managed PostgreSQL)"),
        ParamSpec("fsync", True, "", "PostgreSQL fsync: off measures memory speed, not durable commits"),
    )
    metrics = (
        MetricSpec("tps", "transactions/s", "higher"),
        MetricSpec("qps", "queries/s", "higher"),
        MetricSpec("latency_avg_ms", "ms", "lower"),
        MetricSpec("latency_p95_ms", "ms", "lower"),
        MetricSpec("latency_max_ms", "ms", "lower"),
        MetricSpec(
            "ignored_errors_s", "errors/s", "lower", "deadlocks and serialisation failures sysbench retried"
        ),
        MetricSpec("reconnects_s", "reconnects/s", "lower"),
    )
    measures = ("cpu", "disk", "kernel")

    def check(self, params: dict[str, Any]) -> None:
        tools.require_choice(self.name, params, "test", TESTS)
        tools.require_positive_ints(self.name, params, ("threads", "time_s", "tables", "table_size"))
        check_bool(self.name, params, "fsync")
        if params["db"] != "pgsql":
            raise PlanError(
                f"sysbench-oltp: db {params['db']!r} is not managed by fairmark yet; use db = 'pgsql'",
                key="db",
            )

    @staticmethod
    def labels(params: dict[str, Any]) -> dict[str, str]:
        return {"fsync": "on" if params["fsync"] else "off (not durable)", "db": "PostgreSQL 15"}

    def _base(self, server: servers.PostgresServer, p: dict[str, Any]) -> list[str]:
        return [
            "sysbench", p["test"], "--db-driver=pgsql", f"--pgsql-host={servers.LOOPBACK}",
            f"--pgsql-port={server.port}", "--pgsql-user=postgres", "--pgsql-db=postgres",
            f"--tables={p['tables']}", f"--table-size={p['table_size']}",
        ]  # fmt: skip

    def setup(self, ctx: WorkloadContext) -> None:
        server = postgres_server(ctx, ctx.params["fsync"])
        argv = [*self._base(server, ctx.params), f"--threads={min(ctx.params['tables'], 4)}", "prepare"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
        if res.returncode != 0:
            raise SetupError(f"sysbench prepare failed (status {res.returncode}): {res.stdout[-1500:]}")
        server.psql("VACUUM ANALYZE")  # fresh tables: statistics and visibility maps before the first trial

    def before_trial(self, ctx: TrialContext) -> None:
        ctx.state["server"].check_alive()

    def command(self, ctx: TrialContext) -> list[str]:
        p = ctx.params
        extra = [f"--threads={p['threads']}", f"--time={p['time_s']}", "--report-interval=0", "run"]
        return [*self._base(ctx.state["server"], p), *extra]

    def parse(self, raw: RawOutput) -> dict[str, float]:
        out = {}
        for name, pattern in _LINES.items():
            m = re.search(pattern, raw.stdout, re.MULTILINE)
            if m:
                out[name] = tools.number(m.group(1), name)
        if "tps" not in out:
            fatal = [line for line in (raw.stdout + raw.stderr).splitlines() if "FATAL" in line][:2]
            raise ParseError("sysbench printed no 'transactions: N (X per sec.)' line " + " / ".join(fatal))
        if out["tps"] <= 0:
            raise ParseError("sysbench completed no transaction")
        return out

    def teardown(self, ctx: WorkloadContext) -> None:
        servers.stop_in(ctx)
