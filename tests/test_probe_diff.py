"""diff_snapshots and host_identity: exactly the planted differences, nothing that always changes."""

from __future__ import annotations

import copy
from pathlib import Path

from fairmark.probe.diff import diff_snapshots
from fairmark.probe.snapshot import host_identity, take_snapshot

SYSROOTS = Path(__file__).parent / "fixtures" / "sysroots"


def base() -> dict:
    return take_snapshot(str(SYSROOTS / "linux-debian12-vm"), env={"PATH": "/usr/bin", "LANG": "C"})


def test_identical_snapshots_taken_apart_have_no_differences() -> None:
    a, b = base(), base()
    b["taken_at"], b["elapsed_s"] = "2030-01-01T00:00:00Z", 9.9
    b["load"]["loadavg"] = [9.0, 9.0, 9.0]
    b["os"]["uptime_s"] += 1000
    b["memory"]["available_kib"] -= 12345
    assert diff_snapshots(a, b) == []


def test_planted_differences_are_listed_with_categories() -> None:
    a, b = base(), base()
    b["os"]["release"] = "6.19.0-test"
    b["toolchain"]["gcc"] = {"path": "/usr/bin/gcc", "version": "13.1.0"}
    b["memory"]["thp"] = "always"
    b["env"]["MALLOC_ARENA_MAX"] = "2"
    b["host"]["hostname"] = "other"
    d = {x["key"]: x for x in diff_snapshots(a, b)}
    assert d["os.release"] == {
        "key": "os.release",
        "a": "6.18.44-fc-v595",
        "b": "6.19.0-test",
        "category": "validity",
    }
    assert d["memory.thp"]["category"] == "validity"
    assert d["toolchain.gcc.version"]["category"] == "validity" and d["toolchain.gcc.version"]["a"] is None
    assert d["env.MALLOC_ARENA_MAX"] == {
        "key": "env.MALLOC_ARENA_MAX",
        "a": None,
        "b": "2",
        "category": "environment",
    }
    assert d["host.hostname"]["category"] == "info"
    assert set(d) == {
        "os.release",
        "memory.thp",
        "env.MALLOC_ARENA_MAX",
        "host.hostname",
        "toolchain.gcc.path",
        "toolchain.gcc.version",
    }
    cats = [x["category"] for x in diff_snapshots(a, b)]
    assert cats == sorted(cats, key=["validity", "environment", "info"].index)


def test_per_cpu_governor_difference_is_keyed_by_cpu() -> None:
    a = take_snapshot(str(SYSROOTS / "linux-fedora-debug-smt"))
    b = copy.deepcopy(a)
    b["cpufreq"]["per_cpu"][3]["governor"] = "performance"
    assert [x["key"] for x in diff_snapshots(a, b)] == ["cpufreq.per_cpu.3.governor"]


def test_host_identity_is_stable_and_ignores_clock_and_hostname() -> None:
    a, b = base(), base()
    b["host"]["hostname"], b["load"]["loadavg"] = "renamed", [5, 5, 5]
    b["memory"]["total_kib"] += 2048  # a different kernel reserves a little more memory: same machine
    b["identity"] = {}
    assert host_identity(a) == host_identity(b) == a["identity"]["host_id"]
    c = copy.deepcopy(b)
    c["cpu"]["model"] = "Other CPU"
    assert host_identity(c) != host_identity(a)
    d = copy.deepcopy(b)
    d["kernel_config"]["sha256"] = "0" * 64
    assert host_identity(d) != host_identity(a)


def test_different_machines_have_different_identities() -> None:
    ids = {take_snapshot(str(p))["identity"]["host_id"] for p in SYSROOTS.iterdir()}
    assert len(ids) >= 6


def test_comparison_findings_respect_declared_differences() -> None:
    from fairmark.probe.diff import comparison_findings

    a, b = base(), base()
    b["os"]["release"], b["memory"]["thp"] = "6.19.0", "always"
    b["env"]["GLIBC_TUNABLES"], b["host"]["hostname"] = "glibc.malloc.check=3", "renamed"
    got = {(f.id, f.severity, f.evidence.split(":")[0]) for f in comparison_findings(a, b)}
    assert got == {
        ("comparison-validity", "error", "os.release"),
        ("comparison-validity", "error", "memory.thp"),
        ("comparison-environment", "warn", "env.GLIBC_TUNABLES"),
    }
    declared = comparison_findings(a, b, declared=["os.release", "env.GLIBC_TUNABLES"])
    assert [f.evidence.split(":")[0] for f in declared] == ["memory.thp"]
