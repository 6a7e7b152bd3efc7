"""Shared pieces of the profilers: finding tools, the trial's own cgroup, a `perf record` that starts exactly
with the trial, tracefs.

What a profile shows is the workload's: the trial's process tree, from its first instruction, and the servers
working in its scratch directory. The trial joins a cgroup of its own (`TrialCgroup`) before it execs the
command — a `sh` that writes its PID into the cgroup and execs in place, so every process of the tree is born in
it — and perf samples per CPU, only in that cgroup (`perf record -a -G`). A system-wide profile of the same
trials was mostly not the workload: for `alloc`, alloc 7% of the samples, python 42%, perf itself 26%.

perf is started in `start` and stopped in `stop`, instead of wrapping the command, for two reasons measured here:
wrapping makes perf the trial's parent, so its own CPU time lands in the trial's rusage; and with inherited
per-task sampling perf lost most samples of stress-ng's short-lived fork children (31 samples in 1 s vs 2062 per
CPU). perf is started disabled (-D -1) and enabled through its control FIFO, so recording begins when `start`
returns, not whenever perf finished setting up.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from fairmark.errors import FairmarkError
from fairmark.probe.which import find_tool
from fairmark.run.guard.lock import pid_alive
from fairmark.run.guard.scratch import PREFIX
from fairmark.run.hooks import HookContext, TrialHook
from fairmark.store.owner import cpu_ticks


class ProfilerFailed(FairmarkError):
    """A profiler that was expected to work failed for this trial (its error text is kept)."""


# How long perf may take to start (until it acks "enable") and to exit after SIGINT (writing its file, reading the
# build-ids of what it sampled): a fraction of a second here, but in the QEMU guest of tests/test_explain_qemu.py,
# at load ~20 (TCG gets what the busy host leaves it), starts took 15-19 s and stops 12-32 s, and a fixed 30 s failed
# 8 of 12 starts and 1 of 4 stops (the stop killed mid-write: "data size field is 0"). A perf that still uses CPU
# is working, not stuck: it gets PERF_WAIT_S from the last CPU it used, at most PERF_WAIT_CAP_S in all. The trial
# does not run meanwhile (before it, or after it ended): waiting changes no measurement.
PERF_WAIT_S = 30.0
PERF_WAIT_CAP_S = 300.0


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def perf_paranoid() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    except (OSError, ValueError):
        return None


def system_wide_perf_problem() -> str | None:
    """Why `perf record -a` cannot run here (None when it can)."""
    if find_tool("perf") is None:
        return "perf not found: install linux-perf (Debian) / linux-tools (Ubuntu)"
    paranoid = perf_paranoid()
    if not is_root() and (paranoid is None or paranoid > 0):
        return f"system-wide perf needs root or kernel.perf_event_paranoid <= 0 (it is {paranoid})"
    return None


def ensure_tracefs() -> bool:
    """Mount tracefs at /sys/kernel/tracing when it is not there (root only). True when events are readable."""
    events = Path("/sys/kernel/tracing/events")
    if events.is_dir():
        return True
    if is_root() and Path("/sys/kernel/tracing").is_dir():
        subprocess.run(
            ["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], capture_output=True, check=False
        )
    return events.is_dir()


def cgroup_mount() -> Path | None:
    """Where perf looks for a cgroup named by -G: the v1 hierarchy with the perf_event controller, else the
    cgroup v2 hierarchy (where perf_event is always enabled). None when neither is mounted."""
    v2 = None
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        f = line.split()
        if len(f) >= 4 and f[2] == "cgroup" and "perf_event" in f[3].split(","):
            return Path(f[1])
        if len(f) >= 3 and f[2] == "cgroup2" and v2 is None:
            v2 = Path(f[1])
    return v2


def cgroup_problem() -> str | None:
    """Why a trial cannot get a perf cgroup of its own here (None when it can)."""
    root = cgroup_mount()
    if root is None:
        return "no cgroup file system with perf_event is mounted (cgroup v2, or v1 -o perf_event)"
    if not os.access(root, os.W_OK):
        return f"cannot create a cgroup in {root}: needs root"
    if perf_event_unpropagated(root) and not _toggle_controllers(root):
        return unpropagated_message(root, "no controller is listed in its cgroup.controllers")
    return None


# perf_event is implicit on cgroup v2 (never listed in cgroup.controllers), but the kernel (6.1 here) adds the
# implicit controllers to what the root gives its children only when the root's cgroup.subtree_control is
# written: until something enables a controller there, a new cgroup has no perf_event state, and `perf record
# -G` on it fails with ENOENT, which perf words as "The cpu-clock event is not supported". systemd enables
# controllers at boot; a minimal init (a container, an initramfs shell, the test's QEMU guest) does not.
# Enabling one controller and disabling it again leaves cgroup.subtree_control as it was, and every cgroup,
# old and new, then has perf_event (checked in the guest: `perf stat -G` went from <not supported> to counting).
SAFE_CONTROLLERS = ("pids", "rdma", "misc", "hugetlb", "io", "memory", "cpu", "cpuset")


def perf_event_unpropagated(root: Path) -> bool:
    """A cgroup v2 root whose cgroup.subtree_control was, for all its contents say, never written: no
    controller enabled for its children (see above). False on v1 and when a controller is enabled."""
    try:
        return (root / "cgroup.controllers").exists() and not (
            root / "cgroup.subtree_control"
        ).read_text().split()
    except OSError:
        return False


def _toggle_controllers(root: Path) -> list[str]:
    """The controllers of the root's cgroup.controllers this could toggle (the first is used)."""
    try:
        listed = (root / "cgroup.controllers").read_text().split()
    except OSError:
        return []
    return [c for c in SAFE_CONTROLLERS if c in listed] + [c for c in listed if c not in SAFE_CONTROLLERS]


