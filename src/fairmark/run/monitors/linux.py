"""Linux monitor: pure parsers of /proc text, and a reader that feeds them.

Only /proc is read (no subprocess, no psutil object churn): one sample is ~8 small file reads, which is what
keeps the monitor well under 1% of one CPU at 1 Hz (see bench/monitor_overhead.py).
"""

from __future__ import annotations

import functools
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from fairmark.run.monitors.base import Snapshot

SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size
# Not real disks: a loop device double-counts the file system below it, zram/ram are memory.
_VIRTUAL_DISK = re.compile(r"^(loop|ram|zram|dm-|md|sr|fd)\d*")


def parse_stat(text: str) -> tuple[dict[str, dict[str, float]], dict[str, float], dict[str, float]]:
    """/proc/stat → (cpu ticks per state, counters, gauges). A line is split only when all of it is used: the
    intr and softirq lines hold a number per interrupt (hundreds on a big machine), twice a trial."""
    cpu: dict[str, dict[str, float]] = {}
    counters: dict[str, float] = {}
    gauges: dict[str, float] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key.startswith("cpu"):
            cpu["total" if key == "cpu" else key] = _cpu_states([float(x) for x in rest.split()])
        elif key in _STAT_COUNTERS:
            counters[_STAT_COUNTERS[key]] = float(rest.split(None, 1)[0])
        elif key == "procs_running":
            # The reader itself is running while it reads: what else wants a CPU is one fewer.
            gauges["runq"] = max(float(rest) - 1.0, 0.0)
        elif key == "procs_blocked":
            gauges["blocked"] = float(rest)
    return cpu, counters, gauges


_STAT_COUNTERS = {"ctxt": "ctxt", "intr": "intr", "processes": "forks"}


def _cpu_states(v: list[float]) -> dict[str, float]:
    # Fields: user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user.
    v = v + [0.0] * (8 - len(v))
    return {
        "user": v[0] + v[1],
        "system": v[2] + v[5] + v[6],
        "idle": v[3],
        "iowait": v[4],
        "steal": v[7],
    }


def _values(text: str, names: tuple[str, ...], sep: str) -> dict[str, str]:
    """The value after `name` + `sep` on the line that starts with it, for each name found (a sample reads
    /proc/vmstat's ~190 lines twice per trial: finding four of them beats splitting, or a regex over, all)."""
    out = {}
    for name in names:
        at = -1
        while (at := text.find(name + sep, at + 1)) > 0 and text[at - 1] != "\n":
            pass  # another line's name ends with this one: look further
        if at >= 0:
            end = text.find("\n", at)
            out[name] = text[at + len(name) + len(sep) : end if end >= 0 else len(text)].strip()
    return out


def parse_vmstat(text: str) -> dict[str, float]:
    raw = {
        k: v
        for k, v in _values(text, ("pgfault", "pgmajfault", "pswpin", "pswpout"), " ").items()
        if v.isdigit()
    }
    out = {}
    if "pgfault" in raw and "pgmajfault" in raw:
        out["faults_major"] = float(raw["pgmajfault"])
        out["faults_minor"] = float(raw["pgfault"]) - out["faults_major"]  # pgfault counts both
    for src, dst in (("pswpin", "swap_in_pages"), ("pswpout", "swap_out_pages")):
        if src in raw:
            out[dst] = float(raw[src])
    return out


def parse_meminfo(text: str) -> dict[str, float]:
    found = _values(text, ("MemFree", "Cached", "Buffers", "SwapTotal", "SwapFree"), ":")
    values = {name: float(v.split()[0]) for name, v in found.items() if v and v.split()[0].isdigit()}
    out = {}
    if "MemFree" in values:
        out["mem_free_kib"] = values["MemFree"]
    if "Cached" in values:
        out["mem_cached_kib"] = values["Cached"] + values.get("Buffers", 0.0)
    if "SwapTotal" in values and "SwapFree" in values:
        out["swap_used_kib"] = values["SwapTotal"] - values["SwapFree"]
    return out


def parse_diskstats(text: str) -> dict[str, float]:
    """Whole physical disks only: partitions would count every byte twice."""
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 10 and not _VIRTUAL_DISK.match(parts[2]):
            rows[parts[2]] = [float(x) for x in parts[3:10]]
    disks = [d for d in rows if not _is_partition(d, rows)]
    out = {"disk_reads": 0.0, "disk_read_bytes": 0.0, "disk_writes": 0.0, "disk_write_bytes": 0.0}
    for d in disks:
        reads, _, rsect, _, writes, _, wsect = rows[d]
        out["disk_reads"] += reads
        out["disk_read_bytes"] += rsect * SECTOR_BYTES
        out["disk_writes"] += writes
        out["disk_write_bytes"] += wsect * SECTOR_BYTES
    return out


def _is_partition(name: str, all_names: Mapping[str, object]) -> bool:
    return any(other != name and re.fullmatch(re.escape(other) + r"p?\d+", name) for other in all_names)


