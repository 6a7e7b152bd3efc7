"""False alarms and phantom rows (issue 25 item 6): each says something that is not so, or shows a row that holds
nothing. One test each; all failed before the fix."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from fairmark.probe.diff import diff_snapshots
from fairmark.probe.doctor import diagnose
from fairmark.probe.snapshot import take_snapshot
from helpers import FIXTURES, REPO

SYSROOTS = FIXTURES / "sysroots"


@pytest.mark.slow
def test_a_file_system_test_on_tmpfs_did_not_measure_the_page_cache(tmp_path: Path, fairmark_cli) -> None:
    """sysbench fileio reading a tmpfs: no disk sees its bytes, and none should — the memory is what is tested.
    Before: "measured the page cache, not the disk" (the disks saw 0 of the bytes it claimed)."""
    shm = Path(tempfile.mkdtemp(prefix="fairmark-test-tmpfs-", dir="/dev/shm"))
    try:
        plan = tmp_path / "p.toml"
        plan.write_text(f"""
[run]
warmup = 0
min_trials = 3
max_trials = 3
[[workload]]
name = "memfs"
tool = "sysbench"
params = {{ test = "fileio", file_total_size = "32M", file_test_mode = "seqrd", time_s = 1, directory = "{shm}" }}
""")
        code, out, err = fairmark_cli("run", str(plan), "--json", "--accept-risk")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["page_cache"] == []
        base = doc["run"]["options"]["device_baselines"]["memfs"]
        assert base["memory_fs"] is True and base["fs"] == "tmpfs"
        _, shown, _ = fairmark_cli("show", "last")
        assert "page cache" not in shown
    finally:
        import shutil

        shutil.rmtree(shm, ignore_errors=True)


def test_a_run_stored_before_memory_fs_was_kept_is_not_flagged_either() -> None:
    from fairmark.report.pagecache import _in_memory

    assert _in_memory({"skipped": "/dev/shm/x is on a memory file system (the memory is what is tested)"})
    assert not _in_memory({"skipped": "fio is not installed (no device baseline)"})


def _steal(since_boot: float | None, sample: float | None) -> dict[str, object]:
    snap = take_snapshot(str(SYSROOTS / "linux-debian12-vm"), workdir="/")
    snap["load"] = dict(snap["load"]) | {"steal_pct_since_boot": since_boot, "steal_pct_sample": sample}
    return {f.id: f for f in diagnose(snap)}


def test_no_steal_finding_and_no_fix_for_a_steal_that_rounds_to_zero() -> None:
    # this VM: 143 of 1.2 M jiffies since boot (0.012%) printed "steal 0.0% … fix: use a dedicated host"
    assert "steal" not in _steal(0.012, 0.0)
    found = _steal(0.66, None)["steal"]
    assert found.severity == "info" and "0.66% since boot" in found.evidence
    assert _steal(3.1, 0.5)["steal"].severity == "warn"


def test_env_diff_has_no_row_for_an_error_neither_side_has() -> None:
    a = {"tools": {"zstd": {"version": "1.5.4", "error": None}}}
    b = {"tools": {"zstd": {"version": "1.5.4"}}}  # the key absent: "— / —" before
    assert diff_snapshots(a, b) == []
    changed = diff_snapshots(a, {"tools": {"zstd": {"version": "1.5.5"}}})
    assert [d["key"] for d in changed] == ["tools.zstd.version"]


def test_env_prints_no_error_row_for_a_tool_it_found(fairmark_cli) -> None:
    code, out, err = fairmark_cli("env")
    assert code == 0, err
    assert re.search(r"^\s*cc\.version\s+\d", out, re.MULTILINE)  # cc is found on this machine …
    assert not re.search(r"\.error\s+unknown", out)  # … and has no "cc.error unknown" row


def test_ministat_export_writes_no_header_only_files(tmp_path: Path, fairmark_cli) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text("""
[run]
warmup = 0
min_trials = 3
max_trials = 3
max_failures = 2
[[workload]]
name = "w"
command = 'if [ "$FAIL" = 1 ]; then exit 1; fi; echo "rate 5"'
shell = true
metrics = [{ name = "rate", regex = 'rate (\\d+)', better = "higher" }]
[[variant]]
name = "ok"
[[variant]]
name = "broken"
env = { FAIL = "1" }
""")
    code, _, err = fairmark_cli("run", str(plan), "--no-monitors", "--accept-risk")
    assert code in (0, 4), err  # 4: the broken cell has no successful trial (tests/test_failed_runs.py)
    out = tmp_path / "ministat"
    code, listed, err = fairmark_cli("export", "last", "--format", "ministat", "--out", str(out), "--json")
    assert code == 0, err
    files = [Path(f) for f in json.loads(listed)["files"]]
    assert files and all("broken" not in f.name for f in files)
    for f in files:
        values = [line for line in f.read_text().splitlines() if not line.startswith("#")]
        assert len(values) == 3, f  # every file holds data
    assert sorted(out.iterdir()) == sorted(files)


def test_setup_dry_run_names_the_programs_of_command_workloads(tmp_path: Path, fairmark_cli) -> None:
    plan = tmp_path / "server.toml"
    plan.write_text("""
