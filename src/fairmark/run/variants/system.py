"""System-changing variants: sysctls, scratch mounts, CPU sets and hotplug, THP, governor, ASLR, malloc debug.

Interface the runner uses:
  SystemState(plan, *, state_dir=None, dry_run=False)
      resolves every variant's changes and refuses (EnvironmentRefused) what cannot be done here — a missing
      sysctl, a boot-time tunable, no cpufreq, not root — before any trial.
  .changes_system -> bool      True when a variant changes machine-wide state: the runner then orders trials
                               in A B B A blocks instead of shuffling every trial
  .activate(variant)           revert the previous variant's machine-wide changes, apply this one's (each
                               original value journaled and fsync'd first), wait settle_s
  .prepare(variant)            -> {"env": {...}, "placement": {"cgroup": dir} or {"cpus": [...]}, "workdir": path}
                                  (the keys that apply; the launcher applies the placement before exec)
  .describe()                  -> {variant: [human-readable change, …]} for --dry-run and the report
  .close()                     revert everything, check every touched value is its original again; raises
                               RevertError (loudly) if not. Idempotent; call it in a finally.
  recover_pending()            undo what a killed fairmark left (a dead process's journal); a line per action
  pending_findings()           the same, as doctor findings (severity "error"), without changing anything
The journal (journal.py) is the truth: close() and recovery both undo its entries, newest first.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairmark.errors import EnvironmentRefused, Terminated
from fairmark.run.variants import cpus as cpus_mod
from fairmark.run.variants import kernel, malloc_debug, mount, sysctl
from fairmark.run.variants.journal import Journal, default_state_dir, journal_paths
from fairmark.run.variants.syslock import SystemLock
from fairmark.run.variants.tunable import RevertError, undo_file, verify_files

if TYPE_CHECKING:  # the plan model (pydantic) is not needed to recover or to diagnose
    from fairmark.plan.model import MountSpec, Plan, Variant

DEFAULT_SETTLE_S = 1.0


def merged_changes(plan: Plan, variant: Variant) -> dict[str, Any]:
    """The variant's changes with its [tuning.NAME] set underneath (the variant's own keys win; sysctl
    tables merge key by key)."""
    from fairmark.plan.kinds import VARIANT_KINDS  # with a plan at hand; recovery needs no plan model

    base: dict[str, Any] = {}
    if variant.tuning:
        tuning = plan.tuning[variant.tuning]
        base = {k: getattr(tuning, k) for k in tuning.model_fields_set if k in (*VARIANT_KINDS, "settle_s")}
    own = {k: getattr(variant, k) for k in variant.model_fields_set if k in (*VARIANT_KINDS, "settle_s")}
    out = {**base, **own}
    out["sysctl"] = {**base.get("sysctl", {}), **own.get("sysctl", {})}
    return out


@dataclass
class Resolved:
    """One variant's changes, checked against this machine."""

    name: str
    settings: list[Any] = field(default_factory=list)  # machine-wide, flipped per block
    scratch: mount.ScratchFs | None = None  # kept from first use to close()
    cpuset: cpus_mod.CpuSet | None = None
    env: dict[str, str] = field(default_factory=dict)
    settle_s: float = 0.0

    @property
    def needs_root(self) -> bool:
        return bool(self.settings or self.scratch or (self.cpuset and self.cpuset.use_cgroup))


