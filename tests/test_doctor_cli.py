"""`fairmark doctor`, `fairmark env` and `fairmark env --diff` as a user runs them."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from fairmark.probe.snapshot import take_snapshot

SYSROOTS = Path(__file__).parent / "fixtures" / "sysroots"


def test_doctor_json_on_this_machine_has_no_false_errors(fairmark_cli) -> None:
    code, out, _ = fairmark_cli("doctor", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["sysroot"] is None and doc["counts"]["error"] == 0, doc["findings"]
    ids = {f["id"] for f in doc["findings"]}
    # facts of this kind of VM (TOOLS.md): no cpufreq governor, a hypervisor
    assert "governor-unknown" in ids or "governor" in ids
    assert all({"id", "severity", "title", "evidence", "why", "fix"} <= set(f) for f in doc["findings"])


def test_doctor_sysroot_table_names_the_debug_kernel_and_still_exits_0(fairmark_cli) -> None:
    code, out, _ = fairmark_cli("doctor", "--sysroot", str(SYSROOTS / "freebsd-current-debug"))
    assert code == 0
    assert "debug-kernel" in out and "error" in out and "GENERIC-NODEBUG" in out


def test_doctor_bad_sysroot_is_a_usage_error(fairmark_cli, tmp_path) -> None:
    code, _, err = fairmark_cli("doctor", "--sysroot", str(tmp_path / "missing"))
    assert code == 2 and "not a directory" in " ".join(err.split())


def test_env_json_is_the_snapshot_and_redacted(fairmark_cli, monkeypatch) -> None:
    monkeypatch.setenv("FAIRMARK_TEST_TOKEN", "planted-cli-9911")
    monkeypatch.setenv("DB_PASSWORD", "planted-cli-pw")
    code, out, _ = fairmark_cli("env", "--json", "--tool", "zstd")
    assert code == 0
    assert "planted-cli-9911" not in out and "planted-cli-pw" not in out
    snap = json.loads(out)
    assert snap["env"]["FAIRMARK_TEST_TOKEN"] == "<redacted>"
    assert snap["tools"]["zstd"]["version"]
    assert {
        "host",
        "cpu",
        "memory",
        "os",
        "kernel_config",
        "cpufreq",
        "mitigations",
        "fs",
        "load",
        "toolchain",
        "tools",
        "env",
        "identity",
    } <= set(snap)


def test_env_human_output_lists_sections(fairmark_cli) -> None:
    code, out, _ = fairmark_cli("env", "--sysroot", str(SYSROOTS / "linux-debian12-vm"))
    assert code == 0 and "kernel_config" in out and "AMD EPYC" in out


def _store_run(store, snap: dict) -> str:
    return store.create_run(
        plan_path="p.toml",
        plan_text="",
        plan_sha256="0" * 64,
        seed=1,
        status="done",
        fairmark_version="test",
        env_before=snap,
        options={},
        notes=[],
    )


def test_env_diff_shows_exactly_the_planted_differences(fairmark_cli) -> None:
    from fairmark.store.db import Store

    store = Store.open(os.environ["FAIRMARK_STORE"])
    a = take_snapshot(str(SYSROOTS / "linux-debian12-vm"), env={"PATH": "/usr/bin"})
    b = json.loads(json.dumps(a))
    b["os"]["release"], b["env"]["GLIBC_TUNABLES"] = "6.19.1", "glibc.malloc.check=3"
    b["taken_at"], b["load"]["loadavg"] = "2031-01-01T00:00:00Z", [4.0, 4.0, 4.0]
    ra = _store_run(store, a)
    time.sleep(0.01)
    rb = _store_run(store, b)
    code, out, err = fairmark_cli("env", "--diff", ra[:8], rb, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["a"] == ra and doc["b"] == rb
    assert [(d["key"], d["category"]) for d in doc["differences"]] == [
        ("os.release", "validity"),
        ("env.GLIBC_TUNABLES", "environment"),
    ]
    assert [f["id"] for f in doc["findings"]] == ["comparison-validity", "comparison-environment"]
    code, out, _ = fairmark_cli("env", "--diff", ra, rb)
    assert code == 0 and "os.release" in out and "6.19.1" in out
    code, out, _ = fairmark_cli("env", "--diff", ra, rb, "--declare", "os.release", "--json")
    assert [f["id"] for f in json.loads(out)["findings"]] == ["comparison-environment"]
    code, _, err = fairmark_cli("env", "--diff", ra, rb, "--after")
    assert code == 2 and "no environment snapshot" in " ".join(err.split())


def test_env_diff_of_unknown_run_is_a_usage_error(fairmark_cli) -> None:
    code, _, err = fairmark_cli("env", "--diff", "nosuchrun", "other")
    assert code == 2 and "no run" in err
