"""The pbuild trial itself (`python -m fairmark.run.workloads._pbuild CONFIG.json`): N builders take packages
from one queue, each package built in a fresh isolated builder, as poudriere builds ports in jails.

Linux: every package runs under `unshare` in new mount, PID, network, UTS and IPC namespaces with /proc
remounted; the builder mounts a private tmpfs (invisible outside its mount namespace), builds there, then
counts what is still alive in its PID namespace. When its PID 1 exits the kernel kills every process left in
the namespace, and the namespaces and the tmpfs go with the last process: nothing outlives the package.
FreeBSD: a tmpfs is mounted on the builder's directory, the build runs in a jail (no network), and after it
`jail -r` kills whatever is left in the jail and the tmpfs is unmounted.

Output (parsed by pbuild.parse): one `pkg …` line per package, the failed packages' log tails, `# end …`.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairmark.errors import Terminated

CONFIGURE_ARGS = "--prefix=/usr/local --disable-nls --disable-werror"
# The build of one package, the same on both systems: copy its sources into the builder's tmpfs (poudriere's
# extract), configure, make, install into a staging root and pack it (the package goes to the repository
# outside the builder). MAKEINFO=true: the tarballs' info pages are prebuilt, no texinfo needed.
BUILD = r"""root=$1 tree=$2 pkg=$3 jobs=$4 log=$5 repo=$6; shift 6
mkdir "$root/src" "$root/stage" "$root/tmp" && export TMPDIR="$root/tmp" || exit 90
for item in "$@"; do cp -pR "$tree/$item" "$root/src/" || exit 91; done
cd "$root/src/$pkg" || exit 92
{ ./configure CONFIGURE_ARGS && ${MAKE:-make} -j"$jobs" MAKEINFO=true &&
  ${MAKE:-make} install MAKEINFO=true DESTDIR="$root/stage" &&
  tar -czf "$repo/${log##*/}.tgz" -C "$root/stage" . ; } >"$log" 2>&1
""".replace("CONFIGURE_ARGS", CONFIGURE_ARGS)
# Linux: runs as PID 1 of the builder's namespaces. ns_last_pid is the last PID this namespace handed out, i.e.
# the tasks created in the builder (forks and threads, like /proc/stat's `processes`), less the `cat` reading it
# (sh's `read` reads a byte at a time and a sysctl file answers only the first read). The leftover count is
# taken with shell builtins only (a counting process would count itself).
LINUX = r"""mount -t tmpfs -o size="$FAIRMARK_TMPFS",mode=0755 fairmark-pbuild "$1" || exit 89
( BUILD ); st=$?
forks=$(($(cat /proc/sys/kernel/ns_last_pid) - 1))
n=0; for p in /proc/[0-9]*; do n=$((n+1)); done
echo "result status=$st leftover=$((n-1)) forks=$forks"
exit $st
""".replace("BUILD", BUILD)
# FreeBSD: GNU make (automake's Makefiles are GNU make's), the status for the driver (leftovers are counted
# from outside, with pgrep -j, before `jail -r`).
FREEBSD = "MAKE=gmake\n" + BUILD + 'echo "result status=$?"\n'


def linux_argv(root: str, args: Sequence[str]) -> list[str]:
    """One package's builder on Linux (`args`: the BUILD script's arguments after the root)."""
    return [
        "unshare",
        "--mount",
        "--pid",
        "--net",
        "--uts",
        "--ipc",
        "--fork",
        "--kill-child",
        "--mount-proc",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        LINUX,
        "sh",
        root,
        *args,
    ]


def freebsd_steps(jail: str, root: str, tmpfs: str, args: Sequence[str]) -> dict[str, list[str]]:
    """One package's builder on FreeBSD: mount, build in a jail without network, count, remove, unmount."""
    return {
        "mount": ["mount", "-t", "tmpfs", "-o", f"size={tmpfs}", "tmpfs", root],
        "build": [
            "jail",
            "-c",
            f"name={jail}",
            "path=/",
            f"host.hostname={jail}",
            "ip4=disable",
            "ip6=disable",
            "persist",
            "command=/bin/sh",
            "-c",
            FREEBSD,
            "sh",
            root,
            *args,
        ],
        "leftover": ["pgrep", "-j", jail],
        "remove": ["jail", "-r", jail],
        "unmount": ["umount", "-f", root],
    }


