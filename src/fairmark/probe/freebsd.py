"""FreeBSD probe: pure parsers over saved command outputs under a root directory.

Layout of a FreeBSD sysroot (what `fairmark env --save-sysroot DIR` writes on a FreeBSD host):
  sysctl.txt   `sysctl -a` (multi-line values such as kern.conftxt continue on the following lines)
  uname.txt    `uname -a`
  mount.txt    `mount` (or `mount -p`)
  dmesg.boot   /var/run/dmesg.boot (also accepted at var/run/dmesg.boot)
  etc/malloc.conf  symlink whose target is the jemalloc option string (or malloc.conf.txt holding it)
  environ      optional `env` output of the benchmark shell (NAME=value lines)
"""

from __future__ import annotations

import os
import platform
import re
import time
from dataclasses import dataclass
from typing import Any

from fairmark.probe._io import Root, mount_for, run_command, unknown_fs
from fairmark.probe.kconfig import config_hash, parse_freebsd_config
from fairmark.probe.rules import FREEBSD_DEBUG_OPTIONS

_SYSCTL_LINE = re.compile(r"^([a-z][\w%.-]*\.[\w%.-]+)(?:: ?|=)(.*)$")
FREEBSD_MITIGATION_OIDS = (
    "vm.pmap.pti",
    "hw.ibrs_disable",
    "hw.mds_disable",
    "hw.spec_store_bypass_disable",
    "machdep.mitigations.taa.enable",
    "hw.mds_disable_state",
)
# amd64: `CPU: AMD Ryzen 5 5600G ... (3900.17-MHz K8-class CPU)`; arm64: `CPU  1: APM eMAG 8180 r3p2 affinity: ...`
DMESG_CPU_RE = r"^CPU(?::|\s+\d+:) (.+?)\s*(?:\(\d|affinity|$)"
WITNESS_WARNING = "WARNING: WITNESS option enabled, expect reduced performance."
SYSCTL_TIMEOUT_S = 5.0  # `sysctl -a` prints tens of thousands of lines on a big machine
NET_FS = {"nfs", "smbfs", "fusefs", "p9fs"}
MEMORY_FS = {"tmpfs", "md"}


def is_freebsd_root(root: Root) -> bool:
    if root.live:
        return platform.system() == "FreeBSD"
    return root.exists("sysctl.txt") or "FreeBSD" in (root.read("uname.txt") or "")


def parse_sysctl(text: str) -> dict[str, str]:
    """`name: value` lines; a line that does not start a new OID continues the previous value (conftxt)."""
    out: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        m = _SYSCTL_LINE.match(line)
        if m:
            last = m[1]
            out[last] = m[2]
        elif last is not None:
            out[last] += "\n" + line
    return {k: v.rstrip("\n") for k, v in out.items()}


def _int(v: str | None) -> int | None:
    try:
        return int(v.strip()) if v is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Sources:
    """The raw texts the FreeBSD probe parses, from files under a sysroot or from commands on the live host."""

    sysctl: str
    uname: str
    mount: str
    dmesg: str | None
    malloc_link: str | None
    root: Root

    @classmethod
    def from_root(cls, root: Root) -> Sources:
        if root.live and platform.system() == "FreeBSD":
            return cls.live(root)
        return cls(
            sysctl=root.read("sysctl.txt") or "",
            uname=(root.read("uname.txt") or "").strip(),
            mount=root.read("mount.txt") or "",
            dmesg=root.read("dmesg.boot") or root.read("var/run/dmesg.boot"),
            malloc_link=malloc_conf_link(root),
            root=root,
        )

    @classmethod
    def live(cls, root: Root) -> Sources:
        """Run the commands a sysroot's files stand for (each with a timeout; a failure leaves text empty)."""
        sysctl = run_command(["sysctl", "-a"], timeout_s=SYSCTL_TIMEOUT_S)
        return cls(
            sysctl=sysctl.stdout if sysctl.ok else "",
            uname=run_command(["uname", "-a"]).stdout.strip(),
            mount=run_command(["mount"]).stdout,
            dmesg=root.read("var/run/dmesg.boot"),
            malloc_link=root.readlink("etc/malloc.conf"),
            root=root,
        )


