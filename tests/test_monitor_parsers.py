"""Monitor parsers over captured /proc and FreeBSD sysctl text; series arithmetic on known snapshots."""

from pathlib import Path

import pytest

from fairmark.run.monitors import base, freebsd, linux

FIX = Path(__file__).parent / "fixtures" / "h4"


def test_proc_stat_states_and_counters():
    cpu, counters, gauges = linux.parse_stat((FIX / "proc_a" / "stat").read_text())
    assert cpu["total"] == {"user": 14015, "system": 5303 + 113, "idle": 66183, "iowait": 951, "steal": 539}
    assert set(cpu) == {"total", "cpu0", "cpu1"}
    assert counters == {"intr": 233324, "ctxt": 719295, "forks": 9334}
    assert gauges == {"runq": 4, "blocked": 1}  # procs_running minus the reader itself


def test_vmstat_minor_faults_exclude_major():
    out = linux.parse_vmstat((FIX / "proc_a" / "vmstat").read_text())
    assert out == {
        "faults_major": 1295,
        "faults_minor": 3903893 - 1295,
        "swap_in_pages": 3,
        "swap_out_pages": 7,
    }


def test_diskstats_counts_whole_disks_once():
    out = linux.parse_diskstats((FIX / "proc_a" / "diskstats").read_text())
    # vda + nvme0n1; not their partitions, not loop0 or zram0
    assert out["disk_reads"] == 76651 + 10
    assert out["disk_read_bytes"] == (3894914 + 20) * 512
    assert out["disk_write_bytes"] == (3244136 + 8) * 512


def test_net_and_pressure_and_meminfo():
    net = linux.parse_net_dev((FIX / "proc_a" / "net" / "dev").read_text())
    assert net["net_rx_bytes"] == 3293 + 348605521 and net["net_tx_packets"] == 31 + 4359
    psi = linux.parse_pressure("io", (FIX / "proc_a" / "pressure" / "io").read_text())
    assert psi == {"psi_io_some_us": 8880144, "psi_io_full_us": 8060728}
    mem = linux.parse_meminfo((FIX / "proc_a" / "meminfo").read_text())
    assert mem == {"mem_free_kib": 23512268, "mem_cached_kib": 807704 + 16172, "swap_used_kib": 576}


def test_reader_over_fixture_tree():
    snap = linux.LinuxReader(FIX / "proc_a").snapshot()
    assert snap.counters["psi_cpu_some_us"] == 23490897
    assert snap.gauges["load1"] == 2.75
    assert "disk_write_bytes" in snap.counters and "net_rx_bytes" in snap.counters


def _snap(t, user, system, idle, ctxt, runq):
    cpu = {"user": user, "system": system, "idle": idle, "iowait": 0.0, "steal": 0.0}
    return base.Snapshot(
        t, {"total": cpu, "cpu0": cpu}, {"ctxt": ctxt, "psi_cpu_some_us": t * 5e5}, {"runq": runq}
    )


def test_series_rates_percentages_and_totals():
    snaps = [
        _snap(10.0, 0, 0, 0, 1000, 1),
        _snap(11.0, 90, 10, 0, 3000, 3),
        _snap(12.0, 140, 10, 50, 3500, 1),
    ]
    s = base.build_series(snaps, os_name="linux", interval_s=1.0)
    assert s["t_s"] == [1.0, 2.0]
    assert s["cpu_pct"]["user"] == [90.0, 50.0]
    assert s["rates_per_s"]["ctxt"] == [2000.0, 500.0]
    assert s["rates_per_s"]["psi_cpu_some_pct"] == [50.0, 50.0]
    assert s["gauges"]["runq"] == [3.0, 1.0]
    t = s["totals"]
    assert t["wall_s"] == 2.0 and t["cpu_pct"]["user"] == 70.0 and t["counters"]["ctxt"] == 2500
    assert t["gauge_peak"]["runq"] == 3.0 and t["gauge_mean"]["runq"] == 2.0


