"""dbench — a file-server (SMB) load replayed on the local file system by N client processes, the kind of
small-file, metadata-heavy work of seed 003's file-system tests. Result: `Throughput N MB/sec  C clients …`.
dbench prints `failed to create barrier semaphore` on Linux and still completes: not an error."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fairmark.errors import PlanError
from fairmark.run.workloads import tools
from fairmark.run.workloads.base import (
    Adapter,
    DataSet,
    MetricSpec,
    ParamSpec,
    ParseError,
    RawOutput,
    TrialContext,
    WorkloadContext,
)

_RESULT = re.compile(
    r"^Throughput ([\d.]+) MB/sec\s+(\d+) clients\s+(\d+) procs\s+max_latency=([\d.]+) ms", re.MULTILINE
)
CLIENT_FOOTPRINT_BYTES = 24 * tools.MIB  # files one client of client.txt holds at its peak (measured)
_LOADFILES = (
    "/usr/share/dbench/client.txt",
    "/usr/local/share/dbench/client.txt",
    "/usr/share/dbench4/client.txt",
)


class Dbench(Adapter):
    name = "dbench"
    summary = "dbench N clients on a private directory: MB/s and max latency"
    packages = tools.packages(("dbench",), ("dbench",), ("dbench",))
    executables = ("dbench",)
    version_args = tools.version_options(
        {"dbench": ("--help",)}
    )  # the first line of its usage names the version
    params = (
        ParamSpec("clients", 2, "clients", "client processes (sweep it for a scaling curve)"),
        ParamSpec("duration_s", 10, "s", "dbench -t"),
        ParamSpec("directory", "", "", "file system under test (default: the workload's scratch dir)"),
        ParamSpec("sync", False, "", "dbench -s: synchronous file I/O"),
        ParamSpec("loadfile", "", "", "client load file (default: the packaged client.txt)"),
        ParamSpec("small_size_reason", "", "", "run although the data set is far below 2 × RAM, because …"),
    )
    metrics = (
        MetricSpec("throughput_mb_s", "MB/s", "higher"),
        MetricSpec("max_latency_ms", "ms", "lower", "slowest single operation"),
    )
    measures = ("disk", "kernel")

    def check(self, params: dict[str, Any]) -> None:
        tools.require_positive_ints(self.name, params, ("clients", "duration_s"))
        if params["duration_s"] < 2:
            raise PlanError(
                "dbench: duration_s must be ≥ 2 (a 1-second run reports 0 MB/sec)", key="duration_s"
            )
        tools.require_directory("dbench", params)
        if params["loadfile"] and not Path(params["loadfile"]).is_file():
            raise PlanError(f"dbench: loadfile {params['loadfile']!r} does not exist", key="loadfile")

    def data_set(self, params: Mapping[str, Any]) -> DataSet:
        # dbench has no size option: each client replays the same load on its own files (peak footprint
        # measured here with the packaged client.txt: 23.7 MB for 1 client, 92.8 MB for 4, `du -sb` each 0.5 s)
        size = params["clients"] * CLIENT_FOOTPRINT_BYTES
        return DataSet(size, params["directory"], bool(params["sync"]), params["small_size_reason"])

    def claimed_io(self, params: Mapping[str, Any], values: Mapping[str, float]) -> dict[str, float]:
        # dbench's throughput counts the bytes its clients read and wrote together (MB = 10^6 bytes)
        rate = values.get("throughput_mb_s")
        if not rate:
            return {}
        return {"io_mib_s": rate * 1e6 / tools.MIB, "io_bytes": rate * 1e6 * params["duration_s"]}

    def setup(self, ctx: WorkloadContext) -> None:
        ctx.state["dir"] = tools.private_dir(ctx.params["directory"] or ctx.scratch, "dbench")

    def command(self, ctx: TrialContext) -> list[str]:
        p = ctx.params
        argv = ["dbench", "-D", str(ctx.state["dir"]), "-t", str(p["duration_s"])]
        loadfile = p["loadfile"] or next((f for f in _LOADFILES if Path(f).is_file()), "")
        if loadfile:  # some builds look for client.txt elsewhere than where the package put it
            argv += ["-c", loadfile]
        if p["sync"]:
            argv.append("-s")
        return [*argv, str(p["clients"])]

    def parse(self, raw: RawOutput) -> dict[str, float]:
        return parse_text(raw.stdout)

    def teardown(self, ctx: WorkloadContext) -> None:
        tools.remove_dir(ctx.state.pop("dir", None))


def parse_text(text: str) -> dict[str, float]:
    m = _RESULT.search(text)
    if not m:
        raise ParseError("dbench printed no `Throughput N MB/sec  C clients …` line")
    if float(m[1]) == 0:
        # dbench's 1-second runs end inside its reporting interval and print 0: no measurement, not zero speed
        raise ParseError("dbench reported 0 MB/sec: the run was too short to measure (use duration_s ≥ 2)")
    return {"throughput_mb_s": float(m[1]), "max_latency_ms": float(m[4])}
