"""Profilers on a host (`--profile cpu,locks,syscalls` for trials whose command runs on a [hosts.NAME]).

The profile of such a trial is taken where it runs, by fairmark's agent there, with the profilers the controller
uses locally (fairmark.run.profiles), chosen by the host's own OS: perf (the trial's own cgroup) and strace on
Linux; DTrace, lockstat and truss on FreeBSD. The agent wraps the trial's command, starts and stops the profiler
around it, and reduces what it recorded there: only the folded stacks and the lock and syscall tables travel
back (never perf.data), each JSON document labelled with the host. Like tool workloads, this needs fairmark
installed on the host (`agent = ["fairmark", "agent"]`); the shipped stdlib agent refuses.

Every host of a run with profilers is asked first (op "profilers"): a profiler that cannot work there refuses
the run before any trial, naming the host and the profiler (exit 3) — never an empty profile. One profiler per
trial, as on the controller (the runner's profiled rounds).

Host side: `check` (op "profilers") and `HostTrial` (op "exec" with a "profile" request).
Controller side: `RemoteProfile`, the hook a profiled trial on a host gets (RemoteHost.profiled), and
`host_artifacts`, which labels what came back."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from fairmark.run.hooks import Artifact, HookContext, TrialHook
from fairmark.run.profiles import hooks_for

if TYPE_CHECKING:
    from fairmark.remote.executor import RemoteExecutor

PREFIX = "profile."


# -- on the host (called by the agent) -------------------------------------------------------------------------
def check(state: dict[str, TrialHook], names: list[str]) -> dict[str, str | None]:
    """Each profiler's reason it cannot work on this host (None: it can); the hooks are kept for the session."""
    for name in names:
        if name not in state:
            (state[name],) = hooks_for([name])
    return {name: state[name].unavailable for name in names}


class HostTrial:
    """One profiled trial on this host: its profiler (`req["name"]`: cpu, locks or syscalls) around its command,
    with the controller's hook context (`req["ctx"]`: the trial's directory is the controller's path, made here).
    `req["servers"]` false: the workload's servers run on another host (client_host), so none is looked for here
    (on test hosts that share one process table, the other host's servers would otherwise join the profile)."""

    def __init__(self, state: dict[str, TrialHook], req: dict[str, Any], place_cgroup: str | None = None):
        """`place_cgroup`: the trial's placement cgroup on this host (its spec's), which the profile's cgroup
        goes inside on cgroup v2 (run.profiles.base.TrialCgroup)."""
        name = str(req["name"])
        why = check(state, [name])[name]
        if why:
            raise RuntimeError(f"profiler {name} cannot work here: {why}")
        ctx = {k: v for k, v in req["ctx"].items() if k != "place_cgroup"}
        self.hook, self.ctx = state[name], HookContext(**ctx, place_cgroup=place_cgroup)
        if hasattr(self.hook, "with_servers"):  # the perf profilers (run.profiles.base.PerfProfiler)
            self.hook.with_servers = bool(req.get("servers", True))

    def wrap(self, argv: list[str]) -> list[str]:
        return self.hook.wrap(argv, self.ctx)

    def start(self) -> None:
        self.hook.start(self.ctx)

    def stop(self) -> list[dict[str, Any]]:
        return [dataclasses.asdict(a) for a in self.hook.stop(self.ctx, None)]


def close(state: dict[str, TrialHook]) -> None:
    """End of the session: no profiler left recording, no trial cgroup left."""
    for hook in state.values():
        try:
            hook.close()
        except Exception:
            pass


# -- on the controller -----------------------------------------------------------------------------------------
class RemoteProfile(TrialHook):
    """A profiled trial on a host: `start` asks the host's executor to have the next trial profiled there by
    the profiler of this name; its artifacts come back with the trial (RemoteExecutor.take_artifacts)."""

    def __init__(self, host: str, executor: RemoteExecutor, profiler: TrialHook, *, servers: bool = True):
        self.name, self.host, self._executor, self.servers = profiler.name, host, executor, servers

    def start(self, ctx: HookContext) -> None:
        # the host's placement travels in the trial's spec; an agent of the version before it knows no such key
        here = {k: v for k, v in dataclasses.asdict(ctx).items() if k != "place_cgroup"}
        self._executor.profile = {
            "name": self.name.removeprefix(PREFIX),
            "ctx": here,
            "servers": self.servers,
        }

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        self._executor.profile = None  # handed over with the trial (or the trial never went out)
        return []


def host_artifacts(host: str, docs: list[dict[str, Any]]) -> list[Artifact]:
    """The profile a host brought back, each JSON document and error labelled with the host it was taken on."""
    out = []
    for doc in docs:
        data = doc["data"]
        if doc["content_type"] == "application/json" and isinstance(data, dict):
            data = data | {"host": host}
        elif doc["name"] == "error":
            data = f"on host {host}: {data}"
        out.append(Artifact(doc["kind"], doc["name"], doc["content_type"], data))
    return out
