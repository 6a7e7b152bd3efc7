"""compress — the lzbench analog with zstd's own benchmark mode (seed 000): an in-memory, userspace-only
compression benchmark over a deterministic text file (base64 of seeded pseudo-random bytes, as the seed's
`dd if=/dev/random | b64encode`). It should barely move between kernels; if it does, suspect the setup."""

from __future__ import annotations

import re
from typing import Any

from fairmark.errors import PlanError
from fairmark.run.workloads import tools
from fairmark.run.workloads.base import (
    Adapter,
    MetricSpec,
    ParamSpec,
    ParseError,
    RawOutput,
    TrialContext,
    WorkloadContext,
)

MAX_LEVEL = 22  # zstd --ultra goes to 22; negative (fast) levels are not benchmarked by -b/-e
# `-3     3146366 (1.333) 266.21 MB/s  670.7 MB/s  f.txt` — level, compressed size, ratio, speeds
_LINE = re.compile(
    r"^\s*-(\d+)#?\s*.*?\s(\d+)\s+\(\s*([\d.]+)\)\s+([\d.]+)\s+MB/s\s+([\d.]+)\s+MB/s", re.MULTILINE
)


def level_metrics(tool: str) -> tuple[MetricSpec, ...]:
    primary = (
        MetricSpec("compress_mb_s", "MB/s", "higher", f"{tool} compression speed at the first level"),
        MetricSpec("decompress_mb_s", "MB/s", "higher", "decompression speed at the first level"),
        # the same file compressed at the same level: the same size every time
        MetricSpec("ratio", "x", "higher", "original ÷ compressed size at the first level", constant=True),
    )
    per_level = tuple(
        MetricSpec(f"{kind}_L{level}", unit, "higher", f"{kind} at level {level}", constant=kind == "ratio")
        for level in range(1, MAX_LEVEL + 1)
        for kind, unit in (("compress_mb_s", "MB/s"), ("decompress_mb_s", "MB/s"), ("ratio", "x"))
    )
    return primary + per_level


def check_levels(tool: str, params: dict[str, Any]) -> None:
    tools.require_positive_ints(tool, params, ("level_min", "level_max", "size_mib"))
    if not params["level_min"] <= params["level_max"] <= MAX_LEVEL:
        raise PlanError(
            f"{tool}: need 1 ≤ level_min ≤ level_max ≤ {MAX_LEVEL}, "
            f"got {params['level_min']}..{params['level_max']}",
            key="level_max",
        )


def per_level_values(levels: dict[int, tuple[float, float, float]], first: int) -> dict[str, float]:
    """{level: (compress MB/s, decompress MB/s, ratio)} → metric dict, with the first level as primary.

    The levels of one trial are a contiguous range (-bLO -eHI); a gap means lost output, not a result."""
    odd = sorted(n for n in levels if not 1 <= n <= MAX_LEVEL)
    if odd:  # a garbled line; and range() over a 50-digit level would exhaust memory
        raise ParseError(
            f"levels {[str(n)[:20] for n in odd[:3]]} are not compression levels (1..{MAX_LEVEL})"
        )
    gaps = sorted(set(range(first, max(levels) + 1)) - set(levels))
    if gaps:
        raise ParseError(f"levels {gaps} are missing from the output (found {sorted(levels)})")
    out: dict[str, float] = {}
    c, d, r = levels[first]
    out |= {"compress_mb_s": c, "decompress_mb_s": d, "ratio": r}
    for level, (c, d, r) in sorted(levels.items()):
        out |= {f"compress_mb_s_L{level}": c, f"decompress_mb_s_L{level}": d, f"ratio_L{level}": r}
    return out


class Compress(Adapter):
    name = "compress"
    summary = "zstd benchmark mode over a cached deterministic base64 file; MB/s and ratio per level"
    packages = tools.packages(("zstd",), ("zstd",), ("zstd",))
    executables = ("zstd",)
    params = (
        ParamSpec("size_mib", 64, "MiB", "size of the generated test file (the seed used 1 GiB raw)"),
        ParamSpec("level_min", 1, "", "first zstd level (primary metric)"),
        ParamSpec("level_max", 3, "", "last zstd level"),
        ParamSpec("seed", 1, "", "pseudo-random seed of the test file"),
        ParamSpec("iterations", 0, "", "zstd -i: minimum seconds per level; 0 = one pass (fast)"),
    )
    metrics = level_metrics("zstd")
    measures = ("cpu", "memory")

    def check(self, params: dict[str, Any]) -> None:
        check_levels(self.name, params)
        if not isinstance(params["iterations"], int) or params["iterations"] < 0:
            raise PlanError(
                f"compress: iterations must be ≥ 0, got {params['iterations']!r}", key="iterations"
            )

    def setup(self, ctx: WorkloadContext) -> None:
        ctx.state["input"] = tools.deterministic_text_file(
            ctx.cache, ctx.params["size_mib"], ctx.params["seed"]
        )

    def command(self, ctx: TrialContext) -> list[str]:
        p = ctx.params
        ultra = ["--ultra"] if p["level_max"] > 19 else []
        return [
            "zstd",
            "-q",
            *ultra,
            f"-b{p['level_min']}",
            f"-e{p['level_max']}",
            f"-i{p['iterations']}",
            str(ctx.state["input"]),
        ]

    def parse(self, raw: RawOutput) -> dict[str, float]:
        return parse_zstd(raw.stdout + "\n" + raw.stderr)


def parse_zstd(text: str) -> dict[str, float]:
    levels = {int(m[1]): (float(m[4]), float(m[5]), float(m[3])) for m in _LINE.finditer(text)}
    if not levels:
        raise ParseError("zstd printed no benchmark line (`-N  SIZE (RATIO) X MB/s  Y MB/s  FILE`)")
    return per_level_values(levels, min(levels))
