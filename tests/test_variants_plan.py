"""Plan keys of system-changing variants: validation with file:line:key errors, tuning sets, pure helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairmark.errors import PlanError
from fairmark.plan.load import parse_plan
from fairmark.run.variants.cpus import format_cpu_list, parse_cpu_list, resolve_cpus
from fairmark.run.variants.malloc_debug import GLIBC_TUNABLES, malloc_env
from fairmark.run.variants.mount import linux_commands, parse_losetup_j, size_bytes, tmpfs_command
from fairmark.run.variants.system import merged_changes
from fairmark.run.variants.tunable import normalize

FIXTURES = Path(__file__).resolve().parent / "fixtures"

HEAD = """
[[workload]]
name = "w"
command = ["true"]

[[variant]]
name = "A"
"""


def plan(extra: str):
    return parse_plan(HEAD + extra, "p.toml")


def test_unquoted_dotted_sysctl_names_are_one_name():
    p = plan(
        '\n[[variant]]\nname = "B"\n[variant.sysctl]\nnet.ipv4.tcp_no_metrics_save = 1\n"vm.swappiness" = 10\n'
    )
    assert p.variant[1].sysctl == {"net.ipv4.tcp_no_metrics_save": 1, "vm.swappiness": 10}


def test_tuning_set_merges_under_the_variant():
    p = plan(
        """
[[variant]]
name = "B"
tuning = "tuned"
sysctl = { "vm.swappiness" = 5 }

[tuning.tuned]
description = "seed 004's tuned setup"
sysctl = { "vm.swappiness" = 10, "net.ipv4.tcp_no_metrics_save" = 1 }
thp = "never"
"""
    )
    ch = merged_changes(p, p.variant_named("B"))
    assert ch["sysctl"] == {"vm.swappiness": 5, "net.ipv4.tcp_no_metrics_save": 1}
    assert ch["thp"] == "never"
    assert merged_changes(p, p.variant_named("A"))["sysctl"] == {}


@pytest.mark.parametrize(
    ("extra", "line", "key", "words"),
    [
        ('tuning = "fast"', 11, 'variant[1] "B".tuning', "no [tuning.fast]"),
        ('cpus = "one"', 11, 'variant[1] "B".cpus', "CPU count"),
        ("cpus = 0", 11, 'variant[1] "B".cpus', "at least 1"),
        ('thp = "sometimes"', 11, 'variant[1] "B".thp', "'always', 'madvise' or 'never'"),
        ('mount = { size = "4Q" }', 11, 'variant[1] "B".mount', "512M"),
        ('mount = { fs = "ext4", option = "sync" }', 11, 'variant[1] "B".mount', "unknown key"),
        ("aslr = 3", 11, 'variant[1] "B".aslr', "0, 1 or 2"),
        ("online_cpus = 0", 11, 'variant[1] "B".online_cpus', "greater than or equal to 1"),
    ],
)
def test_bad_keys_name_file_line_and_key(extra, line, key, words):
    with pytest.raises(PlanError) as exc:
        plan(f'\n[[variant]]\nname = "B"\n{extra}\n')
    assert (exc.value.path, exc.value.line) == ("p.toml", line)
    assert exc.value.key.startswith(key)
    assert words in exc.value.detail


def test_cpu_lists_round_trip():
    assert parse_cpu_list("0-2,5, 7-8\n") == [0, 1, 2, 5, 7, 8]
    assert format_cpu_list([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert resolve_cpus(1, [0, 1]) == [0]
    assert resolve_cpus("1", [0, 1]) == [1]


def test_values_compare_like_the_kernel_shows_them():
    assert normalize("always [madvise] never\n", "bracket") == "madvise"
    assert normalize("4096\t131072\t6291456\n") == "4096 131072 6291456"


def test_scratch_commands_and_sizes():
    from fairmark.plan.model import MountSpec

    spec = MountSpec(fs="ext4", options="sync", size="64M", mkfs_options="-O ^has_journal")
    assert size_bytes("64M") == 64 << 20
    assert linux_commands(spec, "/s/image", "/dev/loop3", "/s/mnt") == [
        ["mkfs.ext4", "-q", "-F", "-O", "^has_journal", "/dev/loop3"],
        ["mount", "-t", "ext4", "-o", "sync", "/dev/loop3", "/s/mnt"],
    ]
    tmpfs = MountSpec(fs="tmpfs", size="1G", options="noatime")
    assert tmpfs_command(tmpfs, "/s/mnt") == [
        "mount",
        "-t",
        "tmpfs",
        "-o",
        "size=1G,noatime",
        "fairmark-scratch",
        "/s/mnt",
    ]
    text = (FIXTURES / "variants" / "linux-losetup-j.txt").read_text()
    assert parse_losetup_j(text) == ["/dev/loop0", "/dev/loop3"]


def test_malloc_debug_environment_keeps_the_variants_own_values():
    env = malloc_env({"GLIBC_TUNABLES": "glibc.malloc.arena_max=1"}, freebsd=False)
    assert env["GLIBC_TUNABLES"] == f"glibc.malloc.arena_max=1:{GLIBC_TUNABLES}"
    assert env.get("LD_PRELOAD", "").endswith("libc_malloc_debug.so.0")  # Debian 12 ships it in libc6
    assert malloc_env({}, freebsd=True) == {"MALLOC_CONF": "junk:true,abort:true"}
