"""Comparisons of hosts' environment snapshots (pure, over snapshot dicts): the hardware differences that make a
comparison of hosts one of hardware rather than of operating systems (the run on hosts refuses them unless the plan
declares them), the operating-system and kernel differences (a warning unless declared), and the `declare` word
that covers a difference. Read by the run's gate (run/loop/gate.py) and the reports (report/hosts.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Fact = Callable[[Mapping[str, Any]], Any]  # a snapshot → the value compared between hosts

# The facts that make a comparison of hosts one of hardware rather than of operating systems, each with the
# `declare` word that accepts a difference in it.
HARDWARE_FACTS: dict[str, Fact] = {
    "cpu_model": lambda s: s.get("cpu", {}).get("model"),
    "cores": lambda s: (s.get("cpu", {}).get("cores"), s.get("cpu", {}).get("threads")),
    "memory": lambda s: round((s.get("memory", {}).get("total_kib") or 0) / (1 << 20)),
    "disk": lambda s: sorted(str(d.get("model")) for d in s.get("host", {}).get("disks") or []),
    "fs": lambda s: (s.get("fs") or {}).get("fstype"),
}


def hardware_differences(snaps: Mapping[str, Mapping[str, Any]], declared: list[str]) -> list[str]:
    """Undeclared hardware differences between hosts, in words ("cpu_model: h1 'X' vs h2 'Y'")."""
    out = []
    names = list(snaps)
    for fact, get in HARDWARE_FACTS.items():
        if fact in declared:
            continue
        values = {n: get(snaps[n]) for n in names}
        if len({repr(v) for v in values.values()}) > 1:
            out.append(f"{fact}: " + " vs ".join(f"{n} {v!r}" for n, v in values.items()))
    return out


# The facts that make it a comparison of operating systems or kernels: the point of most plans over hosts, said
# with declare = ["os", "kernel"]; undeclared, such a difference is a warning (the user may not know of it).
SOFTWARE_FACTS: dict[str, Fact] = {
    "os": lambda s: (s.get("os", {}).get("kernel"), s.get("os", {}).get("distribution")),
    "kernel": lambda s: (s.get("os", {}).get("release"), s.get("os", {}).get("version")),
}


def software_differences(snaps: Mapping[str, Mapping[str, Any]], declared: list[str]) -> list[str]:
    """Undeclared operating-system and kernel differences between hosts, in words."""
    out = []
    for fact, get in SOFTWARE_FACTS.items():
        values = {n: get(s) for n, s in snaps.items()}
        if fact not in declared and len({repr(v) for v in values.values()}) > 1:
            out.append(f"{fact}: " + " vs ".join(f"{n} {v!r}" for n, v in values.items()))
    return out


def declare_word(key: str) -> str | None:
    """The `declare` word that covers an environment-diff key (None: no word does)."""
    prefixes = (
        ("os.kernel", "os"),
        ("os.distribution", "os"),
        ("os.release", "kernel"),
        ("os.version", "kernel"),
        ("os.cmdline", "kernel"),
        ("kernel_config", "kernel"),
        ("cpu.model", "cpu_model"),
        ("cpu.cores", "cores"),
        ("cpu.threads", "cores"),
        ("memory.total_kib", "memory"),
        ("host.disks", "disk"),
        ("fs.fstype", "fs"),
    )
    return next((w for p, w in prefixes if key == p or key.startswith(p + ".")), None)


def software_findings(snaps: Mapping[str, Mapping[str, Any]], declared: list[str]) -> list[dict[str, Any]]:
    """A warning for each undeclared OS or kernel difference between the hosts: the verdict would be about it."""
    return [
        {
            "id": "hosts-differ",
            "severity": "warn",
            "title": "the hosts run different software",
            "evidence": d,
            "why": "a verdict between these hosts measures this difference too",
            "fix": f'declare = ["{d.split(":")[0]}"] in the plan if it is the point of the comparison',
        }
        for d in software_differences(snaps, declared)
    ]
