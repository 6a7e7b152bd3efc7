"""bonnie++ — the classic file-system benchmark of seed 003: sequential block write/rewrite/read, seeks, and
file create/stat/delete rates, from its `-q` CSV line.

Two honesty rules from the seed: the data set must be ≥ 2× RAM (else it measures the page cache; refused
unless the plan gives a reason for a quick run), and `+++++` means "too fast to measure" — recorded as no
value, never as a number. A trial whose primary result (block write) is `+++++` fails, saying why."""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
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
    TrialContext,
    WorkloadContext,
)

# Column names in bonnie++'s CSV order, counted from the end of the line (2.00a inserts extra fields after
# the file size, 1.9x does not; the tail is the same in both).
IO_FIELDS = (
    "putc",
    "putc_cpu",
    "put_block",
    "put_block_cpu",
    "rewrite",
    "rewrite_cpu",
    "getc",
    "getc_cpu",
    "get_block",
    "get_block_cpu",
    "seeks",
    "seeks_cpu",
)
FILE_PARAMS = ("num_files", "max_size", "min_size", "num_dirs", "file_chunk_size")
FILE_FIELDS = (
    "seq_create",
    "seq_create_cpu",
    "seq_stat",
    "seq_stat_cpu",
    "seq_del",
    "seq_del_cpu",
    "ran_create",
    "ran_create_cpu",
    "ran_stat",
    "ran_stat_cpu",
    "ran_del",
    "ran_del_cpu",
)
LATENCIES = (
    "putc",
    "put_block",
    "rewrite",
    "getc",
    "get_block",
    "seeks",
    "seq_create",
    "seq_stat",
    "seq_del",
    "ran_create",
    "ran_stat",
    "ran_del",
)
TAIL = IO_FIELDS + FILE_PARAMS + FILE_FIELDS + tuple(f"{n}_latency" for n in LATENCIES)
UNMEASURABLE = re.compile(r"^\++$")  # '+++++' (rate) and '+++' (CPU %): finished too fast to time
RATES = {  # CSV column → (metric, unit)
    "put_block": ("put_block_kib_s", "KiB/s"),
    "rewrite": ("rewrite_kib_s", "KiB/s"),
    "get_block": ("get_block_kib_s", "KiB/s"),
    "putc": ("putc_kib_s", "KiB/s"),
    "getc": ("getc_kib_s", "KiB/s"),
    "seeks": ("seeks_s", "seeks/s"),
    **{name: (f"{name}_s", "files/s") for name in LATENCIES[6:]},
}
_LATENCY = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s)$")
_TO_US = {"us": 1.0, "ms": 1e3, "s": 1e6}


