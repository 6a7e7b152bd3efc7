"""A hostile fairmark agent (issue 37): the real agent (fairmark.remote.agent.Session) whose answer to one request is
what a compromised or broken host would send. The thing under test is the controller; this is the host.

    python hostile_agent.py SCENARIO [TARGET] [REMOTE COMMAND…]

SCENARIO names the request and the malice (SCENARIOS below); TARGET is an absolute path the host tries to make
the controller write (or, for a link, read). When the remote command is the shipped agent's bootstrap
(`fairmark doctor --host` ships the agent on stdin), its payload is read off stdin first, as the real bootstrap
does, so the protocol's lines follow as usual. Used by tests/test_remote_hostile.py, behind a fake `ssh` on PATH
and behind a real sshd in a namespace host.
"""

from __future__ import annotations

import base64
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from fairmark.remote import agent

ENDLESS_BYTES = (
    400 << 20
)  # what an endless line sends before it goes silent (the controller must stop far earlier)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _dotdot(target: str) -> str:
    """`target` as a name relative to anywhere: enough `..` to climb to / first."""
    return "../" * 30 + target.lstrip("/")


class Hostile(agent.Session):
    def __init__(self, scenario: str, target: str):
        super().__init__()
        self.scenario, self.target = scenario, target
        self.op, self.method = "", ""

    def serve(self) -> None:  # remember each request's op for send() (the real serve dispatches it)
        read = self._readline

        def readline() -> bytes | None:
            line = read()
            if line:
                op = re.search(rb'"op":"(\w+)"', line)
                method = re.search(rb'"method":"(\w+)"', line)
                self.op = op.group(1).decode() if op else ""
                self.method = method.group(1).decode() if method else ""
            return line

        self._readline = readline  # type: ignore[method-assign]
        super().serve()

    def send(self, obj: dict) -> None:
        when, _, how = self.scenario.partition(":")
        if when not in (self.op, f"{self.op}.{self.method}"):
            return super().send(obj)
        raw = RAW.get(how)
        if raw is not None:
            return self._raw(raw(self, obj))
        MANGLE[how](self, obj["result"])
        return super().send(obj)

    def _raw(self, data: bytes | None) -> None:
        if data is None:  # silence, or an endless line: nothing more is ever answered
            while True:
                time.sleep(3600)
        os.write(self.wfd, data)

    # -- tool workloads: the adapter's life cycle, faked (no tool needed on this "host") -------------------------
    def op_adapter(self, req: dict) -> dict:
        method = req.get("method")
        if method == "setup":
            return {"env": {}}
        if method == "before_trial":
            return {"argv": ["true"], "env": {}}
        if method == "output_files":
            return {"files": {"json": ["/nonexistent/fio.json", _b64(b"{}")]}}
        return {}


def _endless(self: Hostile, obj: dict) -> None:
    chunk = b"[" * (1 << 20)
    for _ in range(ENDLESS_BYTES >> 20):
        os.write(self.wfd, chunk)
    return None


RAW = {
    "silent": lambda self, obj: None,
    "endless": _endless,
    "huge": lambda self, obj: (
        b'{"v":2,"id":%d,"ok":true,"result":{"pad":"' % obj["id"] + b"x" * (3 << 20) + b'"}}\n'
    ),
    "notjson": lambda self, obj: b"{this is not json\n",
    "deep": lambda self, obj: b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "list": lambda self, obj: b"[1, 2, 3]\n",
    "nan": lambda self, obj: (
        b'{"v":2,"id":%d,"ok":true,"result":{"protocol":2,"held":NaN,"measured":NaN}}\n' % obj["id"]
    ),
}


def _put(key: str, value):
    def mangle(self: Hostile, result: dict) -> None:
        result[key] = value(self) if callable(value) else value

    return mangle


def _exec_file(name):
    return lambda self, result: result["files"].update({name(self.target): _b64(b"written by the host\n")})


def _capture_file(name):
    return lambda self, result: result["files"].update({name(self.target): _b64(b"written by the host\n")})


def _measured(key: str, value):
    return lambda self, result: result["measured"].update({key: value})


def _output_file(name):
    return lambda self, result: result.update({"files": {name(self.target): ["/x", _b64(b"host\n")]}})


MANGLE = {
    # a file named by the host: absolute, or climbing out with ..
    "file-abs": _exec_file(lambda t: t),
    "file-dotdot": _exec_file(_dotdot),
    "capture-abs": _capture_file(lambda t: t),
    "capture-dotdot": _capture_file(_dotdot),
    # links: one where the controller then writes (environ), one to a file of the controller's (read into the run)
    "capture-link-write": lambda self, r: r["links"].update({"environ": self.target}),
    "capture-link-read": lambda self, r: r["links"].update({"etc/os-release": self.target}),
    "output-abs": lambda self, r: r.update({"files": {"json": [self.target, _b64(b"host\n")]}}),
    "output-dotdot": _output_file(_dotdot),
    # wrong types
    "wall-text": _measured("wall_s", "fast"),
    "status-odd": _measured("status", "splendid"),
    "held-text": _put("held", "yes"),
    "hostname-int": _put("hostname", 5),
    "files-list": _put("files", ["a", "b"]),
    "big-int": _measured("max_rss_kib", 10**30),
    "argv-text": _put("argv", "rm -rf /"),  # a text where the command's argument list goes
}


def main() -> None:
    scenario, target, *command = sys.argv[1:]
    bootstrap = re.search(r"len\(b\)<(\d+)", " ".join(command))
    if bootstrap:  # the shipped agent's payload comes first on stdin: read it off, as the bootstrap does
        left = int(bootstrap.group(1))
        while left:
            chunk = os.read(0, left)
            if not chunk:
                break
            left -= len(chunk)
    Hostile(scenario, target).serve()


if __name__ == "__main__":
    main()
