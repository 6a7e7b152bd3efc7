"""Linux probe over fixture sysroots (real captured files; see tests/fixtures/sysroots/README.md)."""

from __future__ import annotations

from pathlib import Path

from fairmark.probe._io import Root
from fairmark.probe.kconfig import parse_linux_config
from fairmark.probe.linux import mount_for, parse_cpuinfo, parse_mountinfo, parse_proc_stat, steal_pct
from fairmark.probe.snapshot import take_snapshot

SYSROOTS = Path(__file__).parent / "fixtures" / "sysroots"


def snap(name: str, **kw) -> dict:
    return take_snapshot(str(SYSROOTS / name), **kw)


def test_this_vm_capture_is_described_from_files() -> None:
    s = snap("linux-debian12-vm", workdir="/work/main")
    assert s["source"] == {"root": str(SYSROOTS / "linux-debian12-vm"), "live": False, "os_family": "linux"}
    assert s["cpu"]["model"] == "AMD EPYC" and s["cpu"]["threads"] == 2 and s["cpu"]["sockets"] == 1
    assert s["cpu"]["smt"] == {"control": "notsupported", "active": False}
    assert s["os"]["release"] == "6.18.44-fc-v595" and s["os"]["clocksource"] == "tsc"
    assert s["memory"]["thp"] == "madvise" and s["memory"]["aslr"] == "full"
    assert s["kernel_config"]["source"] == "/proc/config.gz"
    assert s["kernel_config"]["debug_options"]["DEBUG_LIST"] == "y"
    assert "PROVE_LOCKING" not in s["kernel_config"]["debug_options"]
    assert s["host"]["virtualization"]["hypervisor"] == "kvm"
    assert s["cpufreq"]["available"] is False
    assert s["fs"]["fstype"] == "ext4" and s["fs"]["mount_point"] == "/"
    assert s["mitigations"]["meltdown"] == "Not affected"
    assert s["load"]["steal_pct_since_boot"] is not None and s["load"]["sample_s"] is None
    assert s["tools"] == {} and s["toolchain"]["probed"] is False  # no commands run for a sysroot


def test_debug_config_from_boot_and_cpufreq_per_cpu() -> None:
    s = snap("linux-fedora-debug-smt")
    kc = s["kernel_config"]
    assert kc["source"] == "/boot/config-6.8.2-300.fc40.x86_64+debug"
    for opt in ("PROVE_LOCKING", "KASAN", "DEBUG_PAGEALLOC", "LOCK_STAT", "DEBUG_KMEMLEAK"):
        assert opt in kc["debug_options"], opt
    cf = s["cpufreq"]
    assert cf["governors"] == ["powersave"] and len(cf["per_cpu"]) == 8 and cf["boost"] is True
    assert cf["per_cpu"][7] == {
        "cpu": 7,
        "driver": "intel_pstate",
        "governor": "powersave",
        "min_khz": 800000,
        "max_khz": 3700000,
        "epp": "balance_performance",
    }
    assert s["cpu"]["cores"] == 4 and s["cpu"]["threads"] == 8 and s["cpu"]["smt"]["active"] is True
    assert s["thermal"]["throttled"] is True


def test_aarch64_cpuinfo_without_blank_lines() -> None:
    text = (SYSROOTS / "linux-fedora-production" / "proc" / "cpuinfo").read_text()
    procs = parse_cpuinfo(text)
    assert len(procs) == 4
    assert procs[0]["processor name"] == "AArch64 Processor rev 4 (aarch64)"
    assert snap("linux-fedora-production")["cpu"]["arch"] == "aarch64"


def test_production_config_has_no_heavy_debug_options() -> None:
    cfg = parse_linux_config(
        (SYSROOTS / "linux-fedora-production/boot/config-6.8.2-300.fc40.x86_64").read_text()
    )
    assert "PROVE_LOCKING" not in cfg and "KASAN" not in cfg and cfg.get("KFENCE") == "y"


def test_compressed_proc_config_is_read() -> None:
    s = snap("linux-syzkaller-kasan")
    assert s["kernel_config"]["source"] == "/proc/config.gz"
    assert {"KASAN", "LOCKDEP", "KCOV"} <= set(s["kernel_config"]["debug_options"])


def test_mount_lookup_takes_the_longest_prefix() -> None:
    text = (
        "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
        "30 27 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=1k\n"
        "31 27 0:40 / /srv/data\\040dir rw,noatime - nfs4 srv:/x rw,vers=4.2\n"
    )
    mounts = parse_mountinfo(text)
    assert mount_for(mounts, "/dev/shm/x")["fstype"] == "tmpfs"
    assert mount_for(mounts, "/dev/shmother")["fstype"] == "ext4"
    assert mount_for(mounts, "/srv/data dir/f")["fstype"] == "nfs4"


def test_fs_section_flags_tmpfs_and_nfs_from_proc_mounts() -> None:
    root = SYSROOTS / "linux-fedora-debug-smt"
    assert take_snapshot(str(root), workdir="/tmp/x")["fs"]["memory_fs"] is True
    assert take_snapshot(str(root), workdir="/mnt/nfs/a")["fs"]["network_fs"] is True


def test_steal_between_two_samples() -> None:
    a = parse_proc_stat("cpu  100 0 100 700 0 0 0 100 0 0\n")["cpu"]
    b = parse_proc_stat("cpu  150 0 150 750 0 0 0 150 0 0\n")["cpu"]
    assert steal_pct(a, b) == 25.0
    assert steal_pct(a) == 10.0


def test_missing_files_are_unknown_not_guessed(tmp_path) -> None:
    s = take_snapshot(str(tmp_path))
    assert s["cpu"]["model"] is None and s["memory"]["total_kib"] is None
    assert s["kernel_config"]["source"] is None and s["load"]["loadavg"] is None
    assert Root(str(tmp_path)).read("proc/nothing") is None


def test_topology_fallback_and_smt_without_smt_files(tmp_path) -> None:
    cpu = tmp_path / "sys/devices/system/cpu"
    for i, core in enumerate([0, 0, 1, 1]):
        topo = cpu / f"cpu{i}" / "topology"
        topo.mkdir(parents=True)
        (topo / "core_id").write_text(f"{core}\n")
        (topo / "physical_package_id").write_text("0\n")
    s = take_snapshot(str(tmp_path))["cpu"]
    assert (s["threads"], s["cores"], s["sockets"], s["smt"]["active"]) == (4, 2, 1, True)


def test_hostname_redaction_hides_it_everywhere(tmp_path) -> None:
    root = SYSROOTS / "freebsd-current-debug"
    s = take_snapshot(str(root), redact_hostname=True)
    assert s["host"]["hostname"] == "<redacted>"
    assert "bench1" not in str(s)
