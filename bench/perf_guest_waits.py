"""How long perf takes to start and to exit in a loaded QEMU guest, and whether fairmark's CPU profile of a
trial survives it (run/profiles/base.py: PERF_WAIT_S, Patience).

    .venv/bin/python bench/perf_guest_waits.py [--profiles 10]      (~10-30 min under TCG at load 15-20)

Boots the guest of tests/test_explain_qemu.py (TCG, this machine's kernel, cgroup v2 only, fairmark and perf in
it) and, in it, profiles that test's workload (fallocate of 64 MiB on a huge-page tmpfs, default boot) `--profiles`
times with fairmark's own PerfCpuProfile, as the agent does for a profiled trial: per profile, the seconds perf
took to ack "enable" (start), the trial, perf's exit after SIGINT (stop), `perf script` and folding, the longest
stretch perf went without using CPU while it was waited for (max_gap), and the outcome (the error artifact's
text when it failed). The guest's clock is the host's wall clock: on a busy host it gets what is left, and perf's
start and stop take as long as that makes them. Run it beside load (e.g. `nice stress-ng --cpu 2`) to see it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "tests"))

import _commit  # noqa: E402 - bench/: the commit the figures are of
import qemuguest  # noqa: E402 - the guest builder the tests use

MOUNT = "/mnt/fm"
SETUP = f"mkdir -p {MOUNT} && (grep -q ' {MOUNT} ' /proc/mounts || mount -t tmpfs -o huge=always,size=256M fm {MOUNT})"
WORK = f"fallocate -l 64M {MOUNT}/f && rm {MOUNT}/f"
# run in the guest by its Python, with fairmark from the shared checkout
IN_GUEST = r"""
import json, subprocess, sys, tempfile, time
from fairmark.run.hooks import HookContext
from fairmark.run.profiles import base
from fairmark.run.profiles.cpu import WORKLOAD, PerfCpuProfile, count_samples, fold

gaps = []
expired = base.Patience.expired
def watched(self):
    gaps.append(time.monotonic() - self.last)
    return expired(self)
base.Patience.expired = watched
for i in range(int(sys.argv[1])):
    gaps.clear()
    ctx = HookContext("r", "c", "w", "v", str(i), tempfile.mkdtemp(), False)
    p = PerfCpuProfile()
    argv = p.wrap(["sh", "-c", sys.argv[2]], ctx)
    t0 = time.monotonic(); p.start(ctx); t1 = time.monotonic()
    subprocess.run(argv); t2 = time.monotonic()
    rec, err = p.finish(); t3 = time.monotonic()
    row = dict(i=i, start=t1 - t0, trial=t2 - t1, stop=t3 - t2, max_gap=max(gaps, default=0.0))
    try:
        if rec is None:
            raise base.ProfilerFailed(err)
        script = p._script(rec.out); t4 = time.monotonic()
        folded = fold(script, p.collapse, WORKLOAD)
        row |= dict(script=t4 - t3, samples=count_samples(script)[WORKLOAD], outcome="ok" if folded else "empty")
    except base.ProfilerFailed as exc:
        row |= dict(outcome=f"{exc.message} {err.strip()[-200:]}".strip())
    print(json.dumps(row), flush=True)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", type=int, default=10)
    _commit.add_option(ap)
    args = ap.parse_args()
    if why := qemuguest.available():  # `make bench` goes on with the other scripts
        print(f"skipped: {why}")
        return 0
    with qemuguest.Guest(max_boots=2, cmdline="cgroup_no_v1=all", fairmark=True) as g:
        g.ssh(SETUP, timeout=600)
        (g.share / "perf_waits.py").write_text(IN_GUEST)
        load0 = os.getloadavg()[0]
        res = g.ssh(
            "cd /tmp && env PYTHONPATH=/fairmark/src:/fairmark/site /bin/hostpython /mnt/share/perf_waits.py "
            f"{args.profiles} '{WORK}'",
            timeout=7200,
        )
        load1 = os.getloadavg()[0]
    rows = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    print(f"{'#':>3} {'start s':>8} {'trial s':>8} {'stop s':>7} {'script s':>9} {'max_gap s':>9}  outcome")
    for r in rows:
        script = f"{r['script']:9.1f}" if "script" in r else f"{'-':>9}"
        print(
            f"{r['i']:>3} {r['start']:8.1f} {r['trial']:8.1f} {r['stop']:7.1f} {script} {r['max_gap']:9.2f}  "
            f"{r['outcome'][:200]}"
        )
    ok = sum(r["outcome"] == "ok" for r in rows)
    print(
        f"--- {ok} of {len(rows)} profiles kept; perf start > 30 s in {sum(r['start'] > 30 for r in rows)}, "
        f"stop > 30 s in {sum(r['stop'] > 30 for r in rows)}; load {load0:.1f} -> {load1:.1f}; "
        f"commit {_commit.commit(args.commit)}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    if res.returncode != 0:
        print(res.stderr[-2000:], file=sys.stderr)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
