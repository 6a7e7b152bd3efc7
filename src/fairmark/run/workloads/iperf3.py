"""iperf3 over loopback — seed 000's network test (`iperf3 -n 100G` ×10 on debug vs nodebug kernels).

One server per workload on a free 127.0.0.1 port (our child, stopped by PID at teardown); each trial is one
client run with `-J` (JSON) and `-O 1`, because the first second is much slower here (TCP ramp-up). With
`bytes` set the client sends that amount instead of running for `duration_s` (the seed's form)."""

from __future__ import annotations

import json
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

GBIT = 1e9


class Iperf3(Adapter):
    name = "iperf3"
    summary = "iperf3 TCP throughput over loopback: Gbit/s sent and received, retransmits, CPU %"
    packages = tools.packages(("iperf3",), ("iperf3",), ("iperf3",))
    remote_client = True  # the client may run on another host (client_host)
    executables = ("iperf3",)
    params = (
        ParamSpec("duration_s", 5, "s", "client -t: seconds to send (ignored when bytes is set)"),
        ParamSpec("parallel", 1, "streams", "client -P: parallel TCP streams"),
        ParamSpec(
            "bytes", "", "bytes", "client -n: send this much instead of a fixed time, e.g. '100G' (seed 000)"
        ),
        ParamSpec("reverse", False, "", "client -R: the server sends, the client receives"),
        ParamSpec("omit_s", 1, "s", "client -O: leading seconds left out of the result (ramp-up)"),
    )
    metrics = (
        MetricSpec("gbit_s_sent", "Gbit/s", "higher", "end.sum_sent.bits_per_second"),
        MetricSpec("gbit_s_received", "Gbit/s", "higher", "end.sum_received.bits_per_second"),
        MetricSpec("retransmits", "segments", "lower", "TCP retransmits on the sending side"),
        MetricSpec("cpu_pct_host", "%", "lower", "client CPU utilisation (user+system)"),
        MetricSpec("cpu_pct_remote", "%", "lower", "server CPU utilisation (user+system)"),
    )
    measures = ("network", "kernel")

    def check(self, params: dict[str, Any]) -> None:
        tools.require_positive_ints(self.name, params, ("duration_s", "parallel"))
        if not isinstance(params["reverse"], bool):
            raise PlanError(
                f"iperf3: reverse must be true or false, got {params['reverse']!r}", key="reverse"
            )
        if (
            isinstance(params["omit_s"], bool)
            or not isinstance(params["omit_s"], int)
            or params["omit_s"] < 0
        ):
            raise PlanError(f"iperf3: omit_s must be an integer ≥ 0, got {params['omit_s']!r}", key="omit_s")
        if params["bytes"] not in ("", None):
            tools.parse_size(params["bytes"], "bytes")

    def setup(self, ctx: WorkloadContext) -> None:
        # With a client on another host the server binds the host's test-network address (iperf3 has no client
        # filter: the test network is the fence), and local trials connect to it too.
        address = ctx.listen_address or servers.LOOPBACK
        servers.start_in(ctx, servers.Iperf3Server(ctx.scratch / "iperf3-server", address=address))

    def before_trial(self, ctx: TrialContext) -> None:
        ctx.state["server"].check_alive()

    def command(self, ctx: TrialContext) -> list[str]:
        p, port = ctx.params, ctx.state["server"].port
        argv = ["iperf3", "-c", ctx.state["server"].address, "-p", str(port), "-J", "-P", str(p["parallel"])]
        if p["bytes"] not in ("", None):
            argv += ["-n", str(tools.parse_size(p["bytes"], "bytes"))]
        else:
            argv += ["-t", str(p["duration_s"]), "-O", str(p["omit_s"])]
        if p["reverse"]:
            argv.append("-R")
        return argv

    def parse(self, raw: RawOutput) -> dict[str, float]:
        try:
            doc = json.loads(raw.stdout)
        except json.JSONDecodeError as exc:
            raise ParseError(f"iperf3 -J output is not JSON: {exc}") from None
        if doc.get("error"):  # iperf3 3.12 may exit 0 with only an error in its JSON
            raise ParseError(f"iperf3 reported an error: {doc['error']}")
        end = doc.get("end") or {}
        try:
            sent, received = end["sum_sent"], end["sum_received"]
            cpu = end["cpu_utilization_percent"]
            out = {
                "gbit_s_sent": float(sent["bits_per_second"]) / GBIT,
                "gbit_s_received": float(received["bits_per_second"]) / GBIT,
                "cpu_pct_host": float(cpu["host_total"]),
                "cpu_pct_remote": float(cpu["remote_total"]),
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(
                f"iperf3 JSON lacks end.sum_sent/sum_received/cpu_utilization_percent ({exc})"
            ) from None
        if "retransmits" in sent:  # only where the kernel reports it (Linux, FreeBSD)
            out["retransmits"] = float(sent["retransmits"])
        if out["gbit_s_received"] <= 0:
            raise ParseError("iperf3 received nothing (0 bit/s)")
        return out

    def teardown(self, ctx: WorkloadContext) -> None:
        servers.stop_in(ctx)
