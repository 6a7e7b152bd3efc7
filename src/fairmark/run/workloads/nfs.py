"""NFS v3 vs v4 (seed 003): a file copied over NFS from a server this workload starts, the protocol version as
the variant.

The measured path, all real parts, all in user space:
  - the server is NFS-Ganesha (VFS back end) exporting a directory in the workload's scratch, with its own
    rpcbind, in a network and mount namespace of its own (`unshare --net --mount`: port 2049 and rpcbind's port
    111 and socket are this workload's alone, so concurrent runs never meet; loopback only);
  - the client is libnfs's `nfs-cp` (Debian: libnfs-utils), run inside that namespace (`nsenter --net`), with
    `?version=3` or `?version=4` in the URL: each trial copies `size_mib` MiB from the export to the trial's
    directory (`mode = "read"`) or from the scratch to a new file on the export (`mode = "write"`).
The primary metric is the trial's wall time (lower is better): a whole `nfs-cp`, so its start, the mount and the
close are in it, the same for both versions. Every trial checks that nfs-cp copied exactly the file's size.
What a verdict compares is therefore libnfs's v3 and v4 clients against Ganesha's v3 and v4 servers, not the
kernel's NFS client (seed 003's blogbench ran on a kernel mount): every report says so beside the numbers.

The kernel's NFS client is not used: the kernel fairmark is developed on has none (no nfs/nfs4/nfsd in
/proc/filesystems, CONFIG_NFS_FS and CONFIG_NFSD unset, no loadable modules), so a mount could not be tested.
A host that cannot run the path above (not Linux, not root, a program missing) is refused before anything
starts, with each missing piece and how it was looked for (`missing`, also shown by `fairmark tools`).

Known here: Debian 12's libnfs 4.0.0 cannot write over NFSv4 ("ZDR error: Failed to encode COMPOUND4args",
nothing reaches the server): such trials fail with that message (URLs carry `debug=1` so libnfs prints it);
reads over v4 and both directions over v3 work.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fairmark.errors import EnvironmentRefused
from fairmark.run.workloads import servers, tools
from fairmark.run.workloads.base import (
    Adapter,
    MetricSpec,
    ParamSpec,
    ParseError,
    RawOutput,
    TrialContext,
    WorkloadContext,
)

VERSIONS = ("3", "4")
MODES = ("read", "write")
PROGRAMS = {  # program → the Debian package that has it
    "ganesha.nfsd": "nfs-ganesha",
    "rpcbind": "rpcbind",
    "nfs-cp": "libnfs-utils",
    "nfs-ls": "libnfs-utils",
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "ip": "iproute2",
}
FSAL_VFS = (
    "usr/lib/*/ganesha/libfsalvfs.so",
    "usr/lib64/ganesha/libfsalvfs.so",
    "usr/lib/ganesha/libfsalvfs.so",
)
EXPORT = "/export"  # the export's path for both versions (Mount_Path_Pseudo)
_COPIED = re.compile(r"^copied (\d+) bytes\s*$", re.MULTILINE)


def missing(
    root: Path = Path("/"),
    *,
    system: str | None = None,
    euid: int | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> list[str]:
    """What this host lacks for the NFS workload, each with how it was looked for (empty: it can run)."""
    system = system or platform.system()
    if system != "Linux":
        return [f"Linux: the server runs in Linux network and mount namespaces (this is {system})"]
    out = []
    if (os.geteuid() if euid is None else euid) != 0:
        out.append("root, to give the server network and mount namespaces of its own (unshare --net --mount)")
    lacking = sorted({f"{p} ({pkg})" for p, pkg in PROGRAMS.items() if which(p) is None})
    if lacking:
        out.append("programs not found on PATH: " + ", ".join(lacking))
    if not any(next(root.glob(pattern), None) for pattern in FSAL_VFS):
        out.append(
            f"NFS-Ganesha's VFS back end: no {' or '.join('/' + p for p in FSAL_VFS)} (nfs-ganesha-vfs)"
        )
    return out


def url(version: str, path: str) -> str:
    # debug=1: libnfs prints its own errors (e.g. v4 writes with libnfs 4.0.0), which the failed trial keeps
    return f"nfs://127.0.0.1{EXPORT}/{path}?version={version}&debug=1"


class GaneshaServer(servers.ManagedServer):
    """NFS-Ganesha and its rpcbind in a network and mount namespace of their own (both die with the group)."""

    kind = "nfs-ganesha"
    start_timeout_s = 60.0
    # /run is a private tmpfs in the namespace: rpcbind's socket and state, ganesha's pid file stay inside.
    SCRIPT = (
        "set -e; mount -t tmpfs -o size=1m,mode=0755 fairmark-nfs /run; ip link set lo up; rpcbind -f -w & "
        "i=0; while [ ! -S /run/rpcbind.sock ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; "
        'exec ganesha.nfsd -F -f "$0" -L "$1" -p /run/ganesha.pid -N NIV_EVENT'
    )

    @property
    def export(self) -> Path:
        return self.dir / "export"

    @property
    def netns(self) -> str:
        return f"/proc/{self.pid}/ns/net"

    def prepare(self) -> None:
        self.export.mkdir()
        (self.dir / "ganesha.conf").write_text(
            "NFS_CORE_PARAM { Protocols = 3, 4; Enable_NLM = false; Enable_RQUOTA = false; Enable_UDP = false;\n"
            "  Mount_Path_Pseudo = true; }\n"
            "NFSV4 { Graceless = true; }\n"  # no 90 s grace period after start
            "NFS_KRB5 { Active_krb5 = false; }\n"
            f"EXPORT {{ Export_Id = 1; Path = {self.export}; Pseudo = {EXPORT}; Access_Type = RW;\n"
            "  Squash = No_Root_Squash; SecType = sys; Protocols = 3, 4; Transports = TCP;\n"
            "  FSAL { Name = VFS; } }\n"
        )

    def argv(self) -> list[str]:
        conf, log = self.dir / "ganesha.conf", self.dir / "ganesha.log"
        return [
            "unshare",
            "--net",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            self.SCRIPT,
            str(conf),
            str(log),
        ]

    def client(self, *argv: str) -> list[str]:
        return ["nsenter", f"--net={self.netns}", "--", *argv]

    def ready(self) -> bool:
        probe = self.client("nfs-ls", url("3", ""))
        try:
            return subprocess.run(probe, capture_output=True, timeout=10, check=False).returncode == 0
        except subprocess.TimeoutExpired:
            return False


class Nfs(Adapter):
    name = "nfs"
    summary = (
        "NFS v3 vs v4: a file copied over NFS (NFS-Ganesha in its own namespace, libnfs nfs-cp), loopback"
    )
    packages = tools.packages(("nfs-ganesha", "nfs-ganesha-vfs", "libnfs-utils", "rpcbind"), (), ())
    executables = ("ganesha.nfsd", "rpcbind", "nfs-cp")
    version_args = tools.version_options({"ganesha.nfsd": ("-v",), "rpcbind": (), "nfs-cp": ()})
    params = (
        ParamSpec("version", "4", "", "NFS protocol version: 3 or 4 (make it the variant)"),
        ParamSpec("mode", "read", "", "read: copy the file from the export; write: copy a file onto it"),
        ParamSpec("size_mib", 128, "MiB", "size of the file copied in each trial"),
    )
    metrics = (
        MetricSpec("wall_s", "s", "lower", "seconds to copy the file with nfs-cp (start and mount included)"),
    )
    measures = ("network", "kernel")

    @staticmethod
    def labels(params: dict[str, Any]) -> dict[str, str]:
        """What a report must state next to the numbers: whose NFS this measures."""
        return {
            "client": "libnfs nfs-cp in user space (not the kernel's NFS client)",
            "server": "NFS-Ganesha (VFS), loopback in its own network namespace",
            "mode": f"{params['mode']} {params['size_mib']} MiB",
        }

    def check(self, params: dict[str, Any]) -> None:
        params["version"] = str(params["version"])
        tools.require_choice(self.name, params, "version", VERSIONS)
        tools.require_choice(self.name, params, "mode", MODES)
        tools.require_positive_ints(self.name, params, ["size_mib"])

    def host_problem(self) -> str | None:
        lacking = missing()
        return "; ".join(lacking) if lacking else None

    def setup(self, ctx: WorkloadContext) -> None:
        if problem := self.host_problem():
            raise EnvironmentRefused(f"nfs: NFS v3 vs v4 cannot run on this host; it lacks {problem}")
        servers.start_in(ctx, GaneshaServer(ctx.scratch / "nfs-ganesha"))

    def before_trial(self, ctx: TrialContext) -> None:
        server: GaneshaServer = ctx.state["server"]
        server.check_alive()
        size = int(ctx.params["size_mib"]) * 2**20
        source = (server.export if ctx.params["mode"] == "read" else server.dir) / f"data-{size}.bin"
        if not source.exists():  # made once, untimed, outside the measured copy
            _random_file(source, size)
        (ctx.trial_dir / "expected-bytes").write_text(str(size))

    def command(self, ctx: TrialContext) -> list[str]:
        server: GaneshaServer = ctx.state["server"]
        p = ctx.params
        name = f"data-{int(p['size_mib']) * 2**20}.bin"
        if p["mode"] == "read":
            return server.client("nfs-cp", url(p["version"], name), str(ctx.trial_dir / "copy.bin"))
        target = f"written-{ctx.trial_dir.name}-{p['version']}.bin"  # a new file per trial
        return server.client("nfs-cp", str(server.dir / name), url(p["version"], target))

    def output_files(self, ctx: TrialContext) -> dict[str, Path]:
        return {"expected-bytes": ctx.trial_dir / "expected-bytes"}

    def after_trial(self, ctx: TrialContext) -> None:
        (ctx.trial_dir / "copy.bin").unlink(missing_ok=True)
        server = ctx.state.get("server")
        if server is not None:
            for written in server.export.glob(f"written-{ctx.trial_dir.name}-*.bin"):
                written.unlink()

    def teardown(self, ctx: WorkloadContext) -> None:
        servers.stop_in(ctx)

    def parse(self, raw: RawOutput) -> dict[str, float]:
        copied = _COPIED.search(raw.stdout)
        if copied is None:
            raise ParseError(
                f"nfs-cp printed no 'copied N bytes': {(raw.stderr or raw.stdout).strip()[-300:]}"
            )
        expected = (raw.files.get("expected-bytes") or "").strip()
        if expected.isdigit() and int(copied.group(1)) != int(expected):
            raise ParseError(f"nfs-cp copied {copied.group(1)} bytes of {expected}")
        return {}  # the result is the trial's wall time, which fairmark measures


def _random_file(path: Path, size: int) -> None:
    """Incompressible data (nothing on the way may shrink it), written under a temporary name first."""
    part = path.with_suffix(".partial")
    with open(part, "wb") as out:
        for offset in range(0, size, 2**20):
            out.write(os.urandom(min(2**20, size - offset)))
    part.replace(path)
