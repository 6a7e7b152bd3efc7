"""`sysctl = { name = value }`: Linux through /proc/sys files, FreeBSD through the `sysctl` command.

Only run-time tunables can be a variant: a boot-time setting (Linux kernel command line, FreeBSD loader.conf)
needs a reboot between trials, which fairmark does not do, so it is refused with that reason before any trial.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairmark.errors import EnvironmentRefused
from fairmark.run.variants.driver import Context, Settings
from fairmark.run.variants.journal import Journal
from fairmark.run.variants.tunable import FileSetting, normalize, run_command

KIND, ORDER, SCOPE = "sysctl", 10, "block"
PROC_SYS = "/proc/sys"

# Linux settings people try as sysctls that are kernel command-line parameters (no /proc/sys entry).
LINUX_BOOT_ONLY = {
    "mitigations",
    "nosmt",
    "isolcpus",
    "nohz_full",
    "rcu_nocbs",
    "maxcpus",
    "nr_cpus",
    "transparent_hugepage",
    "intel_pstate",
    "hugepagesz",
    "default_hugepagesz",
    "processor.max_cstate",
    "intel_idle.max_cstate",
    "idle",
    "audit",
    "init_on_alloc",
    "init_on_free",
    "page_alloc.shuffle",
    "preempt",
}

# FreeBSD loader tunables that are read-only at run time (the `sysctl` error names others as they come).
FREEBSD_BOOT_ONLY = {
    "kern.maxusers",
    "kern.smp.disabled",
    "kern.hz",
    "hw.physmem",
    "vm.kmem_size",
    "vm.kmem_size_max",
    "machdep.hyperthreading_allowed",
    "net.inet.tcp.tcbhashsize",
    "net.inet.tcp.syncache.hashsize",
    "net.inet.tcp.hostcache.hashsize",
    "net.inet.tcp.hostcache.cachelimit",
    "kern.ipc.maxpipekva",
}

BOOT_ONLY_HINT = "boot-time only: it needs a reboot, which fairmark does not do between trials"


def value_text(value: Any) -> str:
    # TOML gives int or str; a bool would be 1/0 in both kernels.
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


# -- Linux ---------------------------------------------------------------------------------------------------
def linux_path(name: str, root: str = PROC_SYS) -> str:
    """net.ipv4.tcp_no_metrics_save → /proc/sys/net/ipv4/tcp_no_metrics_save (a name with '/' is taken as is,
    for keys whose parts contain dots, such as interface names)."""
    rel = name.strip("/") if "/" in name else name.replace(".", "/")
    return f"{root}/{rel}"


def linux_setting(name: str, value: Any, root: str = PROC_SYS) -> FileSetting:
    if name in LINUX_BOOT_ONLY:
        raise EnvironmentRefused(
            f"sysctl {name}: a kernel command-line parameter, {BOOT_ONLY_HINT}",
            hint="compare two boots: run the plan once per kernel command line, then `fairmark compare`",
        )
    if (
        re.match(r"^(kern|net\.inet|vfs|hw|machdep|security)\.", name)
        and not Path(linux_path(name, root)).exists()
    ):
        raise EnvironmentRefused(
            f"sysctl {name}: a FreeBSD name; this is Linux (see `sysctl -a` for names here)"
        )
    setting = FileSetting(
        label=f"sysctl {name}", path=linux_path(name, root), want=normalize(value_text(value))
    )
    if not Path(setting.path).exists():
        raise EnvironmentRefused(
            f"sysctl {name}: no such sysctl on this kernel ({setting.path} does not exist)",
            hint="check the name with `sysctl -a | grep …`; modules (e.g. tcp_bbr) must be loaded first",
        )
    if not Path(setting.path).stat().st_mode & 0o222:
        raise EnvironmentRefused(f"sysctl {name}: read-only at run time ({BOOT_ONLY_HINT} or build-time)")
    return setting


# -- FreeBSD: command builders (pure) and the setting that uses them ----------------------------------------
def freebsd_get_argv(name: str) -> list[str]:
    return ["sysctl", "-n", name]


def freebsd_set_argv(name: str, value: Any) -> list[str]:
    return ["sysctl", f"{name}={value_text(value)}"]


def freebsd_refusal(name: str, stderr: str) -> str | None:
    """Why FreeBSD's sysctl refused a write, from its stderr ("oid 'x' is a read only tunable" …)."""
    if "read only tunable" in stderr or "loader.conf" in stderr:
        return f"sysctl {name}: a loader tunable (/boot/loader.conf), {BOOT_ONLY_HINT}"
    if "is read only" in stderr:
        return f"sysctl {name}: read-only"
    if "unknown oid" in stderr:
        return f"sysctl {name}: no such sysctl on this kernel"
    return None


