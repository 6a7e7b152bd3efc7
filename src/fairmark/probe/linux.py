"""Linux probe: pure parsers over `<root>/proc`, `<root>/sys`, `<root>/boot`, `<root>/etc`.

Each `*_section(root)` returns one JSON-able part of the snapshot. Nothing here runs a command; the live-only
parts (tool versions, `uname`) are in snapshot.py. Values that cannot be read are None, never guessed.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from fairmark.probe._io import Root, mount_for, unknown_fs
from fairmark.probe.kconfig import config_hash, parse_linux_config
from fairmark.probe.rules import LINUX_DEBUG_OPTIONS

NET_FS = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "fuse.sshfs", "ceph", "glusterfs", "afs", "virtiofs"}
MEMORY_FS = {"tmpfs", "ramfs"}


# ---- cpu -------------------------------------------------------------------------------------------------


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """One dict per processor block. Tolerates spaces instead of tabs and missing blank lines between blocks;
    old ARM kernels' capitalised `Processor` line (the model) is kept apart from the `processor` index."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        raw_key, sep, value = line.partition(":")
        raw_key = raw_key.strip()
        if not line.strip() or (raw_key == "processor" and "processor" in current):
            if current:
                blocks.append(current)
            current = {}
        if sep and raw_key:
            key = "processor name" if raw_key == "Processor" else raw_key.lower()
            current[key] = value.strip()
    if current:
        blocks.append(current)
    return [b for b in blocks if "processor" in b]


def _cpu_model(procs: list[dict[str, str]], whole: str) -> str | None:
    for key in ("model name", "cpu model", "processor name", "cpu"):
        if procs and procs[0].get(key) and not procs[0][key].isdigit():
            return procs[0][key]
    m = re.search(r"^(?:Hardware|Processor)\s*:\s*(.+)$", whole, re.M)  # older ARM kernels
    if m:
        return m[1].strip()
    if procs and "cpu part" in procs[0]:
        return f"ARM implementer {procs[0].get('cpu implementer')} part {procs[0]['cpu part']}"
    return None


def cpu_section(root: Root) -> dict[str, Any]:
    text = root.read("proc/cpuinfo") or ""
    procs = parse_cpuinfo(text)
    threads = len(procs) or len(
        [d for d in root.listdir("sys/devices/system/cpu") if re.fullmatch(r"cpu\d+", d)]
    )
    packages = {p.get("physical id") for p in procs if "physical id" in p}
    cores = {(p.get("physical id"), p.get("core id")) for p in procs if "core id" in p}
    if not cores:  # ARM and some VMs print no core ids: the sysfs topology has them
        packages, cores = _topology(root)
    flags = set((procs[0].get("flags") or procs[0].get("features") or "").split()) if procs else set()
    return {
        "model": _cpu_model(procs, text),
        "vendor": procs[0].get("vendor_id") if procs else None,
        "arch": _arch(root, procs),
        "sockets": len(packages) or None,
        "cores": len(cores) or None,
        "threads": threads or None,
        "smt": {
            "control": root.line("sys/devices/system/cpu/smt/control"),
            # without the smt/ files, more threads than cores is what SMT means
            "active": _bool01(root.line("sys/devices/system/cpu/smt/active"))
            if root.exists("sys/devices/system/cpu/smt/active")
            else (threads > len(cores) if cores and threads else None),
        },
        "online": root.line("sys/devices/system/cpu/online"),
        "hypervisor_flag": "hypervisor" in flags,
        "caches": _caches(root),
        "numa_nodes": len([d for d in root.listdir("sys/devices/system/node") if re.fullmatch(r"node\d+", d)])
        or None,
    }


def _topology(root: Root) -> tuple[set[str | None], set[tuple[str | None, str | None]]]:
    packages: set[str | None] = set()
    cores: set[tuple[str | None, str | None]] = set()
    for cpu in _cpu_dirs(root):
        pkg = root.line(f"sys/devices/system/cpu/{cpu}/topology/physical_package_id")
        core = root.line(f"sys/devices/system/cpu/{cpu}/topology/core_id")
        if core is not None:
            packages.add(pkg)
            cores.add((pkg, core))
    return packages, cores