def parse_net_dev(text: str) -> dict[str, float]:
    """All interfaces including lo: loopback traffic is what iperf3/pgbench over 127.0.0.1 generate here."""
    out = {"net_rx_bytes": 0.0, "net_rx_packets": 0.0, "net_tx_bytes": 0.0, "net_tx_packets": 0.0}
    for line in text.splitlines():
        if ":" not in line:
            continue
        _, _, rest = line.partition(":")
        f = rest.split()
        if len(f) < 10:
            continue
        out["net_rx_bytes"] += float(f[0])
        out["net_rx_packets"] += float(f[1])
        out["net_tx_bytes"] += float(f[8])
        out["net_tx_packets"] += float(f[9])
    return out


def parse_pressure(resource: str, text: str) -> dict[str, float]:
    """/proc/pressure/<resource>: cumulative stall microseconds ("total="), turned into % of time by rates."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        total = next((p.split("=", 1)[1] for p in parts[1:] if p.startswith("total=")), None)
        if total is not None:
            out[f"psi_{resource}_{parts[0]}_us"] = float(total)
    return out


def parse_loadavg(text: str) -> dict[str, float]:
    return {"load1": float(text.split()[0])}


class LinuxReader:
    """Reads one Snapshot from /proc (or a copy of it under `root`, for tests)."""

    def __init__(self, root: str | Path = "/proc"):
        self.root = Path(root)
        self.pressure = [r for r in ("cpu", "io", "memory") if (self.root / "pressure" / r).exists()]
        # plain strings: pathlib's parsing cost more than the read itself, twice a trial
        self._prefix = f"{self.root}/"
        self._fds: dict[str, int] = {}
        self._lock = threading.Lock()
        self.memo: Memo = {}  # (snapshot_from: the sampler thread and the trial's start and end share it)

    def _read(self, name: str) -> str:
        """The file's text, "" where it does not exist (no /proc/diskstats in a container: that column is simply
        absent). Read from the start of a descriptor kept open: /proc makes a file's text afresh at each read
        from offset 0, and opening and closing nine files twice a trial was a third of reading them."""
        fd = self._fds.get(name)
        if fd is None:
            try:
                fd = self._fds[name] = os.open(self._prefix + name, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return ""
        chunks, at = [], 0
        try:
            while chunk := os.pread(fd, 1 << 16, at):
                chunks.append(chunk)
                at += len(chunk)
        except OSError:
            return ""
        return b"".join(chunks).decode("utf-8", errors="replace")

    def snapshot(self) -> Snapshot:
        names = ["stat", "vmstat", "diskstats", "net/dev", "meminfo", "loadavg"]
        with self._lock:  # the sampler thread and the trial's start and end share the descriptors
            t = time.monotonic()
            texts = {n: self._read(n) for n in [*names, *(f"pressure/{r}" for r in self.pressure)]}
        return snapshot_from(texts, t, self.memo)

    def close(self) -> None:
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


# The /proc files one sample reads (relative to /proc); a remote host's agent reads them and sends the texts.
SAMPLE_FILES = (
    "stat",
    "vmstat",
    "diskstats",
    "net/dev",
    "meminfo",
    "loadavg",
    "pressure/cpu",
    "pressure/io",
    "pressure/memory",
)


# A parsed file's values, by the file: its last text and what it gave (LinuxReader.memo).
Memo = dict[str, tuple[str, dict[str, float]]]
# The files whose text often stays the same from one snapshot to the next (a trial's start and end, the next
# trial's start): parsed again only when it changed (disks and network idle, no stall; ~20 µs a snapshot)
_MEMO_PARSERS: tuple[tuple[str, Callable[[str], dict[str, float]]], ...] = (
    ("diskstats", parse_diskstats),
    ("net/dev", parse_net_dev),
    *((f"pressure/{r}", functools.partial(parse_pressure, r)) for r in ("cpu", "io", "memory")),
)


def snapshot_from(texts: Mapping[str, str], t_s: float, memo: Memo | None = None) -> Snapshot:
    """One Snapshot from the texts of SAMPLE_FILES (a missing or empty file is simply absent). `memo`: the
    values of the last texts parsed with it (the same text gives the same values; they are never changed)."""
    cpu, counters, gauges = parse_stat(texts.get("stat", ""))
    counters |= parse_vmstat(texts.get("vmstat", ""))
    for name, parse in _MEMO_PARSERS:
        if text := texts.get(name):
            last = memo.get(name) if memo is not None else None
            if last is not None and last[0] == text:
                counters |= last[1]
                continue
            values = parse(text)
            if memo is not None:
                memo[name] = (text, values)
            counters |= values
    gauges |= parse_meminfo(texts.get("meminfo", ""))
    if load := texts.get("loadavg"):
        gauges |= parse_loadavg(load)
    return Snapshot(t_s=t_s, cpu=cpu, counters=counters, gauges=gauges)
