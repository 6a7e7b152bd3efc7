"""Boot variants (issue 14 part 1, the pure parts): the plan model, the switch commands for Linux and FreeBSD,
the A B B A order of boots, and verification of a boot against its variant on captured sysroots (a wrong
kernel, a command line without the switch's words, a "reboot" that never happened). Fast (< 2 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairmark.errors import EnvironmentRefused, PlanError
from fairmark.plan.load import parse_plan
from fairmark.plan.model import Boot
from fairmark.probe.snapshot import take_snapshot
from fairmark.run.machine.boots import (
    boot_order,
    parse_bootfile,
    reboot_command,
    refuse,
    switch_commands,
    verify,
)

SYSROOTS = Path(__file__).parent / "fixtures" / "sysroots"

PLAN = """
[run]
boots = 3

[[workload]]
name = "w"
command = ["true"]

[[variant]]
name = "debug"
boot = { bectl = "debug", expect = { "os.ident" = "GENERIC" } }

[[variant]]
name = "nodebug"
boot = { kexec = { kernel = "/boot/vmlinuz-6.1.0-nodebug", append = "mitigations=off" } }
"""


def test_plan_with_boot_variants():
    plan = parse_plan(PLAN)
    assert plan.run.boots == 3
    assert plan.variant[0].boot.bectl == "debug" and plan.variant[1].boot.kexec.append == "mitigations=off"


@pytest.mark.parametrize(
    ("boot", "message"),
    [
        ('{ grub_reboot = "x" }', "cannot tell by itself"),  # an unverifiable switch needs expect
        ('{ grub_reboot = "x", bectl = "y", expect = { a = "b" } }', "exactly one of"),
        ('{ kexec = { append = "x" } }', "kernel"),
    ],
)
def test_bad_boot_is_refused_with_the_line(boot, message):
    text = PLAN.replace('{ bectl = "debug", expect = { "os.ident" = "GENERIC" } }', boot)
    with pytest.raises(PlanError) as e:
        parse_plan(text, "k.toml")
    assert "k.toml:" in str(e.value) and message in str(e.value)


def test_every_variant_needs_a_boot_once_one_has():
    text = PLAN.replace(
        'boot = { kexec = { kernel = "/boot/vmlinuz-6.1.0-nodebug", append = "mitigations=off" } }', ""
    )
    with pytest.raises(PlanError, match="every variant"):
        parse_plan(text)


def test_switch_commands_linux_and_freebsd():
    assert switch_commands(Boot(kexec={"kernel": "/k", "initrd": "/i", "append": "a=1 b"})) == [
        ["kexec", "-l", "/k", "--initrd=/i", "--append=a=1 b"]
    ]
    assert (
        switch_commands(Boot(kexec={"kernel": "/k"}, expect={"os.release": "6.1"}))[0][-1]
        == "--reuse-cmdline"
    )
    assert switch_commands(Boot(grub_reboot="Debian, 6.1", expect={"os.release": "6.1"})) == [
        ["grub-reboot", "Debian, 6.1"]
    ]
    assert switch_commands(Boot(nextboot_kernel="kernel.nodebug")) == [["nextboot", "-k", "kernel.nodebug"]]
    assert switch_commands(Boot(bectl="debug", expect={"os.ident": "GENERIC"})) == [
        ["bectl", "activate", "-t", "debug"]
    ]
    assert switch_commands(Boot(command="bectl activate -t x", expect={"os.ident": "G"})) == [
        ["/bin/sh", "-c", "bectl activate -t x"]
    ]
    assert reboot_command(Boot(nextboot_kernel="k")) == ["shutdown", "-r", "now"]
    assert "kexec -e" in reboot_command(Boot(kexec={"kernel": "/k", "append": "x"}))[-1]


def test_boot_order_is_abba_with_n_boots_each():
    assert boot_order(["A", "B"], 2) == ["A", "B", "B", "A"]
    assert boot_order(["A", "B"], 4) == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert boot_order(["A", "B"], 3).count("A") == 3


def test_verify_freebsd_kernel_ident_on_a_captured_sysroot():
    snap = take_snapshot(str(SYSROOTS / "freebsd-current-debug"))  # kern.ident GENERIC (the debug kernel)
    wanted_nodebug = Boot(bectl="nodebug", expect={"os.ident": "GENERIC-NODEBUG"})
    wrong = verify("nodebug", wanted_nodebug, snap, boot_id="b2", previous_boot_id="b1")
    assert not wrong.ok and "os.ident: wanted 'GENERIC-NODEBUG', found 'GENERIC'" in wrong.evidence[0]
    with pytest.raises(EnvironmentRefused, match="other than variant 'nodebug'"):
        refuse(wrong)
    assert verify(
        "debug",
        Boot(bectl="debug", expect={"os.ident": "GENERIC"}),
        snap,
        boot_id="b2",
        previous_boot_id="b1",
    ).ok


def test_verify_nextboot_kernel_by_bootfile():
    sysctl = (SYSROOTS / "freebsd-current-debug" / "sysctl.txt").read_text()
    assert parse_bootfile(sysctl) is None  # this capture has no kern.bootfile: unknown, so refused
    boot = Boot(nextboot_kernel="kernel.nodebug")
    assert not verify("n", boot, {}, boot_id="b2", previous_boot_id="b1", bootfile=None).ok
    bootfile = parse_bootfile(sysctl + "kern.bootfile: /boot/kernel.nodebug/kernel\n")
    assert verify("n", boot, {}, boot_id="b2", previous_boot_id="b1", bootfile=bootfile).ok


def test_verify_linux_cmdline_and_a_switch_that_did_nothing():
    snap = take_snapshot(str(SYSROOTS / "linux-debian12-vm"))
    off = Boot(kexec={"kernel": "/k", "append": "mitigations=off"})
    check = verify("off", off, snap, boot_id="b2", previous_boot_id="b1")
    assert not check.ok and "os.cmdline: wanted 'mitigations=off'" in check.evidence[0]
    quiet = Boot(kexec={"kernel": "/k", "append": "quiet"})
    assert verify("q", quiet, snap, boot_id="b2", previous_boot_id="b1").ok
    same = verify("q", quiet, snap, boot_id="b1", previous_boot_id="b1")  # no reboot happened
    assert not same.ok and same.evidence[0].startswith("boot id: wanted a new boot")


def test_blocks_rounds_and_trials_per_boot():
    from fairmark.plan.model import RunPolicy
    from fairmark.run.loop.bootrun import block_rounds, blocks, trials_per_boot, warmup_per_boot

    bs = blocks(["a", "b"], 3)
    assert [(b.variant, b.k) for b in bs] == [("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2)]
    policy = RunPolicy(warmup=0, min_trials=3, max_trials=10, boots=3)
    assert (warmup_per_boot(policy), trials_per_boot(policy)) == (1, 4)  # a warm-up in every boot, always
    assert trials_per_boot(RunPolicy(min_trials=5, max_trials=6, boots=4)) == 5  # ≥ min_trials per boot
    rounds = [block_rounds(k, 1, 4) for k in range(3)]
    assert rounds[1] == [-2, 4, 5, 6, 7]  # its own warm-up round, then its measured rounds
    flat = [r for rs in rounds for r in rs]
    assert len(flat) == len(set(flat))  # the boots of one variant never share a round (resume knows each)


def test_the_other_variants_words_mark_a_wrong_boot():
    from fairmark.run.loop.bootrun import distinguishing_words

    plan = parse_plan(
        "[[workload]]\nname = 'w'\ncommand = ['true']\n"
        "[[variant]]\nname = 'on'\nboot = { kexec = { kernel = '/k', append = 'quiet' } }\n"
        "[[variant]]\nname = 'off'\nboot = { kexec = { kernel = '/k', append = 'quiet mitigations=off' } }\n"
    )
    assert (
        distinguishing_words(plan, "on") == {"mitigations=off"} and distinguishing_words(plan, "off") == set()
    )
    on = plan.variant_named("on").boot
    snap = {
        "os": {"cmdline": "quiet mitigations=off"}
    }  # 'quiet' is there, but so is the other variant's word
    check = verify("on", on, snap, boot_id="b2", previous_boot_id="b1", absent={"mitigations=off"})
    assert not check.ok and "other variants' words" in check.evidence[0]
    assert verify(
        "on",
        on,
        {"os": {"cmdline": "quiet"}},
        boot_id="b2",
        previous_boot_id="b1",
        absent={"mitigations=off"},
    ).ok


def test_dry_run_lists_the_boots(tmp_path, fairmark_cli):
    import json

    (tmp_path / "k.toml").write_text(PLAN)
    code, out, err = fairmark_cli("run", str(tmp_path / "k.toml"), "--dry-run", "--json")
    assert code == 0, err
    boots = json.loads(out)["boots"]
    assert [b.split(":")[0] for b in boots] == [f"boot {i}" for i in range(1, 7)]  # 3 boots per variant
    assert "boot 1: debug — `bectl activate -t debug`, then `shutdown -r now`" in boots[0]
    assert "kexec -l /boot/vmlinuz-6.1.0-nodebug --append=mitigations=off" in boots[1]
