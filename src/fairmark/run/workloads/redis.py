"""redis — seed 003's small-transaction cache server, over TCP loopback or a Unix socket.

A managed redis-server (no persistence: `--save '' --appendonly no`) listens on a free 127.0.0.1 port and on a
private Unix socket at once, so `transport` can be swept (tcp vs unix) against one server. Each trial is one
`redis-benchmark --csv` run; the primary metric is the requests/s of the first test in `tests`."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from fairmark.errors import PlanError
from fairmark.run.workloads import servers, tools
from fairmark.run.workloads.base import (
    Adapter,
    MetricSpec,
    ParamSpec,
    ParseError,
    RawOutput,
    TrialContext,
    WorkloadContext,
)

# redis-benchmark 7's test names (-t takes them in lower case; --csv prints them in upper case).
TESTS = (
    "ping_inline",
    "ping_mbulk",
    "set",
    "get",
    "incr",
    "lpush",
    "rpush",
    "lpop",
    "rpop",
    "sadd",
    "hset",
    "spop",
    "zadd",
    "zpopmin",
    "lrange_100",
    "lrange_300",
    "lrange_500",
    "lrange_600",
    "mset",
)
TRANSPORTS = ("tcp", "unix")


def _test_key(label: str) -> str:
    # "PING_INLINE" → ping_inline; "LRANGE_100 (first 100 elements)" → lrange_100; "MSET (10 keys)" → mset
    return label.split(" ")[0].strip().lower()


def _per_test_metrics() -> tuple[MetricSpec, ...]:
    out: list[MetricSpec] = []
    for t in TESTS:
        out += [
            MetricSpec(f"rps_{t}", "requests/s", "higher", f"{t.upper()} requests per second"),
            MetricSpec(f"latency_p50_ms_{t}", "ms", "lower"),
            MetricSpec(f"latency_p99_ms_{t}", "ms", "lower"),
        ]
    return tuple(out)


class Redis(Adapter):
    name = "redis"
    summary = "redis-benchmark against a managed redis-server over TCP loopback or a Unix socket"
    packages = tools.packages(("redis-server", "redis-tools"), ("redis",), ("redis",))
    executables = ("redis-server", "redis-benchmark")
    version_args = tools.version_options({"redis-server": ("--version",), "redis-benchmark": ("--version",)})
    params = (
        ParamSpec(
            "transport",
            "tcp",
            "",
            "tcp (127.0.0.1) or unix (a private Unix socket); or a table variant → transport, "
            "e.g. { tcp = 'tcp', unix = 'unix' }, to compare the two as variants A and B",
        ),
        ParamSpec(
            "tests", "get,set", "", "redis-benchmark -t, comma-separated; the first one is the primary"
        ),
        ParamSpec("clients", 50, "connections", "redis-benchmark -c"),
        ParamSpec("pipeline", 1, "requests", "redis-benchmark -P: requests in flight per connection"),
        ParamSpec("data_size", 3, "bytes", "redis-benchmark -d: value size of SET/GET"),
        ParamSpec("requests", 100000, "requests", "redis-benchmark -n: requests per test"),
        ParamSpec("threads", 0, "threads", "redis-benchmark --threads (0: its default, one thread)"),
    )
    metrics = (
        MetricSpec("rps", "requests/s", "higher", "requests per second of the first test"),
        MetricSpec("latency_p50_ms", "ms", "lower", "median latency of the first test"),
        MetricSpec("latency_p99_ms", "ms", "lower", "99th percentile latency of the first test"),
        MetricSpec("latency_avg_ms", "ms", "lower", "average latency of the first test"),
        *_per_test_metrics(),
    )
    measures = ("network", "kernel")
    remote_client = True  # redis-benchmark may run on another host (client_host), over TCP

    def check(self, params: dict[str, Any]) -> None:
        transport = params["transport"]
        choices = transport.values() if isinstance(transport, dict) else [transport]
        if not choices or any(t not in TRANSPORTS for t in choices):
            raise PlanError(
                f"redis: transport must be tcp, unix, or a table of variant = tcp|unix; got {transport!r}",
                key="transport",
            )
        tools.require_positive_ints(self.name, params, ("clients", "pipeline", "data_size", "requests"))
        if (
            isinstance(params["threads"], bool)
            or not isinstance(params["threads"], int)
            or params["threads"] < 0
        ):
            raise PlanError(
                f"redis: threads must be an integer ≥ 0, got {params['threads']!r}", key="threads"
            )
        unknown = [t for t in self.test_list(params) if t not in TESTS]
        if unknown or not self.test_list(params):
            raise PlanError(
                f"redis: unknown test(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(TESTS)}",
                key="tests",
            )

    def client_host_refusal(self, params: dict[str, Any], variant: str) -> str | None:
        """Why this variant's client cannot run on another host (None: it can)."""
        if transport_for(params.get("transport", "tcp"), variant) == "unix":
            return "redis: a client on another host (client_host) needs transport = 'tcp'; a Unix socket stays on one host"
        return None

    @staticmethod
    def test_list(params: dict[str, Any]) -> list[str]:
        tests = params["tests"]
        items = tests if isinstance(tests, list) else str(tests).split(",")
        return [str(t).strip().lower() for t in items if str(t).strip()]

    def setup(self, ctx: WorkloadContext) -> None:
        address = ctx.listen_address or servers.LOOPBACK
        servers.start_in(ctx, servers.RedisServer(ctx.scratch / "redis-server", address=address))

    def command(self, ctx: TrialContext) -> list[str]:
        p, server = ctx.params, ctx.state["server"]
        if transport_for(p["transport"], ctx.variant) == "unix":
            where = ["-s", str(server.socket)]
        else:  # a client on another host connects to the server's test-network address
            where = ["-h", server.address if ctx.client_remote else servers.LOOPBACK, "-p", str(server.port)]
        argv = ["redis-benchmark", *where, "--csv", "-t", ",".join(self.test_list(p))]
        argv += ["-c", str(p["clients"]), "-P", str(p["pipeline"]), "-d", str(p["data_size"])]
        argv += ["-n", str(p["requests"])]
        if p["threads"]:
            argv += ["--threads", str(p["threads"])]
        return argv

    def before_trial(self, ctx: TrialContext) -> None:
        # redis-benchmark runs its tests in its own order, whatever -t says; the plan's first test is the
        # primary one, so parse is told which (through a file, to stay a pure function of its input).
        (ctx.trial_dir / "primary-test").write_text(self.test_list(ctx.params)[0])
        ctx.state["server"].check_alive()  # redis-benchmark would spin forever against a dead server

    def output_files(self, ctx: TrialContext) -> dict[str, Path]:
        return {"primary-test": ctx.trial_dir / "primary-test"}

    def parse(self, raw: RawOutput) -> dict[str, float]:
        rows = [r for r in csv.DictReader(io.StringIO(raw.stdout)) if r.get("test")]
        if not rows:
            raise ParseError("redis-benchmark --csv printed no result rows" + _stderr_hint(raw.stderr))
        out: dict[str, float] = {}
        for row in rows:
            out |= _row_metrics(row)
        primary = (raw.files.get("primary-test") or "").strip() or _test_key(rows[0]["test"])
        if f"rps_{primary}" not in out:
            raise ParseError(f"redis-benchmark printed no result for the primary test {primary!r}")
        row = next(r for r in rows if _test_key(r["test"]) == primary)
        return out | {
            "rps": out[f"rps_{primary}"],
            "latency_p50_ms": out[f"latency_p50_ms_{primary}"],
            "latency_p99_ms": out[f"latency_p99_ms_{primary}"],
            "latency_avg_ms": tools.number(row.get("avg_latency_ms") or "", f"{primary} avg"),
        }

    def teardown(self, ctx: WorkloadContext) -> None:
        servers.stop_in(ctx)


def transport_for(transport: str | dict[str, str], variant: str) -> str:
    """The transport of one variant's trials: variants cannot set tool parameters, so a plan comparing TCP
    with Unix sockets maps variant names to transports here."""
    if not isinstance(transport, dict):
        return transport
    if variant not in transport:
        raise PlanError(
            f"redis: transport table has no entry for variant {variant!r} (it names {', '.join(transport)})",
            key="transport",
        )
    return transport[variant]


def _row_metrics(row: dict[str, str]) -> dict[str, float]:
    t = _test_key(row["test"])
    values = {
        f"rps_{t}": tools.number(row.get("rps") or "", f"{t} rps"),
        f"latency_p50_ms_{t}": tools.number(row.get("p50_latency_ms") or "", f"{t} p50"),
        f"latency_p99_ms_{t}": tools.number(row.get("p99_latency_ms") or "", f"{t} p99"),
    }
    if values[f"rps_{t}"] <= 0:
        raise ParseError(f"redis-benchmark reported {row['rps']} requests/s for {t}")
    return values


def _stderr_hint(stderr: str) -> str:
    tail = stderr.strip().splitlines()[-2:]
    return f" (stderr: {' / '.join(tail)})" if tail else ""
