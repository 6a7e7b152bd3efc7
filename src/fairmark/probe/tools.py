"""Versions of the toolchain and of the tools a plan uses (live host only; each command has a short timeout).

A version that cannot be determined is recorded with the raw first line or the error, never invented.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fairmark.probe._io import run_command
from fairmark.probe.redact import redact_text

# Programs whose version flag is not `--version`, for `doctor/env --tool NAME` (checked on this Debian 12
# machine, see TOOLS.md). In a run, the workload adapter's own `version_args` say how to ask its executables.
VERSION_ARGS: dict[str, list[str]] = {
    "openssl": ["version"],
    "wrk": ["-v"],
    "iperf3": ["--version"],
    "redis-server": ["--version"],
    "redis-benchmark": ["--version"],
    "dbench": ["--help"],
    "bonnie++": [],  # no version option: the package version is used
    "ministat": [],
    "nginx": ["-v"],
    "perf": ["--version"],
    "go": ["version"],
}
TOOLCHAIN = ("cc", "gcc", "clang", "ld", "make")
_VERSION_RE = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+)+)")


def _version_of(name: str, asked: Sequence[str] | None = None) -> dict[str, Any]:
    path = shutil.which(name)
    if path is None:
        return {"path": None, "version": None, "raw": None, "error": "not found on PATH"}
    args = list(asked) if asked is not None else VERSION_ARGS.get(name, ["--version"])
    res = run_command([path, *args]) if args else None
    line = res.first_line() if res else None
    m = _VERSION_RE.search(line) if line else None
    if m and line:
        return {"path": path, "version": m[1], "raw": redact_text(line[:200]), "error": None}
    # The tool prints no version: its distribution package knows it — unless asking it failed, as a wrapper
    # does (Debian's pg_wrapper: "Error: PostgreSQL version 15 is not installed"), whose package is not the tool.
    failed = res is not None and (not res.ok and res.returncode is not None) and _looks_like_error(line)
    pkg = None if failed else _package_version(path)
    if pkg:
        return {"path": path, "version": pkg[1], "raw": f"package {pkg[0]} {pkg[1]}", "error": None}
    error = "tool has no version option" if res is None else res.error or "no version number in output"
    return {"path": path, "version": None, "raw": redact_text(line[:200]) if line else None, "error": error}


def _looks_like_error(line: str | None) -> bool:
    return bool(line) and bool(re.match(r"(?i)\s*(error|fatal|warning)\b", line or ""))


def _package_version(path: str) -> tuple[str, str] | None:
    """(package, version) from dpkg (Debian) or pkg (FreeBSD), when either is installed."""
    if shutil.which("dpkg-query"):
        owner = run_command(["dpkg-query", "-S", os.path.realpath(path)])
        pkg = owner.stdout.split(":", 1)[0].strip() if owner.ok else ""
        if pkg:
            ver = run_command(["dpkg-query", "-W", "-f=${Version}", pkg])
            if ver.ok and ver.stdout.strip():
                return pkg, ver.stdout.strip()
    if shutil.which("pkg"):
        found = run_command(["pkg", "which", "-q", path])
        if found.ok and found.stdout.strip():
            name, _, version = found.stdout.strip().rpartition("-")
            return name, version
    return None


def tool_versions(
    names: Iterable[str], version_args: Mapping[str, Sequence[str]] | None = None
) -> dict[str, dict[str, Any]]:
    """Each executable's path and version; `version_args` says how to ask one whose option is not in
    VERSION_ARGS (a workload adapter declares its executables' options; [] = it has none: the package)."""
    names = sorted(set(names))
    if not names:
        return {}
    asked = version_args or {}
    # Commands run in parallel: a dozen `--version` calls in a row would blow the 2 s snapshot budget.
    with ThreadPoolExecutor(max_workers=min(8, len(names))) as pool:
        found = pool.map(lambda n: _version_of(n, asked.get(n)), names)
        return dict(zip(names, found, strict=True))


def toolchain(found: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Compilers (from `found`: tool_versions over TOOLCHAIN), libc and Python of the live host."""
    libc_name, libc_ver = platform.libc_ver()
    try:
        gnu = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        gnu = None
    return {
        **{k: found[k] for k in TOOLCHAIN},
        "libc": gnu or (f"{libc_name} {libc_ver}".strip() or None),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
    }
