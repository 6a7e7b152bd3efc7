"""The environment snapshot recorded with every run, the cheap volatile part checked between rounds, and the
stable host identity used to group runs by machine."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fairmark.probe import freebsd, linux
from fairmark.probe._io import Root
from fairmark.probe.redact import REDACTED, redact_env, redact_text, scrub, secret_values
from fairmark.probe.tools import TOOLCHAIN, tool_versions, toolchain

SCHEMA_VERSION = 1
SAMPLE_S = 0.4  # steal and busy-process sample: long enough to see a busy process, short for the 2 s budget


def _os_family(root: Root) -> str:
    if freebsd.is_freebsd_root(root):
        return "freebsd"
    return "linux"


def _sysroot_env(root: Root) -> dict[str, str]:
    """A sysroot may carry the benchmark shell's environment as `environ` (NAME=value lines)."""
    text = root.read("environ") or ""
    env = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip():
            env[name.strip()] = value
    return env


def _malloc_env(env: Mapping[str, str]) -> dict[str, str]:
    names = (
        "MALLOC_CHECK_",
        "MALLOC_PERTURB_",
        "MALLOC_TRACE",
        "GLIBC_TUNABLES",
        "LD_PRELOAD",
        "MALLOC_CONF",
    )
    return {n: env[n] for n in names if n in env}


def take_snapshot(
    root: str = "/",
    *,
    tools: Iterable[str] | Mapping[str, Sequence[str]] = (),
    workdir: str = ".",
    env: Mapping[str, str] | None = None,
    redact_hostname: bool | None = None,
) -> dict[str, Any]:
    """Describe the host completely (issue 3); JSON-able and already redacted.

    Reads `root`; runs commands only when `root` is the live system. `tools`: executables whose versions to
    record, or a mapping executable → how to ask its version (a workload adapter's declaration)."""
    t0 = time.monotonic()
    r = Root(root)
    raw_env = dict(env) if env is not None else (dict(os.environ) if r.live else _sysroot_env(r))
    family = _os_family(r)
    snap = _freebsd_snapshot(r, workdir) if family == "freebsd" else _linux_snapshot(r, workdir)
    snap["malloc"] = {**snap.get("malloc", {}), "env": _malloc_env(raw_env)}
    snap["toolchain"], snap["tools"] = _tooling(r, tools)
    snap["env"] = redact_env(raw_env)
    if redact_hostname is None:  # lets `fairmark run` honour it without a new option
        redact_hostname = os.environ.get("FAIRMARK_REDACT_HOSTNAME", "").lower() in ("1", "yes", "true")
    hidden = secret_values(raw_env)
    if redact_hostname:
        name = snap["host"].get("hostname")
        if name and len(name) >= 3:
            hidden.add(name)  # also inside uname/kern.version text
        snap["host"]["hostname"] = REDACTED
    snap["os"]["cmdline"] = redact_text(snap["os"]["cmdline"]) if snap["os"].get("cmdline") else None
    head: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "source": {"root": os.path.abspath(root), "live": r.live, "os_family": family},
    }
    head.update(snap)
    head["identity"] = {"host_id": None, "inputs": identity_inputs(head)}
    head["identity"]["host_id"] = host_identity(head)
    head = scrub(head, hidden)  # belt and braces: a secret value anywhere else is hidden too
    head["elapsed_s"] = round(time.monotonic() - t0, 3)
    return head


