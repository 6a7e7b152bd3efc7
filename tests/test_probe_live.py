"""The live snapshot of this machine: complete, quick, nothing hard-coded (values come from the host)."""

from __future__ import annotations

import os

from fairmark.probe.doctor import diagnose
from fairmark.probe.snapshot import take_snapshot, volatile_snapshot


def test_live_snapshot_reads_this_host(tmp_path) -> None:
    # how quick it is, bench/snapshot.py measures; a wall-time bound here would only measure the neighbours
    snap = take_snapshot("/", tools=["zstd", "no-such-tool-xyz"], workdir=str(tmp_path))
    assert snap["source"]["live"] is True
    assert snap["os"]["release"] == os.uname().release
    assert snap["cpu"]["threads"] == os.cpu_count()
    assert snap["fs"]["workdir"] == os.path.realpath(tmp_path)
    assert snap["load"]["sample_s"] and snap["load"]["steal_pct_sample"] is not None
    assert snap["tools"]["no-such-tool-xyz"] == {
        "path": None,
        "version": None,
        "raw": None,
        "error": "not found on PATH",
    }
    assert snap["toolchain"]["python"] and snap["toolchain"]["libc"]
    assert len(snap["identity"]["host_id"]) == 16


def test_live_doctor_has_no_errors_without_workloads() -> None:
    snap = take_snapshot("/", env={"PATH": "/usr/bin"})
    assert [f for f in diagnose(snap) if f.severity == "error"] == []


def test_volatile_snapshot_has_the_changing_parts() -> None:
    v = volatile_snapshot("/", sample_s=0.1)
    assert {"load", "governors", "boost", "thp", "swap_used_kib", "thermal"} <= set(v)
    assert v["load"]["loadavg"] is not None