def unpropagated_message(root: Path, why: str) -> str:
    control = root / "cgroup.subtree_control"
    return (
        f"perf cannot sample a cgroup here: the cgroup v2 root {root} enables no controller for its children "
        f"({control} is empty), and until one has been, the kernel gives new cgroups no perf_event state (perf -G "
        f'fails: "The cpu-clock event is not supported"); fairmark could not do it ({why}). Enable one as an '
        f"init does at boot: `echo +pids > {control}` (as root)"
    )


def propagate_perf_event(root: Path) -> str | None:
    """Make the kernel give the v2 root's cgroups perf_event (see above) by enabling one controller for the
    root's children and disabling it at once; None when done or not needed, else why perf -G cannot work."""
    if not perf_event_unpropagated(root):
        return None
    candidates = _toggle_controllers(root)
    if not candidates:
        return unpropagated_message(root, "no controller is listed in its cgroup.controllers")
    control = root / "cgroup.subtree_control"
    try:
        _write(control, f"+{candidates[0]}")
    except OSError as exc:
        return unpropagated_message(root, f"+{candidates[0]}: {exc.strerror or exc}")
    # only a child that enabled it in its own subtree_control between the two writes can make this fail (EBUSY):
    # perf works then, and the controller stays enabled for the root's children, as that child needs
    with contextlib.suppress(OSError):
        _write(control, f"-{candidates[0]}")
    return None


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:  # one write(): cgroupfs parses per write call
        fh.write(value)


# The trial's first process: joins the cgroup, then execs the command in place (same PID), so the command and
# every process it starts run in the cgroup from their first instruction.
JOIN = 'echo $$ > "$0" && exec "$@"'


CGROUP_PREFIX = "fairmark-profile-"