class Builders:
    def __init__(self, cfg: dict[str, Any]):
        self.cfg = cfg
        self.jobs: queue.Queue[tuple[int, str]] = queue.Queue()
        for seq, pkg in enumerate(cfg["queue"]):
            self.jobs.put((seq, pkg))
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        self.freebsd = sys.platform.startswith("freebsd")
        self.active: dict[int, dict[str, list[str]]] = {}  # FreeBSD: builder → its steps, to clean up

    def say(self, line: str) -> None:
        with self.lock:
            print(line, flush=True)

    def run(self, builder: int) -> None:
        while True:
            try:
                seq, pkg = self.jobs.get_nowait()
            except queue.Empty:
                return
            self.build(builder, seq, pkg)

    def build(self, builder: int, seq: int, pkg: str) -> None:
        cfg = self.cfg
        root = f"{cfg['builders_dir']}/b{builder}"
        log = f"{cfg['logs_dir']}/{seq:03d}-{pkg}.log"
        args = [cfg["tree"], pkg, str(cfg["jobs"]), log, cfg["repo_dir"], *cfg["items"][pkg]]
        start = time.monotonic() - self.t0
        if self.freebsd:
            out, ru = self._freebsd(builder, f"fairmark-pbuild-{os.getpid()}-{builder}", root, args)
        else:
            out, ru = _run(linux_argv(root, args), {"FAIRMARK_TMPFS": cfg["tmpfs"]})
        end = time.monotonic() - self.t0
        result = _last_result(out)
        self.say(
            f"pkg seq={seq} name={pkg} builder={builder} start_s={start:.3f} end_s={end:.3f} {result} "
            f"user_s={ru[0]:.3f} sys_s={ru[1]:.3f}"
        )
        if "status=0 " not in result + " ":
            tail = Path(log).read_text(errors="replace").splitlines()[-20:] if Path(log).exists() else []
            self.say("\n".join(f"  | {pkg}: {line}" for line in [*out.splitlines()[-5:], *tail]))

    def _freebsd(
        self, builder: int, jail: str, root: str, args: list[str]
    ) -> tuple[str, tuple[float, float]]:
        steps = freebsd_steps(jail, root, self.cfg["tmpfs"], args)
        if subprocess.run(steps["mount"], capture_output=True).returncode != 0:
            return "result status=89", (0.0, 0.0)
        self.active[builder] = steps
        try:
            out, ru = _run(steps["build"], {})
            left = subprocess.run(steps["leftover"], capture_output=True, text=True).stdout.split()
            out += f"\nresult {_last_result(out)} leftover={len(left)}"
        finally:
            _cleanup_freebsd(steps)
            self.active.pop(builder, None)
        return out, ru


def _last_result(out: str) -> str:
    lines = [ln for ln in out.splitlines() if ln.startswith("result ")]
    return lines[-1].split(None, 1)[1] if lines else "status=99"


def _cleanup_freebsd(steps: dict[str, list[str]]) -> None:
    subprocess.run(steps["remove"], capture_output=True)
    subprocess.run(steps["unmount"], capture_output=True)


def _run(argv: list[str], env: dict[str, str]) -> tuple[str, tuple[float, float]]:
    """Run one builder; its output and the user/system CPU of its whole process tree (wait4's rusage)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=os.environ | env)
    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return out, (ru.ru_utime, ru.ru_stime)


def main(argv: Sequence[str]) -> int:
    cfg = json.loads(Path(argv[0]).read_text())
    pool = Builders(cfg)

    def stop(signum: int, _frame: Any) -> None:
        raise Terminated(signum)  # unwinds like Ctrl-C: the finally below removes jails and tmpfs

    signal.signal(signal.SIGTERM, stop)
    pool.say(
        f"# pbuild builders={cfg['builders']} packages={len(cfg['queue'])} jobs={cfg['jobs']} "
        f"isolation={'jail' if pool.freebsd else 'unshare'} tree={shlex.quote(cfg['tree'])}"
    )
    threads = [threading.Thread(target=pool.run, args=(b,), daemon=True) for b in range(cfg["builders"])]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.5)
    finally:
        for steps in list(pool.active.values()):  # interrupted on FreeBSD: no jail or tmpfs may stay
            _cleanup_freebsd(steps)
    pool.say(f"# end elapsed_s={time.monotonic() - pool.t0:.3f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Terminated as exc:  # this process's own edge: 128 + the signal, as a shell reports it
        sys.exit(exc.exit_status)
