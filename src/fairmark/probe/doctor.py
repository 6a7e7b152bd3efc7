"""The doctor: findings that say what in an environment snapshot invalidates or blurs a benchmark.

Every severity, title, reason and fix comes from rules.py; this module only gathers the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from fairmark.probe import rules as R


@dataclass(frozen=True)
class Finding:
    id: str
    severity: str  # "error" | "warn" | "info"
    title: str
    evidence: str
    why: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def _finding(
    rule_id: str,
    evidence: str,
    *,
    severity: str | None = None,
    fix: str | None = None,
    why: str | None = None,
) -> Finding:
    rule = R.RULES[rule_id]
    return Finding(rule_id, severity or rule.severity, rule.title, evidence, why or rule.why, fix or rule.fix)


def worst_severity(findings: Iterable[Finding]) -> str | None:
    worst = None
    for f in findings:
        if worst is None or R.SEVERITY_ORDER[f.severity] > R.SEVERITY_ORDER[worst]:
            worst = f.severity
    return worst


def _family(snap: Mapping[str, Any]) -> str:
    return (snap.get("source") or {}).get("os_family") or "linux"


# ---- debug kernel ----------------------------------------------------------------------------------------


def _debug_kernel(snap: Mapping[str, Any]) -> list[Finding]:
    kc = snap.get("kernel_config") or {}
    freebsd = _family(snap) == "freebsd"
    table = R.FREEBSD_DEBUG_OPTIONS if freebsd else R.LINUX_DEBUG_OPTIONS
    prefix = "" if freebsd else "CONFIG_"
    found = {**(kc.get("debug_options") or {}), **(kc.get("debug_features") or {})}
    if not found and kc.get("source") is None and not kc.get("witness_boot_warning"):
        ident = (snap.get("os") or {}).get("ident")
        ev = "no kern.conftxt or kern.features" if freebsd else "no /proc/config.gz or /boot/config-<release>"
        return [_finding("debug-kernel-unknown", ev + (f"; kernel ident {ident}" if ident else ""))]
    out = []
    by_sev: dict[str, list[str]] = {"error": [], "warn": [], "info": []}
    for name in found:
        by_sev[table[name].severity].append(name)
    heavy = by_sev["error"] + by_sev["warn"]
    if heavy:
        src = kc.get("source") or "kernel"
        ev = f"{src}: " + ", ".join(f"{prefix}{n}" for n in heavy)
        if kc.get("witness_boot_warning"):
            ev += "; dmesg.boot: 'WITNESS option enabled, expect reduced performance'"
        why = R.RULES["debug-kernel"].why + ". " + "; ".join(f"{n}: {table[n].why}" for n in heavy[:4])
        fix = R.FREEBSD_NODEBUG_FIX if freebsd else R.LINUX_NODEBUG_FIX
        out.append(
            _finding(
                "debug-kernel",
                ev,
                severity=worst_severity([Finding("", table[n].severity, "", "", "", "") for n in heavy]),
                fix=fix,
                why=why,
            )
        )
    if by_sev["info"]:
        ev = ", ".join(f"{prefix}{n}" for n in by_sev["info"])
        why = (
            R.RULES["debug-kernel-cheap"].why
            + ". "
            + "; ".join(f"{n}: {table[n].why}" for n in by_sev["info"])
        )
        out.append(_finding("debug-kernel-cheap", ev, fix="none needed", why=why))
    if freebsd and kc.get("witness_boot_warning") and "WITNESS" not in found:
        out.append(_finding("debug-kernel-witness-dmesg", "dmesg.boot: " + "WITNESS option enabled"))
    return out


def _cmdline(snap: Mapping[str, Any]) -> list[Finding]:
    # words after a lone `--` go to init, not to the kernel
    words = re.split(r"(?:^|\s)--(?:\s|$)", (snap.get("os") or {}).get("cmdline") or "", maxsplit=1)[
        0
    ].split()
    out = []
    for key, opt in R.LINUX_DEBUG_CMDLINE.items():
        hits = [w for w in words if w == key or (w.startswith(key + "=") if "=" not in key else False)]
        if not hits:
            continue
        if opt.severity == "error":
            out.append(_finding("debug-kernel-cmdline", f"kernel command line: {hits[0]}", why=opt.why))
        else:
            rule = "mitigations-off" if key == "mitigations=off" else "cmdline-note"
            out.append(_finding(rule, f"kernel command line: {hits[0]}", severity=opt.severity, why=opt.why))
    return out


# ---- malloc debugging ------------------------------------------------------------------------------------


def _glibc_malloc_problems(env: Mapping[str, str]) -> dict[str, str]:
    """Variable name -> what in it enables debugging."""
    out = {}
    for name in R.GLIBC_MALLOC_ENV:
        if name in env and str(env[name]).strip() not in ("", "0"):
            out[name] = f"{name}={env[name]}"
    tunables = str(env.get("GLIBC_TUNABLES", ""))
    bad = [
        t
        for t in re.split(r"[:]", tunables)
        if t.split("=")[0] in R.GLIBC_TUNABLE_DEBUG and t.partition("=")[2] not in ("", "0")
    ]
    if bad:
        out["GLIBC_TUNABLES"] = "GLIBC_TUNABLES=" + ":".join(bad)
    preload = str(env.get("LD_PRELOAD", ""))
    libs = [p for p in re.split(r"[\s:]+", preload) if any(d in p for d in R.DEBUG_PRELOADS)]
    if libs:
        out["LD_PRELOAD"] = "LD_PRELOAD=" + " ".join(libs)
    return out


def _preload(snap: Mapping[str, Any], intended_env: Mapping[str, str]) -> list[Finding]:
    """A preloaded library that is not a debugging one still changes what runs (e.g. another malloc)."""
    preload = str(((snap.get("malloc") or {}).get("env") or {}).get("LD_PRELOAD", "")).strip()
    if not preload or "LD_PRELOAD" in intended_env or _glibc_malloc_problems({"LD_PRELOAD": preload}):
        return []
    return [_finding("ld-preload", f"LD_PRELOAD={preload}")]


def jemalloc_debug_opts(conf: str | None) -> list[str]:
    """Options of a jemalloc conf string (`junk:true,abort:false`) that enable debugging."""
    out = []
    for item in re.split(r"[,\s]+", conf or ""):
        key, _, value = item.partition(":")
        on = value.lower() not in ("false", "0", "") or (key == "junk" and value == "")
        if key in R.JEMALLOC_DEBUG_OPTS and on:
            out.append(item)
    return out


def _malloc(snap: Mapping[str, Any], intended_env: Mapping[str, str]) -> list[Finding]:
    malloc = snap.get("malloc") or {}
    env = malloc.get("env") or {}
    out = []
    problems = _glibc_malloc_problems(env)
    conf_env = jemalloc_debug_opts(env.get("MALLOC_CONF"))
    if conf_env:
        problems["MALLOC_CONF"] = "MALLOC_CONF=" + ",".join(conf_env)
    fix = R.FREEBSD_MALLOC_FIX if _family(snap) == "freebsd" else R.GLIBC_MALLOC_FIX
    for name, evidence in problems.items():
        if name in intended_env:
            continue  # reported below as an intended difference
        out.append(_finding("malloc-debug", f"environment: {evidence}", fix=fix))
    for name, value in intended_env.items():
        if _glibc_malloc_problems({name: value}) or (name == "MALLOC_CONF" and jemalloc_debug_opts(value)):
            out.append(_finding("malloc-debug-intended", f"variant sets {name}={value}"))
    link = malloc.get("malloc_conf_link")
    link_bad = jemalloc_debug_opts(link)
    if link_bad:
        out.append(_finding("malloc-debug", f"/etc/malloc.conf -> {link}", fix=R.FREEBSD_MALLOC_FIX))
    elif malloc.get("malloc_production") is False and "junk:false" not in (link or "") and not conf_env:
        out.append(
            _finding(
                "freebsd-malloc-default-debug",
                f"{(snap.get('os') or {}).get('release')}, /etc/malloc.conf -> {link or '(none)'}",
            )
        )
    return out


# ---- noise -----------------------------------------------------------------------------------------------


def _cpufreq(snap: Mapping[str, Any]) -> list[Finding]:
    cf = snap.get("cpufreq") or {}
    if not cf.get("available"):
        virt = ((snap.get("host") or {}).get("virtualization") or {}).get("hypervisor")
        return [
            _finding("governor-unknown", "no cpufreq driver" + (f" (virtualized: {virt})" if virt else ""))
        ]
    out = []
    govs = cf.get("governors") or []
    if govs and govs != ["performance"]:
        out.append(_finding("governor", "governor: " + ", ".join(govs)))
    limits = {
        (c.get("governor"), c.get("min_khz"), c.get("max_khz"), c.get("epp")) for c in cf.get("per_cpu", [])
    }
    if len(limits) > 1:
        out.append(
            _finding("governor-mixed", f"{len(limits)} different governor/min/max/EPP settings across CPUs")
        )
    if cf.get("boost"):
        out.append(_finding("boost", "cpufreq boost = 1"))
    return out


def _cpu(snap: Mapping[str, Any]) -> list[Finding]:
    cpu = snap.get("cpu") or {}
    out = []
    if (cpu.get("smt") or {}).get("active"):
        out.append(_finding("smt", f"SMT active ({cpu.get('threads')} threads on {cpu.get('cores')} cores)"))
    virt = (snap.get("host") or {}).get("virtualization") or {}
    if virt.get("hypervisor"):
        out.append(
            _finding("virtualized", f"hypervisor: {virt['hypervisor']} ({virt.get('hypervisor_evidence')})")
        )
    if virt.get("container"):
        out.append(
            _finding("container", f"container: {virt['container']} ({virt.get('container_evidence')})")
        )
    return out


def _load(snap: Mapping[str, Any]) -> list[Finding]:
    load = snap.get("load") or {}
    threads = (snap.get("cpu") or {}).get("threads") or 1
    out = []
    la = load.get("loadavg")
    if la and la[0] > R.LOAD_PER_CPU_WARN * threads:
        out.append(_finding("load", f"load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} on {threads} CPUs"))
    busy = [p for p in load.get("busy_processes") or [] if p["cpu_pct"] >= R.BUSY_PROCESS_CPU_PCT]
    if busy:
        ev = ", ".join(f"{p['comm']} (pid {p['pid']}) {p['cpu_pct']:.0f}%" for p in busy[:5])
        out.append(_finding("busy-process", f"during a {load.get('sample_s')} s sample: {ev}"))
    sample, boot = load.get("steal_pct_sample"), load.get("steal_pct_since_boot")
    if (sample or 0) >= R.STEAL_PCT_NOTE or (boot or 0) >= R.STEAL_PCT_NOTE:
        # Any steal shows a shared host; only a noticeable share is worth a warning.
        big = (sample or 0) >= R.STEAL_PCT_WARN or (boot or 0) >= R.STEAL_PCT_WARN
        during = f"{_pct(sample)} during the {load.get('sample_s')} s sample, " if sample is not None else ""
        out.append(
            _finding(
                "steal",
                f"steal {during}{_pct(boot)} since boot",
                severity=None if big else "info",
            )
        )
    stalled = {
        k.removesuffix("_some_avg10"): v
        for k, v in (load.get("pressure") or {}).items()
        if k.endswith("_some_avg10") and v is not None and v >= R.PRESSURE_SOME_AVG10_WARN
    }
    if stalled:
        ev = ", ".join(f"{k} some avg10={v:.1f}%" for k, v in stalled.items())
        out.append(_finding("pressure", f"/proc/pressure: {ev}"))
    if (load.get("swap_in_pages") or 0) + (load.get("swap_out_pages") or 0) > 0:
        out.append(
            _finding(
                "swap-activity",
                f"{load['swap_in_pages']} pages in, {load['swap_out_pages']} out during the sample",
            )
        )
    return out


def _pct(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.2f}%" if v < 1 else f"{v:.1f}%"


def _memory(snap: Mapping[str, Any]) -> list[Finding]:
    mem = snap.get("memory") or {}
    out = []
    if mem.get("thp") == "always":
        out.append(_finding("thp-always", "transparent_hugepage/enabled = always"))
    if (mem.get("swap_used_kib") or 0) > 0:
        out.append(_finding("swap-used", f"{mem['swap_used_kib']} KiB of swap in use"))
    if mem.get("aslr") == "off":
        out.append(_finding("aslr-off", "randomize_va_space = 0" if _family(snap) == "linux" else "aslr off"))
    return out


def _thermal_clock(snap: Mapping[str, Any]) -> list[Finding]:
    out = []
    th = snap.get("thermal") or {}
    if th.get("throttled"):
        out.append(
            _finding(
                "thermal",
                "throttle counts: " + ", ".join(f"{k}={v}" for k, v in th["throttle_counts"].items() if v),
            )
        )
    osd = snap.get("os") or {}
    cs = osd.get("clocksource")
    arch = (snap.get("cpu") or {}).get("arch") or ""
    # Only x86 has the TSC; arm64's arch_sys_counter is already the cheap one.
    if cs and arch in ("x86_64", "amd64", "i386", "i686") and not cs.lower().startswith("tsc"):
        out.append(
            _finding(
                "clocksource",
                f"clock source: {cs} (available: "
                f"{' '.join(osd.get('available_clocksources') or []) or 'unknown'})",
            )
        )
    mit = snap.get("mitigations") or {}
    off = [k for k, v in mit.items() if str(v).startswith("Vulnerable")]
    if _family(snap) == "freebsd" and str(mit.get("vm.pmap.pti", "")).strip() == "0":
        off.append("vm.pmap.pti=0")
    if off and not any(f.id == "mitigations-off" for f in out):
        out.append(_finding("mitigations-off", "vulnerable (unmitigated): " + ", ".join(sorted(off))))
    return out


# ---- workloads: test size and working directory ----------------------------------------------------------


def _workloads(snap: Mapping[str, Any], workloads: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Test size and working-directory checks for each workload that claims to measure the disk."""
    out: list[Finding] = []
    for w in workloads:
        if "disk" in (w.get("measures") or []):
            out += _test_size(w, snap)
            out += _workdir_fs(w, snap)
    return out


