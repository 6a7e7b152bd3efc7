"""The controller's connection to one host: the user's own `ssh`, one multiplexed ControlMaster per host, and
fairmark's agent at the other end speaking JSON lines (protocol in `fairmark.remote.agent`).

API (also for other parts of fairmark that need a host, e.g. rebooting it):

    spec = HostSpec("bsd", ssh="root@bsd-box", ssh_options=("-p", "2222"))
    with HostConnection(spec) as host:
        host.hello                        # {"os", "hostname", "boot_id", "recovered": [...], …} of this session
        host.call("exec", spec=…)         # any agent operation; raises ConnectionLost / AgentError
        RemoteExecutor(host)(trial_spec)  # a TrialSpec → Measured, executed there (fairmark.remote.executor)
        host.run(["uname", "-a"])         # a plain command over the same master (no agent), CompletedProcess
        host.reconnect()                  # after ConnectionLost: new master + agent, with back-off
        host.boot_id()                    # the host's current boot id (a fresh contact)
        host.wait_reboot(old_boot_id)     # after `host.run(["shutdown", "-r", "now"])`: the new boot's hello

Nothing listens on a port on either side: the agent is a child of the SSH session. ssh is started with
BatchMode (no prompts: keys, agent or ProxyJump as the user's ssh_config says) and ServerAlive probes so a
dead link is noticed within ~15 s. The agent is the `agent` command of the host spec (a fairmark installed
there), or else this package's agent.py, shipped on the session's stdin ahead of the protocol (the command line is a
short bootstrap: dropbear takes no command over 9000 bytes) and run by the host's python3.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import functools
import hashlib
import ipaddress
import itertools
import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairmark.errors import EnvironmentRefused, FairmarkError
from fairmark.remote import wire
from fairmark.remote.agent import KILL_WAIT_S, PROTOCOL
from fairmark.run.guard.lock import pid_alive
from fairmark.run.profiles.base import PERF_WAIT_CAP_S

SSH_BASE_OPTIONS = ("-o", "BatchMode=yes", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3")
CONNECT_TIMEOUT_S = 30.0
# How long the controller waits for an answer (docs/security.md): an agent that never answers must not hang
# it. A request at connection time gets AGENT_DEADLINE_S, the slower ones a multiple of it (DEADLINE_FACTOR: the
# capture runs up to three 30 s commands, a scratch file system is made or unmounted, a tool's data set is
# primed), a trial its own timeout + grace + the agent's kill wait + AGENT_DEADLINE_S. On expiry the host is
# "connection lost": the run is interrupted, resumable. FAIRMARK_AGENT_DEADLINE_S overrides it (tests).
AGENT_DEADLINE_S = 60.0
DEADLINE_FACTOR = {
    "capture": 3,
    "mount": 10,
    "cpus": 10,
    "restore": 10,
    "bye": 10,
    "recover": 10,
    "adapter": 60,
}
# The longest answer line taken (its bytes are held, then parsed: memory stays bounded by a few times this);
# beyond it the agent is dropped with a protocol error. An exec answer carries at most tail_bytes (1 MiB) of each
# output and of each output file, in base64. FAIRMARK_AGENT_MAX_LINE_BYTES overrides it (tests).
MAX_LINE_BYTES = 64 << 20


def _backoff() -> tuple[float, ...]:
    """Waits before each reconnection attempt; FAIRMARK_RECONNECT_BACKOFF_S="0.5,1,2" overrides (tests)."""
    text = os.environ.get("FAIRMARK_RECONNECT_BACKOFF_S")
    return tuple(float(x) for x in text.split(",")) if text else (0.5, 1.0, 2.0, 4.0, 8.0)


def agent_deadline_s(op: str, args: dict[str, Any]) -> float | None:
    """How long request `op` may take before its host counts as lost (None: no limit — a trial without a
    timeout, as it has none on this machine)."""
    base = float(os.environ.get("FAIRMARK_AGENT_DEADLINE_S") or AGENT_DEADLINE_S)
    if op == "adapter":  # a tool's set-up primes its data set; its before_trial may run a command
        return base * {"setup": 60, "teardown": 10, "before_trial": 10}.get(str(args.get("method")), 1)
    if op != "exec":
        return base * DEADLINE_FACTOR.get(op, 1)
    spec = args.get("spec") or {}
    if spec.get("timeout_s") is None:
        return None
    # a profiled trial's profiler reduces what it recorded there before the answer (perf report), after perf
    # started and stopped, each given up to PERF_WAIT_CAP_S on a slow host (a loaded QEMU guest)
    margin = base * 5 + 2 * PERF_WAIT_CAP_S if args.get("profile") else base
    return float(spec["timeout_s"]) + float(spec.get("grace_s") or 2.0) + 2 * KILL_WAIT_S + margin


def max_line_bytes() -> int:
    return int(os.environ.get("FAIRMARK_AGENT_MAX_LINE_BYTES") or MAX_LINE_BYTES)


class ConnectionLost(FairmarkError):
    """The SSH connection or the agent went away in the middle of a request."""

    exit_status = EnvironmentRefused.exit_status
    resumable = True  # the run is marked interrupted: `fairmark resume RUN` continues it


class ProtocolError(ConnectionLost):
    """The agent broke the protocol: an answer too long, not JSON, of the wrong shape, naming a file it was not
    asked for. Its session is dropped (out of step, or not to be trusted); like a lost connection the run is
    interrupted and resumable, once the host is fixed."""

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(
            message,
            hint=hint
            or "its agent answered what no fairmark agent sends (docs/security.md): check the host; "
            "once it is fixed, `fairmark resume RUN` continues an interrupted run",
        )


class NoAnswer(ConnectionLost):
    """The agent did not answer within the request's deadline (agent_deadline_s): its session is dropped; a host
    that hangs is not retried within the run, which is interrupted (resumable)."""


class AgentError(FairmarkError):
    """The agent answered a request with an error."""


@dataclass(frozen=True)
class HostSpec:
    name: str
    ssh: str  # what `ssh` is given: an alias from ~/.ssh/config, user@addr, …
    ssh_options: tuple[str, ...] = ()
    agent: tuple[str, ...] = ()  # e.g. ("fairmark", "agent") when fairmark is installed there
    python: str | None = None  # None: the first Python 3 of PYTHON_PLACES on the host
    become: tuple[str, ...] = ()  # e.g. ("sudo", "-n"): the agent and plain commands run as root through it


LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def reaches_this_machine(spec: HostSpec) -> bool:
    """Whether ssh reaches the host through this machine's loopback — a VM's forwarded port, a container's: its
    CPUs are then this machine's, and the work here competes with its trials. The address is ssh's own (`ssh
    -G`: an alias's HostName, the options'); a ProxyJump or ProxyCommand makes loopback another machine's."""
    try:
        out = subprocess.run(
            ["ssh", "-G", *spec.ssh_options, "--", spec.ssh], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    conf = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    if conf.get("proxyjump", "none") != "none" or conf.get("proxycommand", "none") != "none":
        return False
    name = conf.get("hostname") or spec.ssh.rsplit("@", 1)[-1]
    if name.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def _fairmark_imports(path: Path) -> set[str]:
    """The fairmark modules a source file imports, wherever (in a function too), but not for type checking."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return {n for n in names if n.split(".")[0] == "fairmark"}


@functools.cache
def shipped_modules() -> dict[str, str | None]:
    """fairmark's modules the agent makes the variants' system changes with, shipped with it: the driver of
    every kind an agent applies (plan/kinds.py REMOTE_KEYS, fairmark.run.variants.<kind>), the trial's placer,
    and every fairmark module they import (standard library only; a test checks it). {module: its file under
    fairmark/, None for a package, served empty where the host has no fairmark}. The launcher travels apart."""
    from fairmark.plan.kinds import REMOTE_KEYS

    root = Path(__file__).parents[1]
    todo = ["fairmark.run.launch.placer", "fairmark.run.variants.driver"]
    todo += [f"fairmark.run.variants.{kind}" for kind in REMOTE_KEYS]
    out: dict[str, str | None] = {}
    while todo:
        name = todo.pop()
        rel = Path(*name.split(".")[1:])
        if (
            name in out
            or name == "fairmark.run.launch.launcher"
            or not (root / rel.with_suffix(".py")).is_file()
        ):
            continue  # a package, a name imported from a module, or what travels apart
        out[name] = rel.with_suffix(".py").as_posix()
        todo += sorted(_fairmark_imports(root / rel.with_suffix(".py")))
    for name in list(out):
        parts = name.split(".")
        out |= {".".join(parts[:i]): None for i in range(1, len(parts))}
    return dict(sorted(out.items()))


def agent_source() -> bytes:
    """The agent as one standard-library program: the trial launcher's module (fairmark.run.launch.launcher, which the
    agent imports where fairmark is installed) and its C program's files (`_C_SOURCES`), the text of fairmark's
    modules it reuses (`_SHIPPED`), then agent.py (its `from __future__` is the launcher's, first)."""
    root = Path(__file__).parents[1]
    launcher = (root / "run" / "launch" / "launcher.py").read_bytes()
    shipped = {name: (root / rel).read_text() if rel else None for name, rel in shipped_modules().items()}
    agent = (
        (Path(__file__).parent / "agent.py")
        .read_bytes()
        .replace(b"from __future__ import annotations\n", b"", 1)
    )
    # the launcher's C program, which the launcher module reads from the package where fairmark is installed
    c_sources = {
        name: (root / "run" / "launch" / "c" / name).read_text()
        for name in ("launcher.c", "fairmark_launch.h")
    }
    shipped_c = b"\n\n_C_SOURCES = " + repr(c_sources).encode()
    return launcher + shipped_c + b"\n\n_SHIPPED = " + repr(shipped).encode() + b"\n\n" + agent


@functools.cache
def shipped_agent_payload() -> bytes:
    """What is written to the shipped agent's stdin before the protocol's first line: the agent's source, zlib
    compressed; the bootstrap of `shipped_agent_command` reads exactly these bytes and no more."""
    return zlib.compress(agent_source(), 9)


# Where a host's Python 3 is looked for when its [hosts] entry names none, in this order: the login PATH's, then
# the places packages put it where it is not on that PATH or not called python3 (FreeBSD's pkg installs
# /usr/local/bin/python3.11 and a `python3` link only with the python3 meta-package).
PYTHON_PLACES = (
    "python3",
    "/usr/local/bin/python3",
    "/usr/bin/python3",
    *(f"{d}python3.{m}" for m in range(14, 8, -1) for d in ("", "/usr/local/bin/")),
)


def python_probe(python: str | None) -> list[str]:
    """The argv prefix that runs the host's Python 3: `python` as given, or a POSIX sh that execs the first of
    PYTHON_PLACES found (one line, no single quote and no `!`: it is quoted once for the login shell, csh
    included), and says which places were tried when none is."""
    if python:
        return [python]
    places = " ".join(PYTHON_PLACES)
    script = (
        f'for p in {places}; do if command -v "$p" >/dev/null 2>&1; then exec "$p" "$@"; fi; done; '
        'echo "fairmark: no Python 3 on this host (python3, python3.9 to 3.14, on the login PATH, in /usr/bin '
        'or /usr/local/bin): set python = in its [hosts] entry" >&2; exit 127'
    )
    return ["/bin/sh", "-c", script, "sh"]


def shipped_agent_command(python: str | None = None, become: tuple[str, ...] = ()) -> str:
    """A shell command that runs this package's agent with nothing installed on the host but Python 3.

    The command is a short bootstrap (under 400 bytes whatever the agent's size; dropbear refuses a command
    over 9000 bytes, and the agent inline was 18 KB): it reads exactly len(payload) bytes of stdin with
    os.read (unbuffered, so the protocol lines after them stay unread in the pipe for the agent's own reads),
    checks their SHA-256 — a short or damaged stream ends it (exit status 1, a message on stderr) before anything runs — and
    runs them. The controller writes `shipped_agent_payload()` to stdin first, then the protocol's lines.
    One line, no single quotes: csh (FreeBSD root's shell) takes a newline in quotes as an error, and the
    shell's quoting stays the plain '…' of shlex.quote."""
    payload = shipped_agent_payload()
    n, digest = len(payload), hashlib.sha256(payload).hexdigest()
    read = f"b=bytearray()\\nwhile len(b)<{n}:\\n c=os.read(0,{n}-len(b))\\n if not c:break\\n b+=c"
    boot = (
        f'import hashlib,os,sys,zlib;exec("{read}");'
        f'hashlib.sha256(b).hexdigest()=="{digest}" or sys.exit("fairmark agent: short or damaged on stdin");'
        'exec(compile(zlib.decompress(b),"fairmark-agent","exec"))'
    )
    return shlex.join([*become, *python_probe(python), "-c", boot])


DIR_PREFIX = "fm-ssh-"


def _die_with_parent(parent: int) -> Any:
    """Linux: the master connection gets SIGTERM when the controller dies, even by SIGKILL — else an `ssh -N`
    master would hold its connection to the host open forever (its ServerAlive probes keep it alive)."""
    if not hasattr(os, "sched_setaffinity"):  # not Linux: the next contact's sweep removes what is left
        return None

    def arm() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the controller died before the signal was armed
            os._exit(1)

    return arm


def sweep_stale_dirs() -> list[str]:
    """Remove the connection directories (control socket, ssh's error output) of controllers that died without
    closing them; returns what was removed."""
    removed = []
    for d in Path("/tmp").glob(DIR_PREFIX + "*"):
        try:
            if d.stat().st_uid != os.geteuid():
                continue
            pid = int((d / "owner").read_text())
        except (OSError, ValueError):
            continue  # not ours, or its owner is still writing it
        if not pid_alive(pid):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(str(d))
    return removed


@dataclass
class HostConnection:
    spec: HostSpec
    connect_timeout_s: float = CONNECT_TIMEOUT_S
    hello: dict[str, Any] = field(default_factory=dict)
    generation: int = 0  # agents started so far: state kept by an earlier agent (servers …) is gone
    _dir: str = ""
    _master: subprocess.Popen[bytes] | None = None
    _agent: subprocess.Popen[bytes] | None = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _lines: wire.LineReader = field(default_factory=lambda: wire.LineReader(-1))

    # -- ssh ------------------------------------------------------------------------------------------------
    @property
    def control_path(self) -> str:
        return os.path.join(self._dir, "ctl")

    def ssh_argv(self, *remote: str, master: bool = False) -> list[str]:
        """`ssh` with the user's options, over this connection's ControlMaster socket."""
        mux = ["-o", f"ControlPath={self.control_path}", "-o", f"ControlMaster={'yes' if master else 'no'}"]
        # `--` before the destination: ssh parses options after it too unless `--` came first, so there it
        # keeps both the destination and the remote command from being read as options
        return ["ssh", *SSH_BASE_OPTIONS, *mux, *self.spec.ssh_options, "--", self.spec.ssh, *remote]

    def _start_master(self) -> None:
        if shutil.which("ssh") is None:
            raise EnvironmentRefused(
                "host connections need the OpenSSH client `ssh` (Debian: openssh-client)"
            )
        if not self._dir:  # a short path: a unix socket path must fit in 104 bytes
            sweep_stale_dirs()
            self._dir = tempfile.mkdtemp(prefix=DIR_PREFIX, dir="/tmp")
            Path(self._dir, "owner").write_text(str(os.getpid()))
        err = open(os.path.join(self._dir, "master.err"), "wb")  # noqa: SIM115 - the master's lifetime
        self._master = subprocess.Popen(
            self._master_argv(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,  # a Ctrl-C for the controller is not a hang-up for the connection
            preexec_fn=_die_with_parent(os.getpid()),
        )
        deadline = time.monotonic() + self.connect_timeout_s
        while not os.path.exists(self.control_path):
            if self._master.poll() is not None or time.monotonic() > deadline:
                self._stop_master()
                why = Path(self._dir, "master.err").read_text(errors="replace").strip()
                raise ConnectionLost(
                    f"host {self.spec.name}: cannot connect with `ssh {self.spec.ssh}`: {why or 'timed out'}",
                    hint="check that `ssh "
                    + " ".join([*self.spec.ssh_options, self.spec.ssh])
                    + " true` works without a prompt (keys, known_hosts)",
                )
            time.sleep(0.02)

    def _master_argv(self) -> list[str]:
        argv = self.ssh_argv(
            master=True
        )  # ends with `-- DESTINATION`; -N (no command) is an option: before it
        end = argv.index("--")
        return [*argv[:end], "-N", *argv[end:]]

    def _stop_master(self) -> None:
        if self._master and self._master.poll() is None:
            self._master.terminate()
            try:
                self._master.wait(5)
            except subprocess.TimeoutExpired:
                self._master.kill()
                self._master.wait()
        self._master = None

    def _master_alive(self) -> bool:
        return bool(self._master and self._master.poll() is None and os.path.exists(self.control_path))

    # -- the agent --------------------------------------------------------------------------------------------
    def _agent_command(self) -> str:
        if self.spec.agent:
            return shlex.join([*self.spec.become, *self.spec.agent])
        return shipped_agent_command(self.spec.python, self.spec.become)

    def connect(self) -> dict[str, Any]:
        """Open the master (if needed) and start an agent; returns its hello (also kept in .hello)."""
        if not self._master_alive():
            self._stop_master()
            self._start_master()
        self._agent = subprocess.Popen(
            self.ssh_argv(self._agent_command()),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(os.path.join(self._dir, "agent.err"), "ab"),  # noqa: SIM115
            start_new_session=True,
        )
        assert self._agent.stdin is not None and self._agent.stdout is not None
        # Both pipes are used through their descriptors alone, without blocking: every request and answer has
        # a deadline (agent_deadline_s), every answer line a size limit (max_line_bytes).
        os.set_blocking(self._agent.stdin.fileno(), False)
        os.set_blocking(self._agent.stdout.fileno(), False)
        self._lines = wire.LineReader(self._agent.stdout.fileno())
        if not self.spec.agent:
            self._ship_agent()
        self.generation += 1
        self.hello = self.call("hello")
        if self.hello.get("protocol") != PROTOCOL:
            raise AgentError(
                f"host {self.spec.name}: agent speaks protocol {self.hello.get('protocol')}, "
                f"this fairmark speaks {PROTOCOL}",
                hint="update fairmark on the host",
            )
        return self.hello

    def _ship_agent(self) -> None:
        """The agent's source ahead of the protocol's lines on the same stdin (see shipped_agent_command)."""
        assert self._agent is not None and self._agent.stdin is not None
        # A host without python3 closes the pipe early: the hello that follows reports the lost connection
        # with ssh's or the shell's words from agent.err (and one that reads nothing, that it did not answer).
        with contextlib.suppress(OSError, wire.Silent):
            deadline = time.monotonic() + (agent_deadline_s("hello", {}) or 0.0)
            wire.send(self._agent.stdin.fileno(), shipped_agent_payload(), deadline)

    def call(self, op: str, deadline_s: float | None = None, **args: Any) -> dict[str, Any]:
        """One request, one answer, held to its record (remote/wire.py). ConnectionLost when the session is gone
        or the agent did not answer within `deadline_s` (default: agent_deadline_s; the request's effect on the
        host is then unknown; the agent kills a trial whose controller vanished), ProtocolError when the answer
        is not one (both drop the agent), AgentError when the agent answered with an error."""
        with self._lock:
            agent = self._agent
            if agent is None or agent.stdin is None or agent.stdout is None:
                raise ConnectionLost(f"host {self.spec.name}: not connected (asked to {op})")
            if (code := agent.poll()) is not None:
                # the session ended between two requests: say how, for whoever reads the interrupted run
                raise ConnectionLost(
                    f"host {self.spec.name}: not connected: its session had ended (exit {code}) when asked "
                    f"to {op}{self._why()}"
                )
            rid = next(self._ids)
            line = json.dumps({"v": PROTOCOL, "id": rid, "op": op, **args}, separators=(",", ":")) + "\n"
            wait = agent_deadline_s(op, args) if deadline_s is None else deadline_s
            envelope = self._exchange(op, line.encode(), wait)
            try:
                if envelope["id"] != rid:
                    raise wire.BadAnswer(f"answer {envelope['id']} to request {rid}")
                if not envelope["ok"]:
                    raise AgentError(f"host {self.spec.name}: {op}: {envelope.get('error')}")
                return wire.check(op, args, envelope["result"])
            except wire.BadAnswer as exc:
                self._drop_agent()
                raise ProtocolError(f"host {self.spec.name}: protocol error: {op}: {exc}") from None

    def _exchange(self, op: str, request: bytes, wait: float | None) -> dict[str, Any]:
        """Send one request and read its answer's envelope within `wait` seconds (called with the lock held)."""
        assert self._agent is not None and self._agent.stdin is not None
        deadline = None if wait is None else time.monotonic() + wait
        try:
            wire.send(self._agent.stdin.fileno(), request, deadline)
            answer = self._lines.readline(deadline, max_line_bytes())
            if not answer:
                raise ConnectionLost(f"host {self.spec.name}: connection lost{self._why()}")
            return wire.decode(answer)
        except wire.Silent:
            self._drop_agent()
            raise NoAnswer(
                f"host {self.spec.name}: connection lost: no answer to {op} within {wait:g} s",
                hint="once the host answers again, `fairmark resume RUN` continues an interrupted run; "
                "FAIRMARK_AGENT_DEADLINE_S sets how long a request may take (docs/security.md)",
            ) from None
        except wire.BadAnswer as exc:
            self._drop_agent()
            raise ProtocolError(f"host {self.spec.name}: protocol error: {op}: {exc}") from None
        except OSError:  # the pipe broke (EPIPE): the agent is gone
            raise ConnectionLost(f"host {self.spec.name}: connection lost{self._why()}") from None
        except BaseException:
            # Interrupted (Ctrl-C, SIGTERM) before the answer came: the session is out of step, and a "bye"
            # would wait behind the trial the agent runs. The end of its input makes the agent kill that
            # trial and put back what it changed, at once.
            self._drop_agent()
            raise

    def _why(self) -> str:
        err = Path(self._dir, "agent.err")
        text = err.read_text(errors="replace").strip().splitlines() if err.exists() else []
        return f" ({text[-1]})" if text else ""

    def reconnect(self, backoff_s: tuple[float, ...] | None = None) -> dict[str, Any]:
        """Drop what is left of the session and connect again, waiting longer after each failed attempt."""
        last: Exception | None = None
        for delay in (0.0, *(backoff_s if backoff_s is not None else _backoff())):
            time.sleep(delay)
            self._drop_agent()
            try:
                return self.connect()
            except (ConnectionLost, AgentError) as exc:
                last = exc
        raise ConnectionLost(
            f"host {self.spec.name}: could not reconnect: {last}",
            hint="when the host is back, `fairmark resume RUN` continues the run",
        )

    def _drop_agent(self) -> None:
        if self._agent is None:
            return
        with contextlib.suppress(OSError):
            if self._agent.stdin:
                self._agent.stdin.close()
        try:
            self._agent.wait(5)
        except subprocess.TimeoutExpired:
            self._agent.kill()
            self._agent.wait()
        if self._agent.stdout:
            self._agent.stdout.close()
        self._agent = None

    # -- conveniences ---------------------------------------------------------------------------------------
    def run(self, argv: list[str], *, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
        """A plain command on the host over the master connection (no agent; for reboots and the like)."""
        if not self._master_alive():
            self._stop_master()
            self._start_master()
        return subprocess.run(
            self.ssh_argv(shlex.join([*self.spec.become, *argv])),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def boot_id(self) -> str:
        return str(self.call("hello", recover=False)["boot_id"])

    def wait_reboot(
        self, previous_boot_id: str, *, timeout_s: float = 900.0, poll_s: float = 5.0
    ) -> dict[str, Any]:
        """Reconnect until the host answers from a boot other than `previous_boot_id`; its hello. Raises
        ConnectionLost after timeout_s (the host did not come back, or came back from the same boot)."""
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            self._drop_agent()
            self._stop_master()
            try:
                hello = self.connect()
                if hello.get("boot_id") and hello["boot_id"] != previous_boot_id:
                    return hello
                last = None
            except (ConnectionLost, AgentError) as exc:
                last = exc
            time.sleep(poll_s)
        why = f": {last}" if last else f" (still boot {previous_boot_id})"
        raise ConnectionLost(f"host {self.spec.name}: no new boot within {timeout_s:g} s{why}")

    def close(self) -> None:
        """End the agent (it restores what it changed), then the master connection."""
        if self._agent is not None and self._agent.poll() is None:
            with contextlib.suppress(FairmarkError, json.JSONDecodeError):
                self.call("bye")
        self._drop_agent()
        self._stop_master()
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = ""

    def __enter__(self) -> HostConnection:
        try:
            self.connect()
        except BaseException:
            self.close()  # a host that cannot be reached leaves no master, agent or directory behind
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