def _arch(root: Root, procs: list[dict[str, str]]) -> str | None:
    if root.live:
        return os.uname().machine
    flags = procs[0].get("flags", "") if procs else ""
    if " lm " in f" {flags} ":
        return "x86_64"
    if procs and "cpu architecture" in procs[0]:
        return "aarch64" if procs[0]["cpu architecture"] == "8" else f"armv{procs[0]['cpu architecture']}"
    return None


def _bool01(value: str | None) -> bool | None:
    return None if value is None else value == "1"


def _caches(root: Root) -> list[dict[str, Any]]:
    base = "sys/devices/system/cpu/cpu0/cache"
    out = []
    for index in root.listdir(base):
        if not index.startswith("index"):
            continue
        d = f"{base}/{index}"
        out.append(
            {
                "level": root.int(f"{d}/level"),
                "type": root.line(f"{d}/type"),
                "size": root.line(f"{d}/size"),
                "shared_cpu_list": root.line(f"{d}/shared_cpu_list"),
            }
        )
    return out


# ---- memory ----------------------------------------------------------------------------------------------


def parse_meminfo(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+):\s+(\d+)", line)
        if m:
            out[m[1]] = int(m[2])  # kB in the file means KiB
    return out


def _bracketed(text: str | None) -> str | None:
    """`always [madvise] never` -> `madvise`."""
    if not text:
        return None
    m = re.search(r"\[(\w+)\]", text)
    return m[1] if m else text.strip()


def memory_section(root: Root) -> dict[str, Any]:
    mi = parse_meminfo(root.read("proc/meminfo") or "")
    swap_total, swap_free = mi.get("SwapTotal"), mi.get("SwapFree")
    aslr = root.int("proc/sys/kernel/randomize_va_space")
    return {
        "total_kib": mi.get("MemTotal"),
        "available_kib": mi.get("MemAvailable"),
        "swap_total_kib": swap_total,
        "swap_free_kib": swap_free,
        "swap_used_kib": swap_total - swap_free if swap_total is not None and swap_free is not None else None,
        "thp": _bracketed(root.line("sys/kernel/mm/transparent_hugepage/enabled")),
        "thp_defrag": _bracketed(root.line("sys/kernel/mm/transparent_hugepage/defrag")),
        "aslr": None if aslr is None else {0: "off", 1: "partial", 2: "full"}.get(aslr, str(aslr)),
    }


# ---- os / kernel -----------------------------------------------------------------------------------------


def os_section(root: Root) -> dict[str, Any]:
    stat = parse_proc_stat(root.read("proc/stat") or "")
    uptime = root.line("proc/uptime")
    btime = stat.get("btime")
    return {
        "kernel": root.line("proc/sys/kernel/ostype") or "Linux",
        "release": root.line("proc/sys/kernel/osrelease"),
        "version": root.line("proc/sys/kernel/version"),
        "cmdline": root.line("proc/cmdline"),
        "boot_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(btime)) if btime else None,
        "uptime_s": float(uptime.split()[0]) if uptime else None,
        "clocksource": root.line("sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "available_clocksources": (
            root.line("sys/devices/system/clocksource/clocksource0/available_clocksource") or ""
        ).split()
        or None,
        "distribution": _os_release(root),
    }


def _os_release(root: Root) -> str | None:
    text = root.read("etc/os-release") or root.read("usr/lib/os-release") or ""
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.M)
    return m[1] if m else None


def kernel_config_section(root: Root, release: str | None) -> dict[str, Any]:
    """Read the config the running kernel was built with; record only the debug-relevant options verbatim."""
    candidates = ["proc/config.gz"] + ([f"boot/config-{release}"] if release else []) + ["boot/config"]
    for rel in candidates:
        text = root.read(rel, limit=16 << 20)
        if text and "CONFIG_" in text:
            options = parse_linux_config(text)
            debug = {k: options[k] for k in LINUX_DEBUG_OPTIONS if k in options}
            return {
                "source": "/" + rel,
                "sha256": config_hash(options),
                "options_set": len(options),
                "debug_options": debug,
            }
    return {"source": None, "sha256": None, "options_set": None, "debug_options": {}}


def mitigations_section(root: Root) -> dict[str, str]:
    base = "sys/devices/system/cpu/vulnerabilities"
    return {name: root.line(f"{base}/{name}") or "" for name in root.listdir(base)}


