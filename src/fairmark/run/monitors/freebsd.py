"""FreeBSD monitor: one `sysctl` call per sample, parsed by pure functions (tested on captured output).

kern.cp_times gives five tick counters per CPU (CP_USER, CP_NICE, CP_SYS, CP_INTR, CP_IDLE); FreeBSD keeps
no iowait or steal tick, so those columns are absent rather than zero. Disk and network counters come from
psutil, which reads devstat and the interface list on FreeBSD as it reads /proc on Linux.
"""

from __future__ import annotations

import re
import subprocess
import time

from fairmark.run.monitors.base import Snapshot

SYSCTL_NAMES = (
    "hw.pagesize",
    "kern.cp_times",
    "vm.loadavg",
    "vm.stats.sys.v_swtch",
    "vm.stats.sys.v_intr",
    "vm.stats.vm.v_forks",
    "vm.stats.vm.v_vforks",
    "vm.stats.vm.v_rforks",
    "vm.stats.vm.v_vm_faults",
    "vm.stats.vm.v_io_faults",
    "vm.stats.vm.v_swappgsin",
    "vm.stats.vm.v_swappgsout",
    "vm.stats.vm.v_free_count",
    "vm.stats.vm.v_inactive_count",
    "vm.vmtotal",
)
CP_STATES = 5  # user nice sys intr idle (sys/resource.h CPUSTATES)


def sysctl_command() -> list[str]:
    # -q: a name this kernel lacks is skipped silently instead of failing the whole sample.
    return ["sysctl", "-q", *SYSCTL_NAMES]


def parse_sysctl(text: str) -> dict[str, str]:
    """`name: value` lines; a multi-line value (vm.vmtotal) keeps its following lines."""
    values: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"^([a-z][\w.]*): ?(.*)$", line)
        if m and "." in m.group(1):
            current = m.group(1)
            values[current] = m.group(2)
        elif current:
            values[current] += "\n" + line
    return values


def cpu_ticks(cp_times: str) -> dict[str, dict[str, float]]:
    ticks = [float(x) for x in cp_times.split()]
    if not ticks or len(ticks) % CP_STATES:
        raise ValueError(f"kern.cp_times: expected a multiple of {CP_STATES} numbers, got {len(ticks)}")
    cpus = {
        f"cpu{i}": _states(ticks[i * CP_STATES : (i + 1) * CP_STATES]) for i in range(len(ticks) // CP_STATES)
    }
    cpus["total"] = {k: sum(c[k] for c in cpus.values()) for k in ("user", "system", "idle")}
    return cpus


def _states(t: list[float]) -> dict[str, float]:
    user, nice, sys_, intr, idle = t
    return {"user": user + nice, "system": sys_ + intr, "idle": idle}


def to_snapshot(values: dict[str, str], t_s: float) -> Snapshot:
    page_kib = float(values.get("hw.pagesize", "4096")) / 1024
    num = {k: float(v) for k, v in values.items() if re.fullmatch(r"-?\d+(\.\d+)?", v.strip())}
    counters = {}
    mapping = {"vm.stats.sys.v_swtch": "ctxt", "vm.stats.sys.v_intr": "intr"}
    for src, dst in mapping.items():
        if src in num:
            counters[dst] = num[src]
    forks = [
        num[k] for k in ("vm.stats.vm.v_forks", "vm.stats.vm.v_vforks", "vm.stats.vm.v_rforks") if k in num
    ]
    if forks:
        counters["forks"] = sum(forks)
    if "vm.stats.vm.v_vm_faults" in num and "vm.stats.vm.v_io_faults" in num:
        counters["faults_major"] = num["vm.stats.vm.v_io_faults"]  # a fault that needed I/O
        counters["faults_minor"] = num["vm.stats.vm.v_vm_faults"] - counters["faults_major"]
    for src, dst in (
        ("vm.stats.vm.v_swappgsin", "swap_in_pages"),
        ("vm.stats.vm.v_swappgsout", "swap_out_pages"),
    ):
        if src in num:
            counters[dst] = num[src]
    return Snapshot(
        t_s=t_s,
        cpu=cpu_ticks(values["kern.cp_times"]),
        counters=counters,
        gauges=_gauges(values, num, page_kib),
    )


def _gauges(values: dict[str, str], num: dict[str, float], page_kib: float) -> dict[str, float]:
    gauges = {}
    if "vm.stats.vm.v_free_count" in num:
        gauges["mem_free_kib"] = num["vm.stats.vm.v_free_count"] * page_kib
    if "vm.stats.vm.v_inactive_count" in num:
        gauges["mem_cached_kib"] = (
            num["vm.stats.vm.v_inactive_count"] * page_kib
        )  # FreeBSD's reclaimable cache
    if load := re.search(r"\{\s*([\d.]+)", values.get("vm.loadavg", "")):
        gauges["load1"] = float(load.group(1))
    if runq := re.search(r"RUNQ:\s*(\d+)", values.get("vm.vmtotal", "")):
        gauges["runq"] = max(float(runq.group(1)) - 1.0, 0.0)  # minus the sysctl process reading it
    return gauges


def psutil_counters() -> dict[str, float]:
    import psutil

    out: dict[str, float] = {}
    disk = psutil.disk_io_counters()
    if disk is not None:
        out |= {
            "disk_reads": float(disk.read_count),
            "disk_writes": float(disk.write_count),
            "disk_read_bytes": float(disk.read_bytes),
            "disk_write_bytes": float(disk.write_bytes),
        }
    net = psutil.net_io_counters()
    out |= {
        "net_rx_bytes": float(net.bytes_recv),
        "net_tx_bytes": float(net.bytes_sent),
        "net_rx_packets": float(net.packets_recv),
        "net_tx_packets": float(net.packets_sent),
    }
    return out


class FreeBSDReader:
    def snapshot(self) -> Snapshot:
        t = time.monotonic()
        out = subprocess.run(sysctl_command(), capture_output=True, text=True, check=False, timeout=10)
        snap = to_snapshot(parse_sysctl(out.stdout), t)
        return Snapshot(snap.t_s, snap.cpu, {**snap.counters, **psutil_counters()}, snap.gauges)
