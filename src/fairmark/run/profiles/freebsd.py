"""FreeBSD profilers: DTrace profile-997 (CPU; pmcstat's process-mode sampling where DTrace cannot run), lockstat
(locks), truss -c (syscalls).

Each wraps the trial's command and writes to a file in the trial directory; the parsers are pure and tested on
fixtures written from the tools' documented output formats (dtrace(1) aggregation of stack()/ustack(),
lockstat(1), truss(1) -c) and, for pmcstat -G, on a real capture (tests/fixtures/h4/profiles/SOURCES.md). DTrace
stacks are folded by inferno's `inferno-collapse-dtrace`, pmcstat's call graphs by `inferno-collapse-pmc` or
FlameGraph's `stackcollapse-pmc.pl`.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fairmark.run.hooks import Artifact, HookContext
from fairmark.run.profiles.base import Profiler, find_tool, is_root
from fairmark.run.profiles.cpu import folded_weight, share_meta

SYSTEM_WIDE = "system-wide"  # the scope of a profile that is not only the workload's

# Stacks of the trial's process tree only (dtrace -c starts it: from its first instruction), and two counts for
# the share: the tree's samples and those of every busy CPU (the idle threads excluded). printa in END prints
# the counts first, on marked lines; the stack aggregation is printed after them, as dtrace does by default.
DTRACE_SCRIPT = (
    'profile-997 /execname != "idle"/ { @busy = count(); } '
    "profile-997 /pid == $target || progenyof($target)/ { @[stack(), ustack()] = count(); @workload = count(); } "
    'END { printa("fairmark-samples workload %@d\\n", @workload); printa("fairmark-samples busy %@d\\n", @busy); }'
)
_SAMPLES = re.compile(r"^fairmark-samples (workload|busy) (\d+)\s*$")


def split_dtrace_samples(text: str) -> tuple[str, dict[str, int]]:
    """The stack aggregation (for the collapser) and the marked sample counts of DTRACE_SCRIPT's output."""
    counts, rest = {"workload": 0, "busy": 0}, []
    for line in text.splitlines():
        if m := _SAMPLES.match(line):
            counts[m.group(1)] = int(m.group(2))
        else:
            rest.append(line)
    return "\n".join(rest) + "\n", counts


def dtrace_command(argv: list[str], out: str) -> list[str]:
    # dtrace -c takes one command string; shlex.join keeps arguments with spaces intact.
    return ["dtrace", "-q", "-x", "ustackframes=100", "-n", DTRACE_SCRIPT, "-o", out, "-c", shlex.join(argv)]


# pmcstat(8): -P samples in process mode (only the command's processes), -d follows the children it starts too;
# "instructions" is one of libpmc's portable event names. -R … -G turns the log into call graphs (callers to
# depth -z), what the collapsers read.
PMC_EVENT = "instructions"
PMC_COLLAPSERS = ("inferno-collapse-pmc", "stackcollapse-pmc.pl")
PMC_SCOPE = "process tree (pmcstat -P -d)"
_PMC_SECTION = re.compile(r"^@ (.*?) \[(\d+) samples\]\s*$")


def pmcstat_command(argv: list[str], out: str, event: str = PMC_EVENT) -> list[str]:
    return ["pmcstat", "-d", "-P", event, "-O", out, *argv]


def pmcstat_graph_command(log: str, graph: str) -> list[str]:
    return ["pmcstat", "-R", log, "-z", "100", "-G", graph]


def pmc_samples(text: str) -> int:
    """Samples in pmcstat -G output: the sum of its sections' `@ EVENT [N samples]` headers."""
    return sum(int(m.group(2)) for line in text.splitlines() if (m := _PMC_SECTION.match(line)))


def hwpmc_problem() -> str | None:
    """Why pmcstat cannot sample here (None: it can): it needs the hwpmc kernel module."""
    try:
        loaded = subprocess.run(["kldstat", "-q", "-m", "hwpmc"], capture_output=True, check=False)
    except OSError:
        return "kldstat not found: not a FreeBSD kernel"
    return (
        None if loaded.returncode == 0 else "the hwpmc kernel module is not loaded: `kldload hwpmc` as root"
    )


def lockstat_command(argv: list[str], out: str) -> list[str]:
    # -C: contention events; -P: sort by total time; -s 0: no stacks (caller only), as seed 001's table.
    return ["lockstat", "-C", "-P", "-s", "0", "-n", "1000000", "-o", out, *argv]


