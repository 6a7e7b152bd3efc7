"""sysbench — cpu, memory, threads, mutex and fileio (seed 002's SMP-scaling and memory-file-system tests;
sweep `threads` for a scaling curve). Text output only, so parse reads its labelled lines.

fileio: the files are prepared once in setup() in a private directory and removed at teardown. Seed 003: a data
set under 2× RAM measures the page cache — refused unless the directory is a tmpfs (seed 002's memory file
system is exactly that), the I/O is O_DIRECT, or the plan gives a reason."""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Mapping
from typing import Any

from fairmark.console import console
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

TESTS = ("cpu", "memory", "threads", "mutex", "fileio")
FILE_MODES = ("seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw")
# label in sysbench's text → metric; values are plain numbers after the label
_LABELS = {
    "events per second:": "events_s",
    "reads/s:": "reads_s",
    "writes/s:": "writes_s",
    "fsyncs/s:": "fsyncs_s",
    "read, MiB/s:": "read_mib_s",
    "written, MiB/s:": "written_mib_s",
    "avg:": "latency_avg_ms",
    "95th percentile:": "latency_p95_ms",
    "max:": "latency_max_ms",
}
_NUM = r"\s*([\d.]+)"


class Sysbench(Adapter):
    name = "sysbench"
    summary = "sysbench cpu/memory/threads/mutex/fileio: events/s, latency, file-I/O rates"
    packages = tools.packages(("sysbench",), ("sysbench",), ("sysbench",))
    executables = ("sysbench",)
    params = (
        ParamSpec("test", "cpu", "", f"one of {', '.join(TESTS)}"),
        ParamSpec("threads", 1, "threads", "worker threads (sweep it: seed 002's curve)"),
        ParamSpec("time_s", 5, "s", "sysbench --time (mutex runs a fixed amount of work instead)"),
        ParamSpec("cpu_max_prime", 10000, "", "cpu: primes up to this number per event"),
        ParamSpec("memory_block_size", "1K", "bytes", "memory: block size"),
        ParamSpec("memory_oper", "write", "", "memory: read, write or none"),
        ParamSpec("memory_access_mode", "seq", "", "memory: seq or rnd"),
        ParamSpec("mutex_locks", 50000, "", "mutex: lock/unlock pairs per thread"),
        ParamSpec("file_total_size", "2G", "bytes", "fileio: total size of the test files (or 2xRAM)"),
        ParamSpec("file_num", 16, "files", "fileio: number of files"),
        ParamSpec("file_test_mode", "rndrw", "", f"fileio: {', '.join(FILE_MODES)}"),
        ParamSpec("file_block_size", 16384, "bytes", "fileio: block size"),
        ParamSpec("file_extra_flags", "", "", "fileio: e.g. direct (O_DIRECT)"),
        ParamSpec("directory", "", "", "fileio: where the files go (default: the workload's scratch dir)"),
        ParamSpec("small_size_reason", "", "", "fileio: run with less than 2× RAM anyway, because …"),
    )
    metrics = (
        MetricSpec(
            "events_s", "events/s", "higher", "sysbench events per second (total events ÷ total time)"
        ),
        MetricSpec("latency_avg_ms", "ms", "lower"),
        MetricSpec("latency_p95_ms", "ms", "lower"),
        MetricSpec("latency_max_ms", "ms", "lower"),
        MetricSpec("total_time_s", "s", "lower", "sysbench's own total time (mutex: the result)"),
        MetricSpec("mib_s", "MiB/s", "higher", "memory: transfer rate"),
        MetricSpec("reads_s", "ops/s", "higher"),
        MetricSpec("writes_s", "ops/s", "higher"),
        MetricSpec("fsyncs_s", "ops/s", "higher"),
        MetricSpec("read_mib_s", "MiB/s", "higher"),
        MetricSpec("written_mib_s", "MiB/s", "higher"),
    )
    measures = ("cpu", "memory", "kernel", "disk")

    def check(self, params: dict[str, Any]) -> None:
        tools.require_choice(self.name, params, "test", TESTS)
        tools.require_choice(self.name, params, "file_test_mode", FILE_MODES)
        tools.require_choice(self.name, params, "memory_oper", ("read", "write", "none"))
        tools.require_choice(self.name, params, "memory_access_mode", ("seq", "rnd"))
        ints = ("threads", "time_s", "cpu_max_prime", "mutex_locks", "file_num", "file_block_size")
        tools.require_positive_ints(self.name, params, ints)
        tools.parse_size(params["memory_block_size"], "memory_block_size")
        tools.require_directory("sysbench", params)
        self._size_warning(params)

    def _size_warning(self, params: dict[str, Any]) -> str | None:
        if params["test"] != "fileio" or "direct" in str(params["file_extra_flags"]):
            return None
        size = tools.parse_size(params["file_total_size"], "file_total_size")
        where = params["directory"] or tempfile.gettempdir()
        return tools.check_size_vs_ram(
            "sysbench fileio", size, where, params["small_size_reason"], "file_total_size"
        )

    def data_set(self, params: Mapping[str, Any]) -> DataSet | None:
        if params["test"] != "fileio":
            return None
        size = tools.parse_size(params["file_total_size"], "file_total_size")
        direct = "direct" in str(params["file_extra_flags"])
        return DataSet(size, params["directory"], direct, params["small_size_reason"])

    def claimed_io(self, params: Mapping[str, Any], values: Mapping[str, float]) -> dict[str, float]:
        if params["test"] != "fileio":
            return {}
        out: dict[str, float] = {}
        for d, metric in (("read", "read_mib_s"), ("write", "written_mib_s")):
            if values.get(metric):
                out |= {
                    f"{d}_mib_s": values[metric],
                    f"{d}_bytes": values[metric] * tools.MIB * params["time_s"],
                }
        return out

    def _file_opts(self, p: dict[str, Any]) -> list[str]:
        total = tools.parse_size(p["file_total_size"], "file_total_size")
        opts = [f"--file-total-size={total}", f"--file-num={p['file_num']}"]
        opts.append(f"--file-block-size={p['file_block_size']}")
        return opts + ([f"--file-extra-flags={p['file_extra_flags']}"] if p["file_extra_flags"] else [])

    def setup(self, ctx: WorkloadContext) -> None:
        if ctx.params["test"] != "fileio":
            return
        warning = self._size_warning(ctx.params)
        if warning:
            console.warn(warning)
        ctx.state["dir"] = tools.private_dir(ctx.params["directory"] or ctx.scratch, "sysbench")
        argv = ["sysbench", "fileio", *self._file_opts(ctx.params), "prepare"]
        proc = subprocess.run(argv, cwd=ctx.state["dir"], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SetupError(f"sysbench fileio prepare failed: {(proc.stderr or proc.stdout)[-800:]}")

    def command(self, ctx: TrialContext) -> list[str]:
        p = ctx.params
        argv = [
            "sysbench",
            p["test"],
            f"--threads={p['threads']}",
            f"--time={p['time_s']}",
            *self._test_opts(p),
        ]
        if p["test"] != "fileio":
            return [*argv, "run"]
        # sysbench fileio works in its current directory and has no option for another one.
        return ["/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(ctx.state["dir"]), *argv, "run"]

    def _test_opts(self, p: dict[str, Any]) -> list[str]:
        test = p["test"]
        if test == "cpu":
            return [f"--cpu-max-prime={p['cpu_max_prime']}"]
        if test == "memory":
            # A total size no run reaches, so --time bounds the run (sysbench stops at 100G by default).
            return [
                f"--memory-block-size={p['memory_block_size']}",
                "--memory-total-size=1000T",
                f"--memory-oper={p['memory_oper']}",
                f"--memory-access-mode={p['memory_access_mode']}",
            ]
        if test == "mutex":
            return [f"--mutex-locks={p['mutex_locks']}"]
        if test == "fileio":
            return [*self._file_opts(p), f"--file-test-mode={p['file_test_mode']}"]
        return []

    def parse(self, raw: RawOutput) -> dict[str, float]:
        return parse_text(raw.stdout + "\n" + raw.stderr)

    def teardown(self, ctx: WorkloadContext) -> None:
        tools.remove_dir(ctx.state.pop("dir", None))  # the same as `sysbench fileio cleanup`, and sure to run


def parse_text(text: str) -> dict[str, float]:
    fatal = re.search(r"^FATAL: .*$", text, re.MULTILINE)
    if fatal:
        raise ParseError(f"sysbench failed: {fatal[0]}")
    total_time = re.search(r"total time:" + _NUM + "s", text)
    events = re.search(r"total number of events:" + _NUM, text)
    if not total_time or not events:
        raise ParseError("sysbench printed no `General statistics` (total time, total number of events)")
    out = {"total_time_s": float(total_time[1])}
    for label, metric in _LABELS.items():
        m = re.search(r"^\s*" + re.escape(label) + _NUM, text, re.MULTILINE)
        if m:
            out[metric] = float(m[1])
    memory = re.search(r"([\d.]+) MiB transferred \(([\d.]+) MiB/sec\)", text)
    if memory:
        out["mib_s"] = float(memory[2])
    ops = re.search(r"Total operations: \d+ \(([\d.]+) per second\)", text)
    if ops:
        out["events_s"] = float(ops[1])
    if "events_s" not in out:
        if out["total_time_s"] <= 0:
            raise ParseError("sysbench reported a total time of 0 s")
        out["events_s"] = float(events[1]) / out["total_time_s"]
    return out