class Bonnie(Adapter):
    name = "bonnie"
    summary = "bonnie++ -q: block write/rewrite/read KiB/s, seeks/s, file create/stat/delete per second"
    packages = tools.packages(("bonnie++",), ("bonnie++",), ("bonnie++",))
    executables = ("bonnie++",)
    version_args = tools.version_options(
        {"bonnie++": ()}
    )  # no version option: the package version is recorded
    params = (
        ParamSpec("size_mib", 0, "MiB", "data set size; 0 = 2 × RAM (the seed's minimum)"),
        ParamSpec(
            "files", 16, "×1024 files", "bonnie++ -n: files for the create/stat/delete tests (0 = skip)"
        ),
        ParamSpec("fast", True, "", "bonnie++ -f: skip the slow per-character tests"),
        ParamSpec("direct", False, "", "bonnie++ -D: O_DIRECT for the block tests"),
        ParamSpec("directory", "", "", "file system under test (default: the workload's scratch dir)"),
        ParamSpec("small_size_reason", "", "", "run with less than 2× RAM anyway, because … (quick runs)"),
    )
    metrics = (
        MetricSpec("put_block_kib_s", "KiB/s", "higher", "sequential block write"),
        *(MetricSpec(metric, unit, "higher") for col, (metric, unit) in RATES.items() if col != "put_block"),
        *(MetricSpec(f"{name}_latency_us", "µs", "lower") for name in LATENCIES),
    )
    measures = ("disk", "kernel")

    def check(self, params: dict[str, Any]) -> None:
        for key in ("size_mib", "files"):
            value = params[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise PlanError(f"bonnie: {key} must be a whole number ≥ 0, got {value!r}", key=key)
        tools.require_directory("bonnie", params)
        self._size_warning(params)

    def _size_warning(self, params: dict[str, Any]) -> str | None:
        size = (params["size_mib"] or default_size_mib()) * tools.MIB
        where = params["directory"] or None
        return tools.check_size_vs_ram("bonnie", size, where, params["small_size_reason"], "size_mib")

    def data_set(self, params: Mapping[str, Any]) -> DataSet:
        # -D (direct) covers only the block tests; the file create/stat/delete tests still go through the cache
        direct = bool(params["direct"]) and not params["files"]
        size = (params["size_mib"] or default_size_mib()) * tools.MIB
        return DataSet(size, params["directory"], direct, params["small_size_reason"])

    def claimed_io(self, params: Mapping[str, Any], values: Mapping[str, float]) -> dict[str, float]:
        size = (params["size_mib"] or default_size_mib()) * tools.MIB
        out: dict[str, float] = {}
        # the block write writes the whole size once, the block read reads it once (rewrite does both again)
        if values.get("put_block_kib_s"):
            out |= {"write_mib_s": values["put_block_kib_s"] / 1024, "write_bytes": float(size)}
        if values.get("get_block_kib_s"):
            out |= {"read_mib_s": values["get_block_kib_s"] / 1024, "read_bytes": float(size)}
        return out

    def setup(self, ctx: WorkloadContext) -> None:
        warning = self._size_warning(ctx.params)
        if warning:
            console.warn(warning)
        ctx.state["dir"] = tools.private_dir(ctx.params["directory"] or ctx.scratch, "bonnie")

    def command(self, ctx: TrialContext) -> list[str]:
        p = ctx.params
        ram_mib = tools.ram_bytes() // tools.MIB
        size_mib = p["size_mib"] or default_size_mib()
        # bonnie++ itself insists on size ≥ 2 × -r; a plan that gave its reason for less tells it the RAM is
        # half the size, so the tool does not refuse what fairmark already allowed.
        argv = [
            "bonnie++",
            "-q",
            "-d",
            str(ctx.state["dir"]),
            "-s",
            str(size_mib),
            "-r",
            str(min(ram_mib, size_mib // 2)),
        ]
        argv += ["-n", str(p["files"]), "-m", "fairmark"]
        argv += ["-f"] if p["fast"] else []
        argv += ["-D"] if p["direct"] else []
        return argv + (["-u", "root"] if ctx.workload.is_root else [])

    def parse(self, raw: RawOutput) -> dict[str, float]:
        return parse_csv(raw.stdout)

    def teardown(self, ctx: WorkloadContext) -> None:
        tools.remove_dir(ctx.state.pop("dir", None))


def default_size_mib() -> int:
    return -(-2 * tools.ram_bytes() // tools.MIB)  # rounded up: never a hair under 2 × RAM


def csv_fields(text: str) -> dict[str, str]:
    """The result line as {column: raw text}; empty columns are tests that were not run."""
    line = next((ln for ln in text.splitlines() if re.match(r"^1\.9\d,", ln)), None)
    if line is None:
        raise ParseError("bonnie++ printed no CSV result line (expected `1.98,2.00a,…` from -q)")
    row = next(csv.reader([line]))
    if len(row) < len(TAIL) + 5:
        raise ParseError(f"bonnie++ CSV line has {len(row)} fields, expected at least {len(TAIL) + 5}")
    return dict(zip(TAIL, row[-len(TAIL) :], strict=True))


def unmeasurable(text: str) -> list[str]:
    """The metrics bonnie++ reported as `+++++` (too fast to measure): named, never given a number."""
    fields = csv_fields(text)
    return [metric for col, (metric, _) in RATES.items() if UNMEASURABLE.match(fields[col])]


def parse_csv(text: str) -> dict[str, float]:
    fields, out = csv_fields(text), {}
    for col, (metric, _) in RATES.items():
        value = fields[col].strip()
        if value and not UNMEASURABLE.match(value):
            out[metric] = tools.number(value, f"bonnie++ {col}")
    for name in LATENCIES:
        m = _LATENCY.match(fields[f"{name}_latency"].strip())
        if m:
            out[f"{name}_latency_us"] = float(m[1]) * _TO_US[m[2]]
    if "put_block_kib_s" not in out:
        why = (
            "too fast to measure (+++++): the data set fits in a cache"
            if UNMEASURABLE.match(fields["put_block"])
            else "missing"
        )
        raise ParseError(f"bonnie++ block write result is {why}; use a larger size_mib or direct = true")
    return out
