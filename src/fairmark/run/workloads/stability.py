"""Stability under overload (seed 002's stress2 run: "a direct measurement of stability is desirable"; DragonFly
panicked in under 4 minutes): stress-ng puts the system under a timed mix of fork/exec storms, memory pressure
up to the OOM killer, file-system churn and loopback socket storms, while the kernel-log watch
(run/monitors/kernel_log.py) records every kernel message of trouble.

Bounded: the whole mix runs inside a cgroup the setup creates (memory limit `memory_limit`, at most `max_pids`
tasks), so the OOM kills it provokes stay inside it and the fork storm cannot exhaust the machine's PIDs; its
files live in the trial's directory; it stops after `duration_s`; sockets are loopback only. stress-ng runs as an
unprivileged user (its exec stressor refuses root).

Metrics per trial: minutes survived, kernel events (those not provoked on purpose), per-kind counts, the bounded
OOM kills, and whether the host still answered on loopback afterwards.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from fairmark.errors import PlanError
from fairmark.run.monitors import kernel_log
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

OVERLOAD_MARK = (
    "fairmark-overload-duration_s"  # a line the trial prints: how long the overload was asked to last
)
MIXES = {
    "fork": "--fork",
    "exec": "--exec",
    "memory": "--bigheap",
    "fs": "--dir",
    "dentry": "--dentry",
    "socket": "--sock",
}
EVENT_KINDS = tuple(dict.fromkeys(kind for kind, _ in kernel_log.KINDS if kind not in kernel_log.EXPECTED))
CGROUP_V1 = Path("/sys/fs/cgroup")


def _count(kind: str) -> MetricSpec:
    return MetricSpec(f"events_{kind}", "events", "lower", f"kernel messages of kind {kind}")


class Stability(Adapter):
    name = "stability"
    summary = "timed overload (stress-ng fork/exec, OOM in a bounded cgroup, fs churn, loopback sockets) + kernel-log watch"
    packages = tools.packages(("stress-ng", "util-linux"), ("stress-ng",), ("stress-ng",))
    executables = ("stress-ng", "setpriv")
    params = (
        ParamSpec("duration_s", 120, "s", "how long the overload lasts (stress-ng --timeout)"),
        ParamSpec(
            "mix", ["fork", "exec", "memory", "fs", "dentry", "socket"], "", f"classes: {', '.join(MIXES)}"
        ),
        ParamSpec("instances", 2, "workers", "workers per class"),
        ParamSpec("memory_limit", "512M", "bytes", "memory limit of the cgroup the mix runs in"),
        ParamSpec("max_pids", 4000, "tasks", "task limit of that cgroup"),
        ParamSpec("user", "nobody", "", "unprivileged user stress-ng runs as"),
    )
    metrics = (
        MetricSpec(
            "survived_min", "min", "higher", "minutes the overload ran before it ended or the host failed"
        ),
        MetricSpec(
            "kernel_events", "events", "lower", "kernel messages of trouble (not the provoked OOM kills)"
        ),
        MetricSpec("events_per_min", "events/min", "lower"),
        MetricSpec("oom_kills_bounded", "kills", "lower", "OOM kills inside the run's own cgroup (provoked)"),
        MetricSpec(
            "host_reachable", "bool", "higher", "1 if the host completed a loopback TCP connection after"
        ),
        *(_count(kind) for kind in EVENT_KINDS),
    )
    measures = ("kernel", "memory")

    def check(self, params: dict[str, Any]) -> None:
        tools.require_positive_ints(self.name, params, ("duration_s", "instances", "max_pids"))
        mix = params["mix"]
        if not isinstance(mix, list) or not mix or any(m not in MIXES for m in mix):
            raise PlanError(f"stability: mix must be a list of {', '.join(MIXES)}; got {mix!r}", key="mix")
        tools.parse_size(params["memory_limit"], "stability memory_limit")
        if (sys.platform.startswith("linux")) and not os.path.exists("/dev/kmsg"):
            raise PlanError("stability: the kernel-log watch needs /dev/kmsg", key="tool")

    def setup(self, ctx: WorkloadContext) -> None:
        if not ctx.is_root:
            raise SetupError("stability: needs root (a bounded cgroup and /dev/kmsg)")
        limit = tools.parse_size(ctx.params["memory_limit"], "stability memory_limit")
        ctx.state["cgroups"] = groups = _make_cgroups(f"fairmark-stability-{os.getpid()}-{id(ctx)}")
        try:
            _limit(groups, limit, ctx.params["max_pids"])
        except OSError as exc:
            raise SetupError(f"stability: cannot bound the cgroup ({exc})") from exc

    def command(self, ctx: TrialContext) -> list[str]:
        # The unprivileged stress-ng writes its churn here: a directory it can reach (the scratch is root's).
        p, work = ctx.params, Path(tempfile.mkdtemp(prefix="fairmark-stability-"))
        work.chmod(0o777)
        ctx.state["work"] = work
        argv = ["stress-ng", "--timeout", f"{p['duration_s']}s", "--temp-path", str(work), "--metrics-brief"]
        for cls in p["mix"]:
            argv += [MIXES[cls], str(p["instances"])]
        argv += ["--bigheap-growth", "1M"] if "memory" in p["mix"] else []
        user = pwd.getpwnam(p["user"])
        join = "; ".join(f"echo $$ > {shlex.quote(str(g / 'cgroup.procs'))}" for g in ctx.state["cgroups"])
        setpriv = f"setpriv --reuid {user.pw_uid} --regid {user.pw_gid} --clear-groups {shlex.join(argv)}"
        # stress-ng's status 2/3/5/6 (a stressor failed, lacked resources, was killed, was OOM-killed) is what
        # overload does to stressors, not a failure of the system; 1 (bad arguments) is a failed trial.
        # the overload's own length, for parse: stress-ng's wind-down after --timeout (reaping thousands of
        # stressors) is not time the host survived overload (45 s of overload read 1.4 min)
        inner = (
            f"{join}; cd {shlex.quote(str(work))}; echo {OVERLOAD_MARK}={p['duration_s']}; {setpriv}; s=$?; "
            'echo stress-ng status $s; [ "$s" -ne 1 ]'
        )
        out = ctx.trial_dir / "kmsg.txt"
        return [sys.executable, "-m", "fairmark.run.monitors.kernel_log", str(out), "--", "sh", "-c", inner]

    def output_files(self, ctx: TrialContext) -> dict[str, Path]:
        return {"kmsg": ctx.trial_dir / "kmsg.txt"}

    def after_trial(self, ctx: TrialContext) -> None:
        if work := ctx.state.pop("work", None):
            shutil.rmtree(work, ignore_errors=True)

    def parse(self, raw: RawOutput) -> dict[str, float]:
        log = raw.files.get("kmsg", "")
        end = re.search(r"^# end elapsed_s=([\d.]+) reachable=([01])$", log, re.MULTILINE)
        if end is None:
            raise ParseError("stability: the kernel-log watch did not finish (no '# end' line)")
        events = kernel_log.parse_kmsg(log)
        trouble = [e for e in events if e.kind not in kernel_log.EXPECTED]
        elapsed_s = float(end.group(1))
        planned = re.search(rf"^{OVERLOAD_MARK}=(\d+)$", raw.stdout, re.MULTILINE)
        # the overload lasted its duration unless it ended sooner; the rest of the watch was wind-down
        minutes = (min(elapsed_s, float(planned.group(1))) if planned else elapsed_s) / 60
        out = {
            "survived_min": minutes,
            "kernel_events": float(len(trouble)),
            "events_per_min": len(trouble) / minutes if minutes > 0 else 0.0,
            "oom_kills_bounded": float(sum(e.kind == "oom_kill_bounded" for e in events)),
            "host_reachable": float(end.group(2)),
        }
        return out | {f"events_{k}": float(sum(e.kind == k for e in trouble)) for k in EVENT_KINDS}

    def teardown(self, ctx: WorkloadContext) -> None:
        for group in ctx.state.pop("cgroups", []):
            with contextlib.suppress(OSError):
                group.rmdir()


def _make_cgroups(name: str) -> list[Path]:
    """One cgroup (v2) or one per controller (v1: memory and pids), created empty."""
    unified = CGROUP_V1 / "cgroup.controllers"
    parents = [CGROUP_V1] if unified.exists() else [CGROUP_V1 / "memory", CGROUP_V1 / "pids"]
    groups = []
    for parent in parents:
        if not parent.is_dir():
            raise SetupError(f"stability: no cgroup controller at {parent} to bound the overload")
        (group := parent / name).mkdir()
        groups.append(group)
    return groups


def _limit(groups: list[Path], memory_bytes: int, pids: int) -> None:
    for group in groups:
        files = {
            "memory.max": memory_bytes,
            "memory.swap.max": 0,
            "memory.limit_in_bytes": memory_bytes,
            "pids.max": pids,
        }
        for name, value in files.items():
            if (group / name).exists():
                (group / name).write_text(f"{value}\n")
