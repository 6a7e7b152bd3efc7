"""`fairmark run PLAN --hosts a,b,c`: the same plan on each host at once — independent runs, one controller
process per host (`fairmark run PLAN --host NAME`), all into the same store (PostgreSQL for a team).

The per-host controllers are forked from this process after it imported what a run needs (`PRELOAD`): a new
Python importing fairmark, SQLAlchemy, SciPy and the rest costs about a second of CPU before it does anything,
and 50 hosts would pay it 50 times (bench/lab_hosts.py: the controller's CPU over a 50-host run). Each child's
output (stdout and stderr, in order) comes back through a pipe and is printed per host at the end. `jobs` caps
how many hosts run at once (the rest wait for a free slot). Ctrl-C reaches every child (one process group);
SIGTERM (or SIGHUP) to this process is passed on to them: each unwinds and stores its run as interrupted."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import io
import os
import selectors
import signal
import sys
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fairmark.console import console
from fairmark.errors import ExitStatus, FairmarkError, UsageError
from fairmark.run.guard.signals import unwinding

# What every per-host run imports lazily, imported once here before the fork (a name that no longer exists is
# skipped: it only costs each child its import again).
PRELOAD = (
    "fairmark.plan.kinds",
    "fairmark.probe.diff",
    "fairmark.probe.doctor",
    "fairmark.probe.hosts",
    "fairmark.probe.redact",
    "fairmark.probe.snapshot",
    "fairmark.probe.which",
    "fairmark.remote.connection",
    "fairmark.remote.executor",
    "fairmark.remote.hosts",
    "fairmark.remote.probe",
    "fairmark.report.attribution",
    "fairmark.report.data",
    "fairmark.report.failures",
    "fairmark.report.hosts",
    "fairmark.report.pagecache",
    "fairmark.report.stability",
    "fairmark.report.terminal",
    "fairmark.run.prerun.devicebase",
    "fairmark.run.monitors",
    "fairmark.run.monitors.linux",
    "fairmark.run.trials.prepare",
    "fairmark.run.profiles",
    "fairmark.run.profiles.base",
    "fairmark.run.loop.runner",
    "fairmark.run.guard.signals",
    "fairmark.run.trials.trial",
    "fairmark.run.workloads.servers",
    "fairmark.run.workloads.tools",
    "fairmark.run.prerun.wrapcost",
    "fairmark.stats.rates",
    "fairmark.store.events",
    "fairmark.verdict.run",
    "scipy.special",  # the verdicts' t quantiles (fairmark.stats.tdist imports it when first asked)
)


def child_args(plan: str, host: str, argv: list[str]) -> list[str]:
    """This command line (without the program) with --hosts and --jobs replaced by --host HOST."""
    out, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a in ("--hosts", "--jobs"):
            skip = True
            continue
        if a.startswith(("--hosts=", "--jobs=")):
            continue
        if i == 0 and a == "run":
            continue
        out.append(a)
    return ["run", *[a for a in out if a != plan], plan, "--host", host]


@dataclass
class _Child:
    host: str
    pid: int
    fd: int
    output: bytearray = field(default_factory=bytearray)
    code: int | None = None


def preload() -> None:
    for name in PRELOAD:
        with contextlib.suppress(ModuleNotFoundError):
            importlib.import_module(name)


def run_fleet(
    plan: str,
    hosts: list[str],
    argv: list[str],
    store_url: str | None = None,
    *,
    main: Callable[[list[str]], int],
    jobs: int | None = None,
) -> None:
    """`store_url` is the --store the command was given (None: the default store, or $FAIRMARK_STORE); `main`
    runs a command line in the child (the CLI's main, returning its exit status)."""
    if len(set(hosts)) != len(hosts) or not hosts:
        raise UsageError(f"--hosts {','.join(hosts)}: give each host once")
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs}: at least 1")
    # Create (or migrate) the store's schema once, here: several first opens at once race on CREATE TABLE.
    from fairmark.store.db import Store

    Store.open(store_url).engine.dispose()  # no connection of this process's pool is shared with a child
    preload()
    fleet = uuid.uuid4().hex[:12]  # every host's run is tagged with it: `fairmark compare-hosts` finds them
    tagged = [*argv, "--tag", f"fleet={fleet}"]
    children = _supervise(
        [(h, child_args(plan, h, tagged)) for h in hosts], main, store_url, jobs or len(hosts)
    )
    try:
        _report(children)
    finally:
        _view(store_url, fleet, sum(c.code == 0 for c in children))


def _view(store_url: str | None, fleet: str, done: int) -> None:
    """The fleet view after the hosts' outputs (three hosts or more: fewer cannot say which one is odd)."""
    from fairmark.report.fleet import fleet_view, render
    from fairmark.stats.fleet import MIN_HOSTS
    from fairmark.store.db import Store

    if done < MIN_HOSTS or console.json_mode:
        return
    console.print()
    render(fleet_view(Store.open(store_url), fleet))
    console.note(f"`fairmark compare-hosts --fleet {fleet}` shows this again")


