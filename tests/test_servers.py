"""Managed servers: free loopback ports, start/ready/stop, nothing left behind (normal end, error, Ctrl-C),
and a failed start reports the server's log tail."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psutil
import pytest

from fairmark.run.workloads import servers
from fairmark.run.workloads.base import SetupError
from helpers import wait_until

needs = {
    "redis": pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed"),
    "nginx": pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx not installed"),
    "iperf3": pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed"),
    "postgres": pytest.mark.skipif(
        not (servers.PG_BIN / "postgres").exists(), reason="PostgreSQL 15 missing"
    ),
}


def our_children() -> list[psutil.Process]:
    """Servers are our children (never detached daemons), so 'nothing left' is 'no child process'."""
    return [p for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex((servers.LOOPBACK, port)) == 0


def test_free_port_is_bindable_on_loopback():
    port = servers.free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as s:
        s.bind((servers.LOOPBACK, port))


def test_proc_state_sees_zombies_and_gone_processes():
    child = subprocess.Popen(["true"])
    # not waited for: it becomes a zombie once it has run, however long a busy machine takes to run it
    assert wait_until(lambda: servers.proc_state(child.pid) == "Z"), servers.proc_state(child.pid)
    assert not servers.pid_running(child.pid)  # kill -0 would still say "alive"
    child.wait()
    assert servers.proc_state(child.pid) is None


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param("redis", marks=needs["redis"]),
        pytest.param("nginx", marks=needs["nginx"]),
        pytest.param("iperf3", marks=needs["iperf3"]),
    ],
)
def test_server_starts_on_free_port_and_leaves_nothing(kind: str, srv_tmp: Path):
    cls = {"redis": servers.RedisServer, "nginx": servers.NginxServer, "iperf3": servers.Iperf3Server}[kind]
    server = cls(srv_tmp / kind)
    with server:
        assert server.running and listening(server.port)
        pid, port = server.pid, server.port
    assert servers.proc_state(pid) is None  # waited for: not even a zombie
    assert not listening(port)
    assert not (srv_tmp / kind).exists()
    assert our_children() == []


@pytest.mark.slow
@needs["postgres"]
def test_postgres_runs_unprivileged_restarts_and_is_removed(srv_tmp: Path):
    server = servers.PostgresServer(srv_tmp / "pg", fsync=False)
    with server:
        assert server.psql("SHOW fsync").split()[2] == "off"
        owner = psutil.Process(server.pid).username()
        assert owner == ("postgres" if os.geteuid() == 0 else psutil.Process().username())
        first = server.pid
        server.restart()
        assert server.pid != first and servers.proc_state(first) is None
        assert server.psql("SELECT 41 + 1").split()[2] == "42"
    assert not (srv_tmp / "pg").exists()
    assert our_children() == []


@needs["redis"]
def test_stopped_on_exception_and_ctrl_c(tmp_path: Path):
    for exc in (RuntimeError("boom"), KeyboardInterrupt()):
        server = servers.RedisServer(tmp_path / "r")
        with pytest.raises(type(exc)), servers.running(server):
            pid = server.pid
            raise exc
        assert servers.proc_state(pid) is None and not (tmp_path / "r").exists()
    assert our_children() == []


@needs["redis"]
def test_server_survives_sigint_to_our_process_group_until_stopped(tmp_path: Path):
    # A Ctrl-C goes to the terminal's foreground process group; the server has its own session,
    # so it is still there for teardown to stop cleanly.
    with servers.RedisServer(tmp_path / "r") as server:
        assert os.getpgid(server.pid) != os.getpgrp()
        assert os.getsid(server.pid) == server.pid


class BrokenRedis(servers.RedisServer):
    def argv(self) -> list[str]:
        return [*super().argv(), "--no-such-option", "1"]


@needs["redis"]
def test_failed_start_raises_setup_error_with_log_tail(tmp_path: Path):
    server = BrokenRedis(tmp_path / "r")
    with pytest.raises(SetupError) as err:
        server.start()
    assert "exited with status" in err.value.message and "no-such-option" in err.value.message
    server.stop()
    assert not (tmp_path / "r").exists()
    assert our_children() == []


class SlowIperf(servers.Iperf3Server):
    start_timeout_s = 0.3

    def ready(self) -> bool:
        return False


@needs["iperf3"]
def test_server_never_ready_is_killed(tmp_path: Path):
    server = SlowIperf(tmp_path / "i")
    with pytest.raises(SetupError, match=r"not ready after 0\.3 s"):
        server.start()
    assert our_children() == []
    server.stop()
    assert not (tmp_path / "i").exists()


def test_stop_is_idempotent_and_safe_before_start(tmp_path: Path):
    server = servers.RedisServer(tmp_path / "never")
    server.stop()
    server.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="granting a tree to another user needs root")
def test_grant_makes_scratch_reachable_for_the_server_user(tmp_path: Path):
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (tmp_path / "a").chmod(0o700)
    servers.grant(inner, "nobody")
    res = subprocess.run(["runuser", "-u", "nobody", "--", "test", "-w", str(inner)], check=False)
    assert res.returncode == 0


def test_kill_group_when_clean_stop_hangs(tmp_path: Path):
    class Stubborn(servers.ManagedServer):
        kind = "stubborn"

        def argv(self) -> list[str]:
            # ignores SIGTERM: only the SIGKILL after the grace period ends it
            return [
                "python3",
                "-c",
                "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
            ]

        def ready(self) -> bool:
            return True

    server = Stubborn(tmp_path / "s")
    server.start()
    pid = server.pid
    server._kill(grace_s=0.2)
    assert servers.proc_state(pid) is None
    server.stop()
    assert not (tmp_path / "s").exists()


def test_second_ctrl_c_during_stop_still_kills_and_removes(tmp_path: Path):
    class Sleeper(servers.ManagedServer):
        kind = "sleeper"

        def argv(self) -> list[str]:
            return ["sleep", "60"]

        def ready(self) -> bool:
            return True

    server = Sleeper(tmp_path / "s")
    server.start()
    pid, real_wait = server.pid, server.proc.wait

    def interrupted_wait(timeout=None):
        if timeout is not None:  # the grace period: the user presses Ctrl-C again
            raise KeyboardInterrupt
        return real_wait()

    server.proc.wait = interrupted_wait
    with pytest.raises(KeyboardInterrupt):
        server.stop()
    assert servers.proc_state(pid) is None and not (tmp_path / "s").exists()


def test_pg_bin_override_and_discovery(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("FAIRMARK_PG_BIN", str(tmp_path))
    assert servers.find_pg_bin() == tmp_path
    monkeypatch.delenv("FAIRMARK_PG_BIN")
    found = servers.find_pg_bin()
    assert found.name == "bin" or (found / "initdb").exists() or not shutil.which("initdb")


@needs["nginx"]
def test_nginx_workers_get_enough_descriptors_even_from_a_low_soft_limit(srv_tmp: Path):
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, soft), hard))
    try:
        with servers.NginxServer(srv_tmp / "n", connections=4096) as server:
            workers = psutil.Process(server.pid).children()
            assert workers
            for w in workers:
                line = next(
                    x for x in Path(f"/proc/{w.pid}/limits").read_text().splitlines() if "open files" in x
                )
                assert int(line.split()[3]) == servers.nofile_for(8192)
            assert "setrlimit" not in server.log.read_text()  # no worker failed to raise its own limit
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@needs["redis"]
def test_dead_server_is_reported_before_the_next_trial(tmp_path: Path):
    with servers.RedisServer(tmp_path / "r") as server:
        server.check_alive()
        os.kill(server.pid, 9)
        server.proc.wait()
        with pytest.raises(SetupError, match=r"redis \(port \d+\) is no longer running \(status -9\)"):
            server.check_alive()
    assert our_children() == []


@pytest.mark.parametrize(
    "kind", [pytest.param("redis", marks=needs["redis"]), pytest.param("postgres", marks=needs["postgres"])]
)
@pytest.mark.slow
def test_unix_socket_in_a_short_private_dir_when_the_path_is_too_long(kind: str, srv_tmp: Path):
    deep = srv_tmp / ("d" * 60) / ("e" * 60)
    server = {"redis": servers.RedisServer, "postgres": servers.PostgresServer}[kind](deep / kind)
    with server:
        sock = server.socket if kind == "redis" else server.socket_dir / f".s.PGSQL.{server.port}"
        assert sock.exists() and len(str(sock)) < 108
        short = server._short_dir
        assert short is not None and short.is_relative_to(tempfile.gettempdir())
    assert not short.exists() and not (deep / kind).exists()
    assert our_children() == []
