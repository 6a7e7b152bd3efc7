"""`smt = "on" | "off"`: simultaneous multithreading (hyper-threading) switched at run time through Linux's
/sys/devices/system/cpu/smt/control — seed 002's UP-vs-SMP question asked of one machine: with SMT off each core
runs one thread, the siblings are offline for the variant's blocks and come back after.

Refused with the reason, before any trial, where the kernel cannot switch it: the control reads "notsupported"
(no SMT to switch: a VM's vCPUs, a CPU without it), "forceoff" (`nosmt=force` on the kernel command line),
"notimplemented" (no switch on this architecture), or there is no control at all (a kernel before 4.19;
FreeBSD, whose machdep.hyperthreading_allowed is a loader tunable: boot-time only).

Taking the siblings offline shrinks every cgroup v1 cpuset for good, as CPU hotplug does: their CPU lists are
journaled first and written back after (online_cpus' guards).
"""

from __future__ import annotations

from pathlib import Path

from fairmark.errors import EnvironmentRefused
from fairmark.run.variants.driver import Context, Settings
from fairmark.run.variants.online_cpus import cpuset_guards
from fairmark.run.variants.tunable import FileSetting, read_value

KIND, ORDER, SCOPE = "smt", 45, "block"
CONTROL = "/sys/devices/system/cpu/smt/control"
CPUSET_ROOT = "/sys/fs/cgroup/cpuset"
CANNOT = {
    "notsupported": "this machine has no SMT to switch (usual in VMs, where each vCPU is one thread)",
    "forceoff": "SMT is forced off by the kernel command line (nosmt=force) until the next boot",
    "notimplemented": "this architecture's kernel cannot switch SMT",
}
HINT = "remove `smt` from the plan on this machine, or compare two boots (`nosmt` on the kernel command line)"


def smt_settings(value: str, control: str | None = None, cpuset_root: str | None = None) -> list[FileSetting]:
    """The control set to `value`; going off, the cpusets' CPU lists guarded first (restored after)."""
    control = control or CONTROL
    if value not in ("on", "off"):
        raise EnvironmentRefused(f"smt = {value!r}: expected 'on' or 'off'")
    if not Path(control).exists():
        raise EnvironmentRefused(
            f"smt: this kernel has no SMT control ({control} does not exist: Linux 4.19 or later has it)",
            hint=HINT,
        )
    state = read_value(control)
    if state in CANNOT:
        raise EnvironmentRefused(
            f"smt: cannot switch SMT here: {control} reads {state!r}: {CANNOT[state]}", hint=HINT
        )
    setting = FileSetting(label="SMT", path=control, want=value, allowed=("on", "off"))
    setting.check()
    guards = cpuset_guards(cpuset_root or CPUSET_ROOT) if value == "off" and state != "off" else []
    return [*guards, setting]


def check(value: object, ctx: Context) -> Settings:
    if ctx.freebsd:
        raise EnvironmentRefused(
            "smt: FreeBSD switches SMT only at boot (machdep.hyperthreading_allowed is a loader tunable)",
            hint=HINT,
        )
    return Settings(smt_settings(str(value)))
