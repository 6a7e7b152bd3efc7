"""The environment of a remote host: its probe inputs captured by the agent as a sysroot tree, parsed here by the
same parsers as a local `--sysroot` (so a FreeBSD host is judged by the FreeBSD probe on a Linux controller)."""

from __future__ import annotations

import base64
import fnmatch
import shutil
import tempfile
from collections.abc import Sequence
from typing import Any

from fairmark.probe.capture import LINUX_DIRS, LINUX_FILES
from fairmark.probe.redact import redact_env, redact_text
from fairmark.probe.snapshot import take_snapshot
from fairmark.remote.confine import CONTROL, UnsafeName, make_dirs_inside, parts, write_inside
from fairmark.remote.connection import HostConnection, ProtocolError

FREEBSD_COMMANDS = {"sysctl.txt": ["sysctl", "-a"], "uname.txt": ["uname", "-a"], "mount.txt": ["mount"]}
BOOT_FILES = ("boot/config-{release}", "var/run/dmesg.boot")


# Links whose target is the setting (FreeBSD's /etc/malloc.conf): its target travels as text and is kept as the
# text file the probe reads in its place (probe/freebsd.py: malloc.conf.txt) — no link is made here.
LINKS = {"etc/malloc.conf": "malloc.conf.txt"}


def capture_sysroot(conn: HostConnection, dest: str) -> list[str]:
    """Write the host's probe inputs under `dest`; secrets are redacted here, before anything is stored.

    What the host answers is confined (docs/security.md): a file, directory or command is taken only under
    a name the request's patterns match (relative, no `..`), written afresh under `dest` without following a
    link (remote/confine.py), a link's target is kept as text, and an environment variable whose name or value
    holds a control character (a newline would forge the next line) is not kept."""
    got = conn.call(
        "capture",
        files=list(LINUX_FILES),
        dirs=list(LINUX_DIRS),
        boot_files=list(BOOT_FILES),
        commands=FREEBSD_COMMANDS if conn.hello.get("os") == "freebsd" else {},
        links=list(LINKS),
    )
    try:
        return _store(conn, got, dest)
    except ValueError as exc:  # UnsafeName, bad base64, text that is not Unicode
        raise ProtocolError(f"host {conn.spec.name}: protocol error: capture: {exc}") from None


def _store(conn: HostConnection, got: dict[str, Any], dest: str) -> list[str]:
    host, commands = conn.spec.name, FREEBSD_COMMANDS if conn.hello.get("os") == "freebsd" else {}
    written = []
    for rel, b64 in got["files"].items():
        _requested(host, rel, [*LINUX_FILES, *(p.replace("{release}", "*") for p in BOOT_FILES)])
        data = base64.b64decode(b64, validate=True)
        if rel == "proc/cmdline":  # boot parameters can carry passwords
            data = redact_text(data.decode(errors="replace")).encode()
        written.append(_write(dest, rel, data))
    for rel in got["dirs"]:
        _requested(host, rel, LINUX_DIRS)
        make_dirs_inside(dest, rel)
    for rel, text in got["commands"].items():
        _requested(host, rel, list(commands))
        if text:
            written.append(_write(dest, rel, text.encode()))
    for rel, target in got["links"].items():
        _requested(host, rel, list(LINKS))
        if CONTROL.search(target):
            raise UnsafeName(f"link {rel}: control character in its target {target!r}")
        _write(dest, LINKS[rel], target.encode())
    if CONTROL.search(got["hostname"]):
        raise UnsafeName(f"control character in the host name {got['hostname']!r}")
    if "etc/hostname" not in written:
        _write(dest, "etc/hostname", (got["hostname"] + "\n").encode())
    # The SSH session's own variables name the connection, not the host's configuration: kept apart.
    env = redact_env(
        {
            k: v
            for k, v in got["environ"].items()
            if not k.startswith("SSH_") and "=" not in k and _plain(k + v)
        }
    )
    _write(dest, "environ", "".join(f"{k}={v}\n" for k, v in sorted(env.items())).encode())
    return written


def _plain(text: str) -> bool:
    """No control character, and Unicode throughout (an undecodable byte travels as a lone surrogate)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return not CONTROL.search(text)


def _requested(host: str, rel: str, patterns: Sequence[str]) -> None:
    """A name of the host's answer must be one the request asked for: a plain relative name (no `..`) that
    one of its glob patterns matches component by component (a `*` never crosses a `/`)."""
    names = parts(rel)
    for pattern in patterns:
        want = pattern.split("/")
        if len(want) == len(names) and all(map(fnmatch.fnmatchcase, names, want)):
            return
    raise UnsafeName(f"{rel!r} was not asked for")


def _write(dest: str, rel: str, data: bytes) -> str:
    write_inside(dest, rel, data)
    return rel


def remote_snapshot(conn: HostConnection, *, workdir: str = "/tmp") -> dict[str, Any]:
    """The environment snapshot of a connected host, tagged with where it came from."""
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
