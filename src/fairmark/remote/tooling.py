"""Tool workloads on a host, the host's side: the real adapter (its servers, data sets, command line) runs there,
inside `fairmark agent` — so tool workloads need fairmark installed on the host (the shipped stdlib-only agent
runs command workloads). The controller's side is `RemoteAdapter`: it forwards the adapter's life cycle to the
host of each trial's variant and parses the output here (parse is pure). Each of the workload's contexts (the
shared one, and one per variant with a scratch file system of its own) is set up on a host at its first trial
there."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from fairmark.cachedir import cache_dir
from fairmark.errors import PlanError
from fairmark.remote.confine import write_inside
from fairmark.remote.connection import ConnectionLost, ProtocolError
from fairmark.run.workloads import adapter_for
from fairmark.run.workloads.base import Adapter, TrialContext, WorkloadContext

if TYPE_CHECKING:
    from fairmark.remote.connection import HostConnection
    from fairmark.remote.hosts import RemoteHost
    from fairmark.run.machine.host import Hosts
    from fairmark.run.workloads.base import TrialContext, WorkloadContext


# -- on the host (called by the agent's "adapter" operation) -------------------------------------------------
def handle(state: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    key, method = req["key"], req["method"]
    if method == "setup":
        c = req["ctx"]
        scratch = Path(c["scratch"])
        scratch.mkdir(parents=True, exist_ok=True)
        ctx = WorkloadContext(
            name=c["name"],
            params=c["params"],
            scratch=scratch,
            cache=cache_dir() / req["tool"],
            is_root=c["is_root"],
            env=dict(c["env"]),
            listen_address=c.get("listen_address"),
            client_addresses=tuple(c.get("client_addresses") or ()),
        )
        ctx.cache.mkdir(parents=True, exist_ok=True)
        adapter = adapter_for(req["tool"])
        missing = adapter.missing_executables()
        if missing:
            raise RuntimeError(f"tool {req['tool']!r} needs {', '.join(missing)} on this host")
        state[key] = (adapter, ctx)
        adapter.setup(ctx)
        adapter.prime(ctx)
        return {"env": ctx.env}
    adapter, ctx = state[key]
    if method == "teardown":
        del state[key]
        adapter.teardown(ctx)
        return {}
    t = req["tctx"]
    Path(t["trial_dir"]).mkdir(parents=True, exist_ok=True)
    tctx = TrialContext(
        workload=ctx,
        params=t["params"],
        trial_dir=Path(t["trial_dir"]),
        variant=t["variant"],
        warmup=t["warmup"],
        client_remote=bool(t.get("client_remote")),
    )
    if method == "before_trial":
        adapter.before_trial(tctx)
        return {"argv": adapter.command(tctx), "env": ctx.env}
    if method == "output_files":
        out = {}
        for name, path in adapter.output_files(tctx).items():
            p = Path(path)
            out[name] = [str(p), base64.b64encode(p.read_bytes()).decode() if p.is_file() else None]
        return {"files": out}
    if method == "after_trial":
        adapter.after_trial(tctx)
        return {}
    raise ValueError(f"unknown adapter method {method!r}")


# -- on the controller ---------------------------------------------------------------------------------------
def remote_adapter(adapter: Adapter, hosts: Hosts, workload: str, path: str) -> Adapter:
    if any(not h for h in hosts.variant_host.values()):
        raise PlanError(
            f"workload {workload!r}: a tool workload runs either on hosts or here, not both (yet); "
            "give every variant a host",
            path=path,
        )
    if not adapter.remote_client and any(w == workload for _, w in hosts.client_host):
        raise PlanError(
            f"workload {workload!r}: tool {adapter.name!r} cannot put its client on another host "
            "(client_host) yet; pgbench, sysbench-oltp, iperf3, redis and wrk can",
            path=path,
        )
    refuse = getattr(adapter, "client_host_refusal", None)  # a parameter that cannot cross hosts
    params = next((w.params for w in hosts.plan.workload if w.name == workload), {})
    for v, w in hosts.client_host:
        why = refuse(params, v) if refuse and w == workload and hosts.client_of(v, w) else None
        if why:
            raise PlanError(f"workload {workload!r}, variant {v!r}: {why}", path=path)
    return RemoteAdapter(adapter, hosts, workload)


class RemoteAdapter(Adapter):
    """The workload's adapter to the runner (an Adapter: what it does not do itself — name, params, metrics,
    measures, resolve, parse, labels … — is the real adapter's); trials of variants on a host run its life
    cycle there."""

    def __init__(self, adapter: Adapter, hosts: Hosts, workload: str):
        self._real, self._hosts, self._workload = adapter, hosts, workload
        # (host, key of a set-up context) → the agent generation it was set up in
        self._ready: dict[tuple[str, str], int] = {}
        self._argv: dict[str, list[str]] = {}

    def __getattribute__(self, name: str) -> object:
        # Its own methods and state here; every other attribute, the class's own included (name, params …
        # that Adapter declares), is the real adapter's.
        if name.startswith("_") or name in _OWN:
            return object.__getattribute__(self, name)
        return getattr(object.__getattribute__(self, "_real"), name)

    def missing_executables(self) -> list[str]:
        return []  # checked on each host at setup, where the tool runs

    def setup(self, ctx: WorkloadContext) -> None:
        pass  # each host's side is set up at its first trial there

    def prime(self, ctx: WorkloadContext) -> None:
        pass

    def _conn(self, host: str) -> HostConnection:
        conn = _remote(self._hosts, host).conn
        assert conn is not None, f"host {host} is not connected"
        return conn

    def _call(self, host: str, context: WorkloadContext, method: str, **extra: Any) -> dict[str, Any]:
        key = _key(context) if (host, _key(context)) in self._ready else ""
        return self._conn(host).call("adapter", tool=self._real.name, key=key, method=method, **extra)

    def _tctx(self, tctx: TrialContext) -> dict[str, Any]:
        return {
            "params": tctx.params,
            "trial_dir": str(tctx.trial_dir),
            "variant": tctx.variant,
            "warmup": tctx.warmup,
            "client_remote": bool(self._hosts.client_of(tctx.variant, self._workload)),
        }

    def _ensure(self, host: str, c: WorkloadContext) -> None:
        generation = self._conn(host).generation
        if self._ready.get((host, _key(c)), generation) != generation:
            del self._ready[(host, _key(c))]  # a reconnection: the earlier agent stopped this host's servers
        if (host, _key(c)) in self._ready:
            return
        hosts = self._hosts
        clients = sorted(
            {
                cl
                for (v, w), cl in hosts.client_host.items()
                if w == self._workload and hosts.host_of(v) == host and cl != host
            }
        )
        remote = (
            {
                "listen_address": _address(hosts, host),
                "client_addresses": [_address(hosts, cl) for cl in clients],
            }
            if clients
            else {}
        )
        self._ready[(host, _key(c))] = generation
        got = self._call(
            host,
            c,
            "setup",
            ctx={
                "name": c.name,
                "params": c.params,
                "scratch": str(c.scratch),
                "is_root": c.is_root,
                "env": c.env,
                **remote,
            },
        )
        c.env.update(got["env"])

    def _host(self, tctx: TrialContext) -> str:
        host = self._hosts.host_of(tctx.variant)
        assert host is not None
        return host

    def before_trial(self, tctx: TrialContext) -> None:
        host = self._host(tctx)
        self._ensure(host, tctx.workload)
        got = self._call(host, tctx.workload, "before_trial", tctx=self._tctx(tctx))
        tctx.workload.env.update(got["env"])
        self._argv[str(tctx.trial_dir)] = list(got["argv"])

    def command(self, tctx: TrialContext) -> list[str]:
        return self._argv.pop(str(tctx.trial_dir))

    def output_files(self, tctx: TrialContext) -> dict[str, Path]:
        """The adapter's result files of the trial, brought here: each under a name the controller makes of the
        file's key (a plain name, checked) in the trial's directory — the host's path is not used here."""
        host = self._host(tctx)
        got = self._call(host, tctx.workload, "output_files", tctx=self._tctx(tctx))
        return {
            name: _bring(host, tctx.trial_dir, name, b64)
            for name, (_path, b64) in _output_files(host, got["files"]).items()
        }

    def after_trial(self, tctx: TrialContext) -> None:
        try:
            self._call(self._host(tctx), tctx.workload, "after_trial", tctx=self._tctx(tctx))
        except ConnectionLost:
            pass  # the host went away with this trial: it is recorded as failed, the agent cleaned up there

    def teardown(self, ctx: WorkloadContext) -> None:
        for host, key in [k for k in self._ready if k[1] == _key(ctx)]:
            try:
                if self._ready[(host, key)] == self._conn(host).generation:
                    self._call(host, ctx, "teardown")
            except ConnectionLost:
                pass  # its agent is gone (it tears its adapters down at its end): the error that ended it stands
            finally:
                del self._ready[(host, key)]


