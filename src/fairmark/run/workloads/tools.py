"""Helpers shared by the local workload adapters: deterministic test files, RAM-relative size checks,
private scratch directories, and small parsing helpers."""

from __future__ import annotations

import base64
import fcntl
import glob
import os
import random
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import psutil

from fairmark.errors import PlanError
from fairmark.run.workloads.base import (
    Adapter,
    ParseError,
    RawOutput,
    SetupError,
    TrialContext,
    WorkloadContext,
)

MIB = 1024 * 1024
# File systems whose data lives in RAM: a test file smaller than RAM is the point there (seed 002's memory
# file-system test), not a page-cache artefact.
# File systems whose data lives in memory, with no disk below (Linux and FreeBSD names).
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs", "hugetlbfs", "mfs"})


def ram_bytes() -> int:
    return int(psutil.virtual_memory().total)


def fs_type(path: str | Path) -> str:
    """File-system type of the mount holding `path` (the longest matching mount point)."""
    target = os.path.realpath(path)
    best, kind = "", ""
    for part in psutil.disk_partitions(all=True):
        mp = part.mountpoint
        inside = target == mp or target.startswith(mp.rstrip("/") + "/")
        if inside and len(mp) > len(best):
            best, kind = mp, part.fstype
    return kind


def check_size_vs_ram(tool: str, size_bytes: int, directory: str | None, reason: str, key: str) -> str | None:
    """Seed 003: a file-system test smaller than 2× RAM measures the page cache, not the disk.

    Allowed when the target is a memory file system, or when the plan gives a reason (a quick run);
    returns a warning to show in that case, raises PlanError otherwise."""
    ram = ram_bytes()
    if size_bytes >= 2 * ram:
        return None
    if directory and fs_type(directory) in MEMORY_FILESYSTEMS:
        return None
    what = f"{tool}: {key} = {size_bytes // MIB} MiB is less than 2 × RAM ({2 * ram // MIB} MiB)"
    if reason:
        return f"{what}; allowed because: {reason} — results include page-cache effects"
    raise PlanError(
        f"{what}; such a test measures the page cache, not the storage (seed 003)",
        key=key,
        hint="raise the size, point `directory` at a tmpfs for a memory file-system test, or set "
        "small_size_reason = '…' to run it anyway (the reason is kept with the run)",
    )


def deterministic_text_file(cache: Path, size_mib: int, seed: int = 1) -> Path:
    """base64 of seeded pseudo-random bytes, `size_mib` MiB of it (like the seed's `dd … | b64encode`),
    generated once per (size, seed) and reused across runs so every trial compresses identical input."""
    path = cache / f"base64-random-{size_mib}MiB-seed{seed}.txt"
    if path.exists() and path.stat().st_size == size_mib * MIB:
        return path
    cache.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    raw_chunk = 3 * 256 * 1024  # base64 turns 3 bytes into 4: 768 KiB raw → 1 MiB text
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=".partial-")
    with os.fdopen(fd, "wb") as out:
        for _ in range(size_mib):
            out.write(base64.b64encode(rng.randbytes(raw_chunk)))
    os.replace(tmp, path)  # atomic: a crash never leaves a short file under the final name
    return path


def private_dir(parent: str | Path, prefix: str, *, world_writable: bool = False) -> Path:
    """A fresh directory under `parent`, this workload's alone, so teardown may remove it whole."""
    path = Path(tempfile.mkdtemp(prefix=f"fairmark-{prefix}-", dir=str(parent)))
    if world_writable:
        path.chmod(0o1777)
    return path


def remove_dir(path: str | Path | None) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


def number(text: str, what: str) -> float:
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        raise ParseError(f"{what}: {text!r} is not a number") from None


