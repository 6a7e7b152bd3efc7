"""How the shipped agent reaches a host: a short bootstrap in the SSH command line (dropbear takes none over 9000
bytes), the agent's source on stdin ahead of the protocol's lines. No SSH here: `sh -c` is the host's shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from fairmark.remote import agent, connection
from fairmark.remote.connection import HostConnection, HostSpec, shipped_agent_command, shipped_agent_payload

DROPBEAR_MAX_COMMAND = 9000  # dropbear's MAX_CMD_LEN (sysoptions.h); tests/test_remote_dropbear.py shows it


def _remote_command(spec: HostSpec) -> str:
    conn = HostConnection(spec)
    argv = conn.ssh_argv(conn._agent_command())
    return argv[-1]  # what ssh sends as the session's command


def test_the_ssh_command_line_stays_far_below_dropbears_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command sent to the host is under 1000 bytes, and stays so for an agent ten times its size: only
    the payload's length and digest are in it, never the source."""
    spec = HostSpec("box", ssh="root@box", ssh_options=("-p", "2222"), python="/usr/local/bin/python3.11")
    command = _remote_command(spec)
    assert len(command.encode()) < 1000 < DROPBEAR_MAX_COMMAND
    assert str(len(shipped_agent_payload())) in command
    ten_times = connection.agent_source() * 10
    monkeypatch.setattr(connection, "agent_source", lambda: ten_times)
    connection.shipped_agent_payload.cache_clear()
    try:
        assert len(zlib.decompress(shipped_agent_payload())) == len(ten_times)
        assert len(_remote_command(spec).encode()) < 1000
    finally:
        monkeypatch.undo()
        connection.shipped_agent_payload.cache_clear()
    installed = HostSpec("box", ssh="root@box", agent=("fairmark", "agent"))
    assert _remote_command(installed) == "fairmark agent"  # an installed agent gets nothing on stdin


def _bootstrap(tmp_path: Path, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    # a bare environment, but no __pycache__ in src/: the agent's hello imports fairmark when it can
    env = {
        "PATH": os.environ["PATH"],
        "FAIRMARK_AGENT_STATE": str(tmp_path / "state"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        ["sh", "-c", shipped_agent_command(sys.executable)],
        input=stdin,
        capture_output=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )


def test_the_protocol_follows_the_agent_on_the_same_stdin(tmp_path: Path) -> None:
    """The agent's bytes and the first requests in one write: the bootstrap takes exactly the agent's bytes,
    the agent reads every request after them."""
    requests = [json.dumps({"v": agent.PROTOCOL, "id": i, "op": "hello", "recover": False}) for i in (1, 2)]
    res = _bootstrap(tmp_path, shipped_agent_payload() + ("\n".join(requests) + "\n").encode())
    assert res.returncode == 0, res.stderr
    answers = [json.loads(line) for line in res.stdout.splitlines()]
    assert [(a["id"], a["ok"], a["result"]["protocol"]) for a in answers] == [
        (1, True, agent.PROTOCOL),
        (2, True, agent.PROTOCOL),
    ]


def test_a_short_or_damaged_agent_runs_nothing(tmp_path: Path) -> None:
    payload = shipped_agent_payload()
    hello = (json.dumps({"v": agent.PROTOCOL, "id": 1, "op": "hello"}) + "\n").encode()
    short = _bootstrap(tmp_path, payload[:-1])  # the connection ended one byte early
    damaged = _bootstrap(tmp_path, payload[:100] + bytes([payload[100] ^ 1]) + payload[101:] + hello)
    for res in (short, damaged):
        assert (res.returncode, res.stdout) == (1, b"")
        assert b"fairmark agent: short or damaged on stdin" in res.stderr
    assert not (tmp_path / "state").exists()  # the agent never started
