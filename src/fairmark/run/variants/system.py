"""System-changing variants: sysctls, scratch mounts, CPU sets and hotplug, THP, governor, ASLR, malloc debug.

Interface the runner uses:
  SystemState(plan, *, state_dir=None, dry_run=False)
      resolves every variant's changes and refuses (EnvironmentRefused) what cannot be done here — a missing
      sysctl, a boot-time tunable, no cpufreq, not root — before any trial.
  .changes_system -> bool      True when a variant changes machine-wide state: the runner then orders trials
                               in A B B A blocks instead of shuffling every trial
  .activate(variant)           revert the previous variant's machine-wide changes, apply this one's (each
                               original value journaled and fsync'd first), wait settle_s
  .prepare(variant)            -> Prepared (driver.py): env, workdir, a cgroup or CPUs to place the trial on
                                  (the launcher applies the placement before exec)
  .describe()                  -> {variant: [human-readable change, …]} for --dry-run and the report
  .close()                     revert everything, check every touched value is its original again; raises
                               RevertError (loudly) if not. Idempotent; call it in a finally.
  recover_pending()            undo what a killed fairmark left (a dead process's journal); a line per action
  pending_findings()           the same, as doctor findings (severity "error"), without changing anything
Each kind's change is its driver's (driver.py: `fairmark.run.variants.<kind>`, the kinds of plan/kinds.py), made
and undone by the same code as on a host's agent. The journal (journal.py) is the truth: close() undoes the
changes in the reverse of their making, then whatever the journal still holds; recovery undoes a dead process's
journal entries, newest first.
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
from fairmark.run.variants import driver
from fairmark.run.variants.driver import Change, Context, Prepared, undo_entry
from fairmark.run.variants.journal import Journal, JournalEntry, default_state_dir, journal_paths
from fairmark.run.variants.syslock import SystemLock
from fairmark.run.variants.tunable import RevertError, verify_files

if TYPE_CHECKING:  # the plan model (pydantic) is not needed to recover or to diagnose
    from fairmark.plan.model import Plan, Variant

DEFAULT_SETTLE_S = 1.0


def merged_changes(plan: Plan, variant: Variant) -> dict[str, Any]:
    """The variant's changes with its [tuning.NAME] set underneath (the variant's own keys win; sysctl
    tables merge key by key), as JSON (what a driver takes, here and on a host)."""
    from pydantic import BaseModel

    from fairmark.plan.kinds import VARIANT_KINDS  # with a plan at hand; recovery needs no plan model

    base: dict[str, Any] = {}
    if variant.tuning:
        tuning = plan.tuning[variant.tuning]
        base = {k: getattr(tuning, k) for k in tuning.model_fields_set if k in (*VARIANT_KINDS, "settle_s")}
    own = {k: getattr(variant, k) for k in variant.model_fields_set if k in (*VARIANT_KINDS, "settle_s")}
    out = {**base, **own}
    out["sysctl"] = {**base.get("sysctl", {}), **own.get("sysctl", {})}
    return {k: v.model_dump(mode="json") if isinstance(v, BaseModel) else v for k, v in out.items()}


@dataclass
class Resolved:
    """One variant's changes, checked against this machine: (kind, its driver's change), in the order made."""

    name: str
    changes: list[tuple[str, Change]] = field(default_factory=list)
    settle_s: float = 0.0

    @property
    def needs_root(self) -> bool:
        return any(c.needs_root for _, c in self.changes)

    @property
    def block(self) -> list[Change]:
        """The machine-wide changes, undone when another variant's block starts."""
        return [c for _, c in self.changes if c.scope == "block"]

    def change(self, kind: str) -> Change | None:
        return next((c for k, c in self.changes if k == kind), None)


