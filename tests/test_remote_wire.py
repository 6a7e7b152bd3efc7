"""The controller's guards against what a host sends (issue 37 items 1-5), piece by piece: the records an answer
must fit (remote/wire.py), the line reader's bounds, the confined writes (remote/confine.py), the capture's
names, links and environment (remote/probe.py), the deadlines. End to end: tests/test_remote_hostile.py."""

from __future__ import annotations

import base64
import dataclasses
import os
import time
from pathlib import Path

import pytest

from fairmark.remote import wire
from fairmark.remote.confine import UnsafeName, inside, write_inside
from fairmark.remote.connection import HostSpec, ProtocolError, agent_deadline_s
from fairmark.run.spec import Measured

MEASURED = {
    "argv": ["true"],
    "status": "ok",
    "exit_code": 0,
    "signal": None,
    "wall_s": 1,
    "user_s": 0.1,
    "sys_s": 0.2,
    "max_rss_kib": 1000,
}


def test_the_wire_measured_is_the_seams_measured_without_its_output_paths() -> None:
    seam = {f.name for f in dataclasses.fields(Measured)} - {"stdout_path", "stderr_path"}
    assert {f.name for f in dataclasses.fields(wire.WireMeasured)} == seam


def test_an_answer_must_fit_its_record() -> None:
    got = wire.check("exec", {}, {"measured": MEASURED, "unknown": 1})
    assert got == {
        "measured": {**MEASURED, "wall_s": 1.0}
    }  # an int where a float goes: a float; unknown: dropped
    bad = [
        {"measured": {**MEASURED, "wall_s": "fast"}},
        {"measured": {**MEASURED, "status": "splendid"}},
        {"measured": {**MEASURED, "exit_code": True}},  # a bool is not an int
        {"measured": {**MEASURED, "max_rss_kib": 10**30}},
        {"measured": {**MEASURED, "argv": ["\ud800"]}},  # not Unicode: no store takes it
        {"measured": MEASURED, "files": ["a"]},
        {"measured": {k: v for k, v in MEASURED.items() if k != "status"}},
        [],
    ]
    for answer in bad:
        with pytest.raises(wire.BadAnswer):
            wire.check("exec", {}, answer)  # type: ignore[arg-type]
    with pytest.raises(wire.BadAnswer, match=r"lock\.held"):
        wire.check("lock", {}, {"held": "yes"})
    with pytest.raises(wire.BadAnswer, match="nested deeper"):
        deep: object = 1
        for _ in range(40):
            deep = [deep]
        wire.check("profilers-of-the-future", {}, {"x": deep})
    assert wire.check("adapter", {"method": "output_files"}, {"files": {"json": ["/p", None]}}) == {
        "files": {"json": ["/p", None]}
    }


def test_a_line_that_is_not_a_json_envelope_is_a_bad_answer() -> None:
    for line in (
        b"{nope\n",
        b"[" * 100_000 + b"]" * 100_000,
        b"[]\n",
        b'{"v":2,"id":1,"ok":NaN}',
        b"1e999\n",
    ):
        with pytest.raises(wire.BadAnswer):
            wire.decode(line)
    with pytest.raises(wire.BadAnswer, match="beyond a float"):
        wire.decode(b'{"v":2,"id":1,"ok":true,"result":{"x":1e999}}')
    assert wire.decode(b'{"v":2,"id":1,"ok":true,"result":{}}') == {"v": 2, "id": 1, "ok": True, "result": {}}


def test_the_line_reader_holds_at_most_its_cap_and_waits_at_most_its_deadline() -> None:
    for line, cap in ((b"x" * 5000, 1000), (b"y" * 3000 + b"\n", 1000)):  # without and with its end of line
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.write(w, line)
        with pytest.raises(wire.TooLong):
            wire.LineReader(r).readline(time.monotonic() + 5, cap)
        os.close(r)
        os.close(w)
    r, w = os.pipe()
    os.set_blocking(r, False)
    try:
        reader = wire.LineReader(r)
        os.write(w, b'{"a":1}\n{"b"')
        assert reader.readline(time.monotonic() + 5, 1000) == b'{"a":1}\n'
        t0 = time.monotonic()
        with pytest.raises(wire.Silent):
            reader.readline(time.monotonic() + 0.3, 1000)
        assert 0.25 < time.monotonic() - t0 < 5
        os.close(w)
        assert reader.readline(time.monotonic() + 5, 1000) == b""  # the end of the stream
    finally:
        os.close(r)


def test_every_request_has_a_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAIRMARK_AGENT_DEADLINE_S", raising=False)
    assert agent_deadline_s("hello", {}) == 60.0 and agent_deadline_s("capture", {}) == 180.0
    assert agent_deadline_s("adapter", {"method": "setup"}) == 3600.0
    assert agent_deadline_s("exec", {"spec": {"timeout_s": 10, "grace_s": 1}}) == 10 + 1 + 10 + 60
    monkeypatch.setenv("FAIRMARK_AGENT_DEADLINE_S", "2")
    assert agent_deadline_s("lock", {}) == 2.0