class TrialCgroup:
    """A cgroup for one profiled trial, holding its process tree and the workload's servers while it runs. Its
    name carries the controller's PID: a controller killed mid-trial (kill -9) leaves it, and the next run's
    `sweep_stale_cgroups` removes it once empty and its owner is gone.

    On cgroup v1 it is made in the perf_event hierarchy, apart from the cpuset one a `cpus` variant places the
    trial in. On cgroup v2 there is one hierarchy and a process is in one cgroup of it: a trial that left its
    variant's cpuset cgroup for a profile cgroup beside it lost its CPUs. There it is made inside the trial's
    placement cgroup (`inside`, the spec's place_cgroup), whose CPUs it inherits (a child without controllers of
    its own), and the workload's servers profiled with the trial share those CPUs while it runs. `name` is its
    path from the hierarchy's root, what `perf -G` takes."""

    def __init__(self, root: Path, inside: str | None = None):
        self.root = root
        self.v2 = (root / "cgroup.controllers").exists()  # only a v2 hierarchy's root has it
        base = root
        if self.v2 and inside and Path(inside).is_relative_to(root) and Path(inside).is_dir():
            base = Path(inside)
        self.path = base / f"{CGROUP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.path.mkdir()
        self.name = str(self.path.relative_to(root))
        self._moved: dict[int, str] = {}  # server pid → the cgroup it came from

    def wrap(self, argv: list[str]) -> list[str]:
        return ["/bin/sh", "-c", JOIN, str(self.path / "cgroup.procs"), *argv]

    def add_servers(self, scratch: Path | None) -> list[int]:
        """Move the processes working in the workload's scratch directory (its managed servers: redis,
        PostgreSQL …) into the cgroup for the trial; `remove` puts them back."""
        if scratch is None:
            return []
        import psutil

        for proc in psutil.process_iter(["pid", "cwd"]):
            cwd = proc.info.get("cwd") or ""
            if proc.pid == os.getpid() or not (cwd == str(scratch) or cwd.startswith(f"{scratch}/")):
                continue
            home = _cgroup_of(proc.pid, self.v2)
            if home is not None and _join(self.path, proc.pid):
                self._moved[proc.pid] = home
        return sorted(self._moved)

    def remove(self) -> None:
        for pid, home in self._moved.items():
            _join(self.root / home.lstrip("/"), pid)
        self._moved.clear()
        with contextlib.suppress(OSError):  # a process that escaped the trial's group keeps it: left as is
            self.path.rmdir()


# A cgroup named before it carried its owner's PID (fairmark-profile-HEX): left by a fairmark that died, once it
# is this old — no profiled trial of a live one keeps an empty cgroup for an hour.
UNOWNED_AGE_S = 3600.0


def sweep_stale_profiles(root: Path | None = None, tmp: Path | None = None) -> list[str]:
    """Remove what a fairmark killed during a profiled trial left: its trial cgroup (`TrialCgroup`) once empty,
    and its perf control FIFOs' directory; returns what was removed. A cgroup still holding processes stays
    (rmdir refuses it); so does anything of a fairmark still running."""
    removed = []
    for d in sorted((tmp or Path(tempfile.gettempdir())).glob(PERFCTL_PREFIX + "*")):
        owner = d.name.removeprefix(PERFCTL_PREFIX).partition("-")[0]
        if owner.isdigit() and not pid_alive(int(owner)) and _mine(d):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(f"removed {d}, left by fairmark pid {owner} that ended during a profiled trial")
    return removed + _sweep_cgroups(root if root is not None else cgroup_mount())


def _mine(path: Path) -> bool:
    try:
        return path.stat().st_uid == os.geteuid()
    except OSError:
        return False


def _sweep_cgroups(root: Path | None) -> list[str]:
    try:
        # v2: also inside a `cpus` variant's cgroup (TrialCgroup's `inside`)
        found = sorted([*root.glob(CGROUP_PREFIX + "*"), *root.glob(f"*/{CGROUP_PREFIX}*")]) if root else []
    except OSError:
        return []
    removed = []
    for d in found:
        owner, _, rest = d.name.removeprefix(CGROUP_PREFIX).partition("-")
        try:
            if rest and owner.isdigit():
                if pid_alive(int(owner)):
                    continue
            elif time.time() - d.stat().st_mtime < UNOWNED_AGE_S:
                continue
            d.rmdir()
        except OSError:
            continue  # not empty, already gone, or not ours to remove
        whose = f"fairmark pid {owner}" if rest else "a fairmark"
        removed.append(f"removed the empty cgroup {d}, left by {whose} that ended during a profiled trial")
    return removed


