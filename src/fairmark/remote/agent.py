"""fairmark's agent on a remote host: one process per SSH session, speaking versioned JSON lines on stdin/stdout.

This file imports only Python 3's standard library and the few modules of fairmark it is shipped with (the trial
launcher and placer; the variants' drivers, fairmark.run.variants, standard library only too): the controller ships
them on the SSH session's stdin (a short `python3 -c` bootstrap reads them) to hosts where fairmark is not
installed, Linux or FreeBSD alike. `fairmark agent` runs the same code.

Protocol (version PROTOCOL): the controller writes one JSON object per line, {"v": 1, "id": N, "op": NAME, …};
the agent answers each with one line {"v": 1, "id": N, "ok": true, "result": {…}} or {"ok": false, "error":
"…"}, in order. Anything that is not such a request gets an error answer and is not acted upon; the agent opens
no port and runs only what a request names. End of input ends the agent (a trial still running is killed
with its whole process group first).

Operations:
  hello                 protocol and agent version, OS, hostname, boot_id, whether fairmark is importable, and
                        the lines of any dead agent's journal undone now ("a dead controller's journal is undone
                        at next contact")
  exec                  one trial (a TrialSpec → a Measured, fairmark.run.spec) with the executor's local
                        semantics: own session and process group, monotonic wall clock, wait4 rusage, timeout
                        kills the group (TERM, grace, KILL), leftovers killed, output tails (base64) — all
                        measured here, so network latency never enters a time
  capture               the probe's input files (globs) and, on FreeBSD, sysctl -a / uname -a / mount
  read                  files' contents (monitors sample /proc or sysctl output here, between trials)
  lock                  take the host's run lock for this session (one run measures a host at a time)
  change                one kind's value for a variant (plan/kinds.py: the kinds that can run on a host): made by
                        that kind's driver, fairmark.run.variants.<kind> — the controller's own code, shipped
                        — and journaled here (each original fsync'd before it is changed); a machine-wide kind
                        holds the active variant's value, a scratch file system, a CPU set or an environment is
                        the variant's own; the answer says what its trials get (workdir, placement, env)
  check                 whether a variant's changes can be made here (nothing changed: refusals before any trial)
  restore               revert everything this agent changed; recover: undo dead agents' journals
  adapter               a tool workload's adapter life cycle (servers, data, command line) run here; needs
                        fairmark installed on the host (`fairmark agent`)
  profilers             whether each profiler (cpu, locks, syscalls) can work here; an exec with "profile" runs
                        the trial under that one (fairmark.remote.profiling; needs fairmark on the host too)
  mkdirs, rmtree, which small file-system helpers for the controller's scratch directories and tool checks
  bye                   end the session (system changes are restored, also at end of input)
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import glob
import json
import os
import platform
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PROTOCOL = 3  # 2: exec carries a TrialSpec and answers a Measured; 3: one `change` operation for every kind
SPEC_VERSION = 1  # fairmark.run.spec.SPEC_VERSION this agent executes (a test keeps the two equal)
AGENT_VERSION = "0.1.0"
KILL_WAIT_S = 5.0
PROFILES_NEED_FAIRMARK = (
    'profiles on a host need fairmark installed there: set agent = ["fairmark", "agent"] in its '
    "[hosts.NAME]; the shipped agent runs trials without profilers"
)


# -- host facts ----------------------------------------------------------------------------------------------
def boot_id() -> str:
    """Changes at every boot: Linux's random boot_id, FreeBSD's kern.boottime (and the host's hostid)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        pass
    out = _run(["sysctl", "-n", "kern.boottime", "kern.hostuuid"])
    return " ".join(out.split()) if out else ""


def _run(argv: list[str], timeout_s: float = 10.0) -> str:
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin:/sbin:/usr/sbin")},
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout if proc.returncode == 0 else ""


def _settle(m: dict, status: int, ru, wall: float, timed_out_after: float | None, report=None) -> None:
    """The trial's measured fields into `m`, as the local executor has them (fairmark.run.launch.launcher:
    waited_fields, outcome). `timed_out_after`: the timeout it hit."""
    status, fields = waited_fields(status, ru, wall, report)
    m.update(fields)
    m["exit_code"], m["signal"], m["status"], m["error"] = outcome(status, timed_out_after)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# -- the journal of system changes on this host --------------------------------------------------------------
def state_dir() -> str:
    explicit = os.environ.get("FAIRMARK_AGENT_STATE")
    if explicit:
        return explicit
    if os.geteuid() == 0:
        return "/var/db/fairmark-agent" if sys.platform.startswith("freebsd") else "/var/lib/fairmark-agent"
    return os.path.join(os.path.expanduser("~"), ".local", "state", "fairmark-agent")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _linux_sysctl_path(name: str) -> str:
    rel = name.strip("/") if "/" in name else name.replace(".", "/")
    return "/proc/sys/" + rel


def sysctl_read(name: str) -> str:
    if sys.platform.startswith("linux"):
        with open(_linux_sysctl_path(name)) as fh:
            return " ".join(fh.read().split())
    out = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise OSError(out.stderr.strip() or f"sysctl -n {name} failed")
    return " ".join(out.stdout.split())


OUT_PREFIX = (
    "fairmark-agentout-"  # a trial's output directory, held (flock) by its agent while the trial runs
)
LEGACY_OUT_PREFIX = "fairmark-agent-"  # + the pid of an agent from before the lock
SCRATCH_PREFIX = (
    "fairmark-scratch-"  # a controller's scratch directory (fairmark.run.guard.scratch): held here too
)
_held: dict[str, int] = {}  # path → descriptor holding its lock, for this agent's life


def take_dir(path: str) -> int | None:
    """Lock directory `path` if no one holds it (fairmark.run.guard.scratch.take): its descriptor, or None when a
    live process holds it or it is gone. The kernel drops the lock when its holder dies, so a sweep never
    needs to guess from a PID (other PID namespaces and reused PIDs defeat that)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None  # gone, or another user's (an agent logged in without root sweeps only its own)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        st, own = os.stat(path), os.fstat(fd)
        if (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino):
            return fd
    except (BlockingIOError, FileNotFoundError):
        pass
    os.close(fd)
    return None


def hold_scratch(path: str) -> None:
    """Make `path` and hold the controller's scratch directory it is in for this agent's life, so that no
    fairmark on this host sweeps it while the controller's run goes on (the controller's own lock is on its
    own machine). A directory some other live process already holds (the controller, when the host is the
    controller's own machine) is theirs to keep."""
    os.makedirs(path, exist_ok=True)
    parts = os.path.abspath(path).split(os.sep)
    top = next((i for i, part in enumerate(parts) if part.startswith(SCRATCH_PREFIX)), None)
    if top is None:
        return
    root = os.sep.join(parts[: top + 1])
    if root not in _held and (fd := take_dir(root)) is not None:
        _held[root] = fd


def release_scratch(path: str) -> None:
    fd = _held.pop(os.path.abspath(path), None)
    if fd is not None:
        os.close(fd)


def sweep_dead_outputs(tmp: str | None = None) -> list[str]:
    """Remove the trial output directories of agents that are gone (a killed agent cannot remove its own): those
    whose lock is free, and those of agents from before the lock whose pid no longer runs."""
    base = tmp or tempfile.gettempdir()
    lines = []
    for path in sorted(glob.glob(os.path.join(base, f"{OUT_PREFIX}*"))):
        fd = take_dir(path)
        if fd is not None:
            shutil.rmtree(path, ignore_errors=True)
            os.close(fd)
            lines.append(f"removed {path}, left by an agent that no longer runs (its lock was free)")
    for path in sorted(glob.glob(os.path.join(base, f"{LEGACY_OUT_PREFIX}*-*"))):
        pid = os.path.basename(path)[len(LEGACY_OUT_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)) and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
            lines.append(f"removed {path}, left by agent {pid}")
    return lines


_MINE: set[str] = set()  # the journals this process writes


def _dead_owner(path: str) -> tuple[bool, int | None]:
    """Whether the agent that wrote journal `path` is gone, waiting a moment for one that just lost its
    connection (it is exiting, restoring its own changes); with its lock (held from here on: the descriptor)
    where it has one, else — an agent from before the lock — by its PID."""
    deadline = time.monotonic() + KILL_WAIT_S
    try:
        fd = os.open(path.removesuffix(".json") + ".lock", os.O_RDWR)  # never created here: it is the owner's
    except FileNotFoundError:
        fd = None
    if fd is None:
        try:
            with open(path) as fh:
                pid = int(json.load(fh).get("pid", 0))
        except (OSError, ValueError):
            return False, None
        if pid == os.getpid():
            return True, None  # this process writes its journals with a lock: a dead agent's PID, reused
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return not _alive(pid), None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True, fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return False, None
            time.sleep(0.05)


# -- the trial launcher: the workload's own peak RSS ----------------------------------------------------------
# fairmark.run.launch.launcher (standard library only, like this file): shipped ahead of this file's text to a host
# without fairmark (remote.connection.agent_source), imported where fairmark is installed.
if "read_launch_report" not in globals():
    from fairmark.run.launch.launcher import (  # noqa: F401 - RSS_METHOD: tests
        RSS_METHOD,
        group_alive,
        kill_group,
        launcher,
        outcome,
        read_launch_report,
        waited_fields,
    )


# -- fairmark's own modules of system changes ------------------------------------------------------------------
# The variants' changes on this host are made by the controller's own code (fairmark.run.variants: mount, cpus,
# kernel and what they import, all standard library): remote.connection.agent_source ships their text ahead of
# this file's as _SHIPPED {module: source}, served to `import` under their own names — they win over a fairmark
# installed on the host, so the code is the controller's version; packages the host has stay its own (a tool
# adapter's fairmark.remote.tooling). Where fairmark is installed and runs this file (`fairmark agent`), they
# are imported as usual.
def _serve(sources: dict) -> None:
    import importlib.abc
    import importlib.machinery
    import importlib.util

    class Shipped(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if name not in sources:
                return None
            package = sources[name] is None
            if package and importlib.machinery.PathFinder.find_spec(name, path) is not None:
                return None  # the host's own package (its other modules stay importable)
            return importlib.util.spec_from_loader(name, self, is_package=package)

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            source = sources[module.__name__] or ""
            exec(compile(source, f"fairmark-agent:{module.__name__}", "exec"), module.__dict__)

    sys.meta_path.insert(0, Shipped())


if "_SHIPPED" in globals():  # defined ahead of this file's text by the shipped program
    _serve(globals()["_SHIPPED"])


# fairmark's shipped modules (served above where fairmark is not installed): the variants' drivers, their journal,
# the trial's placer — the controller's own code, so a change is made and undone here as it is there.
from fairmark.run.launch import placer  # noqa: E402
from fairmark.run.variants import driver  # noqa: E402
from fairmark.run.variants.driver import Change, Context  # noqa: E402
from fairmark.run.variants.journal import Journal  # noqa: E402


def recover_dead() -> list[str]:
    """Undo the journals of agents that are gone (their controller died, or the connection dropped)."""
    lines = []
    for path in sorted(glob.glob(os.path.join(state_dir(), "journal", "*.json"))):
        if path in _MINE:
            continue
        gone, fd = _dead_owner(path)
        if not gone:
            continue
        try:
            journal = Journal.load(Path(path))
        except ValueError as exc:
            if os.path.exists(path):
                lines.append(str(exc))
                if fd is not None:
                    os.close(fd)
                continue
            journal = Journal(Path(path), 0, None)  # its owner undid it all before it died: its lock goes
        journal.locked, journal.lock_fd = True, fd
        for done, problem in driver.sweep(journal):
            lines.append(done + f" (left by agent {journal.pid})")
            if problem:  # kept: `fairmark doctor --host` shows it and the next contact tries again
                lines.append(f"FAILED: {problem}")
        if journal.entries:
            journal.let_go()  # what is left waits for the next contact
        else:
            journal.discard()
    return lines


class Changes:
    """The variants' changes on this host: each kind's driver (fairmark.run.variants.driver, the controller's
    own), journaled in this agent's journal. A kind of scope "block" (machine-wide) holds one value at a time,
    the active variant's; one of scope "variant" (a scratch file system, a CPU set, an environment) is the
    variant's own, made at its first block and kept until the session ends, as on the controller."""

    def __init__(self, journal: Journal):
        self.journal = journal
        self.held: dict[
            tuple[str, str], tuple[object, Change]
        ] = {}  # (kind, variant or "") → (value, change)
        self.made: list[Change] = []  # in the order made: undone in reverse

    @staticmethod
    def context(req: dict) -> Context:
        env = {str(k): v for k, v in (req.get("env") or {}).items() if isinstance(v, str | bool)}
        return Context(str(req.get("variant") or ""), state_dir=state_dir(), env=env)

    def check(self, kind: str, value: object, ctx: Context) -> None:
        """Refuse (raise) what cannot be done here, changing nothing: what the controller's SystemState refuses
        before any trial (a missing sysctl or kernel file, no cpufreq, no loop devices or mkfs …)."""
        driver.load(kind).check(value, ctx)

    def change(self, kind: str, value: object, ctx: Context) -> dict:
        """Make `value` the kind's value for the variant (None: the host's own): undo what it replaces, then
        apply. Answers what was applied and reverted, and what the variant's trials get ("prepared")."""
        module = driver.load(kind)
        key = (kind, ctx.variant if module.SCOPE == "variant" else "")
        reverted: list[str] = []
        held = self.held.get(key)
        if held is not None and (value is None or held[0] != value):
            reverted = self._undo(key)
            held = None
        if value is None:
            return {"applied": [], "reverted": reverted, "prepared": {}}
        if held is None:
            made = module.check(value, ctx)
            applied = made.apply(self.journal)  # journaled first; nothing left half-made when it raises
            self.held[key] = (value, made)
            self.made.append(made)
        else:
            made, applied = held[1], []
        return {"applied": applied, "reverted": reverted, "prepared": made.prepared(self.journal).to_json()}

    def _undo(self, key: tuple[str, str]) -> list[str]:
        made = self.held.pop(key)[1]
        self.made.remove(made)
        done, problems = made.undo(self.journal)
        if problems:
            raise OSError("; ".join(problems))
        return done

    def restore(self) -> tuple[list[str], list[str]]:
        """Undo everything, newest first, then whatever the journal still holds: (lines, problems)."""
        lines: list[str] = []
        problems: list[str] = []
        for made in reversed(self.made):
            undone, failed = made.undo(self.journal)
            lines += undone
            problems += failed
        self.held.clear()
        self.made.clear()
        for line, problem in driver.sweep(self.journal):
            lines.append(line)
            problems += [problem] if problem else []
        return lines, problems


# -- one trial -----------------------------------------------------------------------------------------------
def _exit_fd(pid: int) -> tuple[int, threading.Thread | None]:
    """An fd that becomes readable when `pid` exits (it stays unreaped for wait4): a pidfd on Linux, else a
    pipe written by a thread blocked in waitid(WNOWAIT)."""
    if hasattr(os, "pidfd_open"):
        try:
            return os.pidfd_open(pid), None
        except OSError:
            pass
    r, w = os.pipe()

    def watch() -> None:
        try:
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        except (ChildProcessError, OSError):
            pass
        os.write(w, b"x")
        os.close(w)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return r, t


def _placed(argv: list[str], fo, fe, env: dict, cwd: str | None, spec: dict, joined: bool, w: int | None):
    """Start a trial as the local executor does (fairmark.run.launch.placer: the same placement, the same start)."""
    path, _ = launcher()
    return placer.popen(
        [path, str(w), *argv] if path else argv,
        cgroup=spec.get("place_cgroup") or None,
        cpus=tuple(int(c) for c in spec.get("place_cpus") or ()),
        fork_places=bool(spec.get("fork_places")),
        joined=joined,
        stdin=subprocess.DEVNULL,
        stdout=fo,
        stderr=fe,
        env=env,
        cwd=cwd,
        pass_fds=(w,) if path and w is not None else (),
    )


def _launch(
    argv: list[str], fo, fe, env: dict, cwd: str | None, spec: dict, joined: bool
) -> tuple[subprocess.Popen, int | None]:
    """Start a trial, through the launcher where this host has one: (the process, the read end of the
    launcher's report, None without a launcher). `joined`: this thread is in the trial's cgroup (placer.join)."""
    path, _ = launcher()
    r, w = os.pipe() if path else (None, None)
    try:
        proc = _placed(argv, fo, fe, env, cwd, spec, joined, w)
    except OSError:
        if r is not None:
            os.close(r)
        raise
    finally:
        if w is not None:
            os.close(w)  # the launcher's end: ours reads EOF once it exited
    return proc, r


def _tail(path: str, limit: int) -> bytes:
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - limit))
            return fh.read(limit)
    except OSError:
        return b""


