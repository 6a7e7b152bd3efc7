"""The agent's answers as the controller accepts them: one JSON line each, of the shape its request's record below
says — anything else is refused as a protocol error naming the host (remote/connection.py), never an internal
error and never a value of the wrong type further down (docs/security.md; issue 37).

`decode` reads one line: JSON only (no NaN or Infinity, no number beyond a float, no nesting deeper than the
interpreter's recursion), an object of the envelope {"v", "id", "ok", "result" | "error"}. `check` holds a
result to its operation's record: each field of the type it declares (an int a 64-bit one, a float finite, a str
valid Unicode unless declared `RawStr`, a free JSON value at most `MAX_DEPTH` deep), a field without a default
present; a field the record does not know is dropped, an optional one absent stays absent. The records are
frozen dataclasses, the store's records' style (store/records.py): one per answer, the schema of the wire.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
import reprlib
import select
import time
import types
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from fairmark.jsonvalue import JSONValue

MAX_DEPTH = 32  # a free JSON value in an answer (a profile document, a lock's owner)
INT_BOUND = 1 << 63


class BadAnswer(ValueError):
    """An answer that is not what its request's record says (the connection names the host and the request)."""


# A str field whose text may hold what is not Unicode (a host's environment: undecodable bytes travel as lone
# surrogates); whoever stores it filters it (remote/probe.py).
RawStr = Annotated[str, "raw"]
# A str field of words for a person (an error, a line of what was restored, a host name): shown on the controller's
# terminal and stored, so a control character in it (an escape sequence a host sends to the terminal) is replaced
# with U+FFFD — newline and tab stay.
Words = Annotated[str, "words"]
WORDS_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


# -- the records ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Envelope:
    v: int
    id: int | None
    ok: bool
    result: dict[str, JSONValue] | None = None
    error: Words | None = None


@dataclass(frozen=True, slots=True)
class Hello:
    protocol: int
    agent_version: Words = ""
    pid: int = 0
    os: Words = ""
    release: Words = ""
    hostname: Words = ""
    address: Words | None = None
    boot_id: Words | None = None
    python: Words = ""
    fairmark: bool = False
    state_dir: str = ""
    uid: int | None = None  # the agent's effective user (None: an agent that does not say, or no POSIX uid)
    placement: Words | None = None  # how a `cpus` variant is placed there: "cpuset v2", "affinity: WHY" …
    launcher: Words | None = None
    recovered: list[Words] = field(default_factory=list)
    swept: list[Words] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class WireMeasured:
    """run.spec.Measured as an agent sends it: without the output paths, which the controller chooses."""

    argv: list[str]
    status: Literal["ok", "failed", "timeout"]
    exit_code: int | None
    signal: int | None
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_kib: int | None
    error: Words | None = None
    leftovers_killed: int = 0
    minor_faults: int = 0
    major_faults: int = 0
    voluntary_switches: int = 0
    involuntary_switches: int = 0
    max_rss_method: str | None = None
    stdout_bytes: int | None = None
    stderr_bytes: int | None = None
    version: int = 1


@dataclass(frozen=True, slots=True)
class MonitorSample:
    t_s: float
    texts: dict[str, str]


@dataclass(frozen=True, slots=True)
class MonitorReply:
    samples: list[MonitorSample]
    errors: list[Words] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ProfileDoc:
    kind: str
    name: str
    content_type: str
    data: JSONValue


@dataclass(frozen=True, slots=True)
class ExecReply:
    measured: WireMeasured
    stdout_b64: str = ""
    stderr_b64: str = ""
    files: dict[str, str] = field(default_factory=dict)
    boot_id: str | None = None
    monitor: MonitorReply | None = None
    profile: list[ProfileDoc] | None = None


@dataclass(frozen=True, slots=True)
class CaptureReply:
    hostname: str
    os: str = ""
    files: dict[str, str] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)
    commands: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    environ: dict[RawStr, RawStr] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LockReply:
    held: bool
    owner: dict[str, JSONValue] | None = None


@dataclass(frozen=True, slots=True)
class CheckReply:
    refused: dict[str, Words]


@dataclass(frozen=True, slots=True)
class ProfilersReply:
    unavailable: dict[str, Words | None]


@dataclass(frozen=True, slots=True)
class Placement:
    cgroup: str | None = None
    cpus: list[int] | None = None


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a variant's change made ready for its trials there (remote/hosts.py: RemoteHost.prepare)."""

    env: dict[str, str] | None = None
    workdir: str | None = None
    placement: Placement | None = None