class SystemState:
    def __init__(self, plan: Plan, *, state_dir: Path | str | None = None, dry_run: bool = False):
        self.plan, self.dry_run = plan, dry_run
        self.state_dir = Path(state_dir) if state_dir else default_state_dir()
        self.freebsd = sys.platform.startswith("freebsd")
        self.variants = {v.name: self._resolve(v) for v in plan.variant}
        self.active: str | None = None
        self.journal = Journal.for_this_process(self.state_dir)
        self._old_handlers: dict[int, Any] = {}
        self._closed = False
        self.lock = SystemLock()
        if not dry_run and any(r.needs_root for r in self.variants.values()):
            self._refuse_unless_possible()
        if not dry_run and any(r.settings for r in self.variants.values()):
            self.lock.acquire()  # machine-wide settings: one fairmark at a time (released by close())

    # -- resolution (all refusals happen here, before any trial) -----------------------------------------
    def _resolve(self, variant: Variant) -> Resolved:
        ch = merged_changes(self.plan, variant)
        r = Resolved(variant.name)
        for key, (given, resolve) in RESOLVE.items():
            if given(ch.get(key)):
                resolve(self, r, variant, ch)
        settle = ch.get("settle_s")
        r.settle_s = settle if settle is not None else (DEFAULT_SETTLE_S if r.settings else 0.0)
        return r

    def _scratch(self, name: str, spec: MountSpec) -> mount.ScratchFs:
        base = Path(spec.image_dir) if spec.image_dir else self.state_dir / "scratch"
        scratch = mount.ScratchFs(name, spec, base, freebsd=self.freebsd)
        scratch.check()
        return scratch

    def _refuse_unless_possible(self) -> None:
        if os.geteuid() != 0:
            what = ", ".join(n for n, r in self.variants.items() if r.needs_root)
            raise EnvironmentRefused(
                f"variant(s) {what} change the system (sysctl, mount, CPU hotplug …), which needs root",
                hint="run fairmark as root (sudo -E fairmark …), or remove those keys from the plan",
            )
        for path in journal_paths(self.state_dir):
            with contextlib.suppress(ValueError):
                other = Journal.load(path)
                if other.owner_alive() and other.pid != os.getpid():
                    raise EnvironmentRefused(
                        f"another fairmark (pid {other.pid}) has system changes in place ({path}); "
                        "two runs changing one machine would measure each other",
                        hint="wait for it to finish",
                    )

    # -- the runner's interface ---------------------------------------------------------------------------
    @property
    def changes_system(self) -> bool:
        return any(r.settings or r.scratch for r in self.variants.values())

    def describe(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name, r in self.variants.items():
            lines = [s.describe() for s in r.settings if not getattr(s, "guard", False)]
            if r.scratch:
                lines.append(mount.describe(r.scratch.spec))
            if r.cpuset:
                lines.append(r.cpuset.describe())
            if r.env:
                lines.append(malloc_debug.describe(r.env))
            if r.settings and r.settle_s:
                lines.append(f"settle {r.settle_s:g} s after applying")
            out[name] = lines
        return out

    def prepare(self, variant: Variant | str) -> dict[str, Any]:
        r = self.variants[_name(variant)]
        out: dict[str, Any] = {}
        if r.env:
            out["env"] = dict(r.env)
        if r.cpuset:
            out["placement"] = r.cpuset.placement(self._tagged(r.name, "run"), dry_run=self.dry_run)
        if r.scratch:
            if r.scratch.mountpoint is None and not self.dry_run:
                self._install_signal_handlers()
                r.scratch.create(self._tagged(r.name, "run"))
            out["workdir"] = r.scratch.mountpoint or f"<scratch {r.scratch.spec.fs} of {r.name}>"
        return out

    def activate(self, variant: Variant | str) -> None:
        name = _name(variant)
        r = self.variants[name]
        if name == self.active:
            return
        if self.dry_run:
            self.active = name
            return
        self._install_signal_handlers()
        self._revert_block()
        self.active = name
        journal = self._tagged(name, "block")
        for setting in r.settings:
            try:
                setting.apply(journal)
            except BaseException:
                self._revert_block()  # leave nothing half-applied
                raise
        if r.scratch and r.scratch.mountpoint is None:
            r.scratch.create(self._tagged(name, "run"))
        if r.settings and r.settle_s:
            time.sleep(r.settle_s)  # let caches, governors, the scheduler adapt before the block's trials

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            problems = self._undo(lambda e: True)
            problems += self._verify()
        finally:
            self.active = None
            self._restore_signal_handlers()
            if not self.journal.entries:
                self.lock.release()  # with entries left, hold it until exit: recovery must run first
        if problems:
            raise RevertError(
                "the system is NOT as fairmark found it: " + "; ".join(problems),
                hint=f"the journal {self.journal.path} is kept; `fairmark restore` retries, "
                "`fairmark doctor` shows it",
            )

    # -- internals ----------------------------------------------------------------------------------------
    def _tagged(self, variant: str, scope: str) -> Journal:
        self.journal.tags = {"variant": variant, "scope": scope}
        return self.journal

    def _revert_block(self) -> None:
        problems = self._undo(lambda e: e.get("scope") == "block")
        if problems:
            raise RevertError(
                f"could not revert variant {self.active}: " + "; ".join(problems),
                hint=f"the journal {self.journal.path} is kept; `fairmark restore` retries",
            )
        for r in self.variants.values():
            for s in r.settings:
                s.entry_id = None  # their entries are undone and gone

    def _undo(self, which: Any) -> list[str]:
        problems = []
        for entry in reversed([e for e in self.journal.entries if which(e)]):
            problem = undo_entry(entry)[1]
            if problem:
                problems.append(problem)
            else:
                self.journal.remove(entry["id"])
        for r in self.variants.values():
            if r.scratch and r.scratch.entry_id not in {e["id"] for e in self.journal.entries}:
                r.scratch.entry_id, r.scratch.mountpoint = None, None
            if r.cpuset and r.cpuset.entry_id not in {e["id"] for e in self.journal.entries}:
                r.cpuset.entry_id, r.cpuset.path = None, None
        return problems

    def _verify(self) -> list[str]:
        """Each touched file holds the value it had before the run (the first original seen per path)."""
        first: dict[str, dict[str, Any]] = {}
        for e in self.journal.history:
            if e["type"] == "file":
                first.setdefault(e["path"], e)
        return verify_files(list(first.values()))

    def _install_signal_handlers(self) -> None:
        # SIGTERM/SIGHUP would end Python without running `finally`; make them unwind like Ctrl-C does.
        if self._old_handlers or threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) is signal.SIG_DFL:
                self._old_handlers[sig] = signal.signal(sig, _exit_on_signal)

    def _restore_signal_handlers(self) -> None:
        for sig, old in self._old_handlers.items():
            with contextlib.suppress(ValueError):
                signal.signal(sig, old)
        self._old_handlers = {}