def _supervise(
    todo: list[tuple[str, list[str]]], main: Callable[[list[str]], int], store_url: str | None, jobs: int
) -> list[_Child]:
    """Fork the children (at most `jobs` at a time), collect their output and exit statuses. On Ctrl-C or
    SIGTERM here, the running children get SIGTERM and are waited for (their runs stored as interrupted)."""
    sel = selectors.DefaultSelector()
    done: list[_Child] = []
    running: dict[int, _Child] = {}
    pending = list(todo)
    # Objects made so far are never collected: the children's pages stay shared (no copy-on-write by the GC).
    gc.freeze()
    try:
        with unwinding():  # inherited by the children: a SIGTERM unwinds each like Ctrl-C
            try:
                while pending or running:
                    while pending and len(running) < jobs:
                        host, args = pending.pop(0)
                        child = _fork(host, args, main, store_url, [sel.fileno(), *running])
                        running[child.fd] = child
                        sel.register(child.fd, selectors.EVENT_READ, child)
                    _drain(sel, running, done)
            except BaseException:
                _stop(sel, running, done)
                raise
    finally:
        gc.unfreeze()
        sel.close()
    return sorted(done, key=lambda c: [h for h, _ in todo].index(c.host))


def _stop(sel: selectors.BaseSelector, running: dict[int, _Child], done: list[_Child]) -> None:
    """This process is ending (Ctrl-C, SIGTERM, an error): each running child is told so and waited for — it
    stores its run as interrupted and ends its host's session, as it would on its own."""
    for child in running.values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGTERM)
    with contextlib.suppress(KeyboardInterrupt):
        while running:
            _drain(sel, running, done)


def _drain(sel: selectors.BaseSelector, running: dict[int, _Child], done: list[_Child]) -> None:
    """Read what the children wrote; a child whose pipe closed is reaped."""
    for key, _ in sel.select():
        child: _Child = key.data
        chunk = os.read(child.fd, 65536)
        if chunk:
            child.output += chunk
            continue
        sel.unregister(child.fd)
        os.close(child.fd)
        _, status = os.waitpid(child.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        child.code = 128 - code if code < 0 else code  # killed by a signal: as a shell reports it
        done.append(running.pop(child.fd))


def _fork(
    host: str, args: list[str], main: Callable[[list[str]], int], store_url: str | None, close: list[int]
) -> _Child:
    read, write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: runs `fairmark run PLAN --host HOST` and never returns here
        code = 70  # EX_SOFTWARE: the child failed before the command ran
        try:
            die_with(parent)
            for fd in [read, *close]:
                os.close(fd)
            _child_streams(write)
            if store_url:
                os.environ["FAIRMARK_STORE"] = store_url
            sys.argv = ["fairmark", *args]
            code = main(args)
        except BaseException:
            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            os._exit(code)
    os.close(write)
    return _Child(host, pid, read)


def die_with(parent: int) -> None:
    """A `kill -9` of the fleet leaves no one to read a child's output nor to stop it: the kernel sends the
    child SIGTERM when its parent dies (Linux's PR_SET_PDEATHSIG), which unwinds its run like a SIGTERM from the
    fleet and stores it as interrupted. A parent already gone before the call: the signal is sent here. Elsewhere
    (no prctl) the children run on, as before; `runs` then says their controller is gone once they end."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


class _Pipe(io.FileIO):
    """The child's output pipe (fd 1); once the fleet is gone (nobody reads), what is written is dropped, so that
    the run's unwinding is not cut by a broken pipe before it stores the run as interrupted."""

    def write(self, data: Any) -> int:
        try:
            return super().write(data)
        except BrokenPipeError:
            return len(data)


def _child_streams(write: int) -> None:
    """stdout and stderr (the file descriptors, for the child's own children, and Python's streams, so that the
    console binds anew to a pipe rather than to this terminal) go to the pipe, stdin from /dev/null."""
    os.dup2(write, 1)
    os.dup2(write, 2)
    os.close(write)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    out = io.TextIOWrapper(
        _Pipe(1, "w", closefd=False), encoding="utf-8", errors="replace", write_through=True
    )
    sys.stdout = sys.stderr = out
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))


def _report(children: list[_Child]) -> None:
    failed = [c for c in children if c.code != 0]
    if console.json_mode:
        console.emit_json(
            {
                "hosts": {
                    c.host: {"exit": c.code, "output": c.output.decode(errors="replace")} for c in children
                }
            }
        )
    else:
        for c in children:
            console.print(f"[bold]host {c.host}[/bold]: exit {c.code}")
            console.text(c.output.decode(errors="replace").rstrip())
    if failed:
        raise FleetFailed(
            f"fleet run: {len(failed)} of {len(children)} host(s) failed: "
            + ", ".join(f"{c.host} (exit {c.code})" for c in failed),
            max(c.code or 0 for c in failed),
        )


class FleetFailed(FairmarkError):
    """Some hosts' runs failed: the exit status is the highest of theirs when it is one of fairmark's (a host
    that could not be reached: 3), else 3."""

    def __init__(self, message: str, status: int):
        super().__init__(
            message, hint="`fairmark resume RUN` continues a host's interrupted run when the host is back"
        )
        known = {int(s) for s in ExitStatus}
        self.exit_status = ExitStatus(status) if status in known else ExitStatus.ENVIRONMENT