def parse_mount(text: str) -> list[dict[str, Any]]:
    """`/dev/ada0p2 on / (ufs, local, soft-updates)` lines, or `mount -p` fstab-like lines."""
    mounts = []
    for line in text.splitlines():
        m = re.match(r"^(\S+) on (.+?) \((\w[\w.-]*)(?:, (.*))?\)\s*$", line.strip())
        if m:
            opts = [o.strip() for o in (m[4] or "").split(",") if o.strip()]
            mounts.append({"device": m[1], "mount_point": m[2], "fstype": m[3], "options": opts})
            continue
        f = line.split()
        if len(f) >= 4 and f[1].startswith("/"):
            mounts.append({"device": f[0], "mount_point": f[1], "fstype": f[2], "options": f[3].split(",")})
    return mounts


def witness_warning(dmesg: str | None) -> bool | None:
    return None if dmesg is None else WITNESS_WARNING in dmesg


def malloc_conf_link(root: Root) -> str | None:
    target = root.readlink("etc/malloc.conf")
    if target is None:
        text = root.read("malloc.conf.txt")
        target = text.strip() if text is not None else None
    return target


def probe(root: Root, *, workdir: str, sample_s: float = 0.0) -> dict[str, Any]:
    src = Sources.from_root(root)
    s = parse_sysctl(src.sysctl)
    return {
        "host": _host(s, src.uname),
        "cpu": _cpu(s, src.dmesg or ""),
        "memory": _memory(s, src.dmesg or ""),
        "os": _os(s, src.uname),
        "kernel_config": _kernel_config(src, s),
        "cpufreq": _cpufreq(s),
        "mitigations": {k: v.strip() for k, v in s.items() if k in FREEBSD_MITIGATION_OIDS},
        "fs": _fs(src, os.path.realpath(workdir) if root.live else workdir),
        "load": _load(s, live=root.live, sample_s=sample_s),
        "thermal": _thermal(s),
        "malloc": {
            "malloc_conf_link": src.malloc_link,
            "malloc_production": _malloc_production(s, src.uname),
        },
    }


def _host(s: dict[str, str], uname: str) -> dict[str, Any]:
    words = uname.split()
    return {
        "hostname": s.get("kern.hostname") or (words[1] if len(words) > 1 else None),
        "virtualization": {
            "hypervisor": _vm_guest(s),
            "hypervisor_evidence": "kern.vm_guest" if _vm_guest(s) else None,
            "container": _jail(s),
            "container_evidence": "security.jail.jailed" if _jail(s) else None,
        },
        "disks": [{"name": d} for d in (s.get("kern.disks") or "").split()],
        "nics": [],
    }


def _cpu(s: dict[str, str], dmesg: str) -> dict[str, Any]:
    tpc = _int(s.get("kern.smp.threads_per_core"))
    return {
        "model": (s.get("hw.model") or "").strip() or _dmesg_str(dmesg, DMESG_CPU_RE),
        "vendor": None,
        "arch": s.get("hw.machine_arch") or s.get("hw.machine"),
        "sockets": _dmesg_int(dmesg, r"FreeBSD/SMP: (\d+) package"),
        "cores": _int(s.get("kern.smp.cores")),
        "threads": _int(s.get("hw.ncpu")),
        "smt": {
            "control": None if tpc is None else ("on" if tpc > 1 else "off"),
            "active": None if tpc is None else tpc > 1,
        },
        "online": None,
        "hypervisor_flag": _vm_guest(s) is not None,
        "caches": [],
        "numa_nodes": _int(s.get("vm.ndomains")),
    }


