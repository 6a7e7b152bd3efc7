"""Helpers shared by tests (importable as `helpers`: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# This Python, as a TOML string, for a plan's trials: `python3` on PATH may be a version manager's shim (pyenv's
# costs 0.2-0.4 s a start here, most of a short trial).
PYTHON_TOML = json.dumps(sys.executable)
FIXTURES = REPO / "tests" / "fixtures"


def fairmark_subprocess(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300, **kw: object
) -> subprocess.CompletedProcess[str]:
    """Run the installed CLI as a user would, in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "fairmark", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        cwd=REPO,
        **kw,
    )


def json_out(stdout: str) -> dict:
    return json.loads(stdout)


def wait_until(check: Callable[[], bool], timeout_s: float = 60.0, every_s: float = 0.05) -> bool:
    """Poll `check` until it holds or `timeout_s` passed: a test waits for an event (a process gone, a file
    written) without assuming how fast this shared machine is right now."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(every_s)
    return True


def realtime_prefix() -> str:
    """'chrt -f 10 ' where a test may run a timed program under SCHED_FIFO (root), else ''. A sleeping program's
    wake-up then does not wait behind the load of this shared machine: a 0.15 s sleep's wall time had a CV of
    7.8% at load 16 on 2 CPUs, 1.7% under chrt -f (measured while writing the continual-benchmarking tests)."""
    import shutil

    return "chrt -f 10 " if os.geteuid() == 0 and shutil.which("chrt") else ""


def raised_priority(nice: int = -10):  # -> contextlib context manager
    """Run the block at a higher CPU priority (root only; elsewhere a no-op): fairmark's own fork, exec and wait
    around a trial then do not queue behind the other test suites of this shared machine, whose delays (tens of
    ms at load 16) would otherwise be most of a short trial's noise. Restored afterwards."""
    import contextlib

    @contextlib.contextmanager
    def block():
        before = os.getpriority(os.PRIO_PROCESS, 0)
        try:
            if os.geteuid() == 0:
                os.setpriority(os.PRIO_PROCESS, 0, nice)
            yield
        finally:
            if os.geteuid() == 0:
                os.setpriority(os.PRIO_PROCESS, 0, before)

    return block()


