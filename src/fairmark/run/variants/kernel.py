"""`thp`, `governor`, `aslr`: kernel knobs that live in sysfs/procfs files on Linux (sysctls on FreeBSD).

Each is refused with the reason where the kernel does not expose it (a VM without cpufreq has no governor).
"""

from __future__ import annotations

from pathlib import Path

from fairmark.errors import EnvironmentRefused
from fairmark.run.variants.cpus import online_cpu_ids
from fairmark.run.variants.tunable import FileSetting, read_value

THP = "/sys/kernel/mm/transparent_hugepage/enabled"
ASLR = "/proc/sys/kernel/randomize_va_space"
CPU_ROOT = "/sys/devices/system/cpu"


def thp_setting(value: str, path: str = THP) -> FileSetting:
    if not Path(path).exists():
        raise EnvironmentRefused(f"thp: this kernel has no transparent huge pages ({path} does not exist)")
    choices = tuple(Path(path).read_text().replace("[", "").replace("]", "").split())
    setting = FileSetting(
        label="transparent hugepages", path=path, want=value, select="bracket", allowed=choices
    )
    setting.check()
    return setting


def aslr_setting(value: int, path: str = ASLR) -> FileSetting:
    setting = FileSetting(label="ASLR kernel.randomize_va_space", path=path, want=str(value))
    setting.check()
    return setting


def governor_settings(value: str, root: str = CPU_ROOT) -> list[FileSetting]:
    out = []
    for cpu in online_cpu_ids(root):
        path = f"{root}/cpu{cpu}/cpufreq/scaling_governor"
        if not Path(path).exists():
            raise EnvironmentRefused(
                f"governor: cpu{cpu} has no cpufreq governor here ({path} does not exist — usual in VMs, "
                "where the host decides the frequency)",
                hint="remove `governor` from the plan on this machine; the probe records the frequency setup",
            )
        available = Path(f"{root}/cpu{cpu}/cpufreq/scaling_available_governors")
        allowed = tuple(read_value(available).split()) if available.exists() else ()
        setting = FileSetting(label=f"cpu{cpu} governor", path=path, want=value, allowed=allowed)
        setting.check()
        out.append(setting)
    return out