def _memory(s: dict[str, str], dmesg: str) -> dict[str, Any]:
    physmem = _int(s.get("hw.physmem")) or _dmesg_int(dmesg, r"^avail memory\s*=\s*(\d+)")
    swap = _int(s.get("vm.swap_total"))
    return {
        "total_kib": physmem // 1024 if physmem else None,
        "available_kib": None,
        "swap_total_kib": swap // 1024 if swap is not None else None,
        "swap_free_kib": None,
        "swap_used_kib": None,
        "thp": {"1": "superpages", "0": "off"}.get((s.get("vm.pmap.pg_ps_enabled") or "").strip()),
        "thp_defrag": None,
        "aslr": {"1": "full", "0": "off"}.get((s.get("kern.elf64.aslr.enable") or "").strip()),
    }


def _dmesg_int(dmesg: str, pattern: str) -> int | None:
    m = re.search(pattern, dmesg, re.M)
    return int(m[1]) if m else None


def _dmesg_str(dmesg: str, pattern: str) -> str | None:
    m = re.search(pattern, dmesg, re.M)
    return m[1].strip() if m else None


def _vm_guest(s: dict[str, str]) -> str | None:
    v = (s.get("kern.vm_guest") or "").strip()
    return None if not v or v == "none" else v


def _jail(s: dict[str, str]) -> str | None:
    return "jail" if (s.get("security.jail.jailed") or "").strip() == "1" else None


def _os(s: dict[str, str], uname: str) -> dict[str, Any]:
    boot = re.search(r"sec = (\d+)", s.get("kern.boottime", ""))
    u = uname.split()
    return {
        "kernel": (s.get("kern.ostype") or (u[0] if u else None) or "FreeBSD").strip(),
        "release": (s.get("kern.osrelease") or (u[2] if len(u) > 2 else "")).strip() or None,
        "version": (s.get("kern.version") or uname or "").strip() or None,
        "cmdline": None,
        "boot_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(boot[1]))) if boot else None,
        "uptime_s": None,
        "clocksource": (s.get("kern.timecounter.hardware") or "").strip() or None,
        "available_clocksources": (s.get("kern.timecounter.choice") or "").split() or None,
        "distribution": None,
        "ident": (s.get("kern.ident") or "").strip() or _ident_from_uname(uname),
    }


def _ident_from_uname(uname: str) -> str | None:
    m = re.search(r"/([\w.-]+)\s+\w+\s*$", uname)  # `... root@host:/usr/obj/.../sys/GENERIC  amd64`
    return m[1] if m else None


def _kernel_config(src: Sources, s: dict[str, str]) -> dict[str, Any]:
    features = sorted(
        k.split(".", 2)[2] for k, v in s.items() if k.startswith("kern.features.") and v.strip() == "1"
    )
    debug_features = {f.upper(): "1" for f in features if f.upper() in FREEBSD_DEBUG_OPTIONS}
    conftxt = s.get("kern.conftxt")
    parsed = parse_freebsd_config(conftxt) if conftxt and conftxt.strip() else None
    found = parsed.get("options") if parsed else None
    options: dict[str, str] = found if isinstance(found, dict) else {}
    debug = {k: options[k] for k in FREEBSD_DEBUG_OPTIONS if k in options}
    basis = options or {f"feature:{f}": "1" for f in features}
    return {
        "source": "kern.conftxt" if parsed else ("kern.features" if features else None),
        "sha256": config_hash(basis) if basis else None,
        "options_set": len(options) if parsed else None,
        "ident": (s.get("kern.ident") or "").strip() or (parsed or {}).get("ident"),
        "debug_options": debug,
        "debug_features": debug_features,
        "witness_boot_warning": witness_warning(src.dmesg),
    }