def _test_size(w: Mapping[str, Any], snap: Mapping[str, Any]) -> list[Finding]:
    """Seed 003: a file-system data set under 2 × RAM on a disk file system measures the page cache, not the
    disk — refused (error), unless it bypasses the cache (O_DIRECT), lives in memory anyway (tmpfs: the memory
    file system is what is tested), or the plan says the cache is the point (its reason is kept as a note)."""
    try:
        size = float(w["data_size_bytes"])
    except (KeyError, TypeError, ValueError):
        return []  # no declared size (or not a number): nothing to judge
    total_kib = (snap.get("memory") or {}).get("total_kib")
    if not total_kib or w.get("direct") or w.get("direct_io"):
        return []  # O_DIRECT bypasses the page cache, so RAM size does not matter
    ram = total_kib * 1024
    if size >= R.TEST_SIZE_RAM_FACTOR * ram:
        return []
    fs = snap.get("fs") or {}
    directory = w.get("directory")
    wfs = _fs_of(str(directory), snap) if directory and directory != fs.get("workdir") else fs
    if wfs.get("memory_fs"):
        return []
    evidence = (
        f"workload {w.get('name', '?')}: data set {_gib(size)} vs RAM {_gib(ram)} on "
        f"{wfs.get('fstype') or 'a disk file system'} (needs >= {R.TEST_SIZE_RAM_FACTOR:g}x RAM)"
    )
    if w.get("cache_reason"):
        return [_finding("test-size", f"{evidence}; allowed because: {w['cache_reason']}", severity="info")]
    return [_finding("test-size", evidence, severity="error")]