def _join(cgroup: Path, pid: int) -> bool:
    try:
        (cgroup / "cgroup.procs").write_text(str(pid))
    except OSError:  # gone, or a kernel thread
        return False
    return True


def _cgroup_of(pid: int, v2: bool) -> str | None:
    """`pid`'s cgroup in the hierarchy perf uses: the v2 "0::" line, or the v1 perf_event line."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        num, ctrls, path = line.split(":", 2)
        if (v2 and num == "0") or (not v2 and "perf_event" in ctrls.split(",")):
            return path
    return None


def scratch_of(trial_dir: str) -> Path | None:
    """The workload's scratch directory holding a trial's directory (fairmark.run.guard.scratch names it)."""
    path = Path(trial_dir)
    return next((p for p in (path, *path.parents) if p.name.startswith(PREFIX)), None)


PERFCTL_PREFIX = "fairmark-perfctl-"


def _ends_with(parent: int) -> Any:
    """Linux: perf gets SIGINT (it writes its file and exits) when the thread that started it ends — a
    controller killed with kill -9 mid-trial left `perf record -a` sampling every CPU until someone noticed.
    The thread is the one running the trial, which outlives perf in every other case.

    prctl is found here, before the fork: an import between fork and exec runs Python's import machinery in a
    copy of a threaded process, and a Python without libffi (the QEMU guest's, a minimal container's) raised
    there — every profiled trial failed with subprocess's bare "Exception occurred in preexec_fn". Without
    ctypes perf starts unarmed: a controller killed with kill -9 leaves it to the next run's sweep."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None

    def arm() -> None:
        prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the controller died before the signal was armed
            os._exit(1)

    return arm


class Patience:
    """Whether to give up waiting for perf: PERF_WAIT_S after the last CPU it used, PERF_WAIT_CAP_S in all."""

    def __init__(self, pid: int):
        self.pid, self.wait_s, self.cap_s = pid, PERF_WAIT_S, PERF_WAIT_CAP_S
        self.start = self.last = time.monotonic()
        self.ticks = cpu_ticks(pid)

    def expired(self) -> bool:
        now, ticks = time.monotonic(), cpu_ticks(self.pid)
        if ticks != self.ticks:
            self.ticks, self.last = ticks, now
        return now - self.last > self.wait_s or now - self.start > self.cap_s

    def why(self) -> str:
        now = time.monotonic()
        if now - self.start > self.cap_s:
            return f"within {self.cap_s:g} s"
        return f"in {now - self.start:.0f} s, the last {now - self.last:.0f} s without using CPU (stuck?)"