# ---- cpufreq ---------------------------------------------------------------------------------------------


def cpufreq_section(root: Root) -> dict[str, Any]:
    per_cpu = []
    for cpu in _cpu_dirs(root):
        d = f"sys/devices/system/cpu/{cpu}/cpufreq"
        if not root.exists(d):
            continue
        per_cpu.append(
            {
                "cpu": int(cpu[3:]),
                "driver": root.line(f"{d}/scaling_driver"),
                "governor": root.line(f"{d}/scaling_governor"),
                "min_khz": root.int(f"{d}/scaling_min_freq"),
                "max_khz": root.int(f"{d}/scaling_max_freq"),
                "epp": root.line(f"{d}/energy_performance_preference"),
            }
        )
    boost = root.int("sys/devices/system/cpu/cpufreq/boost")
    no_turbo = root.int("sys/devices/system/cpu/intel_pstate/no_turbo")
    if boost is None and no_turbo is not None:
        boost = 0 if no_turbo else 1
    return {
        "available": bool(per_cpu),
        "drivers": sorted({c["driver"] for c in per_cpu if c["driver"]}),
        "governors": sorted({c["governor"] for c in per_cpu if c["governor"]}),
        "boost": None if boost is None else bool(boost),
        "per_cpu": per_cpu,
    }


def _cpu_dirs(root: Root) -> list[str]:
    names = [d for d in root.listdir("sys/devices/system/cpu") if re.fullmatch(r"cpu\d+", d)]
    return sorted(names, key=lambda n: int(n[3:]))


# ---- virtualization --------------------------------------------------------------------------------------


_DMI_HYPERVISORS = (
    ("KVM", "kvm"),
    ("QEMU", "qemu"),
    ("VMware", "vmware"),
    ("VirtualBox", "virtualbox"),
    ("Xen", "xen"),
    ("Microsoft Corporation", "hyperv"),
    ("Amazon EC2", "amazon"),
    ("Google", "google"),
    ("Bochs", "bochs"),
    ("Parallels", "parallels"),
    ("BHYVE", "bhyve"),
)


def virtualization_section(root: Root, cpu: dict[str, Any]) -> dict[str, Any]:
    """Hypervisor and container, each with the evidence that revealed it."""
    hyp, hyp_evidence = None, None
    dmi = " ".join(
        filter(
            None, (root.line(f"sys/class/dmi/id/{f}") for f in ("sys_vendor", "product_name", "bios_vendor"))
        )
    )
    for needle, name in _DMI_HYPERVISORS:
        if needle.lower() in dmi.lower():
            hyp, hyp_evidence = name, f"DMI: {dmi}"
            break
    if hyp is None and (xen := root.line("sys/hypervisor/type")):
        hyp, hyp_evidence = xen, "/sys/hypervisor/type"
    if hyp is None:
        clocks = root.line("sys/devices/system/clocksource/clocksource0/available_clocksource") or ""
        for clock, name in (("kvm-clock", "kvm"), ("hyperv_clocksource", "hyperv"), ("xen", "xen")):
            if clock in clocks.split() or any(w.startswith(clock) for w in clocks.split()):
                hyp, hyp_evidence = name, f"clock source {clock} available"
                break
    if hyp is None and cpu.get("hypervisor_flag"):
        hyp, hyp_evidence = "unknown", "cpuinfo flag 'hypervisor'"
    return {"hypervisor": hyp, "hypervisor_evidence": hyp_evidence, **_container(root)}


def _container(root: Root) -> dict[str, Any]:
    if root.exists(".dockerenv"):
        return {"container": "docker", "container_evidence": "/.dockerenv exists"}
    if root.exists("run/.containerenv"):
        return {"container": "podman", "container_evidence": "/run/.containerenv exists"}
    cgroup = root.read("proc/1/cgroup") or ""
    for needle in ("docker", "kubepods", "lxc", "containerd", "libpod"):
        if needle in cgroup:
            return {"container": needle, "container_evidence": f"/proc/1/cgroup mentions {needle}"}
    return {"container": None, "container_evidence": None}


# ---- file system and disks behind the working directory --------------------------------------------------


