"""Local mode of boot variants (issue 14 part 3): the one-shot boot hook that runs `fairmark resume RUN` after a
reboot — a systemd unit on Linux, an rc.d script on FreeBSD — installed into a sysroot (this machine is never
rebooted and its /etc is never touched), journaled like a system change: removed by its own run, and a killed
run's hook is removed by the next fairmark command. About 2 s (one fairmark subprocess, one killed child)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from fairmark.run.variants.boothook import hook_command, install, undo_hook
from fairmark.run.variants.journal import Journal
from helpers import fairmark_subprocess

ARGV = hook_command(["/usr/local/bin/fairmark"], "1234abcd", "sqlite:////var/db/fm.db")


def test_systemd_hook_installs_enabled_and_removes(tmp_path):
    journal = Journal.for_this_process(tmp_path / "state")
    paths = install(journal, ARGV, kind="systemd", root=tmp_path / "root")
    unit = tmp_path / "root/etc/systemd/system/fairmark-resume.service"
    link = tmp_path / "root/etc/systemd/system/multi-user.target.wants/fairmark-resume.service"
    assert "ExecStart=/usr/local/bin/fairmark resume 1234abcd --accept-risk --store" in unit.read_text()
    assert (
        "Type=oneshot" in unit.read_text()
        and os.readlink(link) == "/etc/systemd/system/fairmark-resume.service"
    )
    (entry,) = journal.entries  # journaled before anything was written
    assert entry["type"] == "boot-hook" and set(entry["paths"]) == set(paths)
    done, problem = undo_hook(entry)
    assert problem is None and "removed boot hook" in done
    assert not unit.exists() and not link.is_symlink()
    assert undo_hook(entry) == ("boot hook (systemd): nothing installed", None)  # idempotent


def test_freebsd_rcd_hook_on_a_sysroot(tmp_path):
    journal = Journal.for_this_process(tmp_path / "state")
    install(journal, ARGV, kind="rc.d", root=tmp_path)
    script = tmp_path / "usr/local/etc/rc.d/fairmark_resume"
    text = script.read_text()
    assert (
        text.startswith("#!/bin/sh\n# PROVIDE: fairmark_resume") and 'rcvar="fairmark_resume_enable"' in text
    )
    assert ". /etc/rc.subr" in text and "run_rc_command" in text and os.access(script, os.X_OK)
    assert (tmp_path / "etc/rc.conf.d/fairmark_resume").read_text() == 'fairmark_resume_enable="YES"\n'
    subprocess.run(["sh", "-n", str(script)], check=True)  # valid sh
    undo_hook(journal.entries[0])
    assert not script.exists() and not (tmp_path / "etc/rc.conf.d/fairmark_resume").exists()


def test_a_killed_run_leaves_no_hook_after_the_next_fairmark_command(tmp_path):
    state, root = tmp_path / "state", tmp_path / "root"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys, time
            from fairmark.run.variants.boothook import install
            from fairmark.run.variants.journal import Journal
            install(Journal.for_this_process({str(state)!r}), {ARGV!r}, kind="systemd", root={str(root)!r})
            print("installed", flush=True)
            time.sleep(600)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline().strip() == "installed"
    unit = root / "etc/systemd/system/fairmark-resume.service"
    assert unit.exists()
    os.kill(child.pid, signal.SIGKILL)  # the run dies (or the machine reboots) with the hook installed
    child.wait()
    res = fairmark_subprocess(
        "runs", "--store", f"sqlite:///{tmp_path / 'x.db'}", env={"FAIRMARK_STATE_DIR": str(state)}
    )
    assert res.returncode == 0, res.stderr
    assert "removed boot hook (systemd)" in res.stderr
    assert not unit.exists() and list((root / "etc/systemd/system/multi-user.target.wants").iterdir()) == []
    assert list(Path(state / "journal").glob("*.json")) == []
