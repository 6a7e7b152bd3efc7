"""Between-round checks (volatile snapshot, drift) and the per-OS wording of fixes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fairmark.probe.doctor import diagnose, diagnose_volatile
from fairmark.probe.snapshot import take_snapshot, volatile_part, volatile_snapshot
from fairmark.probe.tools import _package_version, tool_versions

SYSROOTS = Path(__file__).parent / "fixtures" / "sysroots"


def test_drift_between_baseline_and_now_is_reported() -> None:
    base = volatile_part(take_snapshot(str(SYSROOTS / "linux-fedora-debug-smt")))
    now = volatile_snapshot(str(SYSROOTS / "linux-fedora-debug-smt"))
    assert [f for f in diagnose_volatile(now, base) if f.id == "env-drift"] == []
    now = {**now, "governors": ["performance"], "swap_used_kib": (base["swap_used_kib"] or 0) + 4096}
    drift = [f.evidence for f in diagnose_volatile(now, base) if f.id == "env-drift"]
    assert drift == ["governors: ['powersave'] -> ['performance']", "swap in use grew by 4096 KiB"]


def test_volatile_findings_cover_noise_and_throttling() -> None:
    v = volatile_snapshot(str(SYSROOTS / "linux-fedora-debug-smt"))
    v["load"]["busy_processes"] = [{"pid": 42, "comm": "make", "cpu_pct": 95.0}]
    v["load"]["pressure"] = {"cpu_some_avg10": 55.0}
    ids = {f.id: f.severity for f in diagnose_volatile(v)}
    assert ids["busy-process"] == "warn" and ids["thermal"] == "warn" and ids["pressure"] == "warn"


def test_freebsd_findings_get_freebsd_fixes() -> None:
    fs = {f.id: f for f in diagnose(take_snapshot(str(SYSROOTS / "freebsd-current-debug")))}
    assert "hyperthreading_allowed" in fs["smt"].fix
    linux = {f.id: f for f in diagnose(take_snapshot(str(SYSROOTS / "linux-fedora-debug-smt")))}
    assert "/sys/devices/system/cpu/smt/control" in linux["smt"].fix


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs a Debian host")
def test_a_tool_without_a_version_flag_gets_its_package_version() -> None:
    pkg = _package_version(shutil.which("dpkg-query"))
    assert pkg is not None and pkg[0] == "dpkg" and pkg[1][0].isdigit()


def test_version_line_is_parsed_from_real_tool_output() -> None:
    v = tool_versions(["ls"])["ls"]  # coreutils: `ls (GNU coreutils) 9.1`
    assert v["path"] and v["version"] and v["version"][0].isdigit() and v["error"] is None