def parse_mountinfo(text: str) -> list[dict[str, Any]]:
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if not sep or len(f) < 6 or len(r) < 2:
            continue
        mounts.append(
            {
                "mount_point": _unescape(f[4]),
                "devno": f[2],
                "options": f[5].split(","),
                "fstype": r[0],
                "device": _unescape(r[1]),
                "super_options": r[2].split(",") if len(r) > 2 else [],
            }
        )
    return mounts


def parse_proc_mounts(text: str) -> list[dict[str, Any]]:
    mounts = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4:
            mounts.append(
                {
                    "mount_point": _unescape(f[1]),
                    "devno": None,
                    "options": f[3].split(","),
                    "fstype": f[2],
                    "device": _unescape(f[0]),
                    "super_options": [],
                }
            )
    return mounts


def _unescape(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), s)


def fs_section(root: Root, workdir: str) -> dict[str, Any]:
    path = os.path.realpath(workdir) if root.live else os.path.normpath(workdir)
    text = root.read("proc/self/mountinfo")
    mounts = parse_mountinfo(text) if text else parse_proc_mounts(root.read("proc/mounts") or "")
    m = mount_for(mounts, path)
    if m is None:
        return unknown_fs(path)
    return {
        "workdir": path,
        "mount_point": m["mount_point"],
        "fstype": m["fstype"],
        "device": m["device"],
        "options": sorted(set(m["options"]) | set(m["super_options"])),
        "memory_fs": m["fstype"] in MEMORY_FS,
        "network_fs": m["fstype"] in NET_FS or m["fstype"].startswith("nfs"),
        "disk": _disk_for(root, m["devno"]),
    }


def _disk_for(root: Root, devno: str | None) -> dict[str, Any] | None:
    """Model and rotational flag of the whole disk behind a block device number (partition -> parent)."""
    if not devno or devno.startswith("0:"):
        return None  # major 0: a virtual file system, no disk
    link = root.join(f"sys/dev/block/{devno}")
    try:
        dev = os.path.realpath(link)
    except OSError:
        return None
    if not os.path.isdir(dev):
        return None
    if os.path.exists(os.path.join(dev, "partition")):
        dev = os.path.dirname(dev)

    def rd(rel: str) -> str | None:
        try:
            with open(os.path.join(dev, rel)) as fh:
                return fh.read().strip()
        except OSError:
            return None

    rot = rd("queue/rotational")
    return {
        "name": os.path.basename(dev),
        "model": rd("device/model"),
        "vendor": rd("device/vendor"),
        "rotational": None if rot is None else rot == "1",
        "scheduler": _bracketed(rd("queue/scheduler")),
    }


def disks_section(root: Root) -> list[dict[str, Any]]:
    out = []
    for name in root.listdir("sys/block"):
        if re.match(r"(loop|ram|zram|dm-|md|nbd|sr)", name):
            continue  # virtual or removable devices say nothing about the benchmark disk
        rot = root.line(f"sys/block/{name}/queue/rotational")
        out.append(
            {
                "name": name,
                "model": root.line(f"sys/block/{name}/device/model"),
                "rotational": None if rot is None else rot == "1",
            }
        )
    return out


def nics_section(root: Root) -> list[str]:
    return [n for n in root.listdir("sys/class/net") if n != "lo"]


# ---- load, steal, pressure, thermal (the volatile parts) -------------------------------------------------


