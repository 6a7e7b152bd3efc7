"""The environment of a remote host: its probe inputs captured by the agent as a sysroot tree, parsed here by the
same parsers as a local `--sysroot` (so a FreeBSD host is judged by the FreeBSD probe on a Linux controller)."""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
from typing import Any

from fairmark.probe.capture import LINUX_DIRS, LINUX_FILES
from fairmark.probe.redact import redact_env, redact_text
from fairmark.remote.connection import HostConnection

FREEBSD_COMMANDS = {"sysctl.txt": ["sysctl", "-a"], "uname.txt": ["uname", "-a"], "mount.txt": ["mount"]}
BOOT_FILES = ("boot/config-{release}", "var/run/dmesg.boot")


def capture_sysroot(conn: HostConnection, dest: str) -> list[str]:
    """Write the host's probe inputs under `dest`; secrets are redacted here, before anything is stored."""
    got = conn.call(
        "capture",
        files=list(LINUX_FILES),
        dirs=list(LINUX_DIRS),
        boot_files=list(BOOT_FILES),
        commands=FREEBSD_COMMANDS if conn.hello.get("os") == "freebsd" else {},
        links=["etc/malloc.conf"],
    )
    written = []
    for rel, b64 in got["files"].items():
        data = base64.b64decode(b64)
        if rel == "proc/cmdline":  # boot parameters can carry passwords
            data = redact_text(data.decode(errors="replace")).encode()
        _write(dest, rel, data)
        written.append(rel)
    for rel in got["dirs"]:
        os.makedirs(os.path.join(dest, rel), exist_ok=True)
    for rel, text in got["commands"].items():
        if text:
            _write(dest, rel, text.encode())
            written.append(rel)
    for rel, target in got["links"].items():
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        os.symlink(target, os.path.join(dest, rel))
    if not os.path.exists(os.path.join(dest, "etc/hostname")):
        _write(dest, "etc/hostname", (got["hostname"] + "\n").encode())
    # The SSH session's own variables name the connection, not the host's configuration: kept apart.
    env = redact_env({k: v for k, v in got["environ"].items() if not k.startswith("SSH_")})
    _write(dest, "environ", "".join(f"{k}={v}\n" for k, v in sorted(env.items())).encode())
    return written


def _write(dest: str, rel: str, data: bytes) -> None:
    path = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def remote_snapshot(conn: HostConnection, *, workdir: str = "/tmp") -> dict[str, Any]:
    """The environment snapshot of a connected host, tagged with where it came from."""
    from fairmark.probe import take_snapshot

    dest = tempfile.mkdtemp(prefix="fairmark-host-")
    try:
        capture_sysroot(conn, dest)
        snap = take_snapshot(dest, workdir=workdir)
    finally:
        shutil.rmtree(dest, ignore_errors=True)
    snap["source"] = {"root": f"ssh:{conn.spec.name}", "live": True, "os_family": snap["source"]["os_family"]}
    snap["remote"] = {
        "host": conn.spec.name,
        "ssh": conn.spec.ssh,
        "address": conn.hello.get("address"),
        "agent_python": conn.hello.get("python"),
    }
    return snap


# The facts that make a comparison of hosts one of hardware rather than of operating systems, each with the
# `declare` word that accepts a difference in it.
HARDWARE_FACTS = {
    "cpu_model": lambda s: s.get("cpu", {}).get("model"),
    "cores": lambda s: (s.get("cpu", {}).get("cores"), s.get("cpu", {}).get("threads")),
    "memory": lambda s: round((s.get("memory", {}).get("total_kib") or 0) / (1 << 20)),
    "disk": lambda s: sorted(str(d.get("model")) for d in s.get("host", {}).get("disks") or []),
    "fs": lambda s: (s.get("fs") or {}).get("fstype"),
}


def hardware_differences(snaps: dict[str, dict[str, Any]], declared: list[str]) -> list[str]:
    """Undeclared hardware differences between hosts, in words ("cpu_model: h1 'X' vs h2 'Y'")."""
    out = []
    names = list(snaps)
    for fact, get in HARDWARE_FACTS.items():
        if fact in declared:
            continue
        values = {n: get(snaps[n]) for n in names}
        if len({repr(v) for v in values.values()}) > 1:
            out.append(f"{fact}: " + " vs ".join(f"{n} {v!r}" for n, v in values.items()))
    return out


# The facts that make it a comparison of operating systems or kernels: the point of most plans over hosts, said
# with declare = ["os", "kernel"]; undeclared, such a difference is a warning (the user may not know of it).
SOFTWARE_FACTS = {
    "os": lambda s: (s.get("os", {}).get("kernel"), s.get("os", {}).get("distribution")),
    "kernel": lambda s: (s.get("os", {}).get("release"), s.get("os", {}).get("version")),
}


def software_differences(snaps: dict[str, dict[str, Any]], declared: list[str]) -> list[str]:
    """Undeclared operating-system and kernel differences between hosts, in words."""
    out = []
    for fact, get in SOFTWARE_FACTS.items():
        values = {n: get(s) for n, s in snaps.items()}
        if fact not in declared and len({repr(v) for v in values.values()}) > 1:
            out.append(f"{fact}: " + " vs ".join(f"{n} {v!r}" for n, v in values.items()))
    return out


def declare_word(key: str) -> str | None:
    """The `declare` word that covers an environment-diff key (None: no word does)."""
    prefixes = (
        ("os.kernel", "os"),
        ("os.distribution", "os"),
        ("os.release", "kernel"),
        ("os.version", "kernel"),
        ("os.cmdline", "kernel"),
        ("kernel_config", "kernel"),
        ("cpu.model", "cpu_model"),
        ("cpu.cores", "cores"),
        ("cpu.threads", "cores"),
        ("memory.total_kib", "memory"),
        ("host.disks", "disk"),
        ("fs.fstype", "fs"),
    )
    return next((w for p, w in prefixes if key == p or key.startswith(p + ".")), None)