class SystemState:
    def __init__(self, plan: Plan, *, state_dir: Path | str | None = None, dry_run: bool = False):
        self.plan, self.dry_run = plan, dry_run
        self.state_dir = Path(state_dir) if state_dir else default_state_dir()
        self.freebsd = sys.platform.startswith("freebsd")
        self.variants = {v.name: self._resolve(v) for v in plan.variant}
        self.active: str | None = None
        self.journal = Journal.for_this_process(self.state_dir)
        self.made: list[Change] = []  # in the order they were made: undone in reverse by close()
        self._old_handlers: dict[int, Any] = {}
        self._closed = False
        self.lock = SystemLock()
        if not dry_run and any(r.needs_root for r in self.variants.values()):
            self._refuse_unless_possible()
        if not dry_run and any(r.block for r in self.variants.values()):
            self.lock.acquire()  # machine-wide settings: one fairmark at a time (released by close())

    # -- resolution (all refusals happen here, before any trial) -----------------------------------------
    def _resolve(self, variant: Variant) -> Resolved:
        from fairmark.plan.kinds import VARIANT_KINDS, given

        ch = merged_changes(self.plan, variant)
        ctx = Context(variant.name, self.freebsd, str(self.state_dir), dict(variant.env), ch)
        r = Resolved(variant.name)
        for kind, module in driver.ordered(k for k in VARIANT_KINDS if given(ch.get(k))):
            try:
                r.changes.append((kind, module.check(ch[kind], ctx)))
            except EnvironmentRefused as exc:  # named as on a host: the variant, then the driver's reason
                raise EnvironmentRefused(f"variant {variant.name!r}: {exc.message}", hint=exc.hint) from None
        settle = ch.get("settle_s")
        r.settle_s = settle if settle is not None else (DEFAULT_SETTLE_S if r.block else 0.0)
        return r

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
        """Whether a variant flips machine-wide state (the kinds table's machine_wide): blocks, not shuffles."""
        from fairmark.plan.kinds import VARIANT_KINDS

        return any(VARIANT_KINDS[k].machine_wide for r in self.variants.values() for k, _ in r.changes)

    def describe(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name, r in self.variants.items():
            lines = [line for _, c in r.changes for line in c.describe()]
            if r.block and r.settle_s:
                lines.append(f"settle {r.settle_s:g} s after applying")
            out[name] = lines
        return out

    def prepare(self, variant: Variant | str) -> Prepared:
        r = self.variants[_name(variant)]
        out = Prepared()
        for _, c in r.changes:
            if not self.dry_run:
                self._install_signal_handlers()
            made = c.prepared(self._tagged(r.name, c.scope), dry_run=self.dry_run)
            if not self.dry_run and c not in self.made:
                self.made.append(c)
            out = out.merged(made)
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
        for _, c in r.changes:
            if c not in self.made:
                self.made.append(c)
            try:
                c.apply(self._tagged(name, c.scope))
            except BaseException:
                self._revert_block()  # leave nothing half-applied
                raise
        if r.block and r.settle_s:
            time.sleep(r.settle_s)  # let caches, governors, the scheduler adapt before the block's trials

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            problems = self._undo(self.made)
            problems += [p for _, p in driver.sweep(self.journal) if p]  # what no change holds (a boot hook)
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
        self.journal.tags = {"variant": variant, "scope": "block" if scope == "block" else "run"}
        return self.journal

    def _revert_block(self) -> None:
        if self.active is None:
            return
        problems = self._undo(self.variants[self.active].block)
        if problems:
            raise RevertError(
                f"could not revert variant {self.active}: " + "; ".join(problems),
                hint=f"the journal {self.journal.path} is kept; `fairmark restore` retries",
            )

    def _undo(self, changes: list[Change]) -> list[str]:
        problems: list[str] = []
        for c in reversed(changes):
            problems += c.undo(self.journal)[1]
        return problems

    def _verify(self) -> list[str]:
        """Each touched file holds the value it had before the run (the first original seen per path)."""
        first: dict[str, JournalEntry] = {}
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


def _name(variant: Variant | str) -> str:
    return variant if isinstance(variant, str) else variant.name


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
            remaining: list[JournalEntry] = []
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


def _entry_summary(entry: JournalEntry) -> str:
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