# A program that times its own work, as real benchmarks do (zstd -b, openssl speed, sysbench): `nap SECONDS`
# sleeps that long and prints "elapsed S" measured on CLOCK_MONOTONIC around the sleep. Run under SCHED_FIFO
# (realtime_prefix) its wake-up is not delayed by the load, and the harness's fork/exec — tens of ms with a CV
# of 10-30% at load 16 on this VM — is outside the number: a planted change of its duration is seen as it is,
# at any load, which is what tests of what fairmark does with a change need.
NAP_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    double s = argc > 1 ? atof(argv[1]) : 0.1;
    struct timespec t = {(time_t)s, (long)((s - (time_t)s) * 1e9)}, a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    nanosleep(&t, 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("elapsed %.6f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return 0;
}
"""
NAP_METRIC = '{ name = "elapsed_s", regex = "elapsed ([0-9.]+)", unit = "s", better = "lower" }'


def nap_workload(name: str = "nap", seconds: str = '"$NAP_S"') -> str:
    """A [[workload]] table: NAP_C compiled once per run into its scratch directory, run under SCHED_FIFO."""
    return (
        f'[[workload]]\nname = "{name}"\nshell = true\n'
        f"setup = '''\ncat > \"$FAIRMARK_SCRATCH/nap.c\" <<'END'{NAP_C}END\ncc -O1 -o \"$FAIRMARK_SCRATCH/nap\" "
        "\"$FAIRMARK_SCRATCH/nap.c\"\n'''\n"
        f"command = 'exec {realtime_prefix()}\"$FAIRMARK_SCRATCH/nap\" {seconds}'\nmetrics = [{NAP_METRIC}]\n"
    )


def api_runs(
    levels: list[float], tags: dict[str, str], *, start_h: float = 0.0, host: str = "h1", seed: int = 0
) -> list[str]:
    """Runs of workload "nap" (one variant "A", metric elapsed_s) written with the store's API — what the runner
    calls — into $FAIRMARK_STORE: one run per level, started an hour apart from `start_h` hours after a fixed
    date, 5 values each with 1% noise, tagged `tags` and idx=I. A history made in no time, at any load."""
    import datetime as dt
    import random

    from fairmark.plan.metric import MetricSpec
    from fairmark.store.db import Store
    from fairmark.store.records import CellRecord, Sample, TrialRecord

    st, rng = Store.open(os.environ["FAIRMARK_STORE"]), random.Random(seed * 1000 + len(levels))
    t0 = dt.datetime(2026, 3, 1, tzinfo=dt.UTC) + dt.timedelta(hours=start_h)
    metric, ids = MetricSpec("elapsed_s", "s", "lower"), []
    for i, level in enumerate(levels):
        started = t0 + dt.timedelta(hours=i)
        run_id = st.create_run(
            plan_path="h.toml",
            plan_text="title = 'h'\n",
            plan_sha256="0" * 64,
            title="h",
            seed=1,
            host_id=host,
            hostname=host,
            started_at=started,
            status="running",
            command_line="fairmark run h.toml",
            fairmark_version="test",
            options={"baseline": "A", "variants": {"A": {"name": "A"}}},
            notes=[],
            tags=tags | {"idx": str(i)},
        )
        cells = st.ensure_cells(
            run_id, [CellRecord("nap/A", "nap", "A", (), "elapsed_s", (metric,), status="done")]
        )
        for k in range(5):
            trial = TrialRecord(run_id, cells["nap/A"], k, k, False, "ok", started, wall_s=1.0)
            value = level * (1 + rng.gauss(0, 0.01))
            st.add_trial(trial, [Sample(trial.id, trial.cell_id, "elapsed_s", value, "s", "lower")])
        st.update_run(run_id, status="done", ended_at=started + dt.timedelta(minutes=1))
        ids.append(run_id)
    return ids


# A program of known peak RSS: `alloc MIB` allocates MIB mebibytes and writes every byte (every page resident).
ALLOC_C = r"""
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    size_t n = (size_t)atol(argc > 1 ? argv[1] : "0") << 20;
    volatile char *p = malloc(n ? n : 1);
    if (!p) return 1;
    memset((char *)p, 1, n);
    return n && p[n - 1] != 1;
}
"""


def build_alloc(dest_dir: Path) -> Path:
    """ALLOC_C compiled into dest_dir (skips the test without gcc)."""
    import shutil

    import pytest

    if not shutil.which("gcc"):
        pytest.skip("gcc is not installed (packages/debian-test.txt)")
    src, exe = dest_dir / "alloc.c", dest_dir / "alloc"
    src.write_text(ALLOC_C)
    subprocess.run(["gcc", "-O0", "-o", str(exe), str(src)], check=True)
    return exe


PLANTED_C = Path(__file__).parent / "fixtures" / "planted.c"


def build_planted(dest_dir: Path) -> Path:
    """tests/fixtures/planted.c compiled into dest_dir with frame pointers (a profile's stacks need them)."""
    exe = dest_dir / "planted"
    flags = ["-O1", "-fno-omit-frame-pointer", "-fno-inline"]
    subprocess.run(["cc", *flags, "-o", str(exe), str(PLANTED_C)], check=True)
    return exe


def time_max_rss_kib(argv: list[str], tmp: Path, runs: int = 3) -> int:
    """GNU time's `%M` (the command's peak resident set, KiB) for argv: the median of `runs` runs — the
    independent reference a recorded max_rss_kib is held against."""
    import statistics

    import pytest

    if not Path("/usr/bin/time").exists():
        pytest.skip("/usr/bin/time is not installed (packages/debian-test.txt: time)")
    out = tmp / "time.out"
    values = []
    for _ in range(runs):
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(out), *argv], check=True)
        values.append(int(out.read_text().split()[-1]))
    out.unlink()
    return int(statistics.median(values))