[[workload]]
name = "db"
setup = "fairmark-test-no-such-server --daemon"
command = ["true"]
shell = true
""")
    code, out, err = fairmark_cli("setup", str(plan), "--dry-run", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["command_programs"] == {"fairmark-test-no-such-server": False, "true": True}
    code, out, err = fairmark_cli("setup", str(plan), "--dry-run")
    assert "all 0 packages" not in out and "no tool workload with packages to install" in out
    assert "fairmark-test-no-such-server (NOT FOUND)" in out and "install what is not found yourself" in out
    code, out, err = fairmark_cli("setup", str(REPO / "plans" / "kernels.toml"), "--dry-run")
    assert code == 0 and "dd (found)" in out, err


def test_survived_minutes_stop_at_the_overload_duration() -> None:
    """45 s of overload whose stressors took 39 s more to wind down: 0.75 min survived, not 1.4."""
    from fairmark.run.workloads import adapter_for
    from fairmark.run.workloads.base import RawOutput
    from fairmark.run.workloads.stability import OVERLOAD_MARK

    log = (FIXTURES / "tools" / "stability" / "planted_kmsg.txt").read_text()
    log = re.sub(r"^# end elapsed_s=[\d.]+", "# end elapsed_s=84.000", log, flags=re.MULTILINE)
    adapter = adapter_for("stability")
    values = adapter.parse(RawOutput(f"{OVERLOAD_MARK}=45\nstress-ng status 0\n", "", 0, {"kmsg": log}))
    assert values["survived_min"] == pytest.approx(0.75)
    assert values["events_per_min"] == pytest.approx(3 / 0.75)
    ended_early = re.sub(r"elapsed_s=84.000", "elapsed_s=30.000", log)
    values = adapter.parse(RawOutput(f"{OVERLOAD_MARK}=45\n", "", 0, {"kmsg": ended_early}))
    assert values["survived_min"] == pytest.approx(0.5)  # the overload ended before its time: what it lasted


def test_a_variant_with_no_kernel_event_gets_an_upper_bound_on_its_rate() -> None:
    from fairmark.report.stability import _with_rate
    from fairmark.stats.rates import poisson_ci

    v = _with_rate({"minutes_survived": 6.9, "kernel_events": 0}, 95.0)
    assert v["events_per_min"] == 0 and v["events_per_min_ci"][0] == 0
    assert v["events_per_min_ci"][1] == pytest.approx(3.689 / 6.9, rel=1e-3)  # Garwood: −ln(0.025) = 3.689
    low, high = poisson_ci(3, 2.0)
    assert 0 < low < 1.5 < high


def test_between_boot_sd_is_not_its_own_plus_minus(capsys) -> None:
    from fairmark.report.boots import levels_lines
    from fairmark.report.compare_runs import show_levels
    from fairmark.stats.levels import LevelsReport, levels

    # 2 boots a side, 10 trials each: boot means 16 ms apart, trials 4 ms apart within a boot; one value ≤ 0
    # keeps the raw scale (in seconds), where the spreads read in ms
    trial = np.array([-0.006, -0.004, -0.002, -0.001, 0.0, 0.0, 0.001, 0.002, 0.004, 0.006])
    values = {u: m + trial for u, m in (("a1", 1.234), ("a2", 1.251), ("b1", 1.301), ("b2", -0.001))}
    units = {u: [u] * 10 for u in values}
    levels = LevelsReport(
        levels(
            np.concatenate([values["a1"], values["a2"]]),
            units["a1"] + units["a2"],
            np.concatenate([values["b1"], values["b2"]]),
            units["b1"] + units["b2"],
        )
    )
    comparison = SimpleNamespace(levels=levels, name_baseline="A", name_other="B", unit="s", confidence=95.0)
    show_levels(SimpleNamespace(group="w", variant="", metric="wall_s", comparison=comparison))
    out = capsys.readouterr().out
    assert "A: between-boot sd 12 ms, within-boot sd 3.6 ms" in out, out  # √((17²/2) − 3.56²/10); √(114/9)
    assert "16 ± 16" not in out and "12 ± 12" not in out and "0.012 ± 0.012" not in out
    assert "±" not in " ".join(levels_lines(comparison, "s"))  # type: ignore[arg-type]


def test_a_count_of_kernel_events_never_gets_an_interval_below_zero() -> None:
    from fairmark.report.load import _summary
    from fairmark.report.sections.groups import summary_text as _summary_text

    s = _summary([0.0, 0.0, 1.0], "events", 95.0)  # t-interval: 0.33 ± 1.43, down to −1.1
    assert s["interval"] == "exact Poisson" and 0.0 < s["ci_low"] < s["mean"] < s["ci_high"]
    assert (
        _summary_text(s, "events") == "0.3 [0.008, 1.9] events (exact Poisson)"
    )  # a bound above 0 keeps a digit
    zero = _summary([0.0, 0.0, 0.0], "events", 95.0)
    assert zero["ci_low"] == 0.0 and zero["ci_high"] == pytest.approx(3.689 / 3, rel=1e-3)
    assert "interval" not in _summary([0.5, 1.5, 2.0], "s", 95.0)  # times keep their t-interval