def _exit_on_signal(signum: int, _frame: Any) -> None:
    raise Terminated(signum)


# -- the variant kinds: key (a field of plan.model.SystemChanges, see plan/kinds.py) → (is it given?, resolve) ----
# Each resolve adds to the variant's Resolved what its own module makes of the value: machine-wide settings
# (applied in this order, each journaled, undone by undo_entry), a scratch file system, a CPU set, env.
def _sysctl(s: SystemState, r: Resolved, v: Variant, ch: dict[str, Any]) -> None:
    r.settings += sysctl.settings(ch["sysctl"], freebsd=s.freebsd)


def _aslr(s: SystemState, r: Resolved, v: Variant, ch: dict[str, Any]) -> None:
    r.settings.append(kernel.aslr_setting(ch["aslr"]))


def _thp(s: SystemState, r: Resolved, v: Variant, ch: dict[str, Any]) -> None:
    r.settings.append(kernel.thp_setting(ch["thp"]))


def _governor(s: SystemState, r: Resolved, v: Variant, ch: dict[str, Any]) -> None:
    r.settings += kernel.governor_settings(ch["governor"])


def _online_cpus(s: SystemState, r: Resolved, v: Variant, ch: dict[str, Any]) -> None:
    r.settings += cpus_mod.online_settings(ch["online_cpus"])


def _mount(s: SystemState, r: Resolved, v: Variant, ch: dict[str, Any]) -> None:
    r.scratch = s._scratch(v.name, ch["mount"])


def _cpus(s: SystemState, r: Resolved, v: Variant, ch: dict[str, Any]) -> None:
    online = cpus_mod.online_cpu_ids()
    if ch.get("online_cpus"):  # the CPU set must fit in what stays online
        online = online[: ch["online_cpus"]]
    chosen = cpus_mod.resolve_cpus(ch["cpus"], online)
    r.cpuset = cpus_mod.CpuSet(v.name, chosen, use_cgroup=cpus_mod.cpuset_usable())


def _malloc_debug(s: SystemState, r: Resolved, v: Variant, ch: dict[str, Any]) -> None:
    r.env = malloc_debug.malloc_env(v.env, freebsd=s.freebsd)


def _truthy(value: Any) -> bool:
    return bool(value)


def _not_none(value: Any) -> bool:  # aslr = 0 and cpus = 0 … are values, not absences
    return value is not None


# In the order the settings are applied (sysctls first, CPU hotplug last); plan/kinds.py has the same keys.
RESOLVE: dict[str, tuple[Any, Any]] = {
    "sysctl": (_truthy, _sysctl),
    "aslr": (_not_none, _aslr),
    "thp": (_truthy, _thp),
    "governor": (_truthy, _governor),
    "online_cpus": (_truthy, _online_cpus),
    "mount": (_truthy, _mount),
    "cpus": (_not_none, _cpus),
    "malloc_debug": (_truthy, _malloc_debug),
}