def require_positive_ints(tool: str, params: dict, names: Iterable[str]) -> None:
    for name in names:
        value = params[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PlanError(f"{tool}: {name} must be a positive integer, got {value!r}", key=name)


def require_directory(tool: str, params: dict, name: str = "directory") -> None:
    """An optional directory parameter ("" = the workload's scratch dir) must name an existing directory."""
    if params[name] and not Path(params[name]).is_dir():
        raise PlanError(f"{tool}: {name} {params[name]!r} does not exist", key=name)


def require_choice(tool: str, params: dict, name: str, choices: Iterable[str]) -> None:
    options = tuple(choices)
    if params[name] not in options:
        raise PlanError(f"{tool}: {name} must be one of {', '.join(options)}; got {params[name]!r}", key=name)


def parse_size(value: str | int, what: str) -> int:
    """'64M', '1G', '512k', a byte count, or '2xRAM' (relative to this machine's memory, so one plan means
    "twice the RAM" on every host) → bytes (binary units, as fio and sysbench read them)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    relative = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*x\s*RAM\s*", str(value), re.IGNORECASE)
    if relative:
        return int(float(relative[1]) * ram_bytes())
    text = str(value).strip().upper().removesuffix("B").removesuffix("I")
    factors = {"K": 1024, "M": MIB, "G": 1024 * MIB, "T": 1024**4}
    try:
        if text and text[-1] in factors:
            return int(float(text[:-1]) * factors[text[-1]])
        return int(text)
    except ValueError:
        raise PlanError(
            f"{what}: expected a size such as 64M, 2G or 2xRAM, got {value!r}", key=what
        ) from None


def packages(
    debian: tuple[str, ...], fedora: tuple[str, ...], freebsd: tuple[str, ...]
) -> Mapping[str, tuple]:
    """An adapter's OS package names, read-only (a class attribute shared by every instance)."""
    return MappingProxyType({"debian": debian, "fedora": fedora, "freebsd": freebsd})


def version_options(options: Mapping[str, tuple[str, ...]]) -> Mapping[str, tuple[str, ...]]:
    """An adapter's `version_args`, read-only (a class attribute shared by every instance)."""
    return MappingProxyType(dict(options))


def run_once(
    adapter: Adapter,
    params: dict[str, Any],
    workdir: Path,
    *,
    cache: Path | None = None,
    timeout_s: float = 60,
) -> dict[str, float]:
    """Drive one adapter through its whole life cycle for a single trial, the way the runner does (without
    statistics or store): for tests and for trying a tool by hand. Teardown always runs."""
    resolved = adapter.resolve(params)
    scratch, cache = workdir / "scratch", cache or workdir / "cache"
    scratch.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    ctx = WorkloadContext(
        name=adapter.name, params=resolved, scratch=scratch, cache=cache, is_root=os.geteuid() == 0
    )
    try:
        adapter.setup(ctx)
        adapter.prime(ctx)
        tctx = TrialContext(workload=ctx, params=resolved, trial_dir=scratch / "trial-00001", variant="A")
        tctx.trial_dir.mkdir()
        adapter.before_trial(tctx)
        try:
            proc = subprocess.run(
                adapter.command(tctx),
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=os.environ | ctx.env,
            )
            files = {
                n: p.read_text(errors="replace") if p.exists() else ""
                for n, p in adapter.output_files(tctx).items()
            }
            raw = RawOutput(proc.stdout, proc.stderr, proc.returncode, files)
            if proc.returncode != 0:
                raise ParseError(f"{adapter.name} exited {proc.returncode}: {proc.stderr[-500:]}")
            return adapter.parse(raw)
        finally:
            adapter.after_trial(tctx)
    finally:
        adapter.teardown(ctx)


def newest(pattern: str) -> str | None:
    """The last match of a glob in sorted order (the newest source tarball a package ships, as they are named)."""
    found = sorted(glob.glob(pattern))
    return found[-1] if found else None


def extract_once(tarball: Path, cache: Path) -> Path:
    """Extract the source into the cache the first time; later runs reuse it (it is only ever read)."""
    stem = tarball.name.removesuffix(".tar.xz").removesuffix(".tar.gz").removesuffix(".tar")
    dest = cache / stem
    marker = dest / ".fairmark-extracted"
    if marker.exists():
        return _top(dest)
    cache.mkdir(parents=True, exist_ok=True)
    # One extraction at a time: a second fairmark (a test worker) extracting too would remove `dest` under the
    # first one's build to put its own copy there.
    with open(cache / f".{stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            _extract(tarball, cache, dest)
    return _top(dest)


def _extract(tarball: Path, cache: Path, dest: Path) -> None:
    marker = dest / ".fairmark-extracted"
    tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=cache))
    try:
        proc = subprocess.run(["tar", "-xf", str(tarball), "-C", str(tmp)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SetupError(f"cannot extract {tarball}: {proc.stderr[-800:]}")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)  # atomic: an interrupted extraction never looks complete
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    marker.touch()


def _top(dest: Path) -> Path:
    """A tarball holds one top directory (linux-source-6.1/, binutils-2.40/)."""
    subdirs = [p for p in dest.iterdir() if p.is_dir()]
    return subdirs[0] if len(subdirs) == 1 and not (dest / "Makefile").exists() else dest
