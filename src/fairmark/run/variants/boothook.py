"""Local mode of boot variants: a one-shot boot hook that runs `fairmark resume RUN` after the machine reboots
itself into the next variant's boot.

The hook is a system change like a sysctl: journaled (write-ahead, fsync'd) before a file is written. That gives
the one-shot behaviour for free: after the reboot the process that installed it is gone, so the first fairmark
command of the new boot — the hook's own `fairmark resume` — finds the journal pending and removes the hook
(`recover_pending`) before it resumes; a resumed run that needs another reboot installs a fresh one. A finished,
failed or killed run therefore never leaves a hook behind: close() removes it, and a killed run's hook is removed
by the next fairmark command, whichever it is.

Linux: a systemd unit (Type=oneshot, after the network) enabled by the symlink `systemctl enable` would make (so
neither installing nor removing needs a running systemd). FreeBSD: an rc.d script (PROVIDE/REQUIRE, rcvar) and
its `_enable="YES"` in /etc/rc.conf.d, so /etc/rc.conf is never edited.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from fairmark.run.variants.journal import Journal

Kind = Literal["systemd", "rc.d"]
NAME = "fairmark-resume"
RC_NAME = "fairmark_resume"  # rc.d names are shell identifiers


def hook_command(fairmark: Sequence[str], run_id: str, store_url: str | None) -> list[str]:
    argv = [*fairmark, "resume", run_id, "--accept-risk"]
    return argv + (["--store", store_url] if store_url else [])


def systemd_files(argv: Sequence[str]) -> dict[str, str]:
    unit = f"""[Unit]
Description=fairmark: resume the benchmark run after its reboot into the next boot variant
Wants=network-online.target
After=network-online.target multi-user.target

[Service]
Type=oneshot
ExecStart={shlex.join(argv)}
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
"""
    return {f"etc/systemd/system/{NAME}.service": unit}


def rcd_files(argv: Sequence[str]) -> dict[str, str]:
    script = f"""#!/bin/sh
# PROVIDE: {RC_NAME}
# REQUIRE: LOGIN NETWORKING
# KEYWORD: nojail
#
# fairmark: resume the benchmark run after its reboot into the next boot variant (one-shot: the resumed
# fairmark removes this script and its rc.conf.d entry before it continues).

. /etc/rc.subr

name="{RC_NAME}"
rcvar="{RC_NAME}_enable"
start_cmd="{RC_NAME}_start"
stop_cmd=":"

{RC_NAME}_start()
{{
	{shlex.join(argv)} &
}}

load_rc_config $name
run_rc_command "$1"
"""
    return {
        f"usr/local/etc/rc.d/{RC_NAME}": script,
        f"etc/rc.conf.d/{RC_NAME}": f'{RC_NAME}_enable="YES"\n',
    }


def install(journal: Journal, argv: Sequence[str], *, kind: Kind, root: str | Path = "/") -> list[str]:
    """Install the hook under `root` (a sysroot in tests); journaled first. Returns the paths written."""
    top = Path(root)
    files = systemd_files(argv) if kind == "systemd" else rcd_files(argv)
    paths = {str(top / rel): text for rel, text in files.items()}
    links = {}
    if kind == "systemd":  # what `systemctl enable` does, without needing a running systemd
        link = top / f"etc/systemd/system/multi-user.target.wants/{NAME}.service"
        links[str(link)] = f"/etc/systemd/system/{NAME}.service"
    journal.add(
        {"type": "boot-hook", "kind": kind, "paths": [*paths, *links], "label": f"boot hook ({kind})"}
    )
    for path, text in paths.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
        if "rc.d" in path:
            os.chmod(path, 0o555)
    for made, target in links.items():
        Path(made).parent.mkdir(parents=True, exist_ok=True)
        if not Path(made).is_symlink():
            os.symlink(target, made)
    return [*paths, *links]


def undo_hook(entry: dict[str, Any]) -> tuple[str, str | None]:
    """Remove the hook's files (idempotent); (what was done, problem or None)."""
    removed, problems = [], []
    for path in entry.get("paths", []):
        p = Path(path)
        try:
            if p.is_symlink() or p.exists():
                p.unlink()
                removed.append(path)
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror or exc}")
    label = entry.get("label", "boot hook")
    done = f"removed {label}: {', '.join(removed)}" if removed else f"{label}: nothing installed"
    return done, "; ".join(problems) or None