@dataclass(frozen=True, slots=True)
class ChangeReply:
    applied: list[Words] = field(default_factory=list)
    reverted: list[Words] = field(default_factory=list)
    prepared: Prepared | None = None


@dataclass(frozen=True, slots=True)
class RestoreReply:
    restored: list[Words]


@dataclass(frozen=True, slots=True)
class RecoverReply:
    recovered: list[Words]


@dataclass(frozen=True, slots=True)
class ReadReply:
    files: dict[str, str | None]
    monotonic_s: float | None = None


@dataclass(frozen=True, slots=True)
class WhichReply:
    found: dict[str, str | None]


@dataclass(frozen=True, slots=True)
class SysctlReadReply:
    values: dict[str, str | None]


@dataclass(frozen=True, slots=True)
class Empty:
    pass


@dataclass(frozen=True, slots=True)
class AdapterEnv:
    env: dict[str, str]


@dataclass(frozen=True, slots=True)
class AdapterCommand:
    argv: list[str]
    env: dict[str, str]


@dataclass(frozen=True, slots=True)
class OutputFiles:
    files: dict[str, tuple[str, str | None]]  # key → [its path there, its bytes in base64 or null]


REPLIES: dict[str, type] = {
    "hello": Hello,
    "exec": ExecReply,
    "capture": CaptureReply,
    "lock": LockReply,
    "check": CheckReply,
    "profilers": ProfilersReply,
    "restore": RestoreReply,
    "bye": RestoreReply,
    "recover": RecoverReply,
    "read": ReadReply,
    "which": WhichReply,
    "sysctl_read": SysctlReadReply,
    "mkdirs": Empty,
    "rmtree": Empty,
    "write": Empty,
    "change": ChangeReply,
}
ADAPTER_REPLIES: dict[str, type] = {
    "setup": AdapterEnv,
    "before_trial": AdapterCommand,
    "output_files": OutputFiles,
    "after_trial": Empty,
    "teardown": Empty,
}


# -- decoding and checking -----------------------------------------------------------------------------------
def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadAnswer(f"number {text[:40]} is beyond a float")
    return value


def _constant(name: str) -> Any:
    raise BadAnswer(f"{name} is not JSON")


def decode(line: bytes) -> dict[str, Any]:
    """One answer line's envelope, checked (its result still to be checked against its request's record)."""
    try:
        value = json.loads(line, parse_float=_finite, parse_constant=_constant)
    except RecursionError:
        raise BadAnswer("nested too deep") from None
    except ValueError as exc:  # not JSON, not UTF-8, an integer of more than 4300 digits, NaN …
        raise BadAnswer(f"not a JSON answer: {str(exc)[:200]}") from None
    envelope = shape(Envelope, value, "answer")
    if envelope["ok"] and "result" not in envelope:
        raise BadAnswer("answer: ok without a result")
    return envelope


