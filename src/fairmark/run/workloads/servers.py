"""Servers fairmark starts itself for a workload: PostgreSQL, MariaDB, redis, nginx, iperf3.

Every server is our own child process (never a daemon that detaches), in its own session so a Ctrl-C at the
terminal does not kill it before teardown can stop it cleanly. That makes stopping exact: signal the process
group, `wait()` on the child (no zombie left for a slow PID 1 to reap), and remove the data directory.

Ports are chosen free at start time by binding port 0 on loopback; nothing listens beyond loopback.
A server that does not come up raises SetupError carrying the tail of its log.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import re
import resource
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar, TypeVar

from fairmark.run.guard.lock import pid_alive, proc_state  # noqa: F401 - proc_state is part of this module's API
from fairmark.run.workloads.base import SetupError, WorkloadContext

LOOPBACK = "127.0.0.1"
SOCKET_DIR_MAX = 80  # leaves room for "/sock/.s.PGSQL.65535" within sun_path's 108 bytes


def _version_key(initdb: Path) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", initdb.parts[-3])]  # /usr/lib/postgresql/<15>/bin/initdb


def find_pg_bin() -> Path:
    """Where PostgreSQL's server programs are: $FAIRMARK_PG_BIN, else Debian's versioned directory (newest),
    else next to `initdb` on PATH (Fedora, FreeBSD)."""
    if os.environ.get("FAIRMARK_PG_BIN"):
        return Path(os.environ["FAIRMARK_PG_BIN"])
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=_version_key)
    if debian:
        return debian[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else Path("/usr/lib/postgresql/15/bin")


PG_BIN = find_pg_bin()


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nobody listens on right now (the kernel's choice for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


pid_running = pid_alive  # the one liveness check (run/guard/lock.py): a zombie is not running


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def server_user(preferred: str) -> str | None:
    """The account a server runs as: `preferred` when we are root (PostgreSQL refuses root), else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(preferred)
    except KeyError:
        raise SetupError(
            f"user {preferred!r} does not exist; the server cannot run as root",
            hint="install the server's package (it creates the user) or run fairmark as an ordinary user",
        ) from None
    return preferred


def as_user(user: str | None) -> dict:
    """subprocess keywords that run a child as `user` (uid, primary group, no supplementary groups) —
    what `runuser -u USER --` does, without an extra process between us and the server."""
    if user is None:
        return {}
    pw = pwd.getpwnam(user)
    return {
        "user": pw.pw_uid,
        "group": pw.pw_gid,
        "extra_groups": [],
        "env": os.environ | {"HOME": pw.pw_dir},
    }


def grant(path: Path, user: str | None) -> None:
    """Give `user` the tree at `path` and let it walk to it.

    Scratch directories are 0700 (mkdtemp); search permission (o+x, not listing) is added to the ancestors
    we own inside the temporary directory, which is harmless there and refused anywhere else."""
    if user is None:
        return
    pw = pwd.getpwnam(user)
    for p in [path, *path.rglob("*")]:
        os.chown(p, pw.pw_uid, pw.pw_gid, follow_symlinks=False)
    tmp = Path(tempfile.gettempdir()).resolve()
    for parent in path.resolve().parents:
        mode = parent.stat().st_mode
        if mode & stat.S_IXOTH:
            continue
        if parent.is_relative_to(tmp) and parent != tmp and parent.stat().st_uid == os.geteuid():
            parent.chmod(mode | stat.S_IXOTH)
        else:
            raise SetupError(
                f"user {user!r} cannot reach {path}: {parent} is not searchable by others",
                hint=f"put fairmark's scratch directory under {tmp} (set TMPDIR) or make {parent} o+x",
            )


