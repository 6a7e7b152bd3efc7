"""kbuild — seed 000's buildkernel on Linux: build the distro's own kernel source (Debian: linux-source-*),
which reads thousands of small files, forks compilers and writes objects — userspace-heavy work that still
stresses the kernel. The metric is the trial's wall time (user/sys come from the runner's rusage).

The source tarball is extracted once into fairmark's cache and never written to; each run builds out of tree
(`make O=…`) in the workload's scratch directory. setup() configures (tinyconfig or defconfig), prime() does
the priming build, and before_trial() removes the objects of the targets so each trial compiles the same set.
The default targets (kernel/ mm/) keep a trial to about a minute on 2 cores; `targets = ["vmlinux"]` is the
full build for real hardware."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
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

CONFIGS = ("tinyconfig", "defconfig", "allnoconfig")
TARBALLS = "/usr/src/linux-source-*.tar.xz"
_MAKE_ERROR = re.compile(r"^(?:g?make(?:\[\d+\])?: \*\*\*.*|.*: error: .*)$", re.MULTILINE)
_COMPILED = re.compile(r"^\s+(?:CC|AS|LD|AR)\s+\S", re.MULTILINE)


def find_tarball() -> str | None:
    return tools.newest(TARBALLS)


class Kbuild(Adapter):
    name = "kbuild"
    summary = "build (part of) the distro's Linux kernel source: wall seconds per build"
    packages = tools.packages(
        ("linux-source-6.1", "make", "gcc", "bc", "flex", "bison", "libelf-dev", "libssl-dev", "xz-utils"),
        ("make", "gcc", "bc", "flex", "bison", "elfutils-libelf-devel", "openssl-devel", "xz"),
        (),
    )
    executables = ("make", "gcc", "bc", "flex", "bison", "tar", "xz")
    params = (
        ParamSpec("config", "tinyconfig", "", f"kernel configuration target: {', '.join(CONFIGS)}"),
        ParamSpec("jobs", 0, "jobs", "make -j (0 = one per online CPU)"),
        ParamSpec(
            "targets", ["kernel/", "mm/"], "", "make targets: directories (kernel/, mm/, fs/) or vmlinux"
        ),
        ParamSpec("source", "", "", f"kernel source: a .tar.xz or a directory (default: {TARBALLS})"),
    )
    metrics = (
        MetricSpec("wall_s", "s", "lower", "build wall-clock time"),
        MetricSpec("user_s", "s", "lower", "user CPU of the whole build tree"),
        MetricSpec("sys_s", "s", "lower", "system CPU of the whole build tree"),
    )
    measures = ("cpu", "kernel", "disk")

    def missing_executables(self) -> list[str]:
        missing = super().missing_executables()
        return missing if find_tarball() else [*missing, TARBALLS]

    def check(self, params: dict[str, Any]) -> None:
        if not sys.platform.startswith("linux"):
            raise PlanError(
                "kbuild builds Linux; on FreeBSD use a command workload (make buildkernel)", key="tool"
            )
        tools.require_choice(self.name, params, "config", CONFIGS)
        jobs = params["jobs"]
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0:
            raise PlanError(f"kbuild: jobs must be a whole number ≥ 0, got {jobs!r}", key="jobs")
        targets = params["targets"]
        if not isinstance(targets, list) or not targets or not all(_safe_target(t) for t in targets):
            raise PlanError(
                f"kbuild: targets must be a list like ['kernel/', 'mm/'], got {targets!r}", key="targets"
            )
        if params["source"] and not Path(params["source"]).exists():
            raise PlanError(f"kbuild: source {params['source']!r} does not exist", key="source")

    # -- life cycle ----------------------------------------------------------------------------------------
    def setup(self, ctx: WorkloadContext) -> None:
        src = self._source(ctx)
        build = ctx.scratch / "build"
        build.mkdir(exist_ok=True)
        ctx.state |= {"src": src, "build": build}
        self._make(ctx, [ctx.params["config"]], "configure")

    def prime(self, ctx: WorkloadContext) -> None:
        # The priming build also generates headers and host tools (scripts/) that trials then reuse.
        self._make(ctx, [f"-j{_jobs(ctx.params)}", *ctx.params["targets"]], "priming build")

    def before_trial(self, ctx: TrialContext) -> None:
        build: Path = ctx.state["build"]
        for target in ctx.params["targets"]:
            if target.endswith("/"):
                shutil.rmtree(build / target, ignore_errors=True)  # `make clean` of just this directory
            elif target.endswith(".o"):
                (build / target).unlink(missing_ok=True)
            else:
                self._make(ctx.workload, ["clean"], "make clean")

    def command(self, ctx: TrialContext) -> list[str]:
        s, p = ctx.state, ctx.params
        argv = ["make", "-C", str(s["src"]), f"O={s['build']}", *_arch(), *p["targets"]]
        if p["jobs"]:
            return [*argv, f"-j{p['jobs']}"]
        # jobs = 0: one per CPU the trial may use, counted inside the trial, so a `cpus` sweep (which pins the
        # trial's process tree) also sets -j.
        return ["/bin/sh", "-c", 'exec "$@" -j"$(nproc)"', "sh", *argv]

    def parse(self, raw: RawOutput) -> dict[str, float]:
        return parse_build(raw.stdout, raw.stderr)

    # -- helpers -------------------------------------------------------------------------------------------
    def _source(self, ctx: WorkloadContext) -> Path:
        given = ctx.params["source"]
        if given and Path(given).is_dir():
            return Path(given)
        tarball = given or find_tarball()
        if not tarball:
            raise SetupError(
                f"no kernel source: install linux-source (Debian) or set source = '…' ({TARBALLS})"
            )
        return tools.extract_once(Path(tarball), ctx.cache)

    def _make(self, ctx: WorkloadContext, args: list[str], what: str) -> None:
        argv = ["make", "-C", str(ctx.state["src"]), f"O={ctx.state['build']}", *_arch(), *args]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=os.environ | ctx.env)
        if proc.returncode != 0:
            raise SetupError(
                f"kbuild {what} failed ({' '.join(argv)}): {(proc.stderr or proc.stdout)[-1500:]}"
            )


def _arch() -> list[str]:
    # On x86 hosts Kbuild's default ARCH is "x86", where tinyconfig turns 64BIT off and compiles a 32-bit
    # kernel; ARCH=x86_64 builds for the machine the benchmark runs on.
    return ["ARCH=x86_64"] if platform.machine() == "x86_64" else []


def _jobs(params: dict[str, Any]) -> int:
    return params["jobs"] or len(os.sched_getaffinity(0))


def _safe_target(target: Any) -> bool:
    return (
        isinstance(target, str)
        and bool(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_./-]*", target))
        and ".." not in target
    )


def parse_build(stdout: str, stderr: str) -> dict[str, float]:
    """The build's time is the metric (measured by the runner); parse only decides whether it is a real build:
    no make/compiler error, and something was actually compiled (an up-to-date tree builds in no time)."""
    error = _MAKE_ERROR.search(stderr) or _MAKE_ERROR.search(stdout)
    if error:
        raise ParseError(f"the kernel build reported an error: {error[0].strip()}")
    if not _COMPILED.search(stdout):
        raise ParseError(
            "the kernel build compiled nothing (tree already up to date?): its time is not a build"
        )
    return {}
