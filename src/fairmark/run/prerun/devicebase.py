"""What the device under a file-system workload can do, measured by fio with O_DIRECT on the same file system
before the first trial (issue 11 item 6, seed 003's filebench lesson).

A result faster than this — or one whose bytes never reached the disks — measured the page cache, not the disk;
fairmark.report.pagecache says so beside the numbers. O_DIRECT through the workload's own file system reaches the
same device without the page cache and never touches a raw block device, so it is safe on any machine.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from typing import Any

from fairmark.run.workloads import tools
from fairmark.run.workloads.base import ParseError
from fairmark.run.workloads.fio import parse_json

# Sequential 1 MiB blocks, 16 in flight: the device's best case, so a result above it cannot be the device.
FIO_JOB = ("--bs=1M", "--size=256M", "--iodepth=16", "--direct=1", "--time_based", "--runtime=3")
TIMEOUT_S = 60


def measure(items: Iterable[tuple[str, str, str]]) -> dict[str, dict[str, Any]]:
    """(workload, tool, directory) of each file-system workload → its device's O_DIRECT read and write MiB/s
    (one measurement per file system; a memory file system or a missing fio is recorded as why not)."""
    out: dict[str, dict[str, Any]] = {}
    by_dir: dict[str, dict[str, Any]] = {}
    for workload, tool, directory in items:
        if directory not in by_dir:
            by_dir[directory] = _baseline(directory)
        out[workload] = {"tool": tool, "directory": directory} | by_dir[directory]
    return out


def _baseline(directory: str) -> dict[str, Any]:
    kind = tools.fs_type(directory)
    if kind in tools.MEMORY_FILESYSTEMS:  # no disk under it: nothing a result could be "beyond"
        return {
            "fs": kind,
            "memory_fs": True,
            "skipped": f"{directory} is on a memory file system ({kind}: the memory is what is tested)",
        }
    return {"fs": kind, "memory_fs": False} | _fio(directory)


def _fio(directory: str) -> dict[str, Any]:
    if shutil.which("fio") is None:
        return {"skipped": "fio is not installed (no device baseline)"}
    engine = "libaio" if sys.platform.startswith("linux") else "posixaio"
    found: dict[str, Any] = {
        "method": f"fio {' '.join(FIO_JOB)} --ioengine={engine}, sequential, same file system"
    }
    with tempfile.TemporaryDirectory(prefix="fairmark-device-", dir=directory) as tmp:
        for rw in ("write", "read"):  # write first: the read needs the file, and fio lays it out untimed
            argv = [
                "fio",
                "--name=device",
                f"--directory={tmp}",
                f"--rw={rw}",
                f"--ioengine={engine}",
                *FIO_JOB,
                "--output-format=json",
            ]
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return {"skipped": f"fio could not measure the device: {exc}"}
            try:
                found[f"{rw}_mib_s"] = parse_json(proc.stdout)["bw_mib_s"]
            except (ParseError, KeyError, TypeError) as exc:  # no result: no baseline, and why
                why = (proc.stderr or str(exc)).strip()[-300:]
                return {"skipped": f"fio with O_DIRECT failed here ({why})"}
    return found


def for_runtimes(runtimes: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """The device baselines of a run's file-system workloads (those whose adapter reports a data set)."""
    items = []
    for rt in runtimes:
        ds = rt.adapter.data_set(rt.params) if rt.adapter is not None else None
        if ds is not None:
            items.append((rt.workload.name, rt.adapter.name, ds.directory or tempfile.gettempdir()))
    return measure(items)