def test_series_needs_start_and_end():
    with pytest.raises(ValueError):
        base.build_series([_snap(0, 0, 0, 0, 0, 0)], os_name="linux", interval_s=1.0)


def test_freebsd_sysctl_parse_and_snapshot():
    values = freebsd.parse_sysctl((FIX / "freebsd_sysctl_a.txt").read_text())
    assert values["kern.cp_times"].split()[0] == "1000"
    assert "RUNQ: 3" in values["vm.vmtotal"]
    snap = freebsd.to_snapshot(values, 0.0)
    assert snap.cpu["cpu0"] == {"user": 1010, "system": 320, "idle": 8000}
    assert snap.cpu["total"]["system"] == 320 + 250 + 30
    assert "iowait" not in snap.cpu["total"]  # FreeBSD has no such tick: absent, not zero
    assert snap.counters["forks"] == 3200 and snap.counters["faults_major"] == 1500
    assert snap.gauges == {"mem_free_kib": 4_000_000, "mem_cached_kib": 1_000_000, "load1": 1.52, "runq": 2}


def test_freebsd_series_from_two_samples():
    a = freebsd.to_snapshot(freebsd.parse_sysctl((FIX / "freebsd_sysctl_a.txt").read_text()), 0.0)
    b = freebsd.to_snapshot(freebsd.parse_sysctl((FIX / "freebsd_sysctl_b.txt").read_text()), 2.0)
    s = base.build_series([a, b], os_name="freebsd", interval_s=1.0)
    # deltas: user 100+100, system 400+400, idle 100+50 → 1150 ticks
    assert s["totals"]["cpu_pct"]["system"] == pytest.approx(100 * 800 / 1150, rel=1e-3)
    assert s["rates_per_s"]["ctxt"] == [5000.0] and s["rates_per_s"]["forks"] == [250.0]
    assert "iowait" not in s["cpu_pct"]


def test_freebsd_bad_cp_times_is_an_error():
    with pytest.raises(ValueError, match=r"kern\.cp_times"):
        freebsd.cpu_ticks("1 2 3")
    assert freebsd.sysctl_command()[:2] == ["sysctl", "-q"]


def test_snapshot_memo_gives_what_parsing_gives():
    """A reader parses a file again only when its text changed: the snapshot is the same either way."""
    texts = {n: (FIX / "proc_a" / n).read_text() for n in linux.SAMPLE_FILES if (FIX / "proc_a" / n).exists()}
    memo: linux.Memo = {}
    fresh = linux.snapshot_from(texts, 1.0)
    assert linux.snapshot_from(texts, 1.0, memo) == fresh
    assert linux.snapshot_from(texts, 1.0, memo) == fresh  # from the memo this time
    moved = texts | {"net/dev": texts["net/dev"].replace("3293", "4293", 1)}
    again = linux.snapshot_from(moved, 1.0, memo)
    assert again.counters["net_rx_bytes"] == fresh.counters["net_rx_bytes"] + 1000
    assert again == linux.snapshot_from(moved, 1.0)


def test_series_of_one_interval_as_of_several():
    """A trial shorter than the interval (one pair of snapshots) gets the columns and totals that the general
    path gives: the same keys, one value each, a key missing from the end snapshot absent."""
    a, b = _snap(0.0, 0, 0, 0, 100, 2), _snap(0.5, 30, 10, 10, 600, 4)
    b = base.Snapshot(b.t_s, b.cpu, {"ctxt": 600.0}, {"runq": 4.0, "load1": 1.5})
    s = base.build_series([a, b], os_name="linux", interval_s=1.0)
    assert list(s["gauges"]) == ["load1", "runq"] and s["gauges"]["runq"] == [4.0]
    assert s["rates_per_s"] == {"ctxt": [1000.0]}
    assert s["totals"]["gauge_peak"] == {"load1": 1.5, "runq": 4.0} and s["totals"]["rate_peak"] == {
        "ctxt": 1000.0
    }
    assert s["totals"]["counters"] == {"ctxt": 500.0} and s["cpu_pct"]["user"] == [60.0]
