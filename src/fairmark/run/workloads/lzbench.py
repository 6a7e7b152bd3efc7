"""lzbench — the seed 000 tool itself, used when installed (it is not packaged for Debian; FreeBSD has
benchmarks/lzbench). Same deterministic input file and per-level metrics as `compress`.

Output parsed: `-o4` CSV (`Compressor name,Compression speed,Decompression speed,[Original size,]Compressed
size,Ratio,Filename`) and the default text table the seed quotes. lzbench's Ratio column is compressed ÷
original × 100; fairmark's `ratio` is original ÷ compressed, as zstd prints it, so both tools compare."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from fairmark.errors import PlanError
from fairmark.run.workloads import tools
from fairmark.run.workloads.base import (
    Adapter,
    ParamSpec,
    ParseError,
    RawOutput,
    TrialContext,
    WorkloadContext,
)
from fairmark.run.workloads.compress import check_levels, level_metrics, per_level_values

_LEVEL = re.compile(r"-(\d+)\s*$")
# `zstd 1.4.5 -1            1020 MB/s  1319 MB/s  1093210136  75.37 testfile.out`
_TEXT_ROW = re.compile(
    r"^(\S+)\s+\S+\s+-(\d+)\s+([\d.]+) MB/s\s+([\d.]+) MB/s\s+(\d+)\s+([\d.]+)\s", re.MULTILINE
)


class Lzbench(Adapter):
    name = "lzbench"
    summary = (
        "lzbench -e<compressor>,<levels> over a cached deterministic base64 file; MB/s and ratio per level"
    )
    packages = tools.packages((), ("lzbench",), ("lzbench",))
    executables = ("lzbench",)
    params = (
        ParamSpec("compressor", "zstd", "", "lzbench compressor name (lzbench -l lists them)"),
        ParamSpec("size_mib", 64, "MiB", "size of the generated test file"),
        ParamSpec("level_min", 1, "", "first level (primary metric)"),
        ParamSpec("level_max", 3, "", "last level"),
        ParamSpec("seed", 1, "", "pseudo-random seed of the test file"),
        ParamSpec("min_time_s", 1, "s", "lzbench -t: minimum seconds of compression and of decompression"),
    )
    metrics = level_metrics("lzbench")
    measures = ("cpu", "memory")

    def check(self, params: dict[str, Any]) -> None:
        check_levels(self.name, params)
        if not re.fullmatch(r"[a-z0-9_]+", str(params["compressor"])):
            raise PlanError(
                f"lzbench: compressor must be a plain name such as zstd, got {params['compressor']!r}"
            )

    def setup(self, ctx: WorkloadContext) -> None:
        ctx.state["input"] = tools.deterministic_text_file(
            ctx.cache, ctx.params["size_mib"], ctx.params["seed"]
        )

    def command(self, ctx: TrialContext) -> list[str]:
        p = ctx.params
        levels = ",".join(str(n) for n in range(p["level_min"], p["level_max"] + 1))
        t = p["min_time_s"]
        return ["lzbench", f"-e{p['compressor']},{levels}", "-o4", f"-t{t},{t}", str(ctx.state["input"])]

    def parse(self, raw: RawOutput) -> dict[str, float]:
        return parse_lzbench(raw.stdout)


def parse_lzbench(text: str) -> dict[str, float]:
    levels = _csv_levels(text) or _text_levels(text)
    if not levels:
        raise ParseError("lzbench printed no result row for any level (expected `-o4` CSV or its text table)")
    return per_level_values(levels, min(levels))


def _csv_levels(text: str) -> dict[int, tuple[float, float, float]]:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Compressor name,")), None)
    if start is None:
        return {}
    out = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        name = row.get("Compressor name") or ""
        level = _LEVEL.search(name)
        if not level or row.get("Ratio") is None:
            continue  # memcpy, trailer lines
        out[int(level[1])] = (
            tools.number(row["Compression speed"], f"lzbench {name} compression speed"),
            tools.number(row["Decompression speed"], f"lzbench {name} decompression speed"),
            _ratio(row, name),
        )
    return out


def _ratio(row: dict[str, str], name: str) -> float:
    # Exact sizes when the CSV has them (lzbench ≥ 1.8 prints Original size); else its rounded percentage.
    if row.get("Original size") and row.get("Compressed size"):
        orig = tools.number(row["Original size"], f"lzbench {name} original size")
        comp = tools.number(row["Compressed size"], f"lzbench {name} compressed size")
    else:
        orig, comp = 100.0, tools.number(row["Ratio"], f"lzbench {name} Ratio")
    if comp <= 0:
        raise ParseError(f"lzbench {name}: compressed size {comp} is not a compression result")
    return orig / comp


def _text_levels(text: str) -> dict[int, tuple[float, float, float]]:
    return {int(m[2]): (float(m[3]), float(m[4]), 100.0 / float(m[6])) for m in _TEXT_ROW.finditer(text)}