def _env(req: dict) -> dict:
    env = dict(os.environ)
    for k in req.get("env_unset") or ():
        env.pop(k, None)
    env.update(req.get("env_set") or {})
    env.pop("FAIRMARK_AGENT_STATE", None)  # the agent's own setting is not the trial's business
    return env


class Monitor:
    """The system monitor's raw samples on this host: /proc files (Linux) or one sysctl call (FreeBSD), with
    the monotonic time; the controller parses them with the monitor's own parsers."""

    def __init__(self, spec: dict):
        self.interval_s = float(spec.get("interval_s", 1.0))
        self.files = [str(f) for f in spec.get("files") or ()]
        self.command = [str(a) for a in spec.get("command") or ()]
        self.samples: list[dict] = []
        self.errors: list[str] = []
        self.next_at = 0.0

    def sample(self) -> None:
        t = time.monotonic()
        texts = {}
        for path in self.files:
            try:
                with open(path) as fh:
                    texts[path] = fh.read()
            except OSError:
                pass  # absent here (e.g. no pressure files): that column is simply missing
        if self.command:
            texts["command"] = _run(self.command)
            if not texts["command"]:
                self.errors.append(f"{' '.join(self.command[:2])} gave no output")
        self.samples.append({"t_s": t, "texts": texts})
        self.next_at = t + self.interval_s


