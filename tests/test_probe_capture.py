"""Saving the live host as a sysroot, and the live FreeBSD path (commands instead of files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairmark.errors import InputError
from fairmark.probe import freebsd as fb
from fairmark.probe._io import CommandResult
from fairmark.probe.capture import save_sysroot
from fairmark.probe.doctor import diagnose
from fairmark.probe.snapshot import take_snapshot

SYSROOTS = Path(__file__).parent / "fixtures" / "sysroots"


def test_saved_sysroot_describes_the_same_machine(tmp_path) -> None:
    dest = tmp_path / "root"
    files = save_sysroot(str(dest), env={"LANG": "C", "DB_PASSWORD": "planted-capture-pw"})
    assert "proc/cpuinfo" in files and "environ" in files
    assert "planted-capture-pw" not in (dest / "environ").read_text()
    live, saved = take_snapshot("/", env={}), take_snapshot(str(dest), workdir="/")
    for key in ("model", "threads", "cores"):
        assert saved["cpu"][key] == live["cpu"][key]
    assert saved["os"]["release"] == live["os"]["release"]
    assert saved["kernel_config"]["sha256"] == live["kernel_config"]["sha256"]
    assert saved["identity"]["host_id"] == live["identity"]["host_id"]
    assert {f.id for f in diagnose(saved) if f.severity == "error"} == set()


def test_save_refuses_a_non_empty_directory(tmp_path) -> None:
    (tmp_path / "x").write_text("keep me")
    with pytest.raises(InputError, match="not empty"):
        save_sysroot(str(tmp_path))


def test_cli_save_then_doctor(fairmark_cli, tmp_path) -> None:
    code, out, _ = fairmark_cli("env", "--save-sysroot", str(tmp_path / "r"), "--json")
    assert code == 0 and json.loads(out)["files"]
    code, out, _ = fairmark_cli("doctor", "--sysroot", str(tmp_path / "r"), "--json")
    assert code == 0 and json.loads(out)["counts"]["error"] == 0


def test_live_freebsd_runs_the_commands_its_sysroot_files_stand_for(monkeypatch) -> None:
    """On a FreeBSD host the probe runs sysctl -a, uname -a and mount; here their outputs come from a fixture."""
    root = SYSROOTS / "freebsd-current-debug"
    outputs = {
        "sysctl": (root / "sysctl.txt").read_text(),
        "uname": (root / "uname.txt").read_text(),
        "mount": (root / "mount.txt").read_text(),
    }
    calls = []

    def fake_run(argv, *, timeout_s=2.0):
        calls.append(argv[0])
        return CommandResult(tuple(argv), 0, outputs.get(argv[0], ""), "")

    monkeypatch.setattr(fb.platform, "system", lambda: "FreeBSD")
    monkeypatch.setattr(fb, "run_command", fake_run)
    snap = take_snapshot("/", env={"PATH": "/usr/bin"})
    assert {"sysctl", "uname", "mount"} <= set(calls)
    assert snap["source"]["os_family"] == "freebsd" and snap["os"]["release"] == "14.0-CURRENT"
    assert "WITNESS" in snap["kernel_config"]["debug_options"]
    assert {f.id: f.severity for f in diagnose(snap)}["debug-kernel"] == "error"
