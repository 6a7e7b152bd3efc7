"""fio — storage I/O with a job described by parameters. The test files are laid out once in prime() (not
timed), in a private directory under `directory`, and removed at teardown. Seed 003: a buffered test smaller
than 2× RAM measures the page cache, so it is refused unless the target is a tmpfs or a reason is given;
direct I/O (the default) bypasses the cache."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fairmark.console import console
from fairmark.errors import PlanError
from fairmark.run.workloads import tools
from fairmark.run.workloads.base import (
    Adapter,
    DataSet,
    MetricSpec,
    ParamSpec,
    ParseError,
    RawOutput,
    SetupError,
    TrialContext,
    WorkloadContext,
)

RW_MODES = ("read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim")
PERCENTILES = (("50.000000", "p50"), ("99.000000", "p99"), ("99.900000", "p99_9"))


class Fio(Adapter):
    name = "fio"
    summary = "fio job from parameters: IOPS, MiB/s, completion-latency percentiles, CPU usr/sys"
    packages = tools.packages(("fio",), ("fio",), ("fio",))
    executables = ("fio",)
    params = (
        ParamSpec("rw", "randread", "", f"I/O pattern: {', '.join(RW_MODES)}"),
        ParamSpec("bs", "4k", "bytes", "block size"),
        ParamSpec("size", "256M", "bytes", "file size per job (or relative: 2xRAM)"),
        ParamSpec("iodepth", 16, "", "I/Os in flight per job"),
        ParamSpec("direct", True, "", "O_DIRECT (bypass the page cache)"),
        ParamSpec("numjobs", 1, "jobs", "parallel jobs (each with its own file)"),
        ParamSpec("runtime_s", 5, "s", "time-based run length"),
        ParamSpec("directory", "", "", "where the test files go (default: the workload's scratch dir)"),
        ParamSpec(
            "ioengine", "libaio" if sys.platform.startswith("linux") else "posixaio", "", "fio ioengine"
        ),
        ParamSpec("small_size_reason", "", "", "run a buffered test smaller than 2× RAM anyway, because …"),
    )
    metrics = (
        MetricSpec("iops", "IO/s", "higher", "read + write I/O operations per second"),
        MetricSpec("bw_mib_s", "MiB/s", "higher", "read + write bandwidth"),
        *(
            MetricSpec(f"clat_{name}_us", "µs", "lower", f"completion latency {name} (worst direction)")
            for _, name in PERCENTILES
        ),
        MetricSpec("read_iops", "IO/s", "higher"),
        MetricSpec("write_iops", "IO/s", "higher"),
        MetricSpec("usr_cpu_pct", "%", "lower", "fio's user CPU"),
        MetricSpec("sys_cpu_pct", "%", "lower", "fio's system CPU"),
    )
    measures = ("disk", "kernel")

    def constant_metrics(self, params: Mapping[str, Any]) -> frozenset[str]:
        """A read-only pattern does no write (write_iops is 0 in every trial), a write-only one no read."""
        rw = str(params.get("rw", ""))
        if rw in ("read", "randread"):
            return frozenset({"write_iops"})
        if rw in ("write", "randwrite", "trim", "randtrim"):
            return frozenset({"read_iops"})
        return frozenset()

    def check(self, params: dict[str, Any]) -> None:
        tools.require_choice(self.name, params, "rw", RW_MODES)
        tools.require_positive_ints(self.name, params, ("iodepth", "numjobs", "runtime_s"))
        tools.parse_size(params["bs"], "bs")
        if not isinstance(params["direct"], bool):
            raise PlanError(f"fio: direct must be true or false, got {params['direct']!r}", key="direct")
        tools.require_directory("fio", params)
        self._size_warning(params)

    def _size_warning(self, params: dict[str, Any]) -> str | None:
        if params["direct"]:
            return None
        total = tools.parse_size(params["size"], "size") * params["numjobs"]
        where = params["directory"] or tempfile.gettempdir()
        return tools.check_size_vs_ram("fio", total, where, params["small_size_reason"], "size")

    def data_set(self, params: Mapping[str, Any]) -> DataSet:
        size = tools.parse_size(params["size"], "size") * params["numjobs"]
        return DataSet(size, params["directory"], bool(params["direct"]), params["small_size_reason"])

    def claimed_io(self, params: Mapping[str, Any], values: Mapping[str, float]) -> dict[str, float]:
        bs = tools.parse_size(params["bs"], "bs")
        out: dict[str, float] = {}
        for d in ("read", "write"):
            if values.get(f"{d}_iops"):
                rate = values[f"{d}_iops"] * bs
                out |= {f"{d}_mib_s": rate / tools.MIB, f"{d}_bytes": rate * params["runtime_s"]}
        return out

    def setup(self, ctx: WorkloadContext) -> None:
        warning = self._size_warning(ctx.params)
        if warning:
            console.warn(warning)
        ctx.state["dir"] = tools.private_dir(ctx.params["directory"] or ctx.scratch, "fio")

    def _job(self, params: dict[str, Any], directory: Path) -> list[str]:
        size = tools.parse_size(params["size"], "size")
        return [
            "fio",
            "--name=fairmark",
            f"--directory={directory}",
            f"--rw={params['rw']}",
            f"--bs={params['bs']}",
            f"--size={size}",
            f"--iodepth={params['iodepth']}",
            f"--ioengine={params['ioengine']}",
            f"--direct={int(params['direct'])}",
            f"--numjobs={params['numjobs']}",
            "--group_reporting",
        ]

    def prime(self, ctx: WorkloadContext) -> None:
        # Lay the files out untimed, so trials measure I/O and not file creation.
        argv = [*self._job(ctx.params, ctx.state["dir"]), "--create_only=1"]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SetupError(f"fio could not lay out its files: {(proc.stderr or proc.stdout)[-800:]}")

    def command(self, ctx: TrialContext) -> list[str]:
        p = ctx.params
        return [
            *self._job(p, ctx.state["dir"]),
            "--time_based",
            f"--runtime={p['runtime_s']}",
            "--output-format=json",
            f"--output={ctx.trial_dir / 'fio.json'}",
        ]

    def output_files(self, ctx: TrialContext) -> dict[str, Path]:
        return {"json": ctx.trial_dir / "fio.json"}

    def parse(self, raw: RawOutput) -> dict[str, float]:
        return parse_json(raw.files.get("json", ""))

    def teardown(self, ctx: WorkloadContext) -> None:
        tools.remove_dir(ctx.state.pop("dir", None))


def parse_json(text: str) -> dict[str, float]:
    start = text.find("{")  # fio may prefix warnings to the JSON in its output file
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except ValueError as exc:
        raise ParseError(f"fio output is not JSON: {exc}") from None
    if not doc or not doc.get("jobs"):
        raise ParseError("fio wrote no job results")
    job = doc["jobs"][0]
    if job.get("error"):
        raise ParseError(f"fio job failed with error {job['error']}")
    active = {d: job[d] for d in ("read", "write", "trim") if job.get(d, {}).get("total_ios", 0) > 0}
    if not active:
        raise ParseError("fio completed no I/O in any direction")
    out = {
        "iops": sum(d["iops"] for d in active.values()),
        "bw_mib_s": sum(d["bw_bytes"] for d in active.values()) / tools.MIB,
        "read_iops": float(job["read"]["iops"]),
        "write_iops": float(job["write"]["iops"]),
        "usr_cpu_pct": float(job["usr_cpu"]),
        "sys_cpu_pct": float(job["sys_cpu"]),
    }
    for key, name in PERCENTILES:
        values = [d["clat_ns"].get("percentile", {}).get(key) for d in active.values()]
        if any(v is None for v in values):
            raise ParseError(f"fio reported no clat percentile {key} (clat_percentiles disabled?)")
        out[f"clat_{name}_us"] = max(values) / 1000.0  # the worse direction: a mixed job is as slow as it
    return out