def parse_proc_stat(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "cpu":
            names = (
                "user",
                "nice",
                "system",
                "idle",
                "iowait",
                "irq",
                "softirq",
                "steal",
                "guest",
                "guest_nice",
            )
            out["cpu"] = dict(zip(names, (int(x) for x in f[1:]), strict=False))
        elif f[0] in ("btime", "procs_running", "procs_blocked", "ctxt"):
            out[f[0]] = int(f[1])
    return out


def steal_pct(before: dict[str, int], after: dict[str, int] | None = None) -> float | None:
    """Steal share of all CPU time, between two /proc/stat samples (or since boot with one). Guest time is
    already inside user/nice, so it is not added again."""
    fields = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    if not before:
        return None
    delta = {k: (after or {}).get(k, 0) - before.get(k, 0) for k in fields} if after else before
    total = sum(delta.get(k, 0) for k in fields)
    return round(100.0 * delta.get("steal", 0) / total, 2) if total > 0 else None


def parse_vmstat(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 2 and f[1].lstrip("-").isdigit():
            out[f[0]] = int(f[1])
    return out


def pressure_section(root: Root) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for res in ("cpu", "memory", "io"):
        text = root.read(f"proc/pressure/{res}")
        if not text:
            continue
        for line in text.splitlines():
            f = line.split()
            if f:
                vals = dict(kv.split("=", 1) for kv in f[1:] if "=" in kv)
                out[f"{res}_{f[0]}_avg10"] = float(vals["avg10"]) if "avg10" in vals else None
    return out


def thermal_section(root: Root) -> dict[str, Any]:
    zones = []
    for z in root.listdir("sys/class/thermal"):
        if z.startswith("thermal_zone"):
            t = root.int(f"sys/class/thermal/{z}/temp")
            zones.append(
                {
                    "zone": z,
                    "type": root.line(f"sys/class/thermal/{z}/type"),
                    "temp_c": None if t is None else t / 1000.0,
                }
            )
    throttles = {}
    for cpu in _cpu_dirs(root):
        n = root.int(f"sys/devices/system/cpu/{cpu}/thermal_throttle/core_throttle_count")
        if n is not None:
            throttles[cpu] = n
    readable = bool(zones or throttles)
    return {
        "readable": readable,
        "zones": zones,
        "throttle_counts": throttles,
        "throttled": (sum(throttles.values()) > 0) if throttles else None,
    }


def loadavg(root: Root) -> list[float] | None:
    text = root.line("proc/loadavg")
    try:
        return [float(x) for x in text.split()[:3]] if text else None
    except ValueError:
        return None


def process_times(root: Root, skip: set[int]) -> dict[int, tuple[str, int]]:
    """pid -> (comm, utime+stime ticks) for every process; comm only, never the command line (secrets)."""
    out = {}
    for name in root.listdir("proc"):
        if not name.isdigit() or int(name) in skip:
            continue
        text = root.read(f"proc/{name}/stat", limit=4096)
        if not text or ")" not in text:
            continue
        comm = text[text.index("(") + 1 : text.rindex(")")]
        rest = text[text.rindex(")") + 2 :].split()
        if len(rest) > 13:
            out[int(name)] = (comm, int(rest[11]) + int(rest[12]))  # fields 14 and 15 of stat(5)
    return out


def load_section(root: Root, *, sample_s: float, skip_pids: set[int] | None = None) -> dict[str, Any]:
    """Load average, steal and busy processes; live roots are sampled for `sample_s` (both at once)."""
    skip = skip_pids or set()
    stat0 = parse_proc_stat(root.read("proc/stat") or "")
    vm0 = parse_vmstat(root.read("proc/vmstat") or "")
    sampled = root.live and sample_s > 0
    procs0 = process_times(root, skip) if sampled else {}
    t0 = time.monotonic()
    if sampled:
        time.sleep(sample_s)
    stat1 = parse_proc_stat(root.read("proc/stat") or "") if sampled else {}
    vm1 = parse_vmstat(root.read("proc/vmstat") or "") if sampled else {}
    procs1 = process_times(root, skip) if sampled else {}
    elapsed = time.monotonic() - t0
    ticks = os.sysconf("SC_CLK_TCK") if sampled else 100
    busy: list[dict[str, Any]] = []
    for pid, (comm, t1) in procs1.items():
        if pid in procs0:
            pct = 100.0 * (t1 - procs0[pid][1]) / ticks / elapsed
            if pct >= 1.0:
                busy.append({"pid": pid, "comm": comm, "cpu_pct": round(pct, 1)})
    busy.sort(key=lambda p: -p["cpu_pct"])
    return {
        "loadavg": loadavg(root),
        "procs_running": stat0.get("procs_running"),
        "sample_s": round(elapsed, 3) if sampled else None,
        "steal_pct_sample": steal_pct(stat0.get("cpu", {}), stat1.get("cpu")) if sampled else None,
        "steal_pct_since_boot": steal_pct(stat0.get("cpu", {})),
        "swap_in_pages": (vm1.get("pswpin", 0) - vm0.get("pswpin", 0)) if sampled else None,
        "swap_out_pages": (vm1.get("pswpout", 0) - vm0.get("pswpout", 0)) if sampled else None,
        "busy_processes": busy[:8],
        "pressure": pressure_section(root),
    }