def _tooling(
    r: Root, tools: Iterable[str] | Mapping[str, Sequence[str]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    if not r.live:
        note = {"probed": False, "why": "sysroot: commands are only run on the live host"}
        return note, {
            name: {"path": None, "version": None, "raw": None, "error": note["why"]} for name in tools
        }
    names = list(tools)
    found = tool_versions([*TOOLCHAIN, *names], tools if isinstance(tools, Mapping) else None)
    return toolchain(found), {n: found[n] for n in names}


def _linux_snapshot(r: Root, workdir: str) -> dict[str, Any]:
    cpu = linux.cpu_section(r)
    os_ = linux.os_section(r)
    return {
        "host": {
            "hostname": socket.gethostname() if r.live else r.line("etc/hostname"),
            "virtualization": linux.virtualization_section(r, cpu),
            "disks": linux.disks_section(r),
            "nics": linux.nics_section(r),
        },
        "cpu": cpu,
        "memory": linux.memory_section(r),
        "os": os_,
        "kernel_config": linux.kernel_config_section(r, os_["release"]),
        "cpufreq": linux.cpufreq_section(r),
        "mitigations": linux.mitigations_section(r),
        "fs": linux.fs_section(r, workdir),
        "load": linux.load_section(r, sample_s=SAMPLE_S, skip_pids={os.getpid()}),
        "thermal": linux.thermal_section(r),
        "malloc": {},
    }


def _freebsd_snapshot(r: Root, workdir: str) -> dict[str, Any]:
    return freebsd.probe(r, workdir=workdir, sample_s=SAMPLE_S)


def volatile_snapshot(root: str = "/", *, sample_s: float = 0.2) -> dict[str, Any]:
    """The cheap parts that change during a run: load, steal, swap activity, governor, THP, SMT, thermal.

    Feed two of them (or the full snapshot's volatile part and one of them) to diagnose_volatile()."""
    r = Root(root)
    if _os_family(r) == "freebsd":
        full = freebsd.probe(r, workdir="/", sample_s=sample_s)
        load, thermal, cpufreq, cpu, mem = (
            full["load"],
            full["thermal"],
            full["cpufreq"],
            full["cpu"],
            full["memory"],
        )
    else:
        load = linux.load_section(r, sample_s=sample_s, skip_pids={os.getpid()})
        thermal, cpufreq = linux.thermal_section(r), linux.cpufreq_section(r)
        cpu, mem = linux.cpu_section(r), linux.memory_section(r)
    return {
        "taken_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load": load,
        "governors": cpufreq["governors"],
        "boost": cpufreq["boost"],
        "thp": mem["thp"],
        "swap_used_kib": mem["swap_used_kib"],
        "smt_active": cpu["smt"]["active"],
        "threads": cpu["threads"],
        "thermal": thermal,
    }


def volatile_part(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The same keys as volatile_snapshot(), cut from a full snapshot: the baseline for diagnose_volatile()."""
    cf, mem, cpu = snapshot.get("cpufreq") or {}, snapshot.get("memory") or {}, snapshot.get("cpu") or {}
    return {
        "taken_at": snapshot.get("taken_at"),
        "load": snapshot.get("load") or {},
        "governors": cf.get("governors"),
        "boost": cf.get("boost"),
        "thp": mem.get("thp"),
        "swap_used_kib": mem.get("swap_used_kib"),
        "smt_active": (cpu.get("smt") or {}).get("active"),
        "threads": cpu.get("threads"),
        "thermal": snapshot.get("thermal") or {},
    }


def identity_inputs(snap: Mapping[str, Any]) -> dict[str, Any]:
    """What makes a machine the same machine: no clock rates, no bogomips, no hostname."""
    cpu, mem = snap.get("cpu", {}), snap.get("memory", {})
    total = mem.get("total_kib")
    return {
        "os_family": snap.get("source", {}).get("os_family") or snap.get("os", {}).get("kernel"),
        "arch": cpu.get("arch"),
        "cpu_model": cpu.get("model"),
        "sockets": cpu.get("sockets"),
        "cores": cpu.get("cores"),
        "threads": cpu.get("threads"),
        # MemTotal moves by a few MiB between kernels and boots; whole GiB is what identifies the hardware.
        "memory_gib": round(total / (1 << 20)) if total else None,
        "kernel_config_sha256": snap.get("kernel_config", {}).get("sha256"),
    }


def host_identity(snapshot: Mapping[str, Any]) -> str:
    inputs = snapshot.get("identity", {}).get("inputs") or identity_inputs(snapshot)
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    return digest[:16]
