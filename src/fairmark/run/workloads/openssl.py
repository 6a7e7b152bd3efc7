"""openssl — `openssl speed -seconds N -evp ALG`: the userspace-only CPU reference (seed 000 compares debug
and nodebug kernels with it: kernel debugging should not move it). One algorithm per cell; choose several with
`sweep = { algorithm = ["aes-256-gcm", "sha256"] }`, so each gets its own statistics."""

from __future__ import annotations

import re
from typing import Any

from fairmark.errors import PlanError
from fairmark.run.workloads import tools
from fairmark.run.workloads.base import Adapter, MetricSpec, ParamSpec, ParseError, RawOutput, TrialContext

BLOCK_SIZES = (16, 64, 256, 1024, 8192, 16384)  # openssl speed's default table columns
_HEADER = re.compile(r"^type\s+((?:\d+ bytes\s*)+)$", re.MULTILINE)


class Openssl(Adapter):
    name = "openssl"
    summary = "openssl speed -evp ALG: bytes/s per block size (userspace-only CPU reference)"
    packages = tools.packages(("openssl",), ("openssl",), ("openssl",))
    executables = ("openssl",)
    version_args = tools.version_options({"openssl": ("version",)})
    params = (
        ParamSpec(
            "algorithm", "aes-256-gcm", "", "an EVP cipher or digest (openssl list -cipher-algorithms)"
        ),
        ParamSpec("seconds", 3, "s", "seconds per block size (openssl speed -seconds)"),
        ParamSpec(
            "bytes", 0, "bytes", "one block size only (openssl speed -bytes); 0 = the six default sizes"
        ),
    )
    metrics = (
        MetricSpec("bytes_s", "B/s", "higher", "throughput at the largest block size measured"),
        *(
            MetricSpec(f"bytes_s_{n}B", "B/s", "higher", f"throughput with {n}-byte blocks")
            for n in BLOCK_SIZES
        ),
    )
    measures = ("cpu",)

    def check(self, params: dict[str, Any]) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", str(params["algorithm"])):
            raise PlanError(
                f"openssl: algorithm must be a name such as aes-256-gcm, got {params['algorithm']!r}"
            )
        seconds = params["seconds"]
        if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 1:
            raise PlanError(f"openssl: seconds must be a whole number ≥ 1, got {seconds!r}", key="seconds")
        size = params["bytes"]
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise PlanError(f"openssl: bytes must be a whole number ≥ 0, got {size!r}", key="bytes")

    def command(self, ctx: TrialContext) -> list[str]:
        p = ctx.params
        size = ["-bytes", str(p["bytes"])] if p["bytes"] else []
        return ["openssl", "speed", "-seconds", str(p["seconds"]), *size, "-evp", str(p["algorithm"])]

    def parse(self, raw: RawOutput) -> dict[str, float]:
        return parse_speed(raw.stdout)


def parse_speed(text: str) -> dict[str, float]:
    """The table after `The 'numbers' are in 1000s of bytes per second processed.`: one header line of block
    sizes and one row per algorithm, values like `29903.57k`."""
    header = _HEADER.search(text)
    if not header:
        raise ParseError("openssl speed printed no result table (`type  16 bytes  64 bytes …`)")
    sizes = [int(n) for n in re.findall(r"(\d+) bytes", header[1])]
    rows = [line.split() for line in text[header.end() :].splitlines() if line.strip()]
    if not rows:
        raise ParseError("openssl speed printed a table header but no result row")
    cells = rows[0][-len(sizes) :]
    if len(rows[0]) <= len(sizes) or not all(c.endswith("k") for c in cells):
        raise ParseError(f"openssl speed result row is not understood: {' '.join(rows[0])!r}")
    values = {size: float(cell[:-1]) * 1000.0 for size, cell in zip(sizes, cells, strict=True)}
    out = {f"bytes_s_{size}B": v for size, v in values.items()}
    out["bytes_s"] = values[max(sizes)]
    return out
