"""A real Linux guest to reboot, for the boot-variant tests (issue 14): QEMU (TCG) boots this machine's Debian
kernel with an initramfs built here from this machine's own files, reachable over SSH on 127.0.0.1 only.

What the guest is made of (see /work/shared/design/QEMU-GUEST.md for the measurements behind it):
* busybox-static (its applets as links), dropbear with a host key made here and the test's client key, kexec;
* the virtio-net/rng/9p modules in the order `modprobe --show-depends` gives (busybox insmod loads them);
* no Python of its own: the host's interpreter prefix is shared read-only over 9p (mounted at /hostpy) and a
  wrapper /bin/hostpython runs it; the libraries its binary and extension modules need are copied in;
* a read-write 9p share (/mnt/share) that the host-side "boot loader" reads.

The boot loader (`Guest.loop`) is a thread: it starts QEMU with `-no-reboot`, so `reboot -f` in the guest ends
QEMU, and starts it again with the command line the guest wrote to SHARE/next-cmdline (one-shot, then deleted;
like `grub-reboot`), else the default. It is bounded (max_boots) so a broken image cannot boot-loop forever.
Everything lives in one temporary directory, removed (and QEMU stopped) on exit.
"""

from __future__ import annotations

import contextlib
import glob
import io
import lzma
import os
import py_compile
import shutil
import socket
import stat
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

MODULES = ("virtio_pci", "virtio_net", "virtio_rng", "9pnet_virtio", "9p")
# no_timer_check: under TCG on a loaded machine the kernel can mistime the IO-APIC timer check and panic
BASE_CMDLINE = "console=ttyS0 panic=-1 quiet no_timer_check"
# How long a boot may take to answer SSH: TCG's CPU is what the busy host leaves it. A plain guest's boot is 12-16 s
# of QEMU's CPU, but at load 17-21 (2 CPUs, three guests and other suites) it got 10 s of CPU in 240 s, and the
# boots module errored four times (2026-11-29, two suites); a fairmark guest already had 600 s.
BOOT_WAIT_S = 600.0
TOOLS = ("qemu-system-x86_64", "busybox", "dropbear", "dropbearkey", "ssh", "ssh-keygen", "modprobe")


def kernel() -> Path | None:
    found = sorted(glob.glob("/boot/vmlinuz-*"))
    return Path(found[-1]) if found else None


def available() -> str | None:
    """Why the guest cannot be built here (None: it can)."""
    missing = [t for t in TOOLS if not shutil.which(t) and not os.path.exists(f"/usr/sbin/{t}")]
    if missing:
        return f"missing {', '.join(missing)} (packages/debian-test.txt: qemu-system-x86 busybox-static …)"
    k = kernel()
    if k is None or not os.access(k, os.R_OK):
        return "no readable /boot/vmlinuz-* (package linux-image-amd64)"
    if not os.path.isdir(f"/lib/modules/{release(k)}"):
        return f"no /lib/modules for {k.name}"
    return None


def release(vmlinuz: Path) -> str:
    return vmlinuz.name.removeprefix("vmlinuz-")


