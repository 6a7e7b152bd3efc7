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
