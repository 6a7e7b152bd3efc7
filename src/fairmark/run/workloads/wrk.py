"""wrk — an HTTP benchmark against a managed nginx serving one small static file: requests/s, latency
percentiles (wrk --latency: 50, 75, 90, 99 %) and wrk's error counters (connect, read, write, timeout, and
responses that are not 2xx/3xx), each trial one `wrk -c N -t T -d D --latency` run.

Unlike `connections` (the same two programs, swept over connections, with a Lua hook), wrk's own text report is
parsed, so a trial needs no file of ours beside the command: with `client_host` the client runs on another host
than the server (nginx then also listens on the server host's test-network address) and nothing has to travel
there. wrk counts a timed-out request as an error, not in its latencies. A run that completed no request is a
failed trial (its raw output kept), whatever wrk's exit status."""

from __future__ import annotations

import re
import resource
from typing import Any

from fairmark.run.workloads import servers
from fairmark.run.workloads.base import (
    Adapter,
    MetricSpec,
    ParamSpec,
    ParseError,
    RawOutput,
    TrialContext,
    WorkloadContext,
)
from fairmark.run.workloads.connections import (
    ERRORS,
    FD_HEADROOM,
    WRK_PACKAGES,
    WRK_PARAMS,
    WRK_VERSION_ARGS,
    check_wrk_params,
    raise_fd_limit,
)

PERCENTILES = (50, 75, 90, 99)  # what wrk --latency prints
# wrk's units (its units.c): times in us/ms/s (then m, h), sizes in powers of 1024 with a B suffix.
_TIME_S = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_BINARY = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
_TIME = r"([\d.]+)(us|ms|s|m|h)"
_DONE = re.compile(rf"^\s*(\d+) requests in {_TIME}, ([\d.]+)([KMGTP]?)B read\s*$", re.M)
_RATE = re.compile(r"^Requests/sec:\s*([\d.]+)\s*$", re.M)
_TRANSFER = re.compile(r"^Transfer/sec:\s*([\d.]+)([KMGTP]?)B\s*$", re.M)
_SOCKET = re.compile(r"^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)\s*$", re.M)
_STATUS = re.compile(r"^\s*Non-2xx or 3xx responses: (\d+)\s*$", re.M)
_AVG = re.compile(rf"^\s*Latency\s+{_TIME}\s", re.M)
_PERCENTILE = re.compile(rf"^\s*(\d+)%\s+{_TIME}\s*$", re.M)


def _ms(value: str, unit: str) -> float:
    return float(value) * _TIME_S[unit] * 1000


class Wrk(Adapter):
    name = "wrk"
    summary = "wrk HTTP benchmark against a managed nginx: requests/s, latency percentiles, errors"
    packages = WRK_PACKAGES
    executables = ("wrk", "nginx")
    version_args = WRK_VERSION_ARGS
    params = (
        ParamSpec("connections", 50, "connections", "wrk -c: simultaneous open connections"),
        *WRK_PARAMS,
    )
    metrics = (
        MetricSpec("requests_s", "requests/s", "higher", "wrk's Requests/sec: completed ÷ its run time"),
        *(
            MetricSpec(f"latency_p{p}_ms", "ms", "lower", f"{p}th percentile latency (wrk --latency)")
            for p in PERCENTILES
        ),
        MetricSpec("latency_avg_ms", "ms", "lower", "mean latency of the completed requests"),
        MetricSpec("errors_total", "errors", "lower", "connect + read + write + timeout + non-2xx/3xx"),
        *(MetricSpec(f"errors_{e}", "errors", "lower", f"wrk's {e} error counter") for e in ERRORS),
        MetricSpec("requests", "requests", "higher", "requests completed in the trial"),
        MetricSpec("transfer_mib_s", "MiB/s", "higher", "wrk's Transfer/sec"),
    )
    measures = ("network", "kernel")
    remote_client = True  # the client may run on another host (client_host): nothing of ours travels there

    def check(self, params: dict[str, Any]) -> None:
        check_wrk_params(self.name, params)

    def setup(self, ctx: WorkloadContext) -> None:
        ctx.state["rlimit_nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)
        server = servers.NginxServer(
            ctx.scratch / "nginx",
            file_bytes=ctx.params["file_bytes"],
            workers=ctx.params["server_workers"],
            address=ctx.listen_address or servers.LOOPBACK,
        )
        servers.start_in(ctx, server)

    def before_trial(self, ctx: TrialContext) -> None:
        raise_fd_limit(ctx.params["connections"] + FD_HEADROOM)
        ctx.state["server"].check_alive()

    def command(self, ctx: TrialContext) -> list[str]:
        p, server = ctx.params, ctx.state["server"]
        # a client on another host connects to the server's test-network address
        url = server.url_at(server.address if ctx.client_remote else servers.LOOPBACK)
        argv = ["wrk", "--latency", "-c", str(p["connections"]), "-t", str(p["threads"])]
        return [*argv, "-d", f"{p['duration_s']}s", "--timeout", f"{p['timeout_s']}s", url]

    def parse(self, raw: RawOutput) -> dict[str, float]:
        text = raw.stdout
        done, rate = _DONE.search(text), _RATE.search(text)
        if done is None or rate is None:
            tail = " / ".join((raw.stdout + raw.stderr).strip().splitlines()[-2:])
            raise ParseError(f"wrk printed no summary (requests, Requests/sec): {tail or 'no output'}")
        socket = _SOCKET.search(text)
        status = _STATUS.search(text)
        errors = dict(zip(ERRORS[:4], map(float, socket.groups()), strict=True)) if socket else {}
        errors = {f"errors_{e}": errors.get(e, 0.0) for e in ERRORS[:4]}
        errors["errors_status"] = float(status.group(1)) if status else 0.0
        requests = int(done.group(1))
        if requests == 0:  # its latencies print as 0.00us: not a measurement
            counted = ", ".join(f"{k.removeprefix('errors_')} {v:g}" for k, v in errors.items() if v)
            raise ParseError(
                f"wrk completed no request in {done.group(2)}{done.group(3)}"
                + (f" (errors: {counted})" if counted else "")
            )
        percentiles = {int(m.group(1)): _ms(m.group(2), m.group(3)) for m in _PERCENTILE.finditer(text)}
        missing = [p for p in PERCENTILES if p not in percentiles]
        if missing:
            raise ParseError(f"wrk printed no latency distribution (--latency) for {missing}")
        avg, transfer = _AVG.search(text), _TRANSFER.search(text)
        if avg is None or transfer is None:
            raise ParseError("wrk printed no Latency or Transfer/sec line")
        return {
            "requests_s": float(rate.group(1)),
            **{f"latency_p{p}_ms": percentiles[p] for p in PERCENTILES},
            "latency_avg_ms": _ms(avg.group(1), avg.group(2)),
            "errors_total": sum(errors.values()),
            **errors,
            "requests": float(requests),
            "transfer_mib_s": float(transfer.group(1)) * _BINARY[transfer.group(2)] / 2**20,
        }

    def teardown(self, ctx: WorkloadContext) -> None:
        try:
            servers.stop_in(ctx)
        finally:
            if "rlimit_nofile" in ctx.state:
                resource.setrlimit(resource.RLIMIT_NOFILE, ctx.state.pop("rlimit_nofile"))
