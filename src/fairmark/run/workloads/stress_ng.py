"""stress-ng — kernel paths under load: process creation (fork/exec/wait, the poudriere bottleneck of seed
001), pipe create/destroy, context switches, VM. Metrics per stressor from `--metrics-brief --yaml FILE`.

stress-ng's `exec` stressor refuses to run as root, yet exits 0 and leaves the stressor out of the YAML: when
fairmark is root and exec is asked for, stress-ng runs as an unprivileged user in a private world-writable
directory, and a stressor missing from the YAML fails the trial whatever the exit status."""

from __future__ import annotations

import pwd
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from fairmark.errors import PlanError
from fairmark.run.workloads import tools
from fairmark.run.workloads.base import (
    Adapter,
    MetricSpec,
    ParamSpec,
    ParseError,
    RawOutput,
    TrialContext,
    WorkloadContext,
)

# Stressors that exercise the kernel (process, IPC, scheduler, VM, file-system metadata). A curated list keeps
# the metric names declared up front; add a name here to support another stressor.
STRESSORS = (
    "fork",
    "vfork",
    "exec",
    "spawn",
    "clone",
    "pthread",
    "wait",
    "zombie",
    "exit-group",
    "kill",
    "signal",
    "sigsegv",
    "pipe",
    "pipeherd",
    "fifo",
    "switch",
    "yield",
    "futex",
    "mutex",
    "sem",
    "sem-sysv",
    "msg",
    "mq",
    "eventfd",
    "poll",
    "epoll",
    "sock",
    "sockpair",
    "udp",
    "vm",
    "mmap",
    "mmapfork",
    "brk",
    "malloc",
    "madvise",
    "mprotect",
    "mremap",
    "fault",
    "memcpy",
    "tlb-shootdown",
    "open",
    "dentry",
    "dir",
    "link",
    "rename",
    "chmod",
    "fstat",
    "getdent",
    "fallocate",
    "flock",
    "lockf",
    "hdd",
    "io",
    "sync-file",
    "get",
    "getrandom",
    "nop",
    "null",
    "zero",
    "urandom",
    "timer",
    "hrtimers",
    "nanosleep",
    "cpu",
    "matrix",
    "crypt",
    "hash",
    "cache",
    "stream",
    "procfs",
    "sysfs",
    "shm",
    "shm-sysv",
    "session",
    "prctl",
)
REFUSES_ROOT = frozenset({"exec"})


def _metric_key(stressor: str) -> str:
    return stressor.replace("-", "_")


