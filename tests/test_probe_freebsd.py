"""FreeBSD probe over fixture sysroots built from real captures (see tests/fixtures/sysroots/README.md)."""

from __future__ import annotations

from pathlib import Path

from fairmark.probe.freebsd import parse_mount, parse_sysctl
from fairmark.probe.kconfig import parse_freebsd_config
from fairmark.probe.snapshot import take_snapshot

SYSROOTS = Path(__file__).parent / "fixtures" / "sysroots"


def snap(name: str) -> dict:
    return take_snapshot(str(SYSROOTS / name), workdir="/usr/home/bench")


def test_sysctl_multiline_values_continue_until_the_next_oid() -> None:
    s = parse_sysctl(
        "kern.ostype: FreeBSD\nkern.conftxt: options\tA\nident\tGENERIC\noptions\tB=2\nhw.ncpu: 4\n"
    )
    assert s["kern.conftxt"] == "options\tA\nident\tGENERIC\noptions\tB=2"
    assert s["hw.ncpu"] == "4" and s["kern.ostype"] == "FreeBSD"
    assert parse_sysctl("hw.ncpu=8\n")["hw.ncpu"] == "8"  # `sysctl -ae` style


def test_config_parser_applies_nooptions_in_order() -> None:
    generic = (SYSROOTS / "freebsd-current-debug" / "sysctl.txt").read_text()
    cfg = parse_freebsd_config(generic.split("kern.conftxt: ", 1)[1].split("kern.vm_guest", 1)[0])
    assert {"INVARIANTS", "WITNESS", "WITNESS_SKIPSPIN"} <= set(cfg["options"]) and cfg["ident"] == "GENERIC"
    cfg = parse_freebsd_config("options INVARIANTS # assertions\noptions\tWITNESS\nnooptions INVARIANTS\n")
    assert cfg["options"] == {"WITNESS": ""}


def test_debug_current_snapshot() -> None:
    s = snap("freebsd-current-debug")
    assert s["source"]["os_family"] == "freebsd"
    assert (
        s["os"]["kernel"] == "FreeBSD"
        and s["os"]["release"] == "14.0-CURRENT"
        and s["os"]["ident"] == "GENERIC"
    )
    assert s["cpu"]["model"] == "AMD Ryzen 5 5600G with Radeon Graphics"
    assert s["cpu"]["threads"] == 12 and s["cpu"]["cores"] == 6 and s["cpu"]["smt"]["active"] is True
    assert s["cpu"]["sockets"] == 1  # from dmesg "1 package(s) x 6 core(s) x 2 hardware threads"
    kc = s["kernel_config"]
    assert kc["source"] == "kern.conftxt" and "WITNESS" in kc["debug_options"]
    assert kc["debug_features"] == {"INVARIANTS": "1", "INVARIANT_SUPPORT": "1", "WITNESS": "1"}
    assert kc["witness_boot_warning"] is True
    assert s["fs"]["fstype"] == "ufs" and "soft-updates" in s["fs"]["options"]
    assert s["load"]["loadavg"] == [0.12, 0.25, 0.2]
    assert s["os"]["clocksource"] == "TSC-low" and s["memory"]["aslr"] == "full"
    assert s["cpufreq"]["per_cpu"][0]["max_khz"] == 3900000


def test_release_snapshot_has_no_debug_options() -> None:
    s = snap("freebsd-release")
    assert s["os"]["release"] == "13.2-RELEASE"
    kc = s["kernel_config"]
    assert kc["debug_options"].keys() <= {"DDB", "GDB", "KDB"} and not kc["debug_features"]
    assert kc["witness_boot_warning"] is False
    assert s["malloc"]["malloc_production"] is True


def test_malloc_conf_symlink_target_is_read() -> None:
    assert snap("freebsd-release-junk-malloc")["malloc"]["malloc_conf_link"] == "junk:true,abort:true"


def test_dmesg_only_root_still_names_cpu_and_memory() -> None:
    s = snap("freebsd-current-nodebug-dmesg-only")
    assert s["cpu"]["model"] == "APM eMAG 8180 r3p2" and s["cpu"]["arch"] == "aarch64"
    assert s["memory"]["total_kib"] == 267696361472 // 1024
    assert s["os"]["ident"] == "GENERIC-NODEBUG" and s["kernel_config"]["source"] is None


def test_mount_output_formats() -> None:
    m = parse_mount("/dev/mirror/gm0s1d on / (ufs, local, soft-updates)\ntmpfs on /tmp (tmpfs, local)\n")
    assert m[0] == {
        "device": "/dev/mirror/gm0s1d",
        "mount_point": "/",
        "fstype": "ufs",
        "options": ["local", "soft-updates"],
    }
    assert m[1]["fstype"] == "tmpfs"
