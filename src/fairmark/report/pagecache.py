"""Faster than the hardware can (issue 11 item 6; seed 003's filebench, which "measured" more than the disk could).

A file-system cell is flagged "measured the page cache, not the disk" when what its tool claims cannot have come
from the device:

- its throughput is above what the same device did with O_DIRECT on the same file system before the run
  (fairmark.run.prerun.devicebase: fio, sequential 1 MiB blocks — the device's best case), or
- the bytes it claims to have read or written during its trials did not reach the disks: the monitors' disk
  counters over those same trials saw less than half of them. Other processes' I/O only adds to what the
  disks saw, so a busy machine can hide this sign, never fake it.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from fairmark.store.base import CLAIMED_IO
from fairmark.store.records import TrialRecord

RATE_MARGIN = 1.2  # the baseline is one 3 s measurement on a shared machine: 20% above it is beyond its noise
SEEN_FRACTION = 0.5  # the disks saw less than half the claimed bytes
DISK_KEYS = {
    "read": ("disk_read_bytes",),
    "write": ("disk_write_bytes",),
    "io": ("disk_read_bytes", "disk_write_bytes"),
}
NOUNS = {"read": "reads", "write": "writes", "io": "reads and writes"}
VERBS = {"read": "read", "write": "written", "io": "read and written"}


def flags(report: Any) -> list[dict[str, Any]]:
    """One entry per flagged cell: its key, workload, variant, the reasons (with the figures) and a sentence."""
    baselines = (report.run.options or {}).get("device_baselines") or {}
    if not baselines:
        return []
    monitor = _monitor_counters(report)
    claimed = {a["trial_id"]: a["data"] for a in report.artifacts(CLAIMED_IO) if a.get("data")}
    out = []
    for c in report.cells:
        base = baselines.get(c.workload)
        if not base or _in_memory(base):  # a memory file system has no disk: its bytes are never "seen" there
            continue
        trials = [t for t in c.trials if t.measured and not t.profiled]
        claims = [(t, claimed[t.id]) for t in trials if t.id in claimed]
        reasons = _beyond_device(claims, base) + _not_on_disk(claims, monitor)
        if reasons:
            out.append(
                {
                    "cell": c.key,
                    "workload": c.workload,
                    "variant": c.variant,
                    "reasons": reasons,
                    "sentence": f"{c.key}: measured the page cache, not the disk — {'; '.join(reasons)}",
                }
            )
    return out


def _in_memory(base: Mapping[str, Any]) -> bool:
    """The workload's directory is on tmpfs, ramfs … (runs stored before `memory_fs` was kept say so in words)."""
    return bool(base.get("memory_fs")) or "on a memory file system" in str(base.get("skipped") or "")


def lines(report: Any) -> list[str]:
    return [f["sentence"] for f in flags(report)]


def _beyond_device(claims: list[tuple[TrialRecord, dict]], base: Mapping[str, Any]) -> list[str]:
    out = []
    for d in ("read", "write", "io"):
        rates = [cl[f"{d}_mib_s"] for _, cl in claims if f"{d}_mib_s" in cl]
        device = (
            base.get(f"{d}_mib_s")
            if d != "io"
            else max(base.get("read_mib_s") or 0, base.get("write_mib_s") or 0)
        )
        if not rates or not device:
            continue
        median = statistics.median(rates)
        if median > RATE_MARGIN * device:
            out.append(
                f"it claims {NOUNS[d]} at {median:.0f} MiB/s (median of {len(rates)} trials), above the "
                f"{device:.0f} MiB/s its device did with O_DIRECT on the same file system"
            )
    return out


def _not_on_disk(
    claims: list[tuple[TrialRecord, dict]], monitor: Mapping[str, dict[str, float]]
) -> list[str]:
    out = []
    for d, keys in DISK_KEYS.items():
        seen = [
            (cl[f"{d}_bytes"], sum(m.get(k, 0.0) for k in keys))
            for t, cl in claims
            if f"{d}_bytes" in cl and cl[f"{d}_bytes"] > 0 and (m := monitor.get(t.id)) and keys[0] in m
        ]
        if not seen:
            continue  # no disk counters (a container without /proc/diskstats): nothing to compare
        # per trial, then the median: one trial during another process's burst of I/O does not hide the rest
        share = statistics.median(saw / claimed for claimed, saw in seen)
        if share < SEEN_FRACTION:
            claimed, saw = sum(c for c, _ in seen), sum(s for _, s in seen)
            out.append(
                f"it claims {_mib(claimed)} {VERBS[d]} over {len(seen)} trial(s), the disks saw {_mib(saw)} "
                f"during them (median {100 * share:.0f}% per trial)"
            )
    return out


def _monitor_counters(report: Any) -> dict[str, dict[str, float]]:
    """trial id → the system monitor's whole-trial counter deltas (disk bytes among them)."""
    out = {}
    for a in report.artifacts("monitor"):
        data = a.get("data") or {}
        counters = (data.get("totals") or {}).get("counters") if isinstance(data, dict) else None
        # a series claimed from the sampler's periods (short trials) holds their share of the disks' bytes,
        # several trials' at once: not one trial's own to compare with what it claims
        if counters and "claimed_trials" not in data:
            out[a["trial_id"]] = counters
    return out


def _mib(n: float) -> str:
    return f"{n / (1 << 20):.0f} MiB"