def _cpufreq(s: dict[str, str]) -> dict[str, Any]:
    per_cpu = []
    for k in s:
        m = re.fullmatch(r"dev\.cpu\.(\d+)\.freq", k)
        if m:
            levels = [
                int(x.split("/")[0]) for x in (s.get(f"dev.cpu.{m[1]}.freq_levels") or "").split() if "/" in x
            ]
            per_cpu.append(
                {
                    "cpu": int(m[1]),
                    "driver": (s.get(f"dev.cpu.{m[1]}.freq_driver") or "").strip() or None,
                    "governor": None,
                    "min_khz": min(levels) * 1000 if levels else None,
                    "max_khz": max(levels) * 1000 if levels else None,
                    "epp": None,
                }
            )
    epp = sorted({v.strip() for k, v in s.items() if re.fullmatch(r"dev\.hwp\w*\.\d+\.epp", k)})
    for c in per_cpu:
        c["epp"] = epp[0] if len(epp) == 1 else (",".join(epp) or None)
    return {
        "available": bool(per_cpu),
        "drivers": sorted({c["driver"] for c in per_cpu if c["driver"]}),
        "governors": [],
        "boost": None,
        "per_cpu": sorted(per_cpu, key=lambda c: c["cpu"]),
    }


def _fs(src: Sources, workdir: str) -> dict[str, Any]:
    best = mount_for(parse_mount(src.mount), workdir)
    if best is None:
        return unknown_fs(workdir)
    return {
        "workdir": workdir,
        "mount_point": best["mount_point"],
        "fstype": best["fstype"],
        "device": best["device"],
        "options": sorted(best["options"]),
        "memory_fs": best["fstype"] in MEMORY_FS,
        "network_fs": best["fstype"] in NET_FS,
        "disk": None,
    }


def _load(s: dict[str, str], *, live: bool, sample_s: float) -> dict[str, Any]:
    la = re.findall(r"[\d.]+", s.get("vm.loadavg", ""))
    out: dict[str, Any] = {
        "loadavg": [float(x) for x in la[:3]] if len(la) >= 3 else None,
        "procs_running": None,
        "sample_s": None,
        "steal_pct_sample": None,  # FreeBSD guests do not account steal time
        "steal_pct_since_boot": None,
        "swap_in_pages": None,
        "swap_out_pages": None,
        "busy_processes": [],
        "pressure": {},
    }
    if live and sample_s > 0:
        out["busy_processes"], out["sample_s"] = busy_processes_psutil(sample_s)
    return out


def busy_processes_psutil(sample_s: float) -> tuple[list[dict[str, Any]], float]:
    """Top CPU users over `sample_s` seconds through psutil (portable; Linux uses /proc so sysroots work)."""
    import psutil

    me = os.getpid()

    def times() -> dict[int, tuple[str, float]]:
        out = {}
        for p in psutil.process_iter(["pid", "name", "cpu_times"]):
            ct = p.info["cpu_times"]
            if ct is not None and p.info["pid"] != me:
                out[p.info["pid"]] = (p.info["name"] or "?", ct.user + ct.system)
        return out

    t0, before = time.monotonic(), times()
    time.sleep(sample_s)
    after, elapsed = times(), time.monotonic() - t0
    busy: list[dict[str, Any]] = [
        {"pid": pid, "comm": name, "cpu_pct": round(100.0 * (cpu - before[pid][1]) / elapsed, 1)}
        for pid, (name, cpu) in after.items()
        if pid in before and (cpu - before[pid][1]) / elapsed >= 0.01
    ]
    return sorted(busy, key=lambda p: -p["cpu_pct"])[:8], round(elapsed, 3)


def _thermal(s: dict[str, str]) -> dict[str, Any]:
    zones = []
    for k, v in s.items():
        m = re.fullmatch(r"dev\.cpu\.(\d+)\.temperature", k)
        if m:
            t = re.match(r"\s*([\d.]+)C", v)
            zones.append({"zone": f"cpu{m[1]}", "type": "cpu", "temp_c": float(t[1]) if t else None})
    return {"readable": bool(zones), "zones": zones, "throttle_counts": {}, "throttled": None}


def _malloc_production(s: dict[str, str], uname: str) -> bool | None:
    """Release branches build world WITH_MALLOC_PRODUCTION; -CURRENT does not. Unknown otherwise."""
    release = (s.get("kern.osrelease") or uname).upper()
    if "CURRENT" in release:
        return False
    if re.search(r"RELEASE|STABLE|BETA|RC\d", release):
        return True
    return None
