"""Kernel-log watch: which kernel messages mean the system is in trouble, and a watch that records them while a
command runs (stability runs, seed 002: "the system must survive extreme overload").

`classify(text)` is pure and knows Linux's and FreeBSD's shapes; `parse_kmsg(raw)` reads Linux /dev/kmsg records
as the watch saved them. `python -m fairmark.run.monitors.kernel_log OUT -- ARGV…` runs ARGV while copying every
new /dev/kmsg record to OUT, then checks that the host still answers on loopback, and exits with ARGV's status.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import select
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from fairmark.store.events import event_line

# Most specific first: "BUG: soft lockup" is a soft lockup, not a generic BUG; a FreeBSD KASSERT panics too.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("oom_kill_bounded", r"Memory cgroup out of memory: Killed process"),
        # Not "oom_reaper: reaped process …": the reaper's note follows every OOM kill, bounded or not, so
        # counting it made each kill inside the run's own cgroup also an unbounded one (seen in run 7334ee62).
        ("oom_kill", r"Out of memory: Killed process"),
        ("soft_lockup", r"BUG: soft lockup - CPU#\d+ stuck|Watchdog detected hard LOCKUP"),
        ("hung_task", r"INFO: task \S.* blocked for more than \d+ seconds"),
        ("rcu_stall", r"rcu: INFO: \S+ (self-)?detected stalls?|rcu_\w+ (self-)?detected stall"),
        (
            "lockdep",
            r"WARNING: (possible circular locking dependency|possible recursive locking|inconsistent "
            r"lock state|suspicious RCU usage)",
        ),
        ("panic", r"Kernel panic - not syncing"),
        (
            "oops",
            r"Oops: |general protection fault|BUG: unable to handle |BUG: kernel NULL pointer dereference",
        ),
        ("bug", r"kernel BUG at |^BUG: "),
        ("warning", r"WARNING: CPU: \d+ PID: \d+ at "),
        # FreeBSD (dmesg / console text)
        ("kassert", r"KASSERT|^panic: Assertion .* failed at "),
        ("lock_order_reversal", r"lock order reversal"),
        ("witness", r"^witness_\w+|WITNESS"),
        ("panic", r"^panic: "),
    )
)
# Provoked on purpose inside the run's own bounded cgroup: listed, not counted against stability.
EXPECTED = frozenset({"oom_kill_bounded"})
START = "# fairmark-kmsg"
MAX_REPORTED = 12  # the stored stderr tail is short: the last events of a flood, its count is in the metrics


@dataclass(frozen=True)
class KernelEvent:
    kind: str
    time: str  # ISO wall-clock time (UTC) of the message, or "" when the log carries none (FreeBSD dmesg)
    t_s: float | None  # seconds after the watch started
    text: str  # the message's first line

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "time": self.time, "t_s": self.t_s, "text": self.text}


def kind_of(line: str) -> str | None:
    for kind, pattern in KINDS:
        if pattern.search(line):
            return kind
    return None


def classify(text: str) -> list[KernelEvent]:
    """Plain kernel-log text (FreeBSD dmesg, a console log): one event per matching line, no times."""
    return [
        KernelEvent(kind, "", None, line.strip())
        for line in text.splitlines()
        if (kind := kind_of(line.strip()))
    ]


def parse_kmsg(raw: str) -> list[KernelEvent]:
    """Records saved by the watch: a start line `# fairmark-kmsg mono_us=M wall=W [mark=T]`, then /dev/kmsg
    records `PRIO,SEQ,USEC,FLAGS;text` (continuation lines start with a space and are skipped).

    A record's USEC is the kernel's printk clock, which is not CLOCK_MONOTONIC: it is not slewed by NTP, and on
    a VM here it ran 10 ms behind after 1 h 46 min of uptime, which put a message the command wrote after it
    started at -2.8 ms. So the watch logs its own start mark through /dev/kmsg, and times are counted from the
    kernel's stamp on that record; `mono_us` is the fallback when the mark could not be written."""
    mono_us, wall, mark = None, None, None
    events = []
    for line in raw.splitlines():
        if line.startswith(START):
            fields = dict(f.split("=", 1) for f in line[len(START) :].split())
            mono_us, wall, mark = int(fields["mono_us"]), float(fields["wall"]), fields.get("mark")
            continue
        head, sep, text = line.partition(";")
        if not sep or line.startswith(" ") or head.count(",") < 3:
            continue
        usec = int(head.split(",")[2])
        if mark is not None and text.strip() == start_mark(mark):
            mono_us = usec
            continue
        kind = kind_of(text)
        if kind is None:
            continue
        t_s = (usec - mono_us) / 1e6 if mono_us is not None else None
        when = ""
        if wall is not None and t_s is not None:
            when = dt.datetime.fromtimestamp(wall + t_s, dt.UTC).isoformat(timespec="milliseconds")
        events.append(KernelEvent(kind, when, t_s, text.strip()))
    return events


def start_mark(token: str) -> str:
    """The watch's own kernel-log line (as LTP marks its tests in the log, so a reader of dmesg sees where a
    stability run began)."""
    return f"fairmark: kernel-log watch started ({token})"


def _write_mark(token: str) -> bool:
    try:
        fd = os.open("/dev/kmsg", os.O_WRONLY)
    except OSError:
        return False
    try:
        os.write(fd, f"<5>{start_mark(token)}\n".encode())
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _loopback_answers() -> bool:
    """The host still accepts and completes a TCP connection on loopback (its network stack and scheduler
    work): the local meaning of "the host stayed reachable"."""
    try:
        with socket.create_server(("127.0.0.1", 0)) as srv:
            srv.settimeout(10)
            with socket.create_connection(srv.getsockname(), timeout=10):
                conn, _ = srv.accept()
                conn.close()
        return True
    except OSError:
        return False


def watch(out_path: str, argv: list[str]) -> int:
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    os.lseek(fd, 0, os.SEEK_END)  # only what is logged from now on
    with open(out_path, "w") as out:
        token = f"{os.getpid()}-{time.time_ns()}"
        mono_us = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        wall = time.time()
        mark = f" mark={token}" if _write_mark(token) else ""
        out.write(f"{START} mono_us={mono_us} wall={wall:.6f}{mark}\n")
        started = time.monotonic()
        child = subprocess.Popen(argv)
        while True:
            done = child.poll() is not None
            _drain(fd, out)
            if done:
                break
            select.select([fd], [], [], 0.5)
        elapsed_s = time.monotonic() - started
        time.sleep(1.0)  # messages the last moments produced
        _drain(fd, out)
        out.write(f"# end elapsed_s={elapsed_s:.3f} reachable={int(_loopback_answers())}\n")
    os.close(fd)
    report(Path(out_path).read_text(errors="replace"))
    return child.returncode


def report(log: str) -> None:
    """The events as marked JSON lines on stderr: the store keeps the trial's stderr tail, and reports read the
    events from it (`kernel_events` in `run --json`)."""
    for event in parse_kmsg(log)[-MAX_REPORTED:]:
        print(event_line(event.as_dict() | {"text": event.text[:200]}), file=sys.stderr)


def _drain(fd: int, out) -> None:
    while True:
        try:
            record = os.read(fd, 8192)
        except BlockingIOError:
            return
        except BrokenPipeError:  # overwritten before we read it: note the gap, go on
            out.write("# kmsg records lost (ring buffer overrun)\n")
            continue
        if not record:
            return
        out.write(record.decode("utf-8", "replace"))
        out.flush()


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m fairmark.run.monitors.kernel_log OUT -- ARGV...", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        return watch(args[0], args[2:])
    return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