class PerfRecorder:
    """One `perf <sub> record -a … -o FILE` per trial (its events filtered to the trial's cgroup as `argv`
    says), enabled through a control FIFO, stopped with SIGINT."""

    def __init__(self, base_argv: list[str], out: Path):
        self.out = out
        self._dir = Path(tempfile.mkdtemp(prefix=f"{PERFCTL_PREFIX}{os.getpid()}-"))
        ctl, ack = self._dir / "ctl", self._dir / "ack"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        argv = [*base_argv, "-a", "-D", "-1", "--control", f"fifo:{ctl},{ack}", "-o", str(out), "-q"]
        self.argv = argv
        try:
            self.proc = subprocess.Popen(
                argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_ends_with(os.getpid())
            )
        except (OSError, subprocess.SubprocessError) as exc:  # the trial's error names perf, not subprocess
            shutil.rmtree(self._dir, ignore_errors=True)
            raise ProfilerFailed(f"{' '.join(argv[:3])} could not be started: {exc}") from exc
        # O_RDWR opens a FIFO without waiting for the other end (Linux), so a perf that dies at start-up
        # cannot hang the trial; the "enable" waits in the pipe until perf reads it.
        self._ctl = os.open(ctl, os.O_RDWR)
        self._ack = os.open(ack, os.O_RDWR)
        os.write(self._ctl, b"enable\n")
        self._wait_ack()

    def _wait_ack(self) -> None:
        patience = Patience(self.proc.pid)
        while not patience.expired():
            ready, _, _ = select.select([self._ack], [], [], 0.2)
            if ready:
                os.read(self._ack, 16)
                return
            if self.proc.poll() is not None:
                err = self.stop()
                raise ProfilerFailed(
                    f"{' '.join(self.argv[:3])} did not start: {err.strip()[-300:] or 'exited'}"
                )
        why = patience.why()
        err = self.stop()
        raise ProfilerFailed(
            f"{' '.join(self.argv[:3])} did not start {why}; {err.strip()[-300:]}".rstrip("; ")
        )

    def stop(self) -> str:
        """Stop recording; returns perf's stderr (empty when all went well), and why perf was killed if it was."""
        self.proc.send_signal(signal.SIGINT)
        patience, killed, out = Patience(self.proc.pid), "", b""
        while True:
            try:
                _, out = self.proc.communicate(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if patience.expired():
                    killed = (
                        f"\n{self.argv[0]} {self.argv[1]} killed: it did not finish its file {patience.why()}"
                    )
                    self.proc.kill()
                    _, out = self.proc.communicate()
                    break
        for fd in (self._ctl, self._ack):
            os.close(fd)
        shutil.rmtree(self._dir, ignore_errors=True)
        return out.decode(errors="replace") + killed


class Profiler(TrialHook):
    """A profile hook: `kind` is the artifact kind ("profile.cpu" …)."""

    kind = "profile"
    _rec: PerfRecorder | None = None
    _cgroup: TrialCgroup | None = None

    def close(self) -> None:
        """End of run (also after Ctrl-C between start and stop): no perf left recording, no cgroup left."""
        if self._rec is not None:
            self._rec.stop()
            self._rec.out.unlink(missing_ok=True)
            self._rec = None
        self._drop_cgroup()

    def _drop_cgroup(self) -> None:
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None


class PerfProfiler(Profiler):
    """A perf profile of the trial's own cgroup: `wrap` makes the cgroup and has the trial join it, `start`
    moves the workload's servers in and starts perf (`record_argv`), `stop` ends both."""

    out_name = "perf.data"
    _error: str | None = None
    servers: tuple[int, ...] = ()  # the workload's servers profiled with the last trial
    with_servers = True  # whether to look for them (a client on another host than its servers: no)

    def record_argv(self, cgroup: str) -> list[str]:
        raise NotImplementedError

    def wrap(self, argv: list[str], ctx: HookContext) -> list[str]:
        self._drop_cgroup()
        self._error, self.servers = None, ()
        root = cgroup_mount() or Path("/nonexistent")
        if problem := propagate_perf_event(root):
            self._error = problem
            return argv
        try:
            self._cgroup = TrialCgroup(root, ctx.place_cgroup)
        except OSError as exc:
            self._error = f"cannot make the trial's cgroup: {exc}"
            return argv
        return self._cgroup.wrap(argv)

    def start(self, ctx: HookContext) -> None:
        if self._cgroup is None:
            return
        scratch = scratch_of(ctx.trial_dir) if self.with_servers else None
        self.servers = tuple(self._cgroup.add_servers(scratch))
        try:
            self._rec = PerfRecorder(self.record_argv(self._cgroup.name), Path(ctx.trial_dir) / self.out_name)
        except ProfilerFailed as exc:
            # the cgroup stays to the trial's end: the trial's first process joins it (`wrap`), and without it
            # the trial failed with sh's "exit status 2" in place of perf's message
            self._rec, self._error = None, exc.message

    def finish(self) -> tuple[PerfRecorder | None, str]:
        """Stop perf and give the cgroup's processes back; (the recorder, perf's stderr) or (None, why)."""
        rec, self._rec = self._rec, None
        err = rec.stop() if rec is not None else (self._error or "perf did not start")
        self._drop_cgroup()
        return rec, err
