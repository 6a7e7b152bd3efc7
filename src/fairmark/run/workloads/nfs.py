"""NFS v3 vs v4 (seed 003): a file-system workload on an NFS mount served by this machine, the protocol version
as the variant.

What it needs from the host, checked before anything starts (`missing(sysroot)`, pure over a sysroot):
  - an NFS client in the kernel (`nfs`/`nfs4` in /proc/filesystems, or a loadable module), whatever the server:
    even a user-space server (NFS-Ganesha) is mounted by the kernel's client;
  - a server: the kernel's nfsd (`nfsd` in /proc/filesystems or a loadable module), which the
    workload would run in a network namespace it creates, else `ganesha.nfsd`.
Where something is missing the setup refuses (exit 3) naming each missing piece and how it was looked for.

The measured path (export, mount with vers=3 / vers=4.2, fio on the mount) is NOT implemented yet: this host
(the only one it could be tested on) has neither an NFS client nor nfsd, so the setup refuses everywhere until
it can be written and tested on a host that has them.
"""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path
from typing import Any

from fairmark.errors import EnvironmentRefused
from fairmark.run.workloads import tools
from fairmark.run.workloads.base import (
    Adapter,
    MetricSpec,
    ParamSpec,
    ParseError,
    RawOutput,
    WorkloadContext,
)

VERSIONS = ("3", "4")


def _filesystems(root: Path) -> set[str]:
    path = root / "proc/filesystems"
    return set(path.read_text().split()) if path.exists() else set()


def _config(root: Path, option: str) -> str | None:
    """`y`, `m` or None for CONFIG_`option` from /proc/config.gz (None also when the kernel exports none)."""
    path = root / "proc/config.gz"
    if not path.exists():
        return None
    m = re.search(rf"^CONFIG_{option}=(\w)$", gzip.decompress(path.read_bytes()).decode(), re.MULTILINE)
    return m.group(1) if m else None


def _module(root: Path, release: str, name: str) -> bool:
    tree = root / "lib/modules" / release
    return tree.is_dir() and any(tree.rglob(f"{name}.ko*"))


def missing(root: Path = Path("/"), *, ganesha: bool | None = None) -> list[str]:
    """What this host lacks for the NFS workload, each with how it was looked for (empty: it can run)."""
    release = (root / "proc/sys/kernel/osrelease").read_text().strip()
    fs = _filesystems(root)
    modules = root / "lib/modules" / release
    mods = f"{modules} {'has no nfs.ko' if modules.is_dir() else 'does not exist (no loadable modules)'}"
    out = []
    if not {"nfs", "nfs4"} & fs and not _module(root, release, "nfs"):
        out.append(f"an NFS client in the kernel: no 'nfs' or 'nfs4' in /proc/filesystems, CONFIG_NFS_FS="
                   f"{_config(root, 'NFS_FS') or 'unset'} in /proc/config.gz, {mods}")  # fmt: skip
    # Not /proc/fs/nfsd: procfs creates that empty mount point on every kernel, with or without nfsd.
    kernel_server = "nfsd" in fs or _module(root, release, "nfsd")
    has_ganesha = shutil.which("ganesha.nfsd") is not None if ganesha is None else ganesha
    if not kernel_server and not has_ganesha:
        out.append(f"an NFS server: no 'nfsd' in /proc/filesystems, CONFIG_NFSD="
                   f"{_config(root, 'NFSD') or 'unset'}, no nfsd.ko; and no user-space ganesha.nfsd "
                   "(Debian: nfs-ganesha, nfs-ganesha-vfs)")  # fmt: skip
    return out


class Nfs(Adapter):
    name = "nfs"
    summary = (
        "NFS v3 vs v4 on a mount served by this machine (refuses, naming what is missing, where it cannot)"
    )
    packages = tools.packages(("nfs-kernel-server", "nfs-common", "fio"), (), ())
    params = (ParamSpec("version", "4", "", "NFS protocol version: 3 or 4 (make it the variant)"),)
    metrics = (MetricSpec("read_mib_s", "MiB/s", "higher"), MetricSpec("write_mib_s", "MiB/s", "higher"))
    measures = ("network", "disk", "kernel")

    def check(self, params: dict[str, Any]) -> None:
        params["version"] = str(params["version"])
        tools.require_choice(self.name, params, "version", VERSIONS)

    def setup(self, ctx: WorkloadContext) -> None:
        lacking = missing()
        if lacking:
            raise EnvironmentRefused(
                "nfs: NFS v3 vs v4 cannot run on this host; it lacks " + "; and ".join(lacking)
            )
        raise EnvironmentRefused(
            "nfs: this host has an NFS client and server, but fairmark's NFS measurement is not implemented "
            "yet (it could not be tested where it was written: that host had neither)"
        )

    def parse(self, raw: RawOutput) -> dict[str, float]:
        # No trial runs until the measurement is written (see the module docstring): nothing is a result.
        raise ParseError("nfs: the NFS measurement is not implemented; no output is a result")
