"""Boot variants (issue 14): the commands that switch a machine into a variant's next boot, the order of boots,
and the check that the boot that came back is the one asked for. Pure: the commands are run by whoever drives
the machine (the local runner, or a host connection over SSH), and verification reads an environment snapshot.

Order: blocks of boots A B B A A B B A … (each variant `boots` times), so a slow drift of the machine (firmware
updates, a filling disk, the season) favours no variant, and the kernel is switched only between blocks.

Verification: a boot counts as variant V only if
* the boot id changed (a reboot really happened: a switch that silently failed to reboot is caught),
* kexec's `append` words are all on the new kernel command line (`os.cmdline`),
* FreeBSD's `nextboot -k NAME` booted /boot/NAME/kernel (`kern.bootfile`),
* every `expect` key of the snapshot has its value (dotted path, e.g. "os.ident" = "GENERIC-NODEBUG"),
* no kernel command-line word that marks another variant's kexec `append` is there (run.loop.bootrun passes them).
Anything else is a wrong boot: it is recorded with the evidence, its trials are refused and the run stops.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fairmark.errors import EnvironmentRefused
from fairmark.plan.model import Boot


class WrongBoot(EnvironmentRefused):
    """The machine came back in a boot that is not the variant asked for."""


class HostDidNotReturn(EnvironmentRefused):
    """The machine did not come back from a reboot (or never went down) in time."""

    resumable = True  # the run is interrupted: `fairmark resume RUN` continues once the machine is back


def switch_commands(boot: Boot) -> list[list[str]]:
    """The commands that make the NEXT boot the variant's (run on the machine before rebooting)."""
    if boot.command is not None:
        return [["/bin/sh", "-c", boot.command]]
    if boot.kexec is not None:
        k = boot.kexec
        argv = ["kexec", "-l", k.kernel]
        argv += [f"--initrd={k.initrd}"] if k.initrd else []
        argv += [f"--append={k.append}"] if k.append is not None else ["--reuse-cmdline"]
        return [argv]
    if boot.grub_reboot is not None:
        return [["grub-reboot", boot.grub_reboot]]
    if boot.nextboot_kernel is not None:
        return [["nextboot", "-k", boot.nextboot_kernel]]  # FreeBSD: one boot only, then the default again
    assert boot.bectl is not None
    return [["bectl", "activate", "-t", boot.bectl]]  # FreeBSD: -t = temporary, the next boot only


def reboot_command(boot: Boot) -> list[str]:
    """How the machine goes down into the switched boot. kexec jumps without firmware; detached so the caller's
    connection can close cleanly before the old kernel is gone."""
    if boot.reboot:
        return list(boot.reboot)
    if boot.kexec is not None:
        return ["/bin/sh", "-c", "setsid sh -c 'sleep 0.3; kexec -e' >/dev/null 2>&1 &"]
    return ["shutdown", "-r", "now"]


def describe(boot: Boot) -> str:
    return " && ".join(shlex.join(c) for c in switch_commands(boot))


def boot_order(variants: Sequence[str], boots: int) -> list[str]:
    """A B B A A B B A …: each variant `boots` times, in blocks alternating forward and backward."""
    order: list[str] = []
    forward = True
    while len(order) < boots * len(variants):
        order += list(variants) if forward else list(reversed(variants))
        forward = not forward
    return order


@dataclass(frozen=True)
class BootCheck:
    variant: str
    boot_id: str | None
    ok: bool
    evidence: tuple[str, ...]  # what was checked, each "key: wanted X, found Y" (mismatches first)

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "boot_id": self.boot_id,
            "ok": self.ok,
            "evidence": list(self.evidence),
        }


def dotted(snapshot: Mapping[str, Any], key: str) -> Any:
    node: Any = snapshot
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def verify(
    variant: str,
    boot: Boot,
    snapshot: Mapping[str, Any],
    *,
    boot_id: str | None,
    previous_boot_id: str | None,
    bootfile: str | None = None,
    absent: set[str] | frozenset[str] = frozenset(),
) -> BootCheck:
    """Whether the machine's boot (its snapshot, boot id, FreeBSD kern.bootfile) is `variant`'s. `absent`: kernel
    command-line words that mark another variant (a boot showing one is that variant's, not this one's)."""
    bad: list[str] = []
    good: list[str] = []

    def check(ok: bool, text: str) -> None:
        (good if ok else bad).append(text)

    check(
        bool(boot_id) and boot_id != previous_boot_id,
        f"boot id: wanted a new boot, found {boot_id or 'none'} (before: {previous_boot_id or 'none'})",
    )
    cmdline = str(dotted(snapshot, "os.cmdline") or "")
    if boot.kexec is not None and boot.kexec.append:
        words = cmdline.split()
        missing = [w for w in boot.kexec.append.split() if w not in words]
        check(not missing, f"os.cmdline: wanted {boot.kexec.append!r}, found {cmdline!r}")
    if absent:
        other = sorted(w for w in cmdline.split() if w in absent)
        check(
            not other,
            f"os.cmdline: wanted none of {sorted(absent)} (other variants' words), found {cmdline!r}",
        )
    if boot.nextboot_kernel is not None:
        want = f"/boot/{boot.nextboot_kernel}/kernel"
        check(bootfile == want, f"kern.bootfile: wanted {want}, found {bootfile or 'unknown'}")
    for key, want in boot.expect.items():
        found = dotted(snapshot, key)
        check(found is not None and str(found) == want, f"{key}: wanted {want!r}, found {found!r}")
    return BootCheck(variant, boot_id, not bad, tuple(bad + good))


def parse_bootfile(sysctl_output: str) -> str | None:
    """`sysctl kern.bootfile` (or a whole `sysctl -a`) → the kernel file this boot loaded."""
    for line in sysctl_output.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "kern.bootfile":
            return value.strip() or None
    return None


def refuse(check: BootCheck) -> None:
    """Raise for a wrong boot, with the evidence."""
    if not check.ok:
        raise WrongBoot(
            f"the machine booted something other than variant {check.variant!r}: "
            + "; ".join(e for e in check.evidence[:3]),
            hint="its trials are refused and the run stops; check the variant's boot switch by hand",
        )
