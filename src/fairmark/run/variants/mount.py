"""`mount = { fs, options, size, mkfs_options }`: a scratch file system fairmark creates, uses and removes.

Linux: an image file in a dedicated directory → `losetup --find --show` → mkfs → mount at a private mount
point inside that directory (tmpfs needs neither image nor loop device). FreeBSD: `mdconfig -a -t vnode` →
`newfs` (`-U` / `tunefs -n` for soft updates) → mount. Every name is journaled before it is created, and the
undo only touches the exact paths the journal names, so an existing mount is never touched.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from fairmark.errors import EnvironmentRefused
from fairmark.run.variants.driver import Context, Prepared
from fairmark.run.variants.journal import Journal, JournalEntry
from fairmark.run.variants.tunable import run_command

KIND, ORDER, SCOPE = "mount", 60, "variant"


class MountSpec(Protocol):
    """A `mount` value: the plan model's MountSpec, or `Mount` (the same as JSON, on a host)."""

    @property
    def fs(self) -> str: ...
    @property
    def options(self) -> str: ...
    @property
    def size(self) -> str: ...
    @property
    def mkfs_options(self) -> list[str] | str: ...
    @property
    def soft_updates(self) -> bool | None: ...
    @property
    def image_dir(self) -> str | None: ...


@dataclass(frozen=True)
class Mount:
    """A `mount` value as JSON has it (the plan model's MountSpec dumped), with its defaults."""

    fs: str = "ext4"
    options: str = ""
    size: str = "1G"
    mkfs_options: list[str] | str = ""
    soft_updates: bool | None = None
    image_dir: str | None = None

    @classmethod
    def of(cls, value: Mapping[str, object]) -> Mount:
        opts = value.get("mkfs_options") or ""
        soft = value.get("soft_updates")
        return cls(
            fs=str(value.get("fs") or "ext4"),
            options=str(value.get("options") or ""),
            size=str(value.get("size") or "1G"),
            mkfs_options=[str(o) for o in opts] if isinstance(opts, list) else str(opts),
            soft_updates=soft if isinstance(soft, bool) else None,
            image_dir=str(value["image_dir"]) if value.get("image_dir") else None,
        )


Runner = Callable[[Sequence[str]], str]

MKFS_QUIET = {
    "ext2": ["-q", "-F"],
    "ext3": ["-q", "-F"],
    "ext4": ["-q", "-F"],
    "xfs": ["-q", "-f"],
    "btrfs": ["-q", "-f"],
}


def mkfs_extra(spec: MountSpec) -> list[str]:
    opts = spec.mkfs_options
    return shlex.split(opts) if isinstance(opts, str) else list(opts)


def size_bytes(size: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)


def describe(spec: MountSpec) -> str:
    parts = [f"scratch {spec.fs} file system ({spec.size}"]
    if spec.options:
        parts.append(f", mount -o {spec.options}")
    if mkfs_extra(spec):
        parts.append(f", mkfs {' '.join(mkfs_extra(spec))}")
    if spec.soft_updates is not None:
        parts.append(f", soft updates {'on' if spec.soft_updates else 'off'}")
    return "".join(parts) + "); the workload's data directory is on it"


# -- Linux command builders (pure) ----------------------------------------------------------------------
def linux_commands(spec: MountSpec, image: str, loop: str, mountpoint: str) -> list[list[str]]:
    """mkfs and mount for an attached loop device (losetup runs first: its output names the device)."""
    opts = ["-o", spec.options] if spec.options else []
    return [
        [f"mkfs.{spec.fs}", *MKFS_QUIET.get(spec.fs, []), *mkfs_extra(spec), loop],
        ["mount", "-t", spec.fs, *opts, loop, mountpoint],
    ]


def tmpfs_command(spec: MountSpec, mountpoint: str) -> list[str]:
    options = ",".join(o for o in (f"size={spec.size}", spec.options) if o)
    return ["mount", "-t", "tmpfs", "-o", options, "fairmark-scratch", mountpoint]


def parse_losetup_j(text: str) -> list[str]:
    """`losetup -j IMAGE` → ['/dev/loop0', …] ("/dev/loop0: [2049]:131 (/path/image)" per line)."""
    return [line.split(":", 1)[0] for line in text.splitlines() if line.startswith("/dev/")]