def _workdir_fs(w: Mapping[str, Any], snap: Mapping[str, Any]) -> list[Finding]:
    fs = snap.get("fs") or {}
    directory = w.get("directory")
    wfs = _fs_of(str(directory), snap) if directory and directory != fs.get("workdir") else fs
    where = f"workload {w.get('name', '?')}: {wfs.get('workdir')} on {wfs.get('fstype')}"
    out = []
    if wfs.get("memory_fs"):
        out.append(_finding("workdir-tmpfs", where))
    if wfs.get("network_fs"):
        out.append(_finding("workdir-netfs", where))
    return out


def _fs_of(directory: str, snap: Mapping[str, Any]) -> dict[str, Any]:
    """The file system of another directory: probe the same root (live or sysroot) the snapshot came from."""
    from fairmark.probe import freebsd, linux
    from fairmark.probe._io import Root

    root = Root((snap.get("source") or {}).get("root") or "/")
    if _family(snap) == "freebsd":
        return freebsd._fs(freebsd.Sources.from_root(root), directory)
    return linux.fs_section(root, directory)


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB"


NOTABLE_MOUNT_OPTIONS = {
    "sync",
    "async",
    "noatime",
    "soft-updates",
    "journaled soft-updates",
    "nobarrier",
    "data=writeback",
    "dirsync",
}