def _name(variant: Variant | str) -> str:
    return variant if isinstance(variant, str) else variant.name


# -- undo of one journal entry, shared by close() and recovery -------------------------------------------
def undo_entry(entry: dict[str, Any]) -> tuple[str, str | None]:
    kind = entry.get("type")
    if kind == "file":
        return undo_file(entry)
    if kind == "freebsd-sysctl":
        return sysctl.undo_freebsd(entry)
    if kind == "scratch":
        return mount.undo_scratch(entry)
    if kind == "cgroup":
        return cpus_mod.undo_cgroup(entry)
    if kind == "boot-hook":
        from fairmark.run.variants.boothook import undo_hook

        return undo_hook(entry)
    return f"unknown journal entry {kind!r}", f"unknown journal entry type {kind!r}: {entry}"


@contextlib.contextmanager
def _recovery_lock(state_dir: Path) -> Iterator[None]:
    # Two commands starting at once must not undo the same journal concurrently.
    folder = state_dir / "journal"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(folder / ".recover.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _pending(state_dir: Path) -> Iterator[tuple[Path, Journal | None, str | None]]:
    for path in journal_paths(state_dir):
        try:
            journal = Journal.load(path)
        except ValueError as exc:
            yield path, None, str(exc)
            continue
        if not journal.owner_alive():
            yield path, journal, None


def _when(journal: Journal) -> str:
    return datetime.fromtimestamp(journal.created, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def recover_pending(state_dir: Path | str | None = None) -> list[str]:
    """Restore whatever a killed fairmark left changed; return one line per action taken."""
    folder = Path(state_dir) if state_dir else default_state_dir()
    if not journal_paths(folder):
        return []
    lines: list[str] = []
    with _recovery_lock(folder):
        for path, journal, error in _pending(folder):
            if journal is None:
                lines.append(f"cannot recover {path}: {error} (inspect and delete it by hand)")
                continue
            lines.append(
                f"fairmark pid {journal.pid} ended at some point after {_when(journal)} without "
                f"reverting its changes; restoring ({path}):"
            )
            remaining = []
            for entry in reversed(journal.entries):
                done, problem = undo_entry(entry)
                lines.append(f"  {done}")
                if problem:
                    lines.append(f"  FAILED: {problem}")
                    remaining.insert(0, entry)
            journal.entries = remaining
            journal.save()  # deletes the file when nothing remains
    return lines


def pending_actions(state_dir: Path | str | None = None) -> list[str]:
    """What `recover_pending` would do, in its order, without doing it (`fairmark restore --dry-run`)."""
    folder = Path(state_dir) if state_dir else default_state_dir()
    lines: list[str] = []
    for path, journal, error in _pending(folder):
        if journal is None:
            lines.append(f"cannot recover {path}: {error} (inspect and delete it by hand)")
            continue
        lines.append(
            f"fairmark pid {journal.pid} (started {_when(journal)}) left changes; would restore ({path}):"
        )
        lines += [f"  {_entry_summary(entry)}" for entry in reversed(journal.entries)]
    return lines


def pending_findings(state_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """A pending journal as doctor findings (nothing is changed here)."""
    folder = Path(state_dir) if state_dir else default_state_dir()
    findings = []
    for path, journal, error in _pending(folder):
        evidence = error or "; ".join(_entry_summary(e) for e in journal.entries)  # type: ignore[union-attr]
        findings.append(
            {
                "id": "variants.pending-journal",
                "severity": "error",
                "title": "a fairmark that was killed left system changes in place",
                "evidence": f"{path}: {evidence}",
                "why": "sysctls, CPU hotplug or scratch mounts still differ from the machine's own settings, "
                "so every benchmark now measures a changed system",
                "fix": "run `fairmark restore` (any fairmark command also restores it first)",
            }
        )
    return findings


def _entry_summary(entry: dict[str, Any]) -> str:
    if entry.get("type") in ("file", "freebsd-sysctl"):
        return f"{entry.get('label')} (original {entry.get('original')!r})"
    if entry.get("type") == "scratch":
        return f"{entry.get('label')} at {entry.get('mountpoint')}" + (
            f" on {entry['loop']}" if entry.get("loop") else ""
        )
    return str(entry.get("label", entry.get("type")))


__all__ = [
    "SystemState",
    "merged_changes",
    "pending_actions",
    "pending_findings",
    "recover_pending",
    "undo_entry",
]
