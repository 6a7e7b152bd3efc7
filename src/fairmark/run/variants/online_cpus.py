"""`online_cpus = N`: CPU hotplug, keeping the first N present CPUs online and taking the others offline (on the
controller only: a machine-wide change no agent makes on a host)."""

from __future__ import annotations

from pathlib import Path

from fairmark.errors import EnvironmentRefused
from fairmark.run.variants.cpus import CPU_ROOT, CPUSET_ROOT, present_cpu_ids
from fairmark.run.variants.driver import Context, Settings
from fairmark.run.variants.tunable import FileSetting

KIND, ORDER, SCOPE = "online_cpus", 50, "block"


def online_settings(count: int, root: str = CPU_ROOT, cpuset_root: str = CPUSET_ROOT) -> list[FileSetting]:
    """Keep the first `count` present CPUs online and take the others offline (order: guards, online, off)."""
    present = present_cpu_ids(root)
    if count > len(present):
        raise EnvironmentRefused(f"online_cpus = {count}: this machine has only {len(present)} CPU(s)")
    keep = set(present[:count])
    ups: list[FileSetting] = []
    downs: list[FileSetting] = []
    for cpu in present:
        path = f"{root}/cpu{cpu}/online"
        if not Path(path).exists():
            if cpu not in keep:
                raise EnvironmentRefused(
                    f"online_cpus = {count}: cpu{cpu} cannot be taken offline here ({path})"
                )
            continue
        setting = FileSetting(label=f"cpu{cpu} online", path=path, want="1" if cpu in keep else "0")
        _check_hotplug(setting)
        (ups if cpu in keep else downs).append(setting)
    return cpuset_guards(cpuset_root) + ups + downs if downs else ups


def _check_hotplug(setting: FileSetting) -> None:
    try:
        setting.check()
    except EnvironmentRefused as exc:
        raise EnvironmentRefused(
            f"online_cpus: CPU hotplug is not allowed here: {exc.message}",
            hint="use `cpus = N` (a cpuset for the trial's processes) instead",
        ) from None


def cpuset_guards(cpuset_root: str) -> list[FileSetting]:
    # cgroup v1 removes an offlined CPU from every child cpuset and never gives it back on online.
    root = Path(cpuset_root)
    if not (root / "cpuset.cpus").exists():
        return []
    return [
        FileSetting(label=f"cpuset {p.parent.relative_to(root)}", path=str(p), want="", guard=True)
        for p in sorted(root.glob("*/**/cpuset.cpus"))
    ]


def check(value: object, ctx: Context) -> Settings:
    return Settings(online_settings(int(str(value))))