def test_a_confined_write_stays_inside_and_follows_no_link(tmp_path: Path) -> None:
    base, outside = tmp_path / "base", tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    for name in ("/etc/x", "../x", "a/../../x", "a//b", "", "a\nb", "."):
        with pytest.raises(UnsafeName):
            write_inside(str(base), name, b"x")
    (base / "planted").symlink_to(outside / "victim")
    write_inside(str(base), "planted", b"mine")  # the link is replaced, its target never made
    assert (base / "planted").read_bytes() == b"mine" and not (base / "planted").is_symlink()
    assert not (outside / "victim").exists()
    (base / "dir").symlink_to(outside)
    with pytest.raises(UnsafeName, match="not a directory of its own"):
        write_inside(str(base), "dir/x", b"x")
    assert list(outside.iterdir()) == []
    assert inside("/a/b", "/a/b/c/d") == "c/d" and inside("/a/b", "/a/bc") is None
    assert inside("/a/b", "/a/b/../x") is None and inside("/a/b", "/a/b") is None


class _Host:
    """A connection whose agent answers `capture` with what the test says (the rest of the capture is real)."""

    def __init__(self, answer: dict) -> None:
        self.spec, self.hello, self.answer = HostSpec("evil", ssh="evil"), {"os": "linux"}, answer

    def call(self, op: str, **kw: object) -> dict:
        return {
            "hostname": "box",
            "files": {},
            "dirs": [],
            "commands": {},
            "links": {},
            "environ": {},
        } | self.answer


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_the_capture_takes_only_what_it_asked_for(tmp_path: Path) -> None:
    from fairmark.remote.probe import capture_sysroot

    for answer in (
        {"files": {"etc/shadow": _b64("root:x")}},  # a file no pattern asked for
        {"files": {"/etc/os-release": _b64("x")}},
        {"files": {"proc/pressure/../../x": _b64("x")}},
        {"dirs": ["sys/class/net/../../../x"]},
        {"commands": {"../sysctl.txt": "x"}},
        {"links": {"environ": str(tmp_path / "victim")}},
        {"hostname": "box\nPATH=/evil"},
    ):
        dest = tmp_path / f"sysroot-{len(list(tmp_path.iterdir()))}"
        dest.mkdir()
        with pytest.raises(ProtocolError, match="host evil: protocol error: capture"):
            capture_sysroot(_Host(answer), str(dest))  # type: ignore[arg-type]
    assert not (tmp_path / "victim").exists()
    dest = tmp_path / "ok"
    dest.mkdir()
    env = {"GOOD": "1", "BAD": "x\nINJECTED=1", "ALSO\nBAD": "1", "UNDECODABLE": "\udcff"}
    answer = {
        "links": {"etc/malloc.conf": "junk:true"},
        "environ": env,
        "files": {"proc/pressure/cpu": _b64("x")},
    }
    capture_sysroot(_Host(answer), str(dest))  # type: ignore[arg-type]
    assert (dest / "environ").read_text() == "GOOD=1\n"  # a newline cannot forge a line, nor bad text pass
    assert (dest / "malloc.conf.txt").read_text() == "junk:true"  # a link's target kept as text, no link made
    assert not any(p.is_symlink() for p in dest.rglob("*"))
    assert (dest / "proc" / "pressure" / "cpu").read_text() == "x" and (
        dest / "etc" / "hostname"
    ).read_text() == "box\n"


def test_an_exec_answer_with_a_file_it_was_not_asked_for_stops_the_host(tmp_path: Path) -> None:
    from fairmark.remote.connection import ConnectionLost
    from fairmark.remote.executor import RemoteExecutor
    from fairmark.run.spec import TrialSpec

    victim = tmp_path / "victim"

    class Host:
        spec, hello = HostSpec("evil", ssh="evil"), {"os": "linux"}

        def call(self, op: str, **kw: object) -> dict:
            return {"measured": MEASURED, "files": {str(victim): _b64("x")}, "stdout_b64": _b64("out")}

    run = RemoteExecutor(Host())  # type: ignore[arg-type]
    out = tmp_path / "out"
    got = run(TrialSpec(("true",), str(out)))
    assert got.status == "failed" and "was not asked for" in str(got.error) and "host evil" in str(got.error)
    assert not victim.exists()
    with pytest.raises(ConnectionLost, match="protocol error"):
        run(TrialSpec(("true",), str(out)))  # the next trial interrupts the run


def test_words_for_the_terminal_lose_their_control_characters() -> None:
    """An escape sequence a host puts in an error or a restored line never reaches the controller's terminal."""
    got = wire.check(
        "exec", {}, {"measured": {**MEASURED, "error": "boom\x1b]0;pwned\x07\x1b[2J\nnext\tline"}}
    )
    assert got["measured"]["error"] == "boom\ufffd]0;pwned\ufffd\ufffd[2J\nnext\tline"
    assert wire.check("bye", {}, {"restored": ["\x9b31m"]}) == {"restored": ["\ufffd31m"]}
    envelope = wire.decode(b'{"v":2,"id":1,"ok":false,"error":"\\u001b[1mbad"}')
    assert envelope["error"] == "\ufffd[1mbad"
    environ = wire.check("capture", {}, {"hostname": "h", "environ": {"X": "\udcff\x1b"}})["environ"]
    assert environ == {"X": "\udcff\x1b"}  # raw: filtered where it is stored (remote/probe.py)