def nofile_for(wanted: int | None) -> int:
    """The descriptor limit a server can have: what it wants, capped by the hard limit (raising that needs
    CAP_SYS_RESOURCE, which even root lacks in many containers); none wanted: what it inherits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if wanted is None:
        return soft
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def wait_until(
    ready: Callable[[], bool], proc: subprocess.Popen, timeout_s: float, what: str, log: Path
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SetupError(
                f"{what} exited with status {proc.returncode} while starting; log tail:\n{log_tail(log)}"
            )
        if ready():
            return
        time.sleep(0.05)
    raise SetupError(f"{what} not ready after {timeout_s:g} s; log tail:\n{log_tail(log)}")


def tcp_answers(port: int, request: bytes, expect: bytes, host: str = LOOPBACK) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1) as s:
            s.sendall(request)
            return s.recv(64).startswith(expect)
    except OSError:
        return False


class ManagedServer:
    """One server process: start(), stop(), and its directory removed on stop. Use as a context manager."""

    kind: ClassVar[str] = "server"
    run_as: ClassVar[str] = ""  # account to use when root ("" = stay root)
    start_timeout_s: ClassVar[float] = 30.0
    stop_signal: ClassVar[int] = signal.SIGTERM
    nofile: int | None = None  # RLIMIT_NOFILE for the server, when it needs more than it inherits

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.user = server_user(self.run_as) if self.run_as else None
        self.log = self.dir / f"{self.kind}.log"
        self._short_dir: Path | None = None

    # -- what a concrete server provides --------------------------------------------------------------
    def prepare(self) -> None:
        """Create data and config files (once, before the first start)."""

    def argv(self) -> list[str]:
        raise NotImplementedError

    def ready(self) -> bool:
        raise NotImplementedError

    # -- life cycle -----------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self) -> None:
        """Before a trial: a server that died must not turn into a hung or failed client run without a reason
        (redis-benchmark spins forever against a closed port)."""
        if not self.running:
            code = self.proc.returncode if self.proc else None
            raise SetupError(
                f"{self.kind} (port {self.port}) is no longer running (status {code}); log tail:\n"
                f"{log_tail(self.log)}"
            )

    def initialise(self) -> None:
        """Create the data set as the server's user (once, after prepare), e.g. initdb."""

    def start(self) -> ManagedServer:
        if not self.dir.exists():
            self.dir.mkdir(parents=True)
            self.prepare()
            grant(self.dir, self.user)
            self.initialise()
        self.port = free_port()
        self._launch()
        return self

    def _launch(self) -> None:
        self._spawn()
        if self.proc is None:
            raise SetupError(f"{self.kind}: not started")
        try:
            wait_until(
                self.ready, self.proc, self.start_timeout_s, f"{self.kind} on port {self.port}", self.log
            )
        except BaseException:
            self._kill()
            raise

    def _spawn(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
                start_new_session=True,  # own process group: Ctrl-C does not reach it, killpg reaches all of it
                preexec_fn=self._raise_nofile if self.nofile else None,
                **as_user(self.user),
            )

    def _raise_nofile(self) -> None:
        # In the child before exec: a server for thousands of connections needs that many descriptors, and
        # its workers cannot raise the limit themselves once they have dropped root.
        limit, hard = nofile_for(self.nofile), resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (limit, hard if hard == resource.RLIM_INFINITY else max(limit, hard))
        )

    def restart(self) -> None:
        """Stop and start again on the same port with the same data (seed 003: restart between runs)."""
        self._kill()
        self._launch()

    def _kill(self, grace_s: float = 15.0) -> None:
        """Stop cleanly (the server's own shutdown signal), then SIGKILL the whole group after `grace_s`."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, self.stop_signal)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=grace_s)
        finally:  # also when a second Ctrl-C cuts the grace period short: the kill below still happens
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(
                    proc.pid, signal.SIGKILL
                )  # stragglers in the group (postgres backends, nginx workers)
            proc.wait()

    def stop(self) -> None:
        """Stop the server and remove its directory. Safe to call twice, and after a failed start."""
        try:
            self._kill()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            if self._short_dir is not None:
                shutil.rmtree(self._short_dir, ignore_errors=True)
                self._short_dir = None

    def short_dir(self) -> Path:
        """A private directory for Unix sockets: the server's own one, or — when that path is too long for a
        socket address (sun_path holds 108 bytes) — a fresh one in the temporary directory, removed on stop."""
        if len(str(self.dir)) <= SOCKET_DIR_MAX:
            return self.dir
        if self._short_dir is None:
            self._short_dir = Path(tempfile.mkdtemp(prefix=f"fm-{self.kind}-"))
        return self._short_dir

    def __enter__(self) -> ManagedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PostgresServer(ManagedServer):
    """PostgreSQL (15 on Debian 12): initdb (trust auth, no sync) into a private directory; TCP on 127.0.0.1
    and a private socket directory."""

    kind = "postgres"
    run_as = "postgres"
    stop_signal = signal.SIGINT  # "fast" shutdown: abort sessions, checkpoint, exit

    def __init__(
        self,
        directory: Path,
        *,
        fsync: bool = True,
        settings: dict[str, str] | None = None,
        address: str = LOOPBACK,
        clients: tuple[str, ...] = (),
    ):
        super().__init__(directory)
        self.fsync = fsync
        self.settings = dict(settings or {})
        # A client on another host (a test network): listen on this host's `address` too, trust those clients.
        self.address, self.clients = address, clients
        if address != LOOPBACK:
            self.settings.setdefault("listen_addresses", f"{LOOPBACK},{address}")

    @property
    def data(self) -> Path:
        return self.dir / "data"

    @property
    def socket_dir(self) -> Path:
        return self.short_dir() / "sock"

    def prepare(self) -> None:
        self.socket_dir.mkdir()
        self.log.touch()
        if self._short_dir is not None:
            grant(self._short_dir, self.user)

    def initialise(self) -> None:
        argv = [str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync"]
        res = subprocess.run(
            argv, capture_output=True, text=True, timeout=120, cwd=self.dir, **as_user(self.user)
        )
        if res.returncode != 0:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise SetupError(f"initdb failed (status {res.returncode}):\n{(res.stdout + res.stderr)[-2000:]}")
        if self.clients:
            with open(self.data / "pg_hba.conf", "a") as fh:
                fh.writelines(f"host all postgres {addr}/32 trust\n" for addr in self.clients)

    def argv(self) -> list[str]:
        opts = {"listen_addresses": LOOPBACK, "fsync": "on" if self.fsync else "off"} | self.settings
        argv = [
            str(PG_BIN / "postgres"),
            "-D",
            str(self.data),
            "-p",
            str(self.port),
            "-k",
            str(self.socket_dir),
        ]
        for key, value in opts.items():
            argv += ["-c", f"{key}={value}"]
        return argv

    def ready(self) -> bool:
        res = subprocess.run(
            [str(PG_BIN / "pg_isready"), "-q", "-h", LOOPBACK, "-p", str(self.port), "-U", "postgres"],
            capture_output=True,
        )
        return res.returncode == 0

    def psql(self, sql: str, timeout_s: float = 600) -> str:
        argv = [str(PG_BIN / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", *self.conn_args(), "-c", sql]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        if res.returncode != 0:
            raise SetupError(f"psql {sql!r} failed: {res.stderr.strip()[-1000:]}")
        return res.stdout

    def conn_args(self) -> list[str]:
        return ["-h", LOOPBACK, "-p", str(self.port), "-U", "postgres", "-d", "postgres"]


class RedisServer(ManagedServer):
    """redis-server without persistence, on a free loopback port and a private Unix socket."""

    kind = "redis"

    def __init__(self, directory: Path, *, address: str = LOOPBACK):
        super().__init__(directory)
        self.address = address  # a client on another host (a test network): listen on this address too

    @property
    def socket(self) -> Path:
        return self.short_dir() / "redis.sock"

    def argv(self) -> list[str]:
        # With a client on another host, protected mode (no password: loopback only) is off and the server binds
        # the host's test-network address too: the test network is the fence, as for iperf3.
        bind = [LOOPBACK] if self.address == LOOPBACK else [LOOPBACK, self.address]
        protected = "yes" if self.address == LOOPBACK else "no"
        return [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            *bind,
            "--unixsocket",
            str(self.socket),
            "--unixsocketperm",
            "700",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.dir),
            "--daemonize",
            "no",
            "--protected-mode",
            protected,
        ]

    def ready(self) -> bool:
        return self.socket.exists() and tcp_answers(self.port, b"PING\r\n", b"+PONG")


NGINX_CONF = """\
daemon off;
master_process on;
worker_processes {workers};
pid {dir}/nginx.pid;
error_log {dir}/nginx.log warn;
worker_rlimit_nofile {nofile};
{user}
events {{ worker_connections {connections}; }}
http {{
  access_log off;
  client_body_temp_path {dir}/tmp/body; proxy_temp_path {dir}/tmp/proxy; fastcgi_temp_path {dir}/tmp/fcgi;
  uwsgi_temp_path {dir}/tmp/uwsgi; scgi_temp_path {dir}/tmp/scgi;
  server {{ {listen} root {dir}/www; }}
}}
"""


class NginxServer(ManagedServer):
    """nginx serving one small static file (`/file`) from its private directory."""

    kind = "nginx"
    stop_signal = signal.SIGQUIT  # graceful: finish open requests

    def __init__(
        self,
        directory: Path,
        *,
        file_bytes: int = 612,
        workers: int | str = "auto",
        connections=16384,
        address: str = LOOPBACK,
    ):
        super().__init__(directory)
        self.file_bytes, self.workers, self.connections = file_bytes, workers, connections
        self.address = address  # a client on another host (a test network): listen on this address too
        self.nofile = connections * 2  # a proxied or static request may hold two descriptors (socket, file)
        # The master stays root (so it may raise its fd limit); workers drop to `nobody`, as packaged nginx does.
        self.worker_user = "nobody" if os.geteuid() == 0 else None

    def prepare(self) -> None:
        (self.dir / "www").mkdir()
        (self.dir / "tmp").mkdir()
        # Fixed content: the same bytes on every run and variant.
        (self.dir / "www" / "file").write_bytes(
            (b"fairmark " * (self.file_bytes // 9 + 1))[: self.file_bytes]
        )
        self.log.touch()
        grant(self.dir / "www", self.worker_user)

    def argv(self) -> list[str]:
        conf = self.dir / "nginx.conf"
        conf.write_text(
            NGINX_CONF.format(
                dir=self.dir,
                listen=" ".join(
                    f"listen {host}:{self.port} backlog=4096;"
                    for host in dict.fromkeys([LOOPBACK, self.address])
                ),
                workers=self.workers,
                nofile=nofile_for(self.nofile),
                connections=self.connections,
                user=self._user_directive(),
            )
        )
        return ["nginx", "-p", str(self.dir), "-c", str(conf), "-e", str(self.log)]

    def ready(self) -> bool:
        return tcp_answers(self.port, b"HEAD /file HTTP/1.0\r\n\r\n", b"HTTP/1.1 200")

    def _user_directive(self) -> str:
        if not self.worker_user:
            return ""
        group = grp.getgrgid(pwd.getpwnam(self.worker_user).pw_gid).gr_name  # "nogroup" on Debian
        return f"user {self.worker_user} {group};"

    @property
    def url(self) -> str:
        return self.url_at(LOOPBACK)

    def url_at(self, host: str) -> str:
        """The served file's URL through `host`: loopback, or the test-network address a client elsewhere uses."""
        return f"http://{host}:{self.port}/file"


