"""`malloc_debug = true`: the allocator's debugging mode, the userland half of a debug kernel (seed 000).

glibc ≥ 2.34 moved malloc checking into libc_malloc_debug.so, so `glibc.malloc.check` only acts when that
library is preloaded; `glibc.malloc.perturb` (fill freed and new memory) works in libc itself. FreeBSD's
jemalloc takes MALLOC_CONF (junk filling, abort on error). Only the environment changes: no root needed.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Mapping

from fairmark.run.variants.driver import Context, Prepared
from fairmark.run.variants.journal import Journal

KIND, ORDER, SCOPE = "malloc_debug", 80, "variant"
GLIBC_TUNABLES = "glibc.malloc.check=3:glibc.malloc.perturb=165"
FREEBSD_MALLOC_CONF = "junk:true,abort:true"
LIB_DIRS = ("/usr/lib/*-linux-gnu", "/lib/*-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib", "/lib")


def debug_library() -> str | None:
    for pattern in LIB_DIRS:
        for path in sorted(glob.glob(f"{pattern}/libc_malloc_debug.so.0")):
            if os.path.exists(path):
                return path
    return None


def _join(existing: str | bool | None, ours: str, sep: str) -> str:
    # Keep what the variant itself sets for the same variable, ours appended (later settings win in glibc).
    return f"{existing}{sep}{ours}" if isinstance(existing, str) and existing else ours


def malloc_env(variant_env: Mapping[str, str | bool], *, freebsd: bool | None = None) -> dict[str, str]:
    if freebsd if freebsd is not None else sys.platform.startswith("freebsd"):
        return {"MALLOC_CONF": _join(variant_env.get("MALLOC_CONF"), FREEBSD_MALLOC_CONF, ",")}
    env = {"GLIBC_TUNABLES": _join(variant_env.get("GLIBC_TUNABLES"), GLIBC_TUNABLES, ":")}
    lib = debug_library()
    if lib:
        env["LD_PRELOAD"] = _join(variant_env.get("LD_PRELOAD"), lib, " ")
    return env


def describe(env: Mapping[str, str]) -> str:
    parts = " ".join(f"{k}={v}" for k, v in env.items())
    note = (
        ""
        if "LD_PRELOAD" in env or "MALLOC_CONF" in env
        else " (libc_malloc_debug.so not found: perturb only)"
    )
    return f"malloc debugging: {parts}{note}"


class DebugEnv:
    """The allocator's debugging mode as this machine's libc takes it: an environment, nothing journaled."""

    scope = SCOPE
    needs_root = False

    def __init__(self, env: dict[str, str]):
        self.env = env

    def describe(self) -> list[str]:
        return [describe(self.env)]

    def apply(self, journal: Journal) -> list[str]:
        return []

    def prepared(self, journal: Journal, dry_run: bool = False) -> Prepared:
        return Prepared(env=dict(self.env))

    def undo(self, journal: Journal) -> tuple[list[str], list[str]]:
        return [], []


def check(value: object, ctx: Context) -> DebugEnv:
    """The driver (driver.py): glibc's tunables (and its debug library where it has one), FreeBSD's MALLOC_CONF,
    joined to what the variant's own environment sets for them."""
    return DebugEnv(malloc_env(ctx.env, freebsd=ctx.freebsd))