# A key of an adapter's output files (fio's "json", stress-ng's "yaml" …): a plain name, made into a file name here.
OUTPUT_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_OUTPUT_FILES = 32


def _output_files(host: str, files: dict[str, Any]) -> dict[str, Any]:
    """An "output_files" answer's files, each key a plain name; ProtocolError naming the host otherwise."""
    if len(files) > MAX_OUTPUT_FILES:
        raise ProtocolError(f"host {host}: protocol error: output_files: {len(files)} files")
    for name in files:
        if not OUTPUT_KEY.fullmatch(name) or ".." in name:
            raise ProtocolError(f"host {host}: protocol error: output_files: not a plain name: {name!r}")
    return files


def _bring(host: str, trial_dir: Path, name: str, b64: str | None) -> Path:
    """Where the runner reads output file `name` of the trial: host-output.NAME in its directory here, written
    afresh with the host's bytes (absent when the host had no such file)."""

    local = trial_dir / f"host-output.{name}"
    local.unlink(missing_ok=True)  # an earlier trial's, or whatever was planted there (not followed)
    if b64 is not None:
        try:
            write_inside(str(trial_dir), local.name, base64.b64decode(b64, validate=True))
        except ValueError:
            raise ProtocolError(
                f"host {host}: protocol error: output_files: {name!r} is not base64"
            ) from None
    return local


def _key(ctx: WorkloadContext) -> str:
    """The agent's name for a set-up context (its adapter state there)."""
    return f"{ctx.name}:{ctx.scratch}"


def _remote(hosts: Hosts, host: str) -> RemoteHost:
    """A host of the run (a [hosts.NAME]: built by remote.hosts.hosts_for)."""
    return cast("RemoteHost", hosts.remote[host])


def _address(hosts: Hosts, host: str) -> str:
    """Where clients on other hosts reach `host`."""
    return _remote(hosts, host).address()


_OWN = frozenset(n for n in vars(RemoteAdapter) if not n.startswith("_"))  # what RemoteAdapter does itself
