"""`governor = "performance" | …`: every online CPU's cpufreq governor, refused where the kernel has no cpufreq
(usual in VMs, where the host decides the frequency)."""

from __future__ import annotations

from pathlib import Path

from fairmark.errors import EnvironmentRefused
from fairmark.run.variants.cpus import online_cpu_ids
from fairmark.run.variants.driver import Context, Settings
from fairmark.run.variants.tunable import FileSetting, read_value

KIND, ORDER, SCOPE = "governor", 40, "block"
CPU_ROOT = "/sys/devices/system/cpu"


def governor_settings(value: str, root: str | None = None) -> list[FileSetting]:
    root = root or CPU_ROOT
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


def check(value: object, ctx: Context) -> Settings:
    return Settings(list(governor_settings(str(value))))