class Session:
    def __init__(self, rfd: int = 0, wfd: int = 1):
        self.rfd, self.wfd = rfd, wfd
        self.buf = b""
        self.eof = False
        self.journal = Journal.for_agent(state_dir())  # one journal for all this agent changes
        _MINE.add(str(self.journal.path))
        self.changes = Changes(self.journal)

    # -- wire ---------------------------------------------------------------------------------------------
    def _readline(self) -> bytes | None:
        while b"\n" not in self.buf:
            if self.eof:
                return None
            chunk = os.read(self.rfd, 1 << 16)
            if not chunk:
                self.eof = True
                continue
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def send(self, obj: dict) -> None:
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        try:
            while data:
                n = os.write(self.wfd, data)
                data = data[n:]
        except OSError:  # the connection is gone (EPIPE): nobody to answer; the session ends and restores
            self.eof = True

    def serve(self) -> None:
        while True:
            line = self._readline()
            if line is None:
                return
            if not line.strip():
                continue
            try:
                req = json.loads(line)
                if (
                    not isinstance(req, dict)
                    or req.get("v") != PROTOCOL
                    or not isinstance(req.get("op"), str)
                ):
                    raise ValueError(f"not a protocol {PROTOCOL} request")
            except ValueError as exc:
                self.send({"v": PROTOCOL, "id": None, "ok": False, "error": f"bad request: {exc}"})
                continue
            op = req["op"]
            handler = getattr(self, "op_" + op, None)
            if handler is None:
                self.send({"v": PROTOCOL, "id": req.get("id"), "ok": False, "error": f"unknown op {op!r}"})
                continue
            try:
                result = handler(req)
            except Exception as exc:  # an answer, never a dead agent: the controller decides
                self.send(
                    {"v": PROTOCOL, "id": req.get("id"), "ok": False, "error": f"{type(exc).__name__}: {exc}"}
                )
                continue
            self.send({"v": PROTOCOL, "id": req.get("id"), "ok": True, "result": result})
            if op == "bye" or self.eof:
                return

    # -- operations ---------------------------------------------------------------------------------------
    def op_hello(self, req: dict) -> dict:
        import importlib.util

        try:  # fairmark installed here, not only the modules shipped with this agent
            has_fairmark = importlib.util.find_spec("fairmark.remote") is not None
        except ImportError:
            has_fairmark = False
        return {
            "protocol": PROTOCOL,
            "agent_version": AGENT_VERSION,
            "pid": os.getpid(),
            "os": platform.system().lower(),
            "release": platform.release(),
            "hostname": socket.gethostname(),
            "address": (os.environ.get("SSH_CONNECTION") or "   ").split(" ")[2]
            or None,  # as the controller sees it
            "boot_id": boot_id(),
            "python": platform.python_version(),
            "fairmark": has_fairmark,
            "state_dir": state_dir(),
            "uid": os.geteuid() if hasattr(os, "geteuid") else None,  # root, or the login user without sudo
            "placement": _cpus_placement(),
            "launcher": launcher()[1],  # why trials here record no peak RSS; None: they do
            "recovered": recover_dead() if req.get("recover", True) else [],
            "swept": sweep_dead_outputs(),
        }

    def op_bye(self, req: dict) -> dict:
        self._teardown_adapters()
        return {"restored": self.restore()}

    def restore(self) -> list[str]:
        """Undo everything this agent changed, newest first (its journal's order: a cpuset after the scratch
        file system made before it …). An entry that cannot be undone stays journaled (the next contact tries
        again, `fairmark doctor --host` shows it) and the answer is an error naming it."""
        lines, problems = self.changes.restore()
        if problems:
            raise OSError("not restored: " + "; ".join(problems))
        return lines

    def _teardown_adapters(self) -> None:
        """Servers a controller left running (it died, or the connection dropped) are stopped with the agent, and
        a profiler left recording (perf) with them."""
        profilers = self.__dict__.pop("profilers", None)
        if profilers:
            from fairmark.remote.profiling import close

            close(profilers)
        for adapter, ctx in self.__dict__.pop("adapters", {}).values():
            try:
                adapter.teardown(ctx)
            except Exception:
                pass

    def op_exec(self, req: dict) -> dict:
        """req["spec"]: a TrialSpec (fairmark.run.spec) as a dict, its env None: the environment is the host's
        own with req["env_set"] / req["env_unset"] applied. Answer: {"measured": a Measured as a dict (its
        output paths are the controller's to fill), "stdout_b64", "stderr_b64", "files", "boot_id", "monitor"}.
        The trial's stdin is /dev/null whatever the spec says: the agent's stdin is the protocol."""
        spec = req["spec"]
        if spec.get("version") != SPEC_VERSION:
            raise ValueError(
                f"trial spec version {spec.get('version')!r}; this agent understands {SPEC_VERSION}"
            )
        for d in req.get("mkdirs") or ():
            hold_scratch(d)
        profile = self._profile(req, spec.get("place_cgroup") or None)
        if profile is not None:  # the profiler wraps the command and starts here, right before the trial
            spec = dict(spec, argv=profile.wrap([str(a) for a in spec["argv"]]))
            profile.start()
        while (fd := take_dir(out_dir := tempfile.mkdtemp(prefix=OUT_PREFIX))) is None:
            pass  # a sweep took the fresh directory's lock first and removed it: make another
        profiled = None
        try:
            res = self._exec(req, spec, out_dir)
        finally:
            if profile is not None:
                profiled = profile.stop()
            shutil.rmtree(out_dir, ignore_errors=True)
            os.close(fd)
        if profiled is not None:
            res["profile"] = profiled
        return res

    def _profile(self, req: dict, place_cgroup: str | None):
        """A profiled trial's profiler on this host (fairmark.remote.profiling.HostTrial), or None."""
        if not req.get("profile"):
            return None
        try:
            from fairmark.remote.profiling import HostTrial
        except ImportError:
            raise RuntimeError(PROFILES_NEED_FAIRMARK) from None
        hold_scratch(req["profile"]["ctx"]["trial_dir"])  # the controller's trial directory, made here
        return HostTrial(self.__dict__.setdefault("profilers", {}), req["profile"], place_cgroup)

    def op_profilers(self, req: dict) -> dict:
        """Whether each profiler (cpu, locks, syscalls) can work on this host: {name: why not, or None}."""
        try:
            from fairmark.remote.profiling import check
        except ImportError:
            raise RuntimeError(PROFILES_NEED_FAIRMARK) from None
        return {"unavailable": check(self.__dict__.setdefault("profilers", {}), list(req.get("names") or ()))}

    def _exec(self, req: dict, spec: dict, out_dir: str) -> dict:
        argv = [str(a) for a in spec["argv"]]
        timeout_s, grace_s = spec.get("timeout_s"), float(spec.get("grace_s", 2.0))
        limit = int(spec.get("tail_bytes", 1 << 20))
        so, se = os.path.join(out_dir, "stdout"), os.path.join(out_dir, "stderr")
        m = {
            "argv": argv,
            "status": "failed",
            "exit_code": None,
            "signal": None,
            "wall_s": 0.0,
            "user_s": 0.0,
            "sys_s": 0.0,
            "max_rss_kib": 0,
            "error": None,
            "leftovers_killed": 0,
            "version": SPEC_VERSION,
        }
        res = {"measured": m, "stdout_b64": "", "stderr_b64": "", "files": {}, "boot_id": boot_id()}
        monitor = Monitor(req["monitor"]) if req.get("monitor") else None
        if monitor:
            monitor.sample()  # before the trial exists, as the local monitor does
        with open(so, "wb") as fo, open(se, "wb") as fe, contextlib.ExitStack() as placed:
            joined = placer.join(spec.get("place_cgroup") or None, placed)  # before the clock starts
            t0 = time.monotonic()
            try:
                proc, r = _launch(argv, fo, fe, _env(req), spec.get("cwd") or None, spec, joined)
            except OSError as exc:
                m["error"] = f"cannot start {argv[0]!r}: {exc.strerror or exc}"
                return res
            try:
                timed_out, lost = self._wait(proc.pid, timeout_s, monitor)
                if timed_out or lost:
                    kill_group(proc.pid, grace_s, KILL_WAIT_S)
                _, status, ru = os.wait4(proc.pid, 0)
                wall = time.monotonic() - t0
                proc.returncode = os.waitstatus_to_exitcode(status)
                report = read_launch_report(r) if r is not None else None
            finally:
                if r is not None:
                    os.close(r)
        if monitor:
            monitor.sample()
            res["monitor"] = {"samples": monitor.samples, "errors": monitor.errors[:10]}
        if lost:
            kill_group(proc.pid, grace_s, KILL_WAIT_S)
            return res  # nobody to answer to
        if report and report["exec_errno"]:
            m["error"] = f"cannot start {argv[0]!r}: {os.strerror(report['exec_errno'])}"
            return res
        if not timed_out and group_alive(proc.pid):
            m["leftovers_killed"] = 1  # background children outliving the trial would perturb the next
            kill_group(proc.pid, grace_s, KILL_WAIT_S)
        _settle(m, status, ru, wall, timeout_s if timed_out else None, report)
        res["stdout_b64"], res["stderr_b64"] = _b64(_tail(so, limit)), _b64(_tail(se, limit))
        res["files"] = {p: _b64(_tail(p, limit)) for p in spec.get("files") or () if os.path.isfile(p)}
        return res

    def _wait(self, pid: int, timeout_s: float | None, monitor: Monitor | None = None) -> tuple[bool, bool]:
        """(timed out, connection lost): wait for the trial's exit while watching stdin for end of input, and
        take the monitor's samples at their interval meanwhile."""
        fd, _ = _exit_fd(pid)
        deadline = time.monotonic() + timeout_s if timeout_s else None
        try:
            while True:
                now = time.monotonic()
                left = None if deadline is None else max(0.0, deadline - now)
                if left == 0.0:
                    return True, False
                wait = min(left if left is not None else 3600.0, 3600.0)
                if monitor:
                    if now >= monitor.next_at:
                        monitor.sample()
                    wait = max(0.0, min(wait, monitor.next_at - time.monotonic()))
                ready, _, _ = select.select([fd, self.rfd], [], [], wait)
                if fd in ready:
                    return False, False
                if self.rfd in ready:
                    chunk = os.read(self.rfd, 1 << 16)
                    if not chunk:
                        self.eof = True
                        return False, True
                    self.buf += chunk  # a request sent early waits its turn
        finally:
            os.close(fd)

    def op_capture(self, req: dict) -> dict:
        files: dict[str, str] = {}
        for pattern in req.get("files") or ():
            for src in sorted(glob.glob("/" + pattern)):
                try:
                    with open(src, "rb") as fh:
                        files[src.lstrip("/")] = _b64(fh.read())
                except OSError:
                    continue
        for pattern in req.get("boot_files") or ():
            pattern = pattern.replace("{release}", platform.release())
            for src in glob.glob("/" + pattern):
                try:
                    with open(src, "rb") as fh:
                        files[src.lstrip("/")] = _b64(fh.read())
                except OSError:
                    continue
        dirs = [d.lstrip("/") for pattern in req.get("dirs") or () for d in glob.glob("/" + pattern)]
        commands = {name: _run(list(argv), 30.0) for name, argv in (req.get("commands") or {}).items()}
        links = {}
        for rel in req.get("links") or ():
            try:
                links[rel] = os.readlink("/" + rel)
            except OSError:
                pass
        env = {k: v for k, v in os.environ.items() if k != "FAIRMARK_AGENT_STATE"}
        return {
            "os": platform.system().lower(),
            "files": files,
            "dirs": dirs,
            "commands": commands,
            "links": links,
            "environ": env,
            "hostname": socket.gethostname(),
        }

    def op_read(self, req: dict) -> dict:
        out: dict[str, str | None] = {}
        for path in req.get("paths") or ():
            try:
                with open(path, "rb") as fh:
                    out[path] = _b64(fh.read())
            except OSError:
                out[path] = None
        return {"files": out, "monotonic_s": time.monotonic()}

    def op_lock(self, req: dict) -> dict:
        """Take this host's run lock for the session (flock: the kernel drops it when this agent dies).
        {"held": true} or {"held": false, "owner": what the holder wrote}."""

        os.makedirs(state_dir(), mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(state_dir(), "host.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            with os.fdopen(fd) as fh:
                try:
                    owner = json.loads(fh.read() or "{}")
                except ValueError:
                    owner = {}
            return {"held": False, "owner": owner}
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(dict(req.get("owner") or {}, agent_pid=os.getpid())).encode())
        self.__dict__["lock_fd"] = fd  # held until this agent exits
        return {"held": True}

    def op_sysctl_read(self, req: dict) -> dict:
        return {"values": {n: sysctl_read(n) for n in req.get("names") or ()}}

    def op_restore(self, req: dict) -> dict:
        return {"restored": self.restore()}

    def op_check(self, req: dict) -> dict:
        """Whether a variant's changes can be made here, changing nothing: {"refused": {kind: why}} for
        req["changes"] {kind: value} (the controller asks at connect, before any trial)."""
        refused = {}
        ctx = self.changes.context(req)
        for kind, value in (req.get("changes") or {}).items():
            try:
                self.changes.check(str(kind), value, ctx)
            except Exception as exc:
                refused[kind] = getattr(exc, "message", None) or str(exc)
        return {"refused": refused}

    def op_change(self, req: dict) -> dict:
        """One kind's value for a variant (req: kind, set — None: the host's own —, variant, env): its driver's
        change, the same as the controller's (fairmark.run.variants.<kind>), journaled here."""
        return self.changes.change(str(req.get("kind")), req.get("set"), self.changes.context(req))

    def op_recover(self, req: dict) -> dict:
        return {"recovered": recover_dead()}

    def op_adapter(self, req: dict) -> dict:
        """A tool workload's adapter life cycle, run here (needs fairmark installed on this host)."""
        try:
            from fairmark.remote.tooling import handle
        except ImportError:
            raise RuntimeError(
                'tool workloads need fairmark on the host: set agent = ["fairmark", "agent"] '
                "in its [hosts.NAME]; the shipped agent runs command workloads only"
            ) from None
        if req.get("method") == "setup":
            hold_scratch(req["ctx"]["scratch"])  # the controller's scratch path, made and held here
        return handle(self.__dict__.setdefault("adapters", {}), req)

    def op_mkdirs(self, req: dict) -> dict:
        for d in req.get("paths") or ():
            hold_scratch(d)
        return {}

    def op_rmtree(self, req: dict) -> dict:
        for d in req.get("paths") or ():
            shutil.rmtree(d, ignore_errors=True)
            release_scratch(d)
        return {}

    def op_which(self, req: dict) -> dict:
        return {"found": {n: shutil.which(n) for n in req.get("names") or ()}}

    def op_write(self, req: dict) -> dict:
        for path, data in (req.get("files") or {}).items():
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(base64.b64decode(data))
        return {}


def _cpus_placement() -> str | None:
    """How a `cpus` variant's trials are placed on this host: "cpuset v1", "cpuset v2", or "affinity: WHY"."""
    try:
        from fairmark.run.variants import cpus as cpus_mod
    except ImportError:
        return None
    problem = cpus_mod.cpuset_problem()
    if problem:
        return f"affinity: {problem}"
    found = cpus_mod.cpuset_hierarchy()
    return f"cpuset v{found[1]}" if found else None


def main() -> int:
    # A write to a connection that is gone must fail (EPIPE), not kill the agent before it restores the host.
    # (The trials get the default SIGPIPE back: subprocess restores it in the child.)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    session = Session()
    try:
        session.serve()
    finally:
        # The controller is gone (bye, or end of input when it died or the connection dropped): put the host
        # back now. Should this agent itself be killed first, its journal stays and the next contact undoes it.
        session._teardown_adapters()
        session.restore()
    return 0


if __name__ == "__main__":
    sys.exit(main())