class StressNg(Adapter):
    name = "stress-ng"
    summary = "stress-ng stressors (fork, exec, pipe, switch, vm, …): bogo-ops/s real and per usr+sys second"
    packages = tools.packages(("stress-ng",), ("stress-ng",), ("stress-ng",))
    executables = ("stress-ng",)
    params = (
        ParamSpec("stressors", ["fork", "exec", "pipe", "switch"], "", "stressors run together in one trial"),
        ParamSpec("instances", 1, "workers", "workers per stressor (0 = one per online CPU)"),
        ParamSpec("duration_s", 5, "s", "stress-ng --timeout"),
        ParamSpec("vm_bytes", "64M", "bytes", "--vm-bytes per vm worker"),
        ParamSpec("user", "nobody", "", "unprivileged user for stressors that refuse root (exec)"),
    )
    metrics = (
        MetricSpec("bogo_ops_s_real", "ops/s", "higher", "first stressor: bogo-ops per wall-clock second"),
        MetricSpec(
            "bogo_ops_s_usr_sys", "ops/s", "higher", "first stressor: bogo-ops per CPU (usr+sys) second"
        ),
        *(
            MetricSpec(f"bogo_ops_s_{kind}_{_metric_key(s)}", "ops/s", "higher", f"{s}: bogo-ops/s ({kind})")
            for s in STRESSORS
            for kind in ("real", "usr_sys")
        ),
    )
    measures = ("kernel", "cpu")

    def check(self, params: dict[str, Any]) -> None:
        stressors = params["stressors"]
        if not isinstance(stressors, list) or not stressors or not all(isinstance(s, str) for s in stressors):
            raise PlanError("stress-ng: stressors must be a non-empty list of names, e.g. ['fork', 'pipe']")
        unknown = [s for s in stressors if s not in STRESSORS]
        if unknown:
            raise PlanError(
                f"stress-ng: stressor(s) {', '.join(unknown)} not supported; "
                f"choose from {', '.join(STRESSORS)}",
                key="stressors",
            )
        if len(set(stressors)) != len(stressors):
            raise PlanError(f"stress-ng: stressors repeated in {stressors}", key="stressors")
        tools.require_positive_ints(self.name, params, ("duration_s",))
        if not isinstance(params["instances"], int) or params["instances"] < 0:
            raise PlanError(f"stress-ng: instances must be ≥ 0, got {params['instances']!r}", key="instances")
        tools.parse_size(params["vm_bytes"], "vm_bytes")

    def setup(self, ctx: WorkloadContext) -> None:
        drop = ctx.is_root and bool(REFUSES_ROOT & set(ctx.params["stressors"]))
        if drop:
            try:
                pwd.getpwnam(ctx.params["user"])
            except KeyError:
                raise PlanError(
                    f"stress-ng: user {ctx.params['user']!r} does not exist", key="user"
                ) from None
        ctx.state["run_as"] = ctx.params["user"] if drop else None
        # Outside the scratch tree: its parents may be private to root, and the worker user must write here.
        ctx.state["dir"] = tools.private_dir(tempfile.gettempdir(), "stress-ng", world_writable=True)

    def _paths(self, ctx: TrialContext) -> tuple[Path, Path]:
        base = Path(ctx.state["dir"]) / ctx.trial_dir.name
        return base.with_suffix(".yaml"), ctx.trial_dir / "stressors.txt"

    def before_trial(self, ctx: TrialContext) -> None:
        out, expected = self._paths(ctx)
        out.unlink(missing_ok=True)
        # The stressors asked for travel to parse() as a file, so parse stays a pure function of its input.
        expected.write_text("\n".join(ctx.params["stressors"]) + "\n")

    def command(self, ctx: TrialContext) -> list[str]:
        p, (out, _) = ctx.params, self._paths(ctx)
        argv = ["stress-ng"]
        for s in p["stressors"]:
            argv += [f"--{s}", str(p["instances"])]
        if "vm" in p["stressors"]:
            argv += ["--vm-bytes", str(p["vm_bytes"])]
        argv += ["--timeout", f"{p['duration_s']}s", "--temp-path", str(ctx.state["dir"])]
        argv += ["--metrics-brief", "--yaml", str(out)]
        if ctx.state.get("run_as"):
            return as_user(ctx.state["run_as"], argv)
        return argv

    def output_files(self, ctx: TrialContext) -> dict[str, Path]:
        out, expected = self._paths(ctx)
        return {"yaml": out, "stressors": expected}

    def parse(self, raw: RawOutput) -> dict[str, float]:
        expected = raw.files.get("stressors", "").split()
        return parse_yaml(raw.files.get("yaml", ""), expected, raw.stderr)

    def after_trial(self, ctx: TrialContext) -> None:
        self._paths(ctx)[0].unlink(missing_ok=True)

    def teardown(self, ctx: WorkloadContext) -> None:
        tools.remove_dir(ctx.state.pop("dir", None))


def as_user(user: str, argv: list[str]) -> list[str]:
    """argv run as `user`: util-linux runuser on Linux (no PAM session, no password), `su -m` elsewhere."""
    if shutil.which("runuser"):
        return ["runuser", "-u", user, "--", *argv]
    return ["su", "-m", user, "-c", shlex.join(argv)]


def parse_yaml(text: str, expected: list[str], stderr: str = "") -> dict[str, float]:
    if not text.strip():
        raise ParseError(f"stress-ng wrote no YAML result (stress-ng said: {_tail(stderr)})")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ParseError(f"stress-ng YAML is not readable: {exc}") from None
    rows = {m.get("stressor"): m for m in (doc or {}).get("metrics") or [] if isinstance(m, dict)}
    if not expected:
        expected = [s for s in rows if s]
    missing = [s for s in expected if s not in rows]
    if missing:
        raise ParseError(
            f"stress-ng reported no metrics for {', '.join(missing)} "
            f"(skipped or refused; it said: {_tail(stderr)})"
        )
    out: dict[str, float] = {}
    for s in expected:
        real, cpu = _rate(rows[s], s, "real-time"), _rate(rows[s], s, "usr-sys-time")
        out[f"bogo_ops_s_real_{_metric_key(s)}"] = real
        out[f"bogo_ops_s_usr_sys_{_metric_key(s)}"] = cpu
    first = _metric_key(expected[0])
    out["bogo_ops_s_real"] = out[f"bogo_ops_s_real_{first}"]
    out["bogo_ops_s_usr_sys"] = out[f"bogo_ops_s_usr_sys_{first}"]
    return out


def _rate(row: dict[str, Any], stressor: str, kind: str) -> float:
    value = row.get(f"bogo-ops-per-second-{kind}")
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ParseError(
            f"stress-ng {stressor}: bogo-ops-per-second-{kind} missing or not a number: {value!r}"
        )
    if not row.get("bogo-ops"):
        raise ParseError(f"stress-ng {stressor}: 0 bogo-ops — the stressor did no work")
    return float(value)


def _tail(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return " | ".join(lines[-3:]) or "nothing on stderr"