def check(op: str, args: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """`result` held to the record of its request (an operation without one: a JSON object, bounded)."""
    record = ADAPTER_REPLIES.get(str(args.get("method"))) if op == "adapter" else REPLIES.get(op)
    if record is None:
        return shape(dict[str, JSONValue], result, op)  # type: ignore[no-any-return,unused-ignore]
    return shape(record, result, op)  # type: ignore[no-any-return,unused-ignore]


@functools.cache
def _hints(record: type) -> dict[str, Any]:
    return get_type_hints(record, include_extras=True)


def shape(tp: Any, value: Any, where: str) -> Any:
    """`value` when it has type `tp` (a record: the dict of its known fields), else BadAnswer saying where."""
    if dataclasses.is_dataclass(tp):
        return _record(tp, value, where)  # type: ignore[arg-type]
    if tp is JSONValue or tp is Any:
        _bounded(value, where)
        return value
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return _text(args[1], value, where)
    if origin in (Union, types.UnionType):
        for arm in sorted(args, key=lambda a: a is not type(None)):  # None first: cheap and unambiguous
            try:
                return shape(arm, value, where)
            except BadAnswer:
                continue
        raise BadAnswer(f"{where}: {_what(value)} where {_name(tp)} was expected")
    if origin is Literal:
        if any(value == a and type(value) is type(a) for a in args):
            return value
        raise BadAnswer(f"{where}: {_what(value)} is not one of {', '.join(map(repr, args))}")
    if origin is list or origin is tuple:
        return _sequence(tp, origin, args, value, where)
    if origin is dict:
        if not isinstance(value, dict):
            raise BadAnswer(f"{where}: {_what(value)} where an object was expected")
        return {
            shape(args[0], k, f"{where} key"): shape(args[1], v, f"{where}.{k}") for k, v in value.items()
        }
    return _scalar(tp, value, where)


def _record(record: type, value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadAnswer(f"{where}: {_what(value)} where an object was expected")
    hints, out = _hints(record), {}
    for f in dataclasses.fields(record):
        if f.name in value:
            out[f.name] = shape(hints[f.name], value[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise BadAnswer(f"{where}: no {f.name!r}")
    return out


def _sequence(tp: Any, origin: Any, args: tuple[Any, ...], value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise BadAnswer(f"{where}: {_what(value)} where a list was expected")
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        if len(value) != len(args):
            raise BadAnswer(f"{where}: {len(value)} items where {len(args)} were expected")
        return [shape(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True))]
    return [shape(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]


def _scalar(tp: Any, value: Any, where: str) -> Any:
    if tp is type(None) and value is None:
        return None
    if tp is bool and type(value) is bool:
        return value
    if tp is int and type(value) is int and -INT_BOUND <= value < INT_BOUND:
        return value
    if tp is float and type(value) in (int, float) and -INT_BOUND <= value < INT_BOUND:
        return float(value)
    if tp is str:
        return _text("", value, where)
    raise BadAnswer(f"{where}: {_what(value)} where {_name(tp)} was expected")


def _text(kind: str, value: Any, where: str) -> str:
    """A str field: Unicode (but "raw"), its control characters replaced ("words")."""
    if not isinstance(value, str):
        raise BadAnswer(f"{where}: {_what(value)} where str was expected")
    if kind != "raw" and not _unicode(value):
        raise BadAnswer(f"{where}: a text that is not Unicode")
    return WORDS_CONTROL.sub("\ufffd", value) if kind == "words" else value


def _unicode(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate (JSON "\ud800"): no store or terminal takes it
        return False
    return True


def _bounded(value: Any, where: str) -> None:
    """A free JSON value: at most MAX_DEPTH deep, its texts Unicode (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadAnswer(f"{where}: nested deeper than {MAX_DEPTH}")
        if isinstance(v, dict):
            stack += [(k, depth) for k in v] + [(x, depth + 1) for x in v.values()]
        elif isinstance(v, list):
            stack += [(x, depth + 1) for x in v]
        elif isinstance(v, str) and not _unicode(v):
            raise BadAnswer(f"{where}: a text that is not Unicode")
        elif isinstance(v, int) and not isinstance(v, bool) and not -INT_BOUND <= v < INT_BOUND:
            raise BadAnswer(f"{where}: an integer beyond 64 bits")


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _what(value: Any) -> str:
    return f"{type(value).__name__} {reprlib.repr(value)}"


# -- the bytes ----------------------------------------------------------------------------------------------
class Silent(Exception):
    """No answer (or no room for the request) before the deadline."""


class TooLong(BadAnswer):
    """An answer line longer than the cap: what was read of it is dropped."""


def _wait(fd: int, events: int, deadline: float | None) -> None:
    left = None if deadline is None else deadline - time.monotonic()
    if left is not None and left <= 0:
        raise Silent()
    poller = select.poll()
    poller.register(fd, events)
    poller.poll(None if left is None else max(1, int(left * 1000)))


def send(fd: int, data: bytes, deadline: float | None) -> None:
    """Write all of `data` to the (non-blocking) pipe `fd` by the deadline: an agent that reads nothing must
    not block the controller either. BrokenPipeError when the agent is gone."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            _wait(fd, select.POLLOUT, deadline)


class LineReader:
    """Answer lines from the agent's stdout, read by the deadline and at most `cap` bytes each: the memory an
    answer takes is bounded whatever the agent sends (an endless line without a newline included)."""

    def __init__(self, fd: int):
        self.fd, self.buf, self.scanned = fd, bytearray(), 0

    def readline(self, deadline: float | None, cap: int) -> bytes:
        """The next line (its newline included); b"" at the end of the stream; Silent, TooLong."""
        while True:
            end = self.buf.find(b"\n", self.scanned)
            if end >= 0:
                line = bytes(self.buf[: end + 1])
                del self.buf[: end + 1]
                self.scanned = 0
                if end > cap:
                    raise TooLong(f"an answer longer than {cap} bytes")
                return line
            self.scanned = len(self.buf)
            if len(self.buf) > cap:
                self.buf = bytearray()
                raise TooLong(f"an answer longer than {cap} bytes (no end of line)")
            _wait(self.fd, select.POLLIN, deadline)
            try:
                chunk = os.read(self.fd, max(1, min(1 << 20, cap + 1 - len(self.buf))))
            except BlockingIOError:
                continue
            if not chunk:
                return b""
            self.buf += chunk