def truss_command(argv: list[str], out: str) -> list[str]:
    return ["truss", "-f", "-c", "-o", out, *argv]


_LOCK_SECTION = re.compile(r"^(.+?): (\d+) events in ([\d.]+) seconds")
_LOCK_ROW = re.compile(r"^\s*(\d+)\s+(\d+)%\s+(\d+)%\s+([\d.]+)\s+(\d+)\s+(\S+)\s+(\S+)\s*$")


def parse_lockstat(text: str) -> list[dict[str, Any]]:
    """lockstat(1) tables → rows: event type, lock, caller, count, average and total wait (ns)."""
    rows, event = [], ""
    for line in text.splitlines():
        if m := _LOCK_SECTION.match(line):
            event = m.group(1)
        elif m := _LOCK_ROW.match(line):
            count, nsec = int(m.group(1)), float(m.group(5))
            rows.append(
                {
                    "type": event,
                    "lock": m.group(6),
                    "caller": m.group(7),
                    "contended": count,
                    "avg_wait_ns": nsec,
                    "total_wait_ns": count * nsec,
                }
            )
    return sorted(rows, key=lambda r: -r["total_wait_ns"])


def parse_truss_c(text: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """truss -c: `syscall seconds calls errors`, a dashed line, then the unnamed total row."""
    rows, total = [], None
    for line in text.splitlines():
        f = line.split()
        if len(f) == 4 and re.fullmatch(r"[\d.]+", f[1]) and f[2].isdigit():
            rows.append({"syscall": f[0], "seconds": float(f[1]), "calls": int(f[2]), "errors": int(f[3])})
        elif len(f) == 3 and all(re.fullmatch(r"[\d.]+", x) for x in f):
            total = {"syscall": "total", "seconds": float(f[0]), "calls": int(f[1]), "errors": int(f[2])}
    return sorted(rows, key=lambda r: -r["seconds"]), total


class WrapProfiler(Profiler):
    """Runs the trial under a tracing command that writes `out` in the trial directory; parses it in stop."""

    tool = ""
    out_name = "profile.out"

    def __init__(self) -> None:
        if find_tool(self.tool) is None:
            self.unavailable = f"{self.tool} not found"
        elif not is_root():
            self.unavailable = f"{self.tool} needs root (DTrace privileges)"

    def build(self, argv: list[str], out: str) -> list[str]:
        raise NotImplementedError

    def artifacts(self, text: str) -> list[Artifact]:
        raise NotImplementedError

    def wrap(self, argv: list[str], ctx: HookContext) -> list[str]:
        return self.build(argv, str(Path(ctx.trial_dir) / self.out_name))

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        out = Path(ctx.trial_dir) / self.out_name
        if not out.exists():
            return [Artifact(self.kind, "error", "text/plain", f"{self.tool} wrote no output")]
        return self.artifacts(out.read_text(errors="replace"))


class DTraceCpuProfile(WrapProfiler):
    name = kind = "profile.cpu"
    tool = "dtrace"
    out_name = "dtrace.stacks"

    def __init__(self) -> None:
        super().__init__()
        self.collapse = find_tool("inferno-collapse-dtrace")
        if self.unavailable is None and self.collapse is None:
            self.unavailable = "inferno-collapse-dtrace not found: `cargo install inferno`"

    def build(self, argv: list[str], out: str) -> list[str]:
        return dtrace_command(argv, out)

    def artifacts(self, text: str) -> list[Artifact]:
        stacks, counts = split_dtrace_samples(text)
        if self.collapse is None:  # unavailable: never started (run/hooks.py)
            return [Artifact(self.kind, "error", "text/plain", str(self.unavailable))]
        proc = subprocess.run([self.collapse], input=stacks, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            return [Artifact(self.kind, "error", "text/plain", proc.stderr[-300:])]
        meta = {
            "event": "profile-997",
            "weight": folded_weight(proc.stdout),
            "scope": "process tree (dtrace -c)",
        }
        meta |= share_meta(counts["workload"], counts["busy"])
        return [
            Artifact(self.kind, "folded", "text/plain", proc.stdout),
            Artifact(self.kind, "meta", "application/json", meta | {"collapser": "inferno-collapse-dtrace"}),
        ]


class PmcstatCpuProfile(WrapProfiler):
    """pmcstat's process-mode sampling of the trial's process tree (-P -d), its log turned into call graphs
    (-R -G) and folded on this machine: only the folded stacks leave it."""

    name = kind = "profile.cpu"
    tool = "pmcstat"
    out_name = "pmcstat.log"
    build = staticmethod(pmcstat_command)

    def __init__(self) -> None:
        super().__init__()
        if self.unavailable and "root" in self.unavailable:
            self.unavailable = "pmcstat needs root (hwpmc)"
        self.collapse = next((path for name in PMC_COLLAPSERS if (path := find_tool(name))), None)
        if self.unavailable is None:
            self.unavailable = hwpmc_problem()
        if self.unavailable is None and self.collapse is None:
            self.unavailable = (
                "no pmcstat -G collapser: inferno-collapse-pmc or FlameGraph's stackcollapse-pmc.pl"
            )

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        log, graph = Path(ctx.trial_dir) / self.out_name, Path(ctx.trial_dir) / "pmcstat.graph"
        if not log.exists():
            return [Artifact(self.kind, "error", "text/plain", "pmcstat wrote no sample log")]
        proc = subprocess.run(
            pmcstat_graph_command(str(log), str(graph)), capture_output=True, text=True, check=False
        )
        text = graph.read_text(errors="replace") if graph.exists() else ""
        log.unlink(missing_ok=True)  # the raw log is large; the folded stacks are what we keep
        graph.unlink(missing_ok=True)
        if proc.returncode != 0 or not text.strip():
            return [Artifact(self.kind, "error", "text/plain", f"pmcstat -R -G: {proc.stderr[-300:]}")]
        return self.artifacts(text)

    def artifacts(self, text: str) -> list[Artifact]:
        assert self.collapse is not None
        proc = subprocess.run([self.collapse], input=text, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            return [Artifact(self.kind, "error", "text/plain", proc.stderr[-300:])]
        meta = {
            "event": PMC_EVENT,
            "weight": folded_weight(proc.stdout),
            "scope": PMC_SCOPE,
            "workload_samples": pmc_samples(text),
            "collapser": Path(self.collapse).name,
        }
        return [
            Artifact(self.kind, "folded", "text/plain", proc.stdout),
            Artifact(self.kind, "meta", "application/json", meta),
        ]


def cpu_profiler() -> Profiler:
    """DTrace where it can run; else pmcstat where it can; else DTrace saying why neither can."""
    dtrace = DTraceCpuProfile()
    if dtrace.unavailable is None:
        return dtrace
    pmc = PmcstatCpuProfile()
    if pmc.unavailable is None:
        return pmc
    dtrace.unavailable = f"{dtrace.unavailable}; pmcstat instead: {pmc.unavailable}"
    return dtrace


class LockstatProfile(WrapProfiler):
    name = kind = "profile.locks"
    tool = "lockstat"
    out_name = "lockstat.txt"
    build = staticmethod(lockstat_command)

    def artifacts(self, text: str) -> list[Artifact]:
        # lockstat has no process filter: it records every lock of the machine while the command runs
        data = {
            "source": "lockstat",
            "scope": SYSTEM_WIDE,
            "rows": parse_lockstat(text),
            "raw": text[-20000:],
        }
        return [Artifact(self.kind, "contention", "application/json", data)]


class TrussProfile(WrapProfiler):
    name = kind = "profile.syscalls"
    tool = "truss"
    out_name = "truss.txt"
    build = staticmethod(truss_command)

    def __init__(self) -> None:
        super().__init__()
        if self.unavailable and "root" in self.unavailable:
            self.unavailable = None  # truss traces one's own processes without privileges

    def artifacts(self, text: str) -> list[Artifact]:
        table, total = parse_truss_c(text)
        if not table:
            return [Artifact(self.kind, "error", "text/plain", "truss -c printed no table")]
        data = {
            "source": "truss -c",
            "scope": "process tree (truss -f)",
            "table": table,
            "total": total,
            "histograms_us": {},
        }
        return [Artifact(self.kind, "summary", "application/json", data)]


FREEBSD_PROFILERS: dict[str, Callable[[], Profiler]] = {
    "cpu": cpu_profiler,
    "locks": LockstatProfile,
    "syscalls": TrussProfile,
}
