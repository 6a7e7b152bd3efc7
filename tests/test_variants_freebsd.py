"""FreeBSD command builders and the sysctl protocol, driven by a fake `sysctl` (no FreeBSD host here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairmark.errors import EnvironmentRefused, FairmarkError
from fairmark.plan.model import MountSpec
from fairmark.run.variants import mount, sysctl
from fairmark.run.variants.journal import Journal

FIXTURES = Path(__file__).resolve().parent / "fixtures"


class FakeSysctl:
    """A FreeBSD kernel's sysctl tree as far as `sysctl -n NAME` and `sysctl NAME=VALUE` see it."""

    def __init__(self, values: dict[str, str], loader_only: tuple[str, ...] = ()):
        self.values, self.loader_only, self.calls = dict(values), loader_only, []

    def __call__(self, argv):
        self.calls.append(list(argv))
        if argv[1] == "-n":
            if argv[2] not in self.values:
                raise FairmarkError((FIXTURES / "variants" / "freebsd-sysctl-unknown.txt").read_text())
            return self.values[argv[2]] + "\n"
        name, value = argv[1].split("=", 1)
        if name in self.loader_only:
            raise FairmarkError((FIXTURES / "variants" / "freebsd-sysctl-readonly-tunable.txt").read_text())
        old = self.values[name]
        self.values[name] = value
        return f"{name}: {old} -> {value}\n"


def test_sysctl_command_builders():
    assert sysctl.freebsd_get_argv("net.inet.tcp.hostcache.enable") == [
        "sysctl",
        "-n",
        "net.inet.tcp.hostcache.enable",
    ]
    assert sysctl.freebsd_set_argv("net.inet.tcp.hostcache.enable", 0) == [
        "sysctl",
        "net.inet.tcp.hostcache.enable=0",
    ]


def test_sysctl_applies_journals_and_reverts(tmp_path):
    fake = FakeSysctl({"net.inet.tcp.hostcache.enable": "1"})
    journal = Journal.for_this_process(tmp_path)
    setting = sysctl.FreeBSDSysctl("net.inet.tcp.hostcache.enable", "0", run=fake)
    setting.check()
    setting.apply(journal)
    assert fake.values["net.inet.tcp.hostcache.enable"] == "0"
    assert journal.entries[0]["original"] == "1" and journal.path.exists()
    assert setting.revert(journal) is None
    assert fake.values["net.inet.tcp.hostcache.enable"] == "1"
    assert not journal.path.exists()


def test_loader_tunable_is_refused_with_the_reason(tmp_path):
    text = (FIXTURES / "variants" / "freebsd-sysctl-readonly-tunable.txt").read_text()
    assert "loader.conf" in sysctl.freebsd_refusal("dev.ix.0.iflib.simple_tx", text)
    fake = FakeSysctl({"dev.ix.0.iflib.simple_tx": "0"}, loader_only=("dev.ix.0.iflib.simple_tx",))
    journal = Journal.for_this_process(tmp_path)
    with pytest.raises(EnvironmentRefused, match="boot-time only"):
        sysctl.FreeBSDSysctl("dev.ix.0.iflib.simple_tx", "1", run=fake).apply(journal)
    assert fake.values["dev.ix.0.iflib.simple_tx"] == "0" and not journal.entries
    with pytest.raises(EnvironmentRefused, match=r"loader\.conf"):
        sysctl.FreeBSDSysctl("kern.maxusers", "512", run=fake).check()  # known before trying


def test_unknown_freebsd_sysctl_is_refused():
    with pytest.raises(EnvironmentRefused, match="no such sysctl"):
        sysctl.FreeBSDSysctl("net.inet.tcp.nosuchthing", "1", run=FakeSysctl({})).check()


def test_md_scratch_commands():
    spec = MountSpec(fs="ufs", options="async", size="4G", soft_updates=False)
    assert mount.freebsd_attach("/s/image", "4G") == [
        ["truncate", "-s", "4G", "/s/image"],
        ["mdconfig", "-a", "-t", "vnode", "-f", "/s/image"],
    ]
    assert mount.freebsd_commands(spec, "/s/image", "md0", "/s/mnt") == [
        ["newfs", "/dev/md0"],
        ["tunefs", "-n", "disable", "/dev/md0"],
        ["mount", "-t", "ufs", "-o", "async", "/dev/md0", "/s/mnt"],
    ]
    su = MountSpec(fs="ufs", size="4G", soft_updates=True)
    assert mount.freebsd_commands(su, "/s/image", "md1", "/s/mnt")[0] == ["newfs", "-U", "/dev/md1"]
    assert mount.freebsd_detach("md1") == ["mdconfig", "-d", "-u", "1"]


def test_mdconfig_listing_finds_the_unit_of_an_image():
    units = mount.parse_mdconfig_list((FIXTURES / "variants" / "freebsd-mdconfig-lv.txt").read_text())
    assert units == {
        "/var/db/fairmark/scratch/123-B-ab12cd34/image": "md0",
        "/tmp/with space/image": "md2",
    }


class FakeMd:
    """mdconfig/newfs/tunefs/mount as far as the scratch file system's sequence needs them."""

    def __init__(self):
        self.calls, self.units = [], {}

    def __call__(self, argv):
        self.calls.append(list(argv))
        if argv[:2] == ["mdconfig", "-a"]:
            self.units[argv[-1]] = f"md{len(self.units) + 3}"
            return self.units[argv[-1]] + "\n"
        if argv[:2] == ["mdconfig", "-l"]:
            return "".join(f"{u}\tvnode\t 64M\t{img}\n" for img, u in self.units.items())
        if argv[:2] == ["mdconfig", "-d"]:
            self.units = {i: u for i, u in self.units.items() if u != f"md{argv[-1]}"}
        return ""


def test_freebsd_scratch_sequence_and_undo(tmp_path):
    fake = FakeMd()
    spec = MountSpec(fs="ufs", options="async", size="64M", soft_updates=True)
    scratch = mount.ScratchFs("tuned", spec, tmp_path / "scratch", freebsd=True, run=fake)
    scratch.check()
    journal = Journal.for_this_process(tmp_path / "state")
    mnt = scratch.create(journal)
    image = str(tmp_path / "scratch" / Path(mnt).parent.name / "image")
    assert fake.calls == [
        ["mdconfig", "-a", "-t", "vnode", "-f", image],
        ["newfs", "-U", "/dev/md3"],
        ["mount", "-t", "ufs", "-o", "async", "/dev/md3", mnt],
    ]
    assert journal.entries[0]["loop"] == "md3" and journal.entries[0]["os"] == "freebsd"
    done, problem = mount.undo_scratch(journal.entries[0], run=fake)
    assert problem is None and "detached md3" in done
    assert fake.calls[-1] == ["mdconfig", "-d", "-u", "3"] and not Path(mnt).parent.exists()


def test_freebsd_scratch_refuses_linux_file_systems(tmp_path):
    with pytest.raises(EnvironmentRefused, match="ufs"):
        mount.ScratchFs("b", MountSpec(fs="ext4"), tmp_path, freebsd=True).check()