def mounted(mountpoint: str, mountinfo: str | None = None) -> bool:
    """Is exactly this path a mount point? (/proc/self/mountinfo field 5, octal escapes decoded)."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
        except OSError:
            return os.path.ismount(mountpoint)
    target = os.path.realpath(mountpoint) if os.path.exists(mountpoint) else mountpoint
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4 and _unescape(fields[4]) in (mountpoint, target):
            return True
    return False


def _unescape(path: str) -> str:
    return path.encode().decode("unicode_escape") if "\\" in path else path


# -- FreeBSD command builders (pure; run by FreeBSD hosts, tested on fixtures) --------------------------
def freebsd_commands(spec: MountSpec, image: str, unit: str, mountpoint: str) -> list[list[str]]:
    """newfs, tunefs and mount for an attached md unit (`mdconfig -a -t vnode -f IMAGE` printed `unit`)."""
    dev = f"/dev/{unit}"
    newfs = ["newfs", *(["-U"] if spec.soft_updates else []), *mkfs_extra(spec), dev]
    cmds = [newfs]
    if spec.soft_updates is False:
        cmds.append(["tunefs", "-n", "disable", dev])
    opts = ["-o", spec.options] if spec.options else []
    cmds.append(["mount", "-t", "ufs" if spec.fs in ("ufs", "ffs") else spec.fs, *opts, dev, mountpoint])
    return cmds


def freebsd_attach(image: str, size: str) -> list[list[str]]:
    return [["truncate", "-s", size, image], ["mdconfig", "-a", "-t", "vnode", "-f", image]]


def freebsd_detach(unit: str) -> list[str]:
    return ["mdconfig", "-d", "-u", unit.removeprefix("md")]


def parse_mdconfig_list(text: str) -> dict[str, str]:
    """`mdconfig -l -v` → {image file: unit} ("md0\tvnode\t 1024M\t/path/image" per line)."""
    out = {}
    for line in text.splitlines():
        fields = line.split(None, 3)
        if len(fields) == 4 and fields[1] == "vnode":
            out[fields[3].strip()] = fields[0]
    return out


# -- the scratch file system (Linux: loop device; FreeBSD: md vnode unit) ---------------------------------
@dataclass
class ScratchFs:
    variant: str
    spec: MountSpec
    base_dir: Path
    freebsd: bool = False
    run: Runner = run_command  # injectable: FreeBSD's sequence is tested with a fake here
    entry_id: str | None = None
    mountpoint: str | None = None
    scope: ClassVar[str] = SCOPE
    needs_root: ClassVar[bool] = True

    def describe(self) -> list[str]:
        return [describe(self.spec)]

    def apply(self, journal: Journal) -> list[str]:
        if self.mountpoint is not None:
            return []
        try:
            self.create(journal)
        except BaseException:
            self.undo(journal)  # nothing left half-made
            raise
        return [f"{describe(self.spec)}: {self.mountpoint}"]

    def prepared(self, journal: Journal, dry_run: bool = False) -> Prepared:
        if self.mountpoint is None and not dry_run:
            self.apply(journal)
        return Prepared(workdir=self.mountpoint or f"<scratch {self.spec.fs} of {self.variant}>")

    def undo(self, journal: Journal) -> tuple[list[str], list[str]]:
        if self.entry_id is None:
            return [], []
        done, problem = undo_scratch(journal.get(self.entry_id), self.run)
        if problem:
            return [done], [problem]
        journal.remove(self.entry_id)
        self.entry_id, self.mountpoint = None, None
        return [done], []

    def check(self) -> None:
        if self.spec.fs == "tmpfs":
            return
        if self.freebsd:
            if self.spec.fs not in ("ufs", "ffs"):
                raise EnvironmentRefused(f"mount.fs = {self.spec.fs!r}: on FreeBSD use 'ufs' or 'tmpfs'")
            return
        if self.spec.soft_updates is not None:
            raise EnvironmentRefused("mount.soft_updates: FreeBSD UFS only (on Linux compare mount options)")
        if shutil.which(f"mkfs.{self.spec.fs}") is None:
            raise EnvironmentRefused(f"mount.fs = {self.spec.fs!r}: `mkfs.{self.spec.fs}` is not installed")
        if shutil.which("losetup") is None or not Path("/dev/loop-control").exists():
            raise EnvironmentRefused(
                "mount: loop devices are not available here (no losetup or /dev/loop-control)"
            )

    def create(self, journal: Journal) -> str:
        folder = self.base_dir / f"{os.getpid()}-{self.variant}-{uuid.uuid4().hex[:8]}"
        entry: dict[str, str] = {
            "type": "scratch",
            "os": "freebsd" if self.freebsd else "linux",
            "dir": str(folder),
            "image": str(folder / "image"),
            "mountpoint": str(folder / "mnt"),
            "label": f"scratch {self.spec.fs} of variant {self.variant}",
        }
        # before anything exists: recovery can always find it; "loop", the loop device (Linux) or md unit
        # (FreeBSD), is recorded once it exists
        self.entry_id = journal.add({**entry, "loop": None})
        (folder / "mnt").mkdir(parents=True, mode=0o755)
        if self.spec.fs == "tmpfs":
            self.run(tmpfs_command(self.spec, entry["mountpoint"]))
        else:
            with open(entry["image"], "wb") as fh:
                fh.truncate(size_bytes(self.spec.size))  # sparse: mkfs writes what it needs
            self._attach_and_mount(journal, entry)
        os.chmod(entry["mountpoint"], 0o1777)  # like /tmp: servers running as their own user can write
        self.mountpoint = entry["mountpoint"]
        return self.mountpoint

    def _attach_and_mount(self, journal: Journal, entry: dict[str, str]) -> None:
        image, mnt = entry["image"], entry["mountpoint"]
        build: Callable[[MountSpec, str, str, str], list[list[str]]]
        if self.freebsd:
            device = self.run(freebsd_attach(image, self.spec.size)[1]).strip()
            build = freebsd_commands
        else:
            device = self.run(["losetup", "--find", "--show", image]).strip()
            build = linux_commands
        assert self.entry_id is not None  # journaled by create() before anything exists
        journal.update(self.entry_id, loop=device)
        for argv in build(self.spec, image, device, mnt):
            self.run(argv)


def _umount(mountpoint: str, run: Runner) -> str | None:
    for _ in range(20):
        with contextlib.suppress(Exception):
            run(["umount", mountpoint])
        if not mounted(mountpoint):
            return None
        time.sleep(0.1)  # a process that just exited may still hold a file open for a moment
    run(["umount", "-l", mountpoint] if sys.platform.startswith("linux") else ["umount", "-f", mountpoint])
    return "forcibly (it was busy)"


def _devices_of(entry: JournalEntry, run: Runner) -> list[str]:
    """The loop devices / md units backed by the journaled image: asked from the kernel, not trusted."""
    image, recorded = entry["image"], entry.get("loop")
    if entry.get("os") == "freebsd":
        with contextlib.suppress(Exception):
            unit = parse_mdconfig_list(run(["mdconfig", "-l", "-v"])).get(image)
            return [unit] if unit else []
        return [recorded] if recorded else []
    devices = []
    with contextlib.suppress(Exception):
        devices = parse_losetup_j(run(["losetup", "-j", image]))
    if recorded and recorded not in devices:
        with contextlib.suppress(Exception):
            if image in run(["losetup", "-n", "-O", "BACK-FILE", recorded]):
                devices.append(recorded)
    return devices


def _detach(entry: JournalEntry, device: str) -> list[str]:
    return freebsd_detach(device) if entry.get("os") == "freebsd" else ["losetup", "-d", device]


def undo_scratch(entry: JournalEntry, run: Runner = run_command) -> tuple[str, str | None]:
    """Unmount, detach, delete — only what the journal entry names. Idempotent."""
    done, mountpoint, folder = [], entry["mountpoint"], Path(entry["dir"])
    try:
        if mounted(mountpoint):
            how = _umount(mountpoint, run)
            done.append("unmounted " + mountpoint + (f" {how}" if how else ""))
        for device in _devices_of(entry, run):
            run(_detach(entry, device))
            done.append(f"detached {device}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(entry["image"])
            done.append(f"removed {entry['image']}")
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(mountpoint)
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(folder)
    except Exception as exc:
        return f"{entry['label']}: cleanup failed", f"{entry['label']}: {exc}"
    leftovers = [p for p in (mountpoint, entry["image"], str(folder)) if os.path.exists(p)]
    if mounted(mountpoint) or leftovers:
        return f"{entry['label']}: cleanup incomplete", f"{entry['label']}: still present: {leftovers}"
    return (f"{entry['label']}: " + ", ".join(done)) if done else f"{entry['label']} is gone", None


def check(value: object, ctx: Context) -> ScratchFs:
    """The driver (driver.py): the file system can be made here (mkfs, loop devices; UFS on FreeBSD)."""
    if not isinstance(value, Mapping):
        raise EnvironmentRefused(f'mount: a table such as {{ fs = "ext4", size = "1G" }}, not {value!r}')
    spec = Mount.of(value)
    base = Path(spec.image_dir) if spec.image_dir else Path(ctx.state_dir or ".") / "scratch"
    scratch = ScratchFs(ctx.variant, spec, base, freebsd=ctx.freebsd)
    scratch.check()
    return scratch
