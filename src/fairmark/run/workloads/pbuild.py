"""pbuild — seed 001's poudriere run at the scale of this machine: N isolated builders take packages from one
queue and build each from real sources in a fresh builder (Linux: `unshare` mount/PID/network namespaces and a
private tmpfs; FreeBSD: a jail on a tmpfs), killing whatever the build left running, as poudriere does. The
builds are autoconf projects: configure scripts spawn thousands of short processes (the process-creation load
behind seed 001's `proctree` lock contention).

Sources: the GNU binutils tarball Debian ships in binutils-source (/usr/src/binutils/binutils-*.tar.xz),
extracted once into fairmark's cache; its independent autoconf subprojects are the packages (zlib, intl,
libiberty, libsframe, and bfd, which takes several times longer: a long-tail package). `source` may instead name
a directory whose subdirectories with a `configure` script are the packages.

Per trial: packages per hour, per-package build times (p50, p95, max), the idle tail (seed 001: the last port
finished 90 minutes after the second-last), the builders' system-time share, the tasks the builds created
and their rate, and the leftover processes killed. Sweep `builders` for the curve over N; `--profile locks`
adds the kernel's lock contention. The trial itself is run/workloads/_pbuild.py.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

from fairmark.errors import PlanError
from fairmark.run.workloads import tools
from fairmark.run.workloads.base import (
    Adapter,
    MetricSpec,
    ParamSpec,
    ParseError,
    RawOutput,
    SetupError,
    TrialContext,
    WorkloadContext,
)

TARBALLS = "/usr/src/binutils/binutils-*.tar.xz"
# binutils' subprojects that configure and build on their own, with the sibling directories they read.
BINUTILS = {
    "zlib": ("zlib",),
    "intl": ("intl",),
    "libiberty": ("libiberty",),
    "libsframe": ("libsframe", "libctf"),
    "bfd": ("bfd",),
}
SHARED = ("config", "include")  # and every file at the top of the tree (config.sub, install-sh, ltmain.sh …)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
_PKG = re.compile(
    r"^pkg seq=(\d+) name=(\S+) builder=(\d+) start_s=([\d.]+) end_s=([\d.]+) (.*)$", re.MULTILINE
)
_END = re.compile(r"^# end elapsed_s=([\d.]+)$", re.MULTILINE)


def find_tarball() -> str | None:
    return tools.newest(TARBALLS)


class Pbuild(Adapter):
    name = "pbuild"
    summary = (
        "poudriere-like: N isolated builders (namespaces/jails on tmpfs) building a queue of real packages"
    )
    packages = tools.packages(
        ("binutils-source", "make", "gcc", "libc6-dev", "xz-utils", "util-linux"), (), ("gmake",)
    )
    executables = ("make", "cc", "tar")
    params = (
        ParamSpec("builders", 1, "builders", "isolated builders working at once (sweep it: 1, 2, 4 …)"),
        ParamSpec(
            "queue",
            ["zlib", "intl", "libsframe", "libiberty", "zlib", "intl", "libsframe", "libiberty"],
            "",
            f"packages to build, in order (repeats allowed); binutils: {', '.join(BINUTILS)}",
        ),
        ParamSpec("jobs", 1, "jobs", "make -j inside each builder"),
        ParamSpec("tmpfs_size", "1G", "bytes", "size limit of each builder's tmpfs"),
        ParamSpec("source", "", "", f"a directory of packages (default: binutils, {TARBALLS})"),
    )
    metrics = (
        MetricSpec("packages_per_hour", "pkg/h", "higher", "packages built per hour of wall time"),
        MetricSpec("build_p50_s", "s", "lower", "median time to build one package in its builder"),
        MetricSpec("build_p95_s", "s", "lower", "95th percentile of the per-package build times"),
        MetricSpec("build_max_s", "s", "lower", "slowest package"),
        MetricSpec("idle_tail_s", "s", "lower", "from the first builder finding the queue empty to the end"),
        MetricSpec("last_gap_s", "s", "lower", "last package's finish minus the second-last's (seed 001)"),
        MetricSpec("builder_idle_pct", "%", "lower", "share of builder time spent with nothing to build"),
        MetricSpec("sys_share_pct", "%", "lower", "system share of the builds' CPU time (wait4 rusage)"),
        MetricSpec("forks_per_s", "tasks/s", "higher", "tasks created in the builders per second of wall"),
        MetricSpec("forks", "tasks", "lower", "tasks the builds created (PID namespace counter; Linux)"),
        MetricSpec("leftover_killed", "procs", "lower", "processes still alive after a package, killed"),
    )
    measures = ("cpu", "kernel", "memory")

    def missing_executables(self) -> list[str]:
        missing = super().missing_executables()
        isolation = ("jail", "pgrep", "gmake") if sys.platform.startswith("freebsd") else ("unshare",)
        missing += [exe for exe in isolation if shutil.which(exe) is None]
        return missing if find_tarball() else [*missing, TARBALLS]

    def check(self, params: dict[str, Any]) -> None:
        tools.require_positive_ints(self.name, params, ("builders", "jobs"))
        tools.parse_size(params["tmpfs_size"], "pbuild tmpfs_size")
        queue, source = params["queue"], params["source"]
        if (
            not isinstance(queue, list)
            or not queue
            or not all(isinstance(p, str) and _NAME.fullmatch(p) for p in queue)
        ):
            raise PlanError(f"pbuild: queue must be a list of package names, got {queue!r}", key="queue")
        if not source and (unknown := sorted(set(queue) - set(BINUTILS))):
            raise PlanError(
                f"pbuild: no package {', '.join(unknown)} in binutils; it has {', '.join(BINUTILS)}",
                key="queue",
            )
        if source and not Path(source).is_dir():
            raise PlanError(f"pbuild: source {source!r} is not a directory of packages", key="source")

    def setup(self, ctx: WorkloadContext) -> None:
        if not ctx.is_root:
            raise SetupError("pbuild: needs root (namespaces and tmpfs mounts, or jails)")
        tree, items = self._tree(ctx)
        ctx.state |= {"tree": str(tree), "items": items, "builders_dir": str(ctx.scratch / "builders")}

    def command(self, ctx: TrialContext) -> list[str]:
        logs, repo = ctx.trial_dir / "logs", ctx.trial_dir / "repo"
        logs.mkdir()
        repo.mkdir()
        s, p = ctx.state, ctx.params
        for b in range(p["builders"]):  # each builder's tmpfs is mounted on its own empty directory
            (Path(s["builders_dir"]) / f"b{b}").mkdir(parents=True, exist_ok=True)
        cfg = {
            "builders": p["builders"],
            "queue": p["queue"],
            "jobs": p["jobs"],
            "tmpfs": p["tmpfs_size"],
            "tree": s["tree"],
            "items": s["items"],
            "builders_dir": s["builders_dir"],
            "logs_dir": str(logs),
            "repo_dir": str(repo),
        }
        (path := ctx.trial_dir / "pbuild.json").write_text(json.dumps(cfg))
        return [sys.executable, "-m", "fairmark.run.workloads._pbuild", str(path)]

    def parse(self, raw: RawOutput) -> dict[str, float]:
        return parse_pbuild(raw.stdout)

    def _tree(self, ctx: WorkloadContext) -> tuple[Path, dict[str, list[str]]]:
        """The source tree and, per package, what its builder copies in."""
        given = ctx.params["source"]
        if given:
            tree = Path(given).resolve()
            bad = sorted(p for p in set(ctx.params["queue"]) if not (tree / p / "configure").is_file())
            if bad:
                raise SetupError(f"pbuild: {', '.join(bad)} in the queue but no {tree}/NAME/configure")
            return tree, {p: [p] for p in ctx.params["queue"]}
        tarball = find_tarball()
        if tarball is None:
            raise SetupError(f"pbuild: no sources: install binutils-source (Debian), {TARBALLS}")
        tree = tools.extract_once(Path(tarball), ctx.cache)
        top = sorted(f.name for f in tree.iterdir() if f.is_file())
        return tree, {p: [*top, *SHARED, *BINUTILS[p]] for p in ctx.params["queue"]}


def parse_pbuild(out: str) -> dict[str, float]:
    """The driver's `pkg` lines → the run's figures. Every package must have built: a failed package (its
    log tail is in the output) fails the trial, since a trial that built less is not the same work."""
    end = _END.search(out)
    if end is None:
        raise ParseError("pbuild: the build run did not finish (no '# end' line)")
    pkgs = [
        (m[2], int(m[3]), float(m[4]), float(m[5]), dict(kv.split("=", 1) for kv in m[6].split()))
        for m in _PKG.finditer(out)
    ]
    header = re.search(r"^# pbuild builders=(\d+) packages=(\d+)", out, re.MULTILINE)
    if header is None or not pkgs or len(pkgs) != int(header[2]):
        raise ParseError(f"pbuild: {len(pkgs)} package result(s), expected {header[2] if header else '?'}")
    if failed := [
        f"{name} (status {kv.get('status')})" for name, _, _, _, kv in pkgs if kv.get("status") != "0"
    ]:
        raise ParseError(f"pbuild: package build(s) failed: {', '.join(failed)}")
    elapsed, builders = float(end[1]), int(header[1])
    times = sorted(e - s for _, _, s, e, _ in pkgs)
    ends = sorted(e for _, _, _, e, _ in pkgs)
    last_by_builder = [max(e for _, b, _, e, _ in pkgs if b == k) for k in {b for _, b, _, _, _ in pkgs}]
    first_idle = min(last_by_builder) if len(last_by_builder) == builders else 0.0  # a builder never got one
    user = sum(float(kv["user_s"]) for *_, kv in pkgs)
    system = sum(float(kv["sys_s"]) for *_, kv in pkgs)
    out_: dict[str, float] = {
        "packages_per_hour": len(pkgs) / elapsed * 3600,
        "build_p50_s": statistics.median(times),
        "build_p95_s": _quantile(times, 0.95),
        "build_max_s": times[-1],
        "idle_tail_s": max(0.0, ends[-1] - first_idle),
        "last_gap_s": ends[-1] - ends[-2] if len(ends) > 1 else 0.0,
        "builder_idle_pct": 100 * max(0.0, 1 - sum(times) / (builders * elapsed)),
        "sys_share_pct": 100 * system / (user + system) if user + system > 0 else 0.0,
        "leftover_killed": float(sum(int(kv.get("leftover", 0)) for *_, kv in pkgs)),
    }
    if all("forks" in kv for *_, kv in pkgs):
        forks = sum(int(kv["forks"]) for *_, kv in pkgs)
        out_ |= {"forks": float(forks), "forks_per_s": forks / elapsed}
    return out_


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default) of an already sorted list."""
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)
