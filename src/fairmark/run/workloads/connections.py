"""connections — seed 004's MailEngine curve: throughput and errors against the number of simultaneous
connections. A managed nginx serves one small static file on a free loopback port; each trial is
`wrk -c N -t T -d D` with a Lua `done()` hook that prints one JSON line (requests, duration, and wrk's error
counters: connect, read, write, timeout, non-2xx status). Sweep `connections` (e.g. 100 … 3000) in the plan;
the report names the peak and where errors start. The fd limit (RLIMIT_NOFILE) is raised for the trial tree
when a cell needs more descriptors than the soft limit allows, and put back at teardown."""

from __future__ import annotations

import json
import resource
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

MARK = "FAIRMARK_JSON "
DONE_LUA = """\
-- fairmark: one machine-readable line at the end of the run (wrk prints no JSON of its own)
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('%s{"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"latency_mean_us":%.3f,"latency_p50_us":%d,"latency_p99_us":%d}\\n',
    "{mark}", summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(99)))
end
"""
ERRORS = ("connect", "read", "write", "timeout", "status")
FD_HEADROOM = 256  # stdio, the Lua state, epoll, and the threads' own descriptors


# What `connections` and `wrk` (the same two programs) share: the client's and the server's parameters.
WRK_PACKAGES = tools.packages(("wrk", "nginx-light"), ("wrk", "nginx"), ("wrk", "nginx"))
WRK_VERSION_ARGS = tools.version_options({"wrk": ("-v",), "nginx": ("-v",)})
WRK_PARAMS = (
    ParamSpec("threads", 2, "threads", "wrk -t: client threads (≤ connections)"),
    ParamSpec("duration_s", 5, "s", "wrk -d: seconds per trial"),
    ParamSpec("timeout_s", 2, "s", "wrk --timeout: a response slower than this counts as a timeout error"),
    ParamSpec("file_bytes", 612, "bytes", "size of the static file served (nginx's default page is 612)"),
    ParamSpec("server_workers", "auto", "processes", "nginx worker_processes"),
)


class Connections(Adapter):
    name = "connections"
    summary = "wrk against a managed nginx, swept over simultaneous connections: requests/s and errors"
    packages = WRK_PACKAGES
    executables = ("wrk", "nginx")
    version_args = WRK_VERSION_ARGS
    params = (
        ParamSpec("connections", 100, "connections", "wrk -c: simultaneous open connections (sweep it)"),
        *WRK_PARAMS,
    )
    metrics = (
        MetricSpec("requests_s", "requests/s", "higher", "completed requests ÷ wrk's measured duration"),
        MetricSpec("errors_total", "errors", "lower", "connect + read + write + timeout + non-2xx/3xx"),
        *(MetricSpec(f"errors_{e}", "errors", "lower", f"wrk's {e} error counter") for e in ERRORS),
        MetricSpec("latency_avg_ms", "ms", "lower"),
        MetricSpec("latency_p50_ms", "ms", "lower"),
        MetricSpec("latency_p99_ms", "ms", "lower"),
        MetricSpec("transfer_mib_s", "MiB/s", "higher"),
    )
    measures = ("network", "kernel")

    def check(self, params: dict[str, Any]) -> None:
        check_wrk_params(self.name, params)

    def setup(self, ctx: WorkloadContext) -> None:
        ctx.state["rlimit_nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)
        script = ctx.scratch / "fairmark-done.lua"
        script.write_text(DONE_LUA.replace("{mark}", MARK))
        ctx.state["lua"] = script
        server = servers.NginxServer(
            ctx.scratch / "nginx", file_bytes=ctx.params["file_bytes"], workers=ctx.params["server_workers"]
        )
        servers.start_in(ctx, server)

    def before_trial(self, ctx: TrialContext) -> None:
        raise_fd_limit(ctx.params["connections"] + FD_HEADROOM)
        ctx.state["server"].check_alive()

    def command(self, ctx: TrialContext) -> list[str]:
        p = ctx.params
        return [
            "wrk",
            "-c",
            str(p["connections"]),
            "-t",
            str(p["threads"]),
            "-d",
            f"{p['duration_s']}s",
            "--timeout",
            f"{p['timeout_s']}s",
            "-s",
            str(ctx.state["lua"]),
            ctx.state["server"].url,
        ]

    def parse(self, raw: RawOutput) -> dict[str, float]:
        line = next((ln for ln in raw.stdout.splitlines() if ln.startswith(MARK)), None)
        if line is None:
            tail = " / ".join((raw.stdout + raw.stderr).strip().splitlines()[-2:])
            raise ParseError(f"wrk printed no {MARK.strip()} line (the done() hook did not run): {tail}")
        try:
            doc = json.loads(line[len(MARK) :])
            seconds = doc["duration_us"] / 1e6
            errors = {f"errors_{e}": float(doc[e]) for e in ERRORS}
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ParseError(f"wrk's summary line is malformed ({exc}): {line[:200]}") from None
        if seconds <= 0 or (doc["requests"] == 0 and not any(errors.values())):
            raise ParseError("wrk ran no request and counted no error")
        out = {"requests_s": doc["requests"] / seconds, "errors_total": sum(errors.values()), **errors}
        if doc["requests"] > 0:  # latency of nothing is not a number
            out |= {
                "latency_avg_ms": doc["latency_mean_us"] / 1000,
                "latency_p50_ms": doc["latency_p50_us"] / 1000,
                "latency_p99_ms": doc["latency_p99_us"] / 1000,
            }
        return out | {"transfer_mib_s": doc["bytes"] / seconds / 2**20}

    def teardown(self, ctx: WorkloadContext) -> None:
        try:
            servers.stop_in(ctx)
            lua = ctx.state.pop("lua", None)
            if lua is not None:
                lua.unlink(missing_ok=True)
        finally:
            if "rlimit_nofile" in ctx.state:
                resource.setrlimit(resource.RLIMIT_NOFILE, ctx.state.pop("rlimit_nofile"))


def check_wrk_params(tool: str, params: dict[str, Any]) -> None:
    """The parameters a wrk run against the managed nginx takes (this tool's and `wrk`'s)."""
    tools.require_positive_ints(tool, params, ("connections", "threads", "duration_s", "timeout_s"))
    tools.require_positive_ints(tool, params, ("file_bytes",))
    if params["threads"] > params["connections"]:
        raise PlanError(
            f"{tool}: threads ({params['threads']}) must be ≤ connections ({params['connections']})",
            key="threads",
        )
    workers = params["server_workers"]
    if workers != "auto" and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise PlanError(
            f"{tool}: server_workers must be 'auto' or ≥ 1, got {workers!r}", key="server_workers"
        )


def raise_fd_limit(needed: int) -> None:
    """Let this process and its children (the trial) open `needed` descriptors, or say why they cannot."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (needed, needed))  # only root may raise the hard limit
            return
        except (ValueError, PermissionError):
            raise SetupError(
                f"connections: {needed} file descriptors needed, the hard limit is {hard}",
                hint=f"raise it (ulimit -Hn {needed} as root, or limits.conf / login.conf) or sweep fewer connections",
            ) from None
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