# A trial that prints a value drawn from N(1, 0.02) times $SCALE, seeded by $V (the variant) and the trial's number
# (counted in a file per variant in the directory given as its argument): a run's verdict is then fixed by the
# seeds. Measured times of two identical cells are not on this shared VM (issue 24: an A/A ratio of 1.104 under
# load; whole runs 1-2% apart otherwise); how often a real A/A stays quiet on a machine is what `fairmark
# calibrate` measures. Tests of what fairmark concludes from values use this; tests of measuring use real work.
DRAW_PY = (
    "import os, random, sys; v = os.environ['V']; p = os.path.join(sys.argv[1], v); "
    "n = os.path.getsize(p) if os.path.exists(p) else 0; open(p, 'a').write('.'); "
    "print('value', float(os.environ.get('SCALE', '1')) * random.Random(f'{v}-{n}').gauss(1.0, 0.02))"
)
DRAW_METRIC = "{ name = 'value', regex = 'value ([0-9.e-]+)', unit = 's', better = 'lower' }"


def draw_workload(counts: Path, name: str = "draw") -> str:
    """A [[workload]] table running DRAW_PY; its variants set V (and SCALE for a known true ratio)."""
    return (
        f"[[workload]]\nname = '{name}'\ncommand = {json.dumps([sys.executable, '-S', '-c', DRAW_PY, str(counts)])}\n"
        f"metrics = [{DRAW_METRIC}]\n"
    )


# -- throwaway git repositories: what bisect, ab, backfill and publish are run on ---------------------------------
def git(repo: Path, *args: str) -> str:
    """`git ARGS` in repo: its output, stripped (a failing git fails the test)."""
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def new_repo(path: Path) -> Path:
    """An empty repository made at path, on branch main, committing as a test identity (not the machine's)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "test@example.org")
    git(path, "config", "user.name", "test")
    return path


def commit_files(repo: Path, files: Mapping[str, str], message: str) -> str:
    """`files` (path in the repository -> text) written, the whole tree committed; the new commit's SHA."""
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def commit_series(path: Path, versions: Iterable[Mapping[str, str]], first: int = 1) -> list[str]:
    """A new repository at path with one commit per version, "commit N" numbered from `first`: each writes its
    files over the tree so far (a file it does not name stays as it was). The SHAs, oldest first."""
    new_repo(path)
    return [commit_files(path, files, f"commit {i}") for i, files in enumerate(versions, first)]


def repo_state(repo: Path) -> dict[str, str]:
    """What a command that borrows the repository must leave as it found: HEAD, status, worktrees, bisect, refs."""
    gitdir = Path(git(repo, "rev-parse", "--absolute-git-dir"))
    return {
        "head": git(repo, "symbolic-ref", "HEAD") + " " + git(repo, "rev-parse", "HEAD"),
        "status": git(repo, "status", "--porcelain", "--ignored"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
        "bisect": " ".join(sorted(p.name for p in gitdir.glob("BISECT_*"))),
        "refs": git(repo, "for-each-ref", "--format=%(refname)"),
    }


def prog_plan(title: str, run: str, command_prefix: str = "") -> str:
    """A plan whose one workload, "prog", runs the program the build made in the commit's checkout
    ($FAIRMARK_CHECKOUT/prog: NAP_C's kind, timing itself) under SCHED_FIFO where it may; `run`: the [run] table's
    lines; `command_prefix`: shell run before it."""
    return (
        f'title = "{title}"\n[run]\n{run}\n[[workload]]\nname = "prog"\nshell = true\n'
        f"command = '{command_prefix}exec {realtime_prefix()}\"$FAIRMARK_CHECKOUT/prog\"'\nmetrics = [{NAP_METRIC}]\n"
    )
