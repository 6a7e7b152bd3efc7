"""What each profile of a cell covers, as every report says it: its scope (the workload's process tree, or the
whole machine) and, for the CPU profile, the share of the busy CPUs' samples that were the workload's.

A profile whose scope is "system-wide" (FreeBSD's lockstat; CPU profiles stored before profiles were taken of
the trial's own cgroup) is labelled so wherever it is shown: its tables and flame graph hold every process on the
machine, not only the workload.
"""

from __future__ import annotations

from typing import Any

from fairmark.stats.digits import format_cv

SYSTEM_WIDE = "system-wide"


def hosts_of(docs: list[Any]) -> list[str]:
    """The hosts a cell's profile documents were taken on (remote.profiling labels them; none: this machine)."""
    return sorted({str(d["host"]) for d in docs if isinstance(d, dict) and d.get("host")})


def where(docs: list[Any]) -> str:
    """ " on host NAME" for a profile taken on a host, as every report labels it; "" for this machine's."""
    hosts = hosts_of(docs)
    return f" on host {', '.join(hosts)}" if hosts else ""


def cpu_view(metas: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A cell's CPU profile metadata merged over its profiled trials: scope, samples and the workload's share
    (the sum of its samples over the sum of the busy CPUs' samples, so a longer trial weighs more)."""
    metas = [m for m in metas if isinstance(m, dict)]
    if not metas:
        return None
    scopes = sorted({str(m.get("scope") or SYSTEM_WIDE) for m in metas})
    with_share = [m for m in metas if m.get("busy_samples") is not None]
    view: dict[str, Any] = {"scope": " + ".join(scopes), "trials": len(metas)}
    if hosts := hosts_of(metas):
        view["hosts"] = hosts
    if with_share:
        workload = sum(int(m.get("workload_samples") or 0) for m in with_share)
        busy = sum(int(m.get("busy_samples") or 0) for m in with_share)
        view |= {
            "workload_samples": workload,
            "busy_samples": busy,
            "workload_share": min(1.0, workload / busy) if busy else None,  # see profiles.cpu.share_meta
        }
    return view


def cpu_line(view: dict[str, Any]) -> str:
    """One sentence: what the flame graph holds, and how much of the machine's work the workload was."""
    on = f" on host {', '.join(view['hosts'])}" if view.get("hosts") else ""
    if view["scope"] == SYSTEM_WIDE:
        return f"system-wide{on}: every process on the machine, not only the workload (its share was not recorded)"
    share = view.get("workload_share")
    if share is None:
        return f"{view['scope']}{on}: the workload's processes only"
    return (
        # two significant digits: 17 of 4687 samples was "0%", as if the workload had not run at all
        f"{view['scope']}{on}: the workload's processes only; they were {format_cv(share)} of the samples of busy CPUs "
        f"during the profiled trials ({view['workload_samples']} of {view['busy_samples']})"
    )


def scope_of(docs: list[Any]) -> str:
    """The scope of a lock or syscall profile's documents ("system-wide" for those stored without one), and the
    host they were taken on."""
    scopes = sorted({str(d.get("scope") or SYSTEM_WIDE) for d in docs if isinstance(d, dict)})
    return (" + ".join(scopes) or SYSTEM_WIDE) + where(docs)


def cell_json(key: str, variant: str, arts: Any) -> dict[str, Any] | None:
    """A cell's profiles as `--json` gives them (None when it has none)."""
    out: dict[str, Any] = {}
    if cpu := cpu_view(arts.data(key, "profile.cpu/meta")):
        out["cpu"] = cpu
    for kind, name in (("locks", "profile.locks/contention"), ("syscalls", "profile.syscalls/summary")):
        if docs := arts.data(key, name):
            out[kind] = {"scope": scope_of(docs), "trials": len(docs)} | (
                {"hosts": hosts} if (hosts := hosts_of(docs)) else {}
            )
    return {"cell": key, "variant": variant} | out if out else None
