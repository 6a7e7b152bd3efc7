"""sysbench OLTP against a managed PostgreSQL or MariaDB — seed 002's database SMP-scaling curves (sweep
`threads`; the seed measured MySQL and PostgreSQL).

setup starts the server (`db = "pgsql"`: PostgreSQL, see pgbench.py; `db = "mysql"`: MariaDB started by fairmark
itself, servers.MariadbServer) and runs `sysbench TEST prepare`; each trial is `sysbench TEST run`; teardown
stops the server and removes its data."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping
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
from fairmark.run.workloads.pgbench import check_bool, postgres_server

DATABASES = {"pgsql": "PostgreSQL 15", "mysql": "MariaDB 10.11"}
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
        "sysbench oltp_read_only / oltp_read_write against a managed PostgreSQL or MariaDB: transactions/s vs "
        "threads"
    )
    packages = tools.packages(
        ("sysbench", "postgresql", "mariadb-server"),
        ("sysbench", "postgresql-server", "mariadb-server"),
        ("sysbench", "postgresql15-server", "mariadb-server"),
    )
    executables = ("sysbench", str(servers.PG_BIN / "postgres"), str(servers.PG_BIN / "initdb"))
    params = (
        ParamSpec("test", "oltp_read_only", "", f"one of {', '.join(TESTS)}"),
        ParamSpec("threads", 1, "threads", "sysbench --threads (sweep it: seed 002's curve)"),
        ParamSpec("time_s", 10, "s", "sysbench --time per trial"),
        ParamSpec("tables", 4, "tables", "sysbench --tables"),
        ParamSpec("table_size", 10000, "rows", "sysbench --table-size (rows per table)"),
        ParamSpec("db", "pgsql", "", "database: pgsql (managed PostgreSQL) or mysql (managed MariaDB)"),
        ParamSpec(
            "fsync",
            True,
            "",
            "durable commits (PostgreSQL fsync, InnoDB flush at commit): off measures memory",
        ),
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
    remote_client = True  # sysbench may run on another host (client_host), against PostgreSQL

    def executables_for(self, params: Mapping[str, Any]) -> tuple[str, ...]:
        if params.get("db") == "mysql":
            return ("sysbench", "mariadbd", "mariadb-install-db")
        return self.executables

    def check(self, params: dict[str, Any]) -> None:
        tools.require_choice(self.name, params, "test", TESTS)
        tools.require_positive_ints(self.name, params, ("threads", "time_s", "tables", "table_size"))
        check_bool(self.name, params, "fsync")
        tools.require_choice(self.name, params, "db", DATABASES)
        if params["db"] == "mysql" and shutil.which("mariadbd") is None:
            raise PlanError("sysbench-oltp: db = 'mysql' needs mariadbd (Debian: mariadb-server)", key="db")

    @staticmethod
    def labels(params: dict[str, Any]) -> dict[str, str]:
        return {"fsync": "on" if params["fsync"] else "off (not durable)", "db": DATABASES[params["db"]]}

    def client_host_refusal(self, params: dict[str, Any], variant: str) -> str | None:
        """Why this variant's client cannot run on another host (None: it can)."""
        if params.get("db", "pgsql") == "mysql":
            return (
                "sysbench-oltp: a client on another host (client_host) needs db = 'pgsql'; the managed MariaDB "
                "runs without grant tables, so it listens on loopback only"
            )
        return None

    def _base(
        self, server: servers.ManagedServer, p: dict[str, Any], host: str = servers.LOOPBACK
    ) -> list[str]:
        driver, user, db = (
            ("mysql", "root", "sbtest") if p["db"] == "mysql" else ("pgsql", "postgres", "postgres")
        )
        return [
            "sysbench",
            p["test"],
            f"--db-driver={driver}",
            f"--{driver}-host={host}",
            f"--{driver}-port={server.port}",
            f"--{driver}-user={user}",
            f"--{driver}-db={db}",
            f"--tables={p['tables']}",
            f"--table-size={p['table_size']}",
        ]

    def setup(self, ctx: WorkloadContext) -> None:
        if ctx.params["db"] == "mysql":
            mdb = servers.MariadbServer(ctx.scratch / "mariadb", fsync=ctx.params["fsync"])
            server: servers.MariadbServer | servers.PostgresServer = servers.start_in(ctx, mdb)
        else:
            server = postgres_server(ctx, ctx.params["fsync"])
        argv = [*self._base(server, ctx.params), f"--threads={min(ctx.params['tables'], 4)}", "prepare"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
        if res.returncode != 0:
            raise SetupError(f"sysbench prepare failed (status {res.returncode}): {res.stdout[-1500:]}")
        # Fresh tables: statistics (and PostgreSQL's visibility maps) before the first trial.
        if isinstance(server, servers.MariadbServer):
            tables = ", ".join(f"sbtest.sbtest{i}" for i in range(1, ctx.params["tables"] + 1))
            server.sql(f"ANALYZE TABLE {tables}")
        else:
            server.psql("VACUUM ANALYZE")

    def before_trial(self, ctx: TrialContext) -> None:
        ctx.state["server"].check_alive()

    def command(self, ctx: TrialContext) -> list[str]:
        p = ctx.params
        extra = [f"--threads={p['threads']}", f"--time={p['time_s']}", "--report-interval=0", "run"]
        server = ctx.state["server"]
        # a client on another host (client_host) connects to the server's test-network address
        host = server.address if ctx.client_remote else servers.LOOPBACK
        return [*self._base(server, p, host), *extra]

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