def _mount_options(snap: Mapping[str, Any]) -> list[Finding]:
    opts = set((snap.get("fs") or {}).get("options") or [])
    notable = sorted(opts & NOTABLE_MOUNT_OPTIONS)
    if notable:
        fs = snap["fs"]
        return [_finding("mount-sync", f"{fs.get('mount_point')} ({fs.get('fstype')}): {', '.join(notable)}")]
    return []


CHECKS: tuple[Callable[..., list[Finding]], ...] = (
    _debug_kernel,
    _cmdline,
    _cpufreq,
    _cpu,
    _load,
    _memory,
    _thermal_clock,
    _mount_options,
)


def _localise(findings: list[Finding], family: str) -> list[Finding]:
    """Give FreeBSD hosts the FreeBSD wording of fixes whose default text is Linux-specific."""
    if family != "freebsd":
        return findings
    out = []
    for f in findings:
        if f.id in R.FREEBSD_FIXES and f.fix == R.RULES[f.id].fix:
            f = replace(f, fix=R.FREEBSD_FIXES[f.id])
        out.append(f)
    return out


def diagnose(
    snapshot: Mapping[str, Any],
    *,
    intended_env: Mapping[str, str] | None = None,
    workloads: Sequence[Mapping[str, Any]] = (),
) -> list[Finding]:
    """All findings, most severe first. `intended_env`: variables a variant sets on purpose (not findings)."""
    findings: list[Finding] = []
    for check in CHECKS:
        findings += check(snapshot)
    findings += _malloc(snapshot, intended_env or {}) + _preload(snapshot, intended_env or {})
    findings += _workloads(snapshot, workloads)
    findings.sort(key=lambda f: -R.SEVERITY_ORDER[f.severity])
    return _localise(findings, _family(snapshot))


def diagnose_volatile(current: Mapping[str, Any], baseline: Mapping[str, Any] | None = None) -> list[Finding]:
    """Findings from a volatile_snapshot() taken between rounds: noise now, and drift since `baseline` (the
    volatile part of the snapshot before the run, or the previous volatile snapshot)."""
    pseudo = {
        "load": current.get("load") or {},
        "thermal": current.get("thermal") or {},
        "cpu": {"threads": current.get("threads")},
    }
    findings = _load(pseudo) + [f for f in _thermal_clock(pseudo) if f.id == "thermal"]
    if baseline:
        for key in ("governors", "boost", "thp", "smt_active"):
            if key in baseline and key in current and baseline[key] != current[key]:
                findings.append(_finding("env-drift", f"{key}: {baseline[key]!r} -> {current[key]!r}"))
        grew = (current.get("swap_used_kib") or 0) - (baseline.get("swap_used_kib") or 0)
        if grew > 0:
            findings.append(_finding("env-drift", f"swap in use grew by {grew} KiB", severity="warn"))
    findings.sort(key=lambda f: -R.SEVERITY_ORDER[f.severity])
    return findings