def _which(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


# -- a newc cpio archive, written here (no cpio tool needed) ------------------------------------------------
class Cpio:
    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.ino = 1
        self.seen: set[str] = set()

    def _entry(self, name: str, mode: int, data: bytes = b"") -> None:
        name = name.strip("/")
        if name in self.seen:
            return
        self.seen.add(name)
        fields = [self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0]
        self.ino += 1
        head = b"070701" + b"".join(f"{f:08X}".encode() for f in fields) + name.encode() + b"\0"
        self.buf.write(head + b"\0" * (-len(head) % 4))
        self.buf.write(data + b"\0" * (-len(data) % 4))

    def dir(self, name: str, mode: int = 0o755) -> None:
        parts = name.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            if parts[0] in ("", "."):
                return
            self._entry("/".join(parts[:i]), stat.S_IFDIR | mode)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self.dir(os.path.dirname(name.strip("/")) or ".")
        self._entry(name, stat.S_IFREG | mode, data)

    def link(self, name: str, target: str) -> None:
        self.dir(os.path.dirname(name.strip("/")) or ".")
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def copy(self, path: str, as_name: str | None = None) -> None:
        real = os.path.realpath(path)
        self.file(as_name or path, Path(real).read_bytes(), os.stat(real).st_mode & 0o777)

    def archive(self) -> bytes:
        """The archive uncompressed: QEMU hands it to the guest as it is, and under TCG the kernel's gunzip of a
        plain guest's 26 MB was a third of its boot (7.3 and 7.8 s of QEMU's CPU to SSH with gzip, 5.0 and
        5.7 s without, at load 29)."""
        self._entry("TRAILER!!!", 0)
        return self.buf.getvalue()


def libraries(binaries: list[str], skip_under: tuple[str, ...] = ()) -> set[str]:
    """The shared libraries `ldd` lists for these files (outside the `skip_under` directories), with the dynamic
    loader."""
    out = subprocess.run(["ldd", *binaries], capture_output=True, text=True, check=False).stdout
    libs = set()
    for line in out.splitlines():
        parts = line.split()
        path = (
            parts[2]
            if "=>" in parts and len(parts) > 2
            else (parts[0] if parts and line.startswith("\t/") else "")
        )
        if path.startswith("/") and not any(path.startswith(d + "/") for d in skip_under):
            libs.add(path)
    return libs


def python_prefix() -> tuple[str, str]:
    """(the interpreter prefix to share, the interpreter's path inside it) of the Python running the tests."""
    prefix = sys.base_prefix
    exe = os.path.realpath(sys.executable)
    if not exe.startswith(prefix + "/"):
        exe = os.path.join(prefix, "bin", f"python{sys.version_info.major}.{sys.version_info.minor}")
    return prefix, os.path.relpath(exe, prefix)


INIT = """#!/bin/sh
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts /tmp /run /var/lib /mnt/share /hostpy
mount -t devpts devpts /dev/pts; mount -t tmpfs tmp /tmp; mount -t tmpfs run /run
# a pure cgroup v2 host (booted with cgroup_no_v1=all) has the unified hierarchy where systemd mounts it
grep -q cgroup_no_v1=all /proc/cmdline && mount -t cgroup2 cgroup2 /sys/fs/cgroup
{insmod}
ip link set lo up; ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0; ip route add default via 10.0.2.2
mount -t 9p -o trans=virtio,version=9p2000.L share /mnt/share
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostpy /hostpy
# fairmark installed (Guest(fairmark=True)): this checkout's src and its virtualenv's packages, read-only
mkdir -p /fairmark/src /fairmark/site
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 fmsrc /fairmark/src 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 fmsite /fairmark/site 2>/dev/null
hostname fairmark-guest
dropbear -s -E -p 22 -r /etc/dropbear/dropbear_ed25519_host_key 2>/tmp/dropbear.log
echo FAIRMARK-GUEST-READY
while true; do sleep 3600; done
"""


def build_initramfs(
    dest: Path, authorized_key: str, host_key: Path, extensions: list[str] | None = None
) -> Path:
    """The guest's initramfs (a newc cpio, not compressed) at dest; ~2 s (26 MB). `extensions` (a list, even
    empty): for fairmark installed in the guest, perf and the stack collapser too (58 MB in all), and the
    libraries these compiled modules need."""
    k = kernel()
    assert k is not None
    rel = release(k)
    c = Cpio()
    for d in ("proc", "sys", "dev", "tmp", "run", "root", "etc/dropbear", "var/lib", "mnt/share", "hostpy"):
        c.dir(d)
    c.copy(_which("busybox"), "bin/busybox")
    for applet in subprocess.run(
        [_which("busybox"), "--list-full"], capture_output=True, text=True, check=True
    ).stdout.split():
        if os.path.basename(applet) != "busybox":  # a busybox -> busybox link: "error -40" at /init
            c.link(applet, "/bin/busybox")
    binaries = [_which("dropbear"), *([k_] if (k_ := shutil.which("kexec") or "") else [])]
    if extensions is not None:  # fairmark in the guest: CPU profiles (its kernel is this one's perf's)
        binaries += [
            p for p in map(shutil.which, ("perf", "inferno-collapse-perf", "inferno-flamegraph")) if p
        ]
    prefix, exe = python_prefix()
    # the interpreter's own extension modules (a virtualenv's platstdlib has none): _ctypes needs libffi
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    dynload = glob.glob(os.path.join(prefix, "lib", version, "lib-dynload", "*.so"))
    for b in binaries:
        c.copy(b, "usr/sbin/" + os.path.basename(b))
    # `extensions`: compiled modules the guest imports from a share (a virtualenv's): their libraries too
    wanted = [*binaries, os.path.join(prefix, exe), *dynload, *(extensions or [])]
    # what is under the interpreter's prefix or the virtualenv's packages is shared over 9p: numpy's and scipy's
    # bundled OpenBLAS copies alone made a 162 MB initramfs, minutes of booting under TCG
    shared = (prefix, sysconfig.get_paths()["purelib"])
    for lib in sorted(libraries(wanted, skip_under=shared)):
        c.copy(lib)
    insmod = []
    for mod in MODULES:
        deps = subprocess.run(
            ["modprobe", "-S", rel, "--show-depends", mod], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        for line in deps:
            words = line.split()
            if (
                words
                and words[0] == "insmod"
                and words[1] not in c.seen
                and words[1].strip("/") not in c.seen
            ):
                c.copy(words[1])
                insmod.append(f"insmod {words[1]}")
    c.file("init", INIT.format(insmod="\n".join(insmod)).encode(), 0o755)
    # -S: no site-packages (the agent needs the standard library only); it also halves Python's start under TCG
    libdir = os.path.join("/hostpy", os.path.dirname(os.path.dirname(exe)), "lib")
    c.file(
        "bin/hostpython",
        (
            f'#!/bin/sh\nexport PYTHONHOME=/hostpy LD_LIBRARY_PATH={libdir}\nexec /hostpy/{exe} -S "$@"\n'
        ).encode(),
        0o755,
    )
    # fairmark's agent as a file: dropbear caps a command line at 9000 bytes, the shipped (inline) agent is longer
    from fairmark.remote.connection import agent_source

    c.file("opt/fairmark-agent.py", agent_source(), 0o644)
    c.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
    c.file("etc/group", b"root:x:0:\n")
    c.file("etc/shells", b"/bin/sh\n")
    c.dir("root/.ssh", 0o700)
    c.file("root/.ssh/authorized_keys", authorized_key.encode(), 0o600)
    c.file("etc/dropbear/dropbear_ed25519_host_key", host_key.read_bytes(), 0o600)
    dest.write_bytes(c.archive())
    return dest


def unpacked_kernel(vmlinuz: Path, dest: Path) -> Path:
    """The kernel QEMU boots: the ELF image inside Debian's XZ-compressed bzImage, started at its PVH entry, when
    it has one; else the bzImage itself. Under TCG the boot stub's XZ decompression was half the boot: 11.9 and
    13.1 s of QEMU's CPU from start to SSH against 6.1 and 7.4 s for the ELF, a plain guest at load 29 (~1.3 s
    here to unpack, once per guest). kexec inside the guest still loads the bzImage (SHARE/vmlinuz)."""
    data = vmlinuz.read_bytes()
    start = data.find(b"\xfd7zXZ\x00")
    if start < 0:
        return vmlinuz
    try:
        elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[start:])
    except lzma.LZMAError:
        return vmlinuz
    return vmlinux_or(vmlinuz, elf, dest)


def vmlinux_or(vmlinuz: Path, elf: bytes, dest: Path) -> Path:
    """dest holding `elf` if it is a 64-bit ELF with a PVH entry note (Xen's note 18), else the bzImage."""
    if elf[:5] != b"\x7fELF\x02":
        return vmlinuz
    phoff, phentsize, phnum = struct.unpack_from("<Q", elf, 32)[0], *struct.unpack_from("<HH", elf, 54)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
        at, end = p_offset, p_offset + p_filesz
        while p_type == 4 and at + 12 <= end:  # PT_NOTE: namesz, descsz, type, name, desc (4-byte aligned)
            namesz, descsz, kind = struct.unpack_from("<III", elf, at)
            name = elf[at + 12 : at + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and kind == 18:  # XEN_ELFNOTE_PHYS32_ENTRY
                dest.write_bytes(elf)
                return dest
            at += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return vmlinuz


def compiled_source(dest: Path) -> Path:
    """A copy of this checkout's src/ with its bytecode beside each module, for the guest to import fairmark from
    (like an installed package). The checkout's own bytecode is in .pycache/ (tests/conftest.py), where the
    guest's Python does not look, and the share is read-only: every Python the guest started compiled the ~190
    modules a run imports again, 48 of a run's 628 s under TCG (cProfile in the guest, at load 27). Unchecked
    hash-based .pyc: the copy never changes while the guest lives, so no source is even stat'ed for it."""
    import fairmark

    src = Path(fairmark.__file__).resolve().parents[1]
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    tag = sys.implementation.cache_tag
    for module in dest.rglob("*.py"):
        # cfile given: py_compile would otherwise follow sys.pycache_prefix (conftest sets it) away from here
        py_compile.compile(
            str(module),
            cfile=str(module.parent / "__pycache__" / f"{module.stem}.{tag}.pyc"),
            dfile=str(Path("/fairmark/src") / module.relative_to(dest)),
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
    return dest


def _die_with_parent() -> None:
    """QEMU is killed when the boot loader's thread ends, even if the test process is killed (SIGKILL)."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Guest:
    """The guest and its boot loader; a context manager that leaves nothing behind."""

    def __init__(
        self,
        *,
        max_boots: int = 12,
        memory_mb: int = 512,
        smp: int = 1,
        cmdline: str = "",
        fairmark: bool = False,
    ):
        """`cmdline`: words added to every boot's command line (e.g. cgroup_no_v1=all); `smp`: its CPUs;
        `fairmark`: fairmark installed in the guest (a compiled copy of this checkout's src and its virtualenv's
        packages over 9p), its agent `fairmark agent` — what profiles and tool workloads on a host need."""
        self.max_boots, self.memory_mb, self.smp, self.extra = max_boots, memory_mb, smp, cmdline
        self.fairmark = fairmark
        self.dir = Path(tempfile.mkdtemp(prefix="fairmark-qemu-"))
        self.share = self.dir / "share"
        self.share.mkdir()
        self.port = free_port()
        self.key = self.dir / "id_ed25519"
        self.boots: list[str] = []  # the command line of each boot started, in order
        self.console = self.dir / "console.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- set-up ---------------------------------------------------------------------------------------------
    def build(self) -> None:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)], check=True)
        host_key = self.dir / "host_key"
        subprocess.run(["dropbearkey", "-t", "ed25519", "-f", str(host_key)], check=True, capture_output=True)
        public = subprocess.run(
            ["dropbearkey", "-y", "-f", str(host_key)], check=True, capture_output=True, text=True
        ).stdout
        line = next(x for x in public.splitlines() if x.startswith("ssh-ed25519 "))
        # the guest's host key is known: ssh checks it as it would any host's (no StrictHostKeyChecking=no)
        (self.dir / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {' '.join(line.split()[:2])}\n")
        site = sysconfig.get_paths()["purelib"]
        extensions = glob.glob(os.path.join(site, "**", "*.so*"), recursive=True) if self.fairmark else None
        self.initrd = build_initramfs(
            self.dir / "initrd.img", (self.dir / "id_ed25519.pub").read_text(), host_key, extensions
        )
        if self.fairmark:
            compiled_source(self.dir / "fmsrc")
        vmlinuz = kernel()
        assert vmlinuz is not None
        self.boot_kernel = unpacked_kernel(vmlinuz, self.dir / "vmlinux")
        # kexec inside the guest loads its next kernel from the share (the same kernel and initramfs)
        shutil.copyfile(vmlinuz, self.share / "vmlinuz")
        shutil.copyfile(self.initrd, self.share / "initrd.img")

    def ssh_options(self) -> list[str]:
        known = f"UserKnownHostsFile={self.dir / 'known_hosts'}"
        return [
            "-p",
            str(self.port),
            "-i",
            str(self.key),
            "-o",
            known,
            "-o",
            "LogLevel=ERROR",
            "-o",
            "ConnectTimeout=5",
        ]

    def ssh(self, command: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ssh", "-o", "BatchMode=yes", *self.ssh_options(), "root@127.0.0.1", command],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def hosts_toml(self, name: str = "guest", installed: bool = False) -> str:
        """The guest's [hosts.NAME]: the shipped agent, or (`installed`, with Guest(fairmark=True)) `fairmark
        agent` from the shared checkout."""
        opts = ", ".join(f'"{o}"' for o in self.ssh_options())
        return (
            f'[hosts.{name}]\nssh = "root@127.0.0.1"\nssh_options = [{opts}]\npython = "/bin/hostpython"\n'
            + (
                'agent = ["env", "PYTHONPATH=/fairmark/src:/fairmark/site", "/bin/hostpython", "-m", "fairmark", '
                '"agent"]\n'
                if installed and self.fairmark
                else 'agent = ["/bin/hostpython", "/opt/fairmark-agent.py"]\n'
            )
        )

    # -- the boot loader ------------------------------------------------------------------------------------
    def _argv(self, cmdline: str) -> list[str]:
        prefix, _ = python_prefix()
        return [
            "qemu-system-x86_64",
            "-machine",
            "q35,accel=tcg",
            "-cpu",
            "max",
            "-m",
            str(self.memory_mb),
            "-smp",
            str(self.smp),
            "-nographic",
            "-no-reboot",
            "-kernel",
            str(self.boot_kernel),
            "-initrd",
            str(self.initrd),
            "-append",
            cmdline,
            "-netdev",
            f"user,id=n0,hostfwd=tcp:127.0.0.1:{self.port}-:22",
            "-device",
            "virtio-net-pci,netdev=n0",
            "-device",
            "virtio-rng-pci",
            "-fsdev",
            f"local,id=fs0,path={self.share},security_model=none",
            "-device",
            "virtio-9p-pci,fsdev=fs0,mount_tag=share",
            "-fsdev",
            f"local,id=fs1,path={prefix},security_model=none,readonly=on",
            "-device",
            "virtio-9p-pci,fsdev=fs1,mount_tag=hostpy",
            *(self._fairmark_shares() if self.fairmark else []),
        ]

    def _fairmark_shares(self) -> list[str]:
        site = sysconfig.get_paths()["purelib"]
        out = []
        for i, (tag, path) in enumerate((("fmsrc", self.dir / "fmsrc"), ("fmsite", site))):
            out += ["-fsdev", f"local,id=fm{i},path={path},security_model=none,readonly=on"]
            out += ["-device", f"virtio-9p-pci,fsdev=fm{i},mount_tag={tag}"]
        return out

    def _loop(self) -> None:
        with open(self.console, "ab") as log:
            while not self._stop.is_set() and len(self.boots) < self.max_boots:
                nxt = self.share / "next-cmdline"
                extra = ""
                if nxt.exists():
                    extra = nxt.read_text().strip()
                    nxt.unlink()
                cmdline = " ".join(w for w in (BASE_CMDLINE, self.extra, extra) if w)
                self.boots.append(cmdline)
                log.write(f"\n=== boot {len(self.boots)}: {cmdline}\n".encode())
                log.flush()
                self._proc = subprocess.Popen(
                    self._argv(cmdline),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent,
                )
                self._proc.wait()

    def start(self, timeout_s: float = BOOT_WAIT_S) -> None:
        """Boot, and wait for SSH at most timeout_s."""
        self._thread = threading.Thread(target=self._loop, name="qemu-boot-loader", daemon=True)
        self._thread.start()
        if not self.wait_ssh(timeout_s):
            raise RuntimeError(f"guest not reachable over SSH within {timeout_s:g} s:\n{self.console_tail()}")

    def ensure_up(self, timeout_s: float = BOOT_WAIT_S) -> None:
        """Before a test: a guest that an earlier test left mid-reboot (a timeout on a busy machine, where a TCG
        boot takes minutes) is waited for, and one that is gone or out of boots is started again."""
        if self._thread and self._thread.is_alive() and self.wait_ssh(timeout_s):
            return
        self.stop()
        self._stop.clear()
        self.max_boots = len(self.boots) + self.max_boots  # as many boots again as it was given
        self.start()

    def wait_ssh(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                if self.ssh("true", timeout=15).returncode == 0:
                    return True
            time.sleep(1)
        return False

    def console_tail(self, n: int = 4000) -> str:
        return self.console.read_text(errors="replace")[-n:] if self.console.exists() else ""

    def stop(self) -> None:
        self._stop.set()
        proc = self._proc
        if proc and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._thread:
            self._thread.join(20)

    def __enter__(self) -> Guest:
        try:
            self.build()
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