class Iperf3Server(ManagedServer):
    """iperf3 -s on a loopback port, serving one client test at a time for the whole workload."""

    kind = "iperf3"

    def __init__(self, directory: Path, *, address: str = LOOPBACK):
        super().__init__(directory)
        self.address = address  # a test-network address when the client runs on another host (client_host)

    def prepare(self) -> None:
        self.log.touch()

    def argv(self) -> list[str]:
        return ["iperf3", "-s", "-B", self.address, "-p", str(self.port), "--forceflush"]

    def ready(self) -> bool:
        return f"Server listening on {self.port}" in self.log.read_text(errors="replace")


class MariadbServer(ManagedServer):
    """MariaDB (10.11 on Debian 12), started by fairmark itself (no systemd): mariadb-install-db into a private
    data directory, mariadbd on a free loopback port with no option files read (--no-defaults: the host's
    /etc/mysql must not change the measurement), grant tables skipped (loopback only, a throw-away data set)
    and the database `sbtest` created. Stopped with SIGTERM (clean InnoDB shutdown), directory removed."""

    kind = "mariadb"
    run_as = "mysql"
    start_timeout_s = 60.0

    def __init__(self, directory: Path, *, fsync: bool = True):
        super().__init__(directory)
        self.fsync = fsync

    @property
    def data(self) -> Path:
        return self.dir / "data"

    @property
    def socket(self) -> Path:
        return self.short_dir() / "mysqld.sock"

    def prepare(self) -> None:
        self.log.touch()
        if self._short_dir is not None:
            grant(self._short_dir, self.user)

    def initialise(self) -> None:
        argv = [
            "mariadb-install-db",
            "--no-defaults",
            f"--datadir={self.data}",
            "--skip-test-db",
            "--auth-root-authentication-method=normal",
        ]
        if self.user:
            argv.append(f"--user={self.user}")
        res = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=self.dir)
        if res.returncode != 0:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise SetupError(
                f"mariadb-install-db failed (status {res.returncode}):\n{(res.stdout + res.stderr)[-2000:]}"
            )

    def argv(self) -> list[str]:
        # fsync off = InnoDB neither flushes its log at commit nor syncs binlogs: a CPU/lock-scaling test.
        flush = "1" if self.fsync else "0"
        return [
            "mariadbd",
            "--no-defaults",
            f"--datadir={self.data}",
            f"--socket={self.socket}",
            f"--port={self.port}",
            f"--bind-address={LOOPBACK}",
            "--skip-grant-tables",
            "--skip-name-resolve",
            f"--pid-file={self.dir / 'mariadbd.pid'}",
            "--max-connections=1000",
            f"--innodb-flush-log-at-trx-commit={flush}",
            f"--innodb-doublewrite={flush}",
            *([f"--user={self.user}"] if self.user else []),
        ]

    def ready(self) -> bool:
        return self.sql("CREATE DATABASE IF NOT EXISTS sbtest", check=False) is not None

    def sql(self, statement: str, *, check: bool = True, timeout_s: float = 600) -> str | None:
        argv = ["mariadb", "--no-defaults", f"--socket={self.socket}", "-u", "root", "-e", statement]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        if res.returncode != 0:
            if check:
                raise SetupError(f"mariadb {statement!r} failed: {res.stderr.strip()[-1000:]}")
            return None
        return res.stdout


@contextlib.contextmanager
def running(server: ManagedServer) -> Iterator[ManagedServer]:
    """Start a server for the duration of a block; stopped and removed also on errors and Ctrl-C."""
    try:
        yield server.start()
    finally:
        server.stop()


S = TypeVar("S", bound="ManagedServer")


def start_in(ctx: WorkloadContext, server: S) -> S:
    """Start `server` for a workload and remember it in ctx.state, so teardown finds it even after a failed start."""
    ctx.state["server"] = server
    server.start()
    return server


def stop_in(ctx: WorkloadContext) -> None:
    server = ctx.state.pop("server", None)
    if server is not None:
        server.stop()
