"""Issue 35's QEMU case, as a user would run it: where a kernel command-line difference went, decided by boots.

    .venv/bin/python bench/explain_qemu.py                    (~20-60 min under TCG: boots until decided)
    .venv/bin/python bench/explain_qemu.py --max-boots 4 --keep /tmp/store.db

`make bench` runs it too (root, QEMU and this machine's kernel needed; otherwise it says so and is skipped).

A QEMU guest (TCG, this machine's Debian kernel, tests/qemuguest.py; cgroup v2 only, fairmark and perf in it) is
rebooted A B B A … between Debian's default command line — its kernel zeroes every page it allocates
(CONFIG_INIT_ON_ALLOC_DEFAULT_ON=y) — and `init_on_alloc=0`, by one `fairmark run --profile cpu` of a plan with
`boots = "auto"`: a look at the boot means after every A B B A block, until the answer is decided or max_boots.
Every boot takes its own CPU-profiled trials, and where the difference went is compared with boots as the unit.

The workload gives the variant something to act on: `fallocate` of a file on a tmpfs with huge=always, which
allocates 2 MiB pages and writes nothing into them: with init_on_alloc the kernel clears every one of them
(clear_page_erms under QEMU's -cpu max), without it nothing does. (On a plain tmpfs, 4 KiB pages, the page
allocator and shmem's bookkeeping cost as much as the clearing under TCG, 2.0-3.1 s vs 1.2-1.6 s for 96 MiB; with
huge pages 1.3-3.4 s vs 0.01-0.23 s for 128 MiB: measured in the guest with busybox `time`.) The plan has no
set-up for perf: the guest's /init enables no cgroup controller, and fairmark itself makes perf -G work there
(run/profiles/base.py: propagate_perf_event).

Prints `fairmark run`'s own final screen, then `fairmark show` of the run (the verdict, the boots it took, the
sentence and the per-function table).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "tests"))

import _commit  # noqa: E402 - bench/: the commit the figures are of
import qemuguest  # noqa: E402 - the guest builder the tests use

V2 = "cgroup_no_v1=all"  # a pure cgroup v2 host, as every current distribution
BASE = f"{qemuguest.BASE_CMDLINE} {V2}"
OFF = f"{BASE} init_on_alloc=0"
MOUNT = "/mnt/fm"
# per boot: a tmpfs whose files take huge pages (the guest's THP sysfs setting for shmem is "never": the mount
# option decides for this mount)
SETUP = f"mkdir -p {MOUNT} && (grep -q ' {MOUNT} ' /proc/mounts || mount -t tmpfs -o huge=always,size=256M fm {MOUNT})"


def workload(size: str) -> str:
    return f"fallocate -l {size} {MOUNT}/f && rm {MOUNT}/f"


def boot(command: str, cmdline: str) -> str:
    return (
        f'boot = {{ command = "{command}", reboot = ["reboot", "-f"], timeout_s = 900, '
        f'expect = {{ "os.cmdline" = "{cmdline}" }} }}'
    )


def plan(guest: qemuguest.Guest, args: argparse.Namespace) -> str:
    return (
        'title = "init_on_alloc in a QEMU guest"\n[run]\nboots = "auto"\n'
        f"min_boots = {args.min_boots}\nmax_boots = {args.max_boots}\nwarmup = 1\n"
        f"min_trials = {args.trials}\nmax_trials = {args.trials}\nprofiled_trials = {args.profiled}\n"
        f'[[workload]]\nname = "fallocate-huge"\ncommand = {json.dumps(["sh", "-c", workload(args.size)])}\n'
        f"setup = {json.dumps(['sh', '-c', SETUP])}\n"
        f'[[variant]]\nname = "default"\nhost = "guest"\n{boot("rm -f /mnt/share/next-cmdline", BASE)}\n'
        f'[[variant]]\nname = "noinit"\nhost = "guest"\n'
        f"{boot('echo init_on_alloc=0 > /mnt/share/next-cmdline', OFF)}\n" + guest.hosts_toml(installed=True)
    )


def fairmark(env: dict[str, str], *argv: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fairmark", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # 4: with 2 + 2 boots as the unit no function can be claimed (docs/reproductions.md section 15, run 06e9b747)
    ap.add_argument("--min-boots", type=int, default=4)
    ap.add_argument("--max-boots", type=int, default=8)
    ap.add_argument("--trials", type=int, default=3, help="measured trials per boot")
    ap.add_argument("--profiled", type=int, default=2, help="profiled trials per boot")
    ap.add_argument("--size", default="96M", help="the file fallocate'd per trial")
    ap.add_argument("--keep", type=Path, help="keep the run's store (sqlite) here")
    _commit.add_option(ap)
    args = ap.parse_args()
    if why := qemuguest.available():  # `make bench` goes on with the other scripts
        print(f"skipped: no QEMU guest here: {why}")
        return
    with tempfile.TemporaryDirectory(prefix="fm-explain-qemu-") as tmp:
        store = args.keep or Path(tmp) / "store.db"
        env = os.environ | {
            "FAIRMARK_STORE": f"sqlite:///{store}",
            "FAIRMARK_LOCK_PATH": f"{tmp}/host.lock",
            "FAIRMARK_STATE_DIR": f"{tmp}/state",
            "FAIRMARK_AGENT_DEADLINE_S": "900",  # Python and perf under TCG on a busy machine
            "NO_COLOR": "1",
            "COLUMNS": "100",
        }
        # first boot, every block's boot (2 per variant and look), and a spare
        with qemuguest.Guest(max_boots=2 * args.max_boots + 2, cmdline=V2, fairmark=True) as guest:
            path = Path(tmp) / "init_on_alloc.toml"
            path.write_text(plan(guest, args))
            start, load = time.monotonic(), os.getloadavg()[0]
            run = fairmark(env, "run", str(path), "--accept-risk", "--profile", "cpu", timeout=6 * 3600)
            wall = time.monotonic() - start
            print(run.stdout + run.stderr[-4000:], flush=True)
            print(
                f"--- exit {run.returncode}, {wall / 60:.1f} min, commit {_commit.commit(args.commit)}, load "
                f"average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; the guest's boots: "
                f"{len(guest.boots)}",
                flush=True,
            )
            for i, cmdline in enumerate(guest.boots, 1):
                print(f"  boot {i}: {cmdline.removeprefix(BASE).strip() or '(default)'}")
        show = fairmark(env, "show", "last", timeout=600)
        print(show.stdout + show.stderr[-2000:])


if __name__ == "__main__":
    main()