Runner = Callable[[Sequence[str]], str]


@dataclass
class FreeBSDSysctl:
    name: str
    want: str
    run: Runner = run_command
    entry_id: str | None = None

    @property
    def label(self) -> str:
        return f"sysctl {self.name}"

    def read(self) -> str:
        return normalize(self.run(freebsd_get_argv(self.name)))

    def describe(self) -> str:
        return f"{self.label}: → {self.want}"

    def check(self) -> None:
        if self.name in FREEBSD_BOOT_ONLY:
            raise EnvironmentRefused(
                f"sysctl {self.name}: a loader tunable (/boot/loader.conf), {BOOT_ONLY_HINT}"
            )
        try:
            self.read()
        except Exception as exc:
            raise EnvironmentRefused(freebsd_refusal(self.name, str(exc)) or f"{self.label}: {exc}") from None

    def apply(self, journal: Journal) -> None:
        original = self.read()
        if original == self.want:
            return
        self.entry_id = journal.add(
            {"type": "freebsd-sysctl", "name": self.name, "original": original, "label": self.label}
        )
        try:
            self.run(freebsd_set_argv(self.name, self.want))
        except Exception as exc:
            self.revert(journal)
            raise EnvironmentRefused(freebsd_refusal(self.name, str(exc)) or f"{self.label}: {exc}") from None
        got = self.read()
        if got != self.want:
            self.revert(journal)
            raise EnvironmentRefused(f"{self.label}: wrote {self.want!r} but the kernel kept {got!r}")

    def revert(self, journal: Journal) -> str | None:
        if self.entry_id is None:
            return None
        problem = undo_freebsd(journal.get(self.entry_id), self.run)[1]
        if problem is None:
            journal.remove(self.entry_id)
            self.entry_id = None
        return problem


def undo_freebsd(entry: dict[str, Any], run: Runner = run_command) -> tuple[str, str | None]:
    name, original = entry["name"], entry["original"]
    try:
        now = normalize(run(freebsd_get_argv(name)))
        if now == original:
            return f"sysctl {name} is {original} (original)", None
        run(freebsd_set_argv(name, original))
        got = normalize(run(freebsd_get_argv(name)))
    except Exception as exc:
        return f"sysctl {name}: could not restore", f"sysctl {name}: cannot restore {original!r}: {exc}"
    if got != original:
        return f"sysctl {name}: restore failed", f"sysctl {name}: reads {got!r} after restoring {original!r}"
    return f"restored sysctl {name} = {original} (was {now})", None


def settings(sysctls: Mapping[str, Any], *, freebsd: bool, root: str = PROC_SYS) -> list[Any]:
    if freebsd:
        return [FreeBSDSysctl(name, normalize(value_text(v))) for name, v in sysctls.items()]
    return [linux_setting(name, v, root) for name, v in sysctls.items()]


def check(value: object, ctx: Context) -> Settings:
    """The driver (driver.py): every sysctl exists here and can be written at run time."""
    if not isinstance(value, Mapping):
        raise EnvironmentRefused(f"sysctl: a table of names and values, not {value!r}")
    made = settings(value, freebsd=ctx.freebsd)
    for s in made:
        if isinstance(s, FreeBSDSysctl):
            s.check()
    return Settings(made)
