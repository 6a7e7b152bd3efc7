"""Save the live host's probe inputs as a sysroot tree, so `fairmark doctor --sysroot DIR` can judge it elsewhere
(a FreeBSD box's state checked from a laptop, a bug report with the exact files, a new test fixture)."""

from __future__ import annotations

import glob
import os
import platform
import shutil
from collections.abc import Mapping

from fairmark.errors import InputError
from fairmark.probe import freebsd
from fairmark.probe._io import Root
from fairmark.probe.redact import redact_env, redact_text

# Files the Linux probe reads (globs relative to /). Per-process files other than our own mountinfo are left out:
# the probe's busy-process sample is live-only, and other processes' files may hold their secrets.
LINUX_FILES = (
    "proc/cpuinfo",
    "proc/meminfo",
    "proc/stat",
    "proc/loadavg",
    "proc/uptime",
    "proc/cmdline",
    "proc/vmstat",
    "proc/mounts",
    "proc/self/mountinfo",
    "proc/config.gz",
    "proc/pressure/*",
    "proc/1/cgroup",
    "proc/sys/kernel/ostype",
    "proc/sys/kernel/osrelease",
    "proc/sys/kernel/version",
    "proc/sys/kernel/randomize_va_space",
    "etc/os-release",
    "etc/hostname",
    ".dockerenv",
    "run/.containerenv",
    "sys/devices/system/cpu/online",
    "sys/devices/system/cpu/smt/*",
    "sys/devices/system/cpu/vulnerabilities/*",
    "sys/devices/system/cpu/cpu*/cache/index*/level",
    "sys/devices/system/cpu/cpu*/cache/index*/type",
    "sys/devices/system/cpu/cpu*/cache/index*/size",
    "sys/devices/system/cpu/cpu*/cache/index*/shared_cpu_list",
    "sys/devices/system/cpu/cpu*/cpufreq/scaling_*",
    "sys/devices/system/cpu/cpu*/cpufreq/energy_performance_*",
    "sys/devices/system/cpu/cpu*/thermal_throttle/core_throttle_count",
    "sys/devices/system/cpu/cpufreq/boost",
    "sys/devices/system/cpu/intel_pstate/no_turbo",
    "sys/devices/system/clocksource/clocksource0/*_clocksource",
    "sys/kernel/mm/transparent_hugepage/enabled",
    "sys/kernel/mm/transparent_hugepage/defrag",
    "sys/class/thermal/thermal_zone*/temp",
    "sys/class/thermal/thermal_zone*/type",
    "sys/block/*/queue/rotational",
    "sys/block/*/device/model",
    "sys/class/dmi/id/sys_vendor",
    "sys/class/dmi/id/product_name",
    "sys/class/dmi/id/bios_vendor",
    "sys/hypervisor/type",
)
LINUX_DIRS = ("sys/devices/system/cpu/cpu[0-9]*", "sys/devices/system/node/node[0-9]*", "sys/class/net/*")


def save_sysroot(dest: str, *, env: Mapping[str, str] | None = None) -> list[str]:
    """Write the live host's probe inputs under `dest` (must be empty or absent). Returns the files written."""
    if os.path.exists(dest) and os.listdir(dest):
        raise InputError(f"{dest}: directory is not empty", hint="give a new directory for the sysroot")
    os.makedirs(dest, exist_ok=True)
    written = _save_freebsd(dest) if platform.system() == "FreeBSD" else _save_linux(dest)
    env_lines = [
        f"{k}={v}" for k, v in sorted(redact_env(dict(env if env is not None else os.environ)).items())
    ]
    _write(dest, "environ", "\n".join(env_lines) + "\n")
    return [*written, "environ"]


def _write(dest: str, rel: str, data: str | bytes) -> None:
    path = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)


def _save_linux(dest: str) -> list[str]:
    written = []
    for pattern in LINUX_FILES:
        for src in sorted(glob.glob("/" + pattern)):
            rel = src.lstrip("/")
            try:
                with open(src, "rb") as fh:
                    data = fh.read()  # no size hint: /proc/sys refuses huge read sizes (ENOMEM)
            except OSError:
                continue  # unreadable here (permissions, write-only file): the probe will say "unknown"
            if rel == "proc/cmdline":  # boot parameters can carry passwords (e.g. iSCSI, cloud-init)
                data = redact_text(data.decode(errors="replace")).encode()
            _write(dest, rel, data)
            written.append(rel)
    for pattern in LINUX_DIRS:
        for src in glob.glob("/" + pattern):
            os.makedirs(os.path.join(dest, src.lstrip("/")), exist_ok=True)
    release = os.uname().release
    boot = f"/boot/config-{release}"
    if os.path.exists(boot):
        os.makedirs(os.path.join(dest, "boot"), exist_ok=True)
        shutil.copyfile(boot, os.path.join(dest, "boot", os.path.basename(boot)))
        written.append(boot.lstrip("/"))
    return written


def _save_freebsd(dest: str) -> list[str]:
    src = freebsd.Sources.live(Root("/"))
    texts = {"sysctl.txt": src.sysctl, "uname.txt": src.uname + "\n", "mount.txt": src.mount}
    if src.dmesg is not None:
        texts["dmesg.boot"] = src.dmesg
    for rel, text in texts.items():
        _write(dest, rel, text)
    if src.malloc_link is not None:
        os.makedirs(os.path.join(dest, "etc"), exist_ok=True)
        os.symlink(src.malloc_link, os.path.join(dest, "etc", "malloc.conf"))
        texts["etc/malloc.conf"] = src.malloc_link
    return sorted(texts)
