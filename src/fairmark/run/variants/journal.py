"""The write-ahead journal of system changes, so that a killed fairmark can always put the machine back.

Rule: an entry (with the original value, or the names of what is about to be created) is on disk and fsync'd
*before* the change is made, and is dropped only after the change was undone and checked. A journal file
therefore lists a superset of what is changed at any instant, and undoing an entry is idempotent (writing an
original value again, unmounting only what is mounted). One file per fairmark process,
``STATE_DIR/journal/PID-START.json``; a journal whose process is gone is *pending* and is undone by the next
fairmark command (`recover_pending`). Files are replaced atomically (write, fsync, rename, fsync directory).

The agent on a host (remote/agent.py) writes the same journal (`Journal.for_agent`): the entries of the same
drivers (driver.py), its liveness told by a lock file (PATH.lock, flock'd while the journal has entries: the
kernel drops it when the agent dies, so the next agent never guesses from a PID, which other PID namespaces and
reuse defeat). A journal of an agent from before (its "started" instead of "created") loads alike.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = 1
JournalEntry = dict[str, Any]  # {"id", "at", "type", …}: what driver.undo_entry undoes


def default_state_dir() -> Path:
    """$FAIRMARK_STATE_DIR, else $XDG_STATE_HOME/fairmark, else ~/.local/state/fairmark."""
    explicit = os.environ.get("FAIRMARK_STATE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "fairmark"


def _process_start(pid: int) -> float | None:
    import psutil  # here: every command looks for a journal at its start, and few find one (35 ms of import)

    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


@dataclass
class Journal:
    path: Path
    pid: int
    start: float | None
    entries: list[JournalEntry] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    host: str = field(default_factory=socket.gethostname)
    tags: dict[str, Any] = field(default_factory=dict)  # merged into new entries (variant, scope)
    history: list[JournalEntry] = field(default_factory=list)  # every entry ever added, for the final check
    locked: bool = False  # an agent's: PATH.lock held while it has entries (see the module's text)
    lock_fd: int | None = None

    # -- construction ------------------------------------------------------------------------------------
    @classmethod
    def for_this_process(cls, state_dir: Path) -> Journal:
        pid = os.getpid()
        start = _process_start(pid)
        name = f"{pid}-{int((start or 0) * 1000)}.json"
        return cls(path=Path(state_dir) / "journal" / name, pid=pid, start=start)

    @classmethod
    def for_agent(cls, state_dir: str | Path) -> Journal:
        """An agent's journal: its liveness is its lock file's (no process start time, no psutil there)."""
        path = Path(state_dir) / "journal" / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
        return cls(path=path, pid=os.getpid(), start=None, locked=True)

    @classmethod
    def load(cls, path: Path) -> Journal:
        """Raises ValueError (with the reason) for a journal that cannot be read."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"unreadable journal {path}: {exc}") from None
        if (
            not isinstance(data, dict)
            or data.get("format") != FORMAT
            or not isinstance(data.get("entries"), list)
        ):
            raise ValueError(f"journal {path} is not a fairmark journal of format {FORMAT}")
        return cls(
            path=path,
            pid=int(data.get("pid", 0)),
            start=data.get("start"),
            entries=data["entries"],
            created=float(data.get("created", data.get("started", 0)) or 0),
            host=str(data.get("host", "")),
        )

    # -- state -------------------------------------------------------------------------------------------
    def owner_alive(self) -> bool:
        """True while the process that wrote it runs (same pid *and* start time: pids are reused)."""
        start = _process_start(self.pid)
        if start is None:
            return False
        return self.start is None or abs(start - float(self.start)) < 0.01

    # -- write-ahead operations --------------------------------------------------------------------------
    def add(self, entry: dict[str, Any]) -> str:
        """Record what is about to change; returns the entry id. Durable when this returns."""
        entry = {"id": uuid.uuid4().hex[:12], "at": time.time(), **self.tags, **entry}
        self.entries.append(entry)
        self.history.append(entry)
        self.save()
        return entry["id"]

    def update(self, entry_id: str, **fields: Any) -> None:
        self.get(entry_id).update(fields)
        self.save()

    def remove(self, entry_id: str) -> None:
        self.entries = [e for e in self.entries if e.get("id") != entry_id]
        self.save()

    def drop(self, entry: JournalEntry) -> None:
        """Remove an entry that has no id (an older agent's)."""
        self.entries = [e for e in self.entries if e is not entry]
        self.save()

    def get(self, entry_id: str) -> JournalEntry:
        return next(e for e in self.entries if e.get("id") == entry_id)

    def save(self) -> None:
        """Write the journal durably; with no entries left, delete the file (nothing is pending)."""
        if not self.entries:
            self.discard()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.locked:
            self._hold()
        data = {
            "format": FORMAT,
            "pid": self.pid,
            "start": self.start,
            "host": self.host,
            "created": self.created,
            "entries": self.entries,
        }
        atomic_write_json(self.path, data)

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
            _fsync_dir(self.path.parent)
        self._release()

    # -- an agent's lock file ----------------------------------------------------------------------------
    @property
    def lock_path(self) -> Path:
        return self.path.with_suffix(".lock")

    def _hold(self) -> None:
        while self.lock_fd is None:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:  # a recovering agent that took it first (no journal yet) removed it: make another
                same = os.path.samestat(os.stat(self.lock_path), os.fstat(fd))
            except FileNotFoundError:
                same = False
            if same:
                self.lock_fd = fd
            else:
                os.close(fd)

    def _release(self) -> None:
        if self.lock_fd is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.lock_path)  # after the journal: a journal without its lock is an old agent's
            os.close(self.lock_fd)
            self.lock_fd = None

    def let_go(self) -> None:
        """Close the lock without removing it (what is left waits for the next agent)."""
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None


def journal_paths(state_dir: Path) -> list[Path]:
    folder = Path(state_dir) / "journal"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.json") if not p.name.startswith("."))
