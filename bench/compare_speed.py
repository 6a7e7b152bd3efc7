"""`fairmark compare` of two files of 100 000 lines (and of 7 lines) against the installed `ministat` (Debian's
`ministat` package, 20150715; issue 23 item 10, issue 31 item 7: goal ≤ 0.3 s of CPU and ≤ 40 MB). Each command
runs REPEATS times in turns; its CPU time (user + sys of the child, from wait4) and wall time are the medians, its
peak RSS is /usr/bin/time's %M (the child's own: a process started from a pytest worker would inherit the worker's
high-water mark). Beside it: `python -c "import numpy, click"` (the floor of a Python command that uses numpy; also
with OPENBLAS_NUM_THREADS=1, the floor of fairmark, whose entry loads OpenBLAS on one thread) and
`fairmark --version`. Sources are compiled to bytecode first (a checkout run with PYTHONDONTWRITEBYTECODE would
otherwise compile 40 modules, 0.1 s, on every start). CPU time travels between a busy machine and an idle one far
better than wall time; the load average is printed.

Run: .venv/bin/python bench/compare_speed.py [--lines N] [--repeats R]
     .venv/bin/python bench/compare_speed.py --against OLD/src   also an older fairmark (`git archive COMMIT src |
     tar -x -C OLD`), in the same turns

Last printed (b62977e, load 14.5 → 13.4, median of 7, main's venv, 3a2ce52 in the same turns): 100 000 lines
each 0.387 s CPU and 36.1 MB (3a2ce52: 0.587 s, 41.0 MB), --ministat-compat 0.452 s, 7 lines 0.278 s and 31.7 MB,
`import numpy, click` 0.202 s and 26.1 MB, ministat 0.093 s and 4.1 MB: the memory goal met, the CPU goal not.
Peak RSS counts the libraries' pages mapped from the page cache: in a venv installed minutes before, numpy and
click alone peaked at 32.2 MB against 26.7 MB in an older one (RssFile 18.1 against 12.7 MB), so compare a row
only with rows of the same sitting and venv.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import _commit  # bench/: the commit the figures are of

FAIRMARK = [sys.executable, "-m", "fairmark"]
SRC = Path(__file__).resolve().parents[1] / "src"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds (user + sys, the child alone) and wall seconds of one run of `argv`."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv)} failed")
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - start


def peak_rss(argv: list[str], env: dict[str, str]) -> float:
    """Peak RSS of one run of `argv` in MB, from GNU time."""
    res = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
        env=env,
    )
    return int(res.stderr.strip().splitlines()[-1]) / 1024


def write(path: Path, values: np.ndarray) -> str:
    path.write_text("".join(f"{float(v)!r}\n" for v in values))
    return str(path)


def commands(d: Path, lines: int, against: Path | None) -> dict[str, list[str]]:
    rng = np.random.default_rng(1)
    big = [write(d / f"f{k}", rng.normal(100.0 + 0.1 * k, 2, lines)) for k in range(2)]
    small = [write(d / f"s{k}", rng.normal(100.0 + k, 2, 7)) for k in range(2)]
    out = {
        'python -c "import numpy, click"': [sys.executable, "-c", "import numpy, click"],
        # fairmark's own floor: its entry loads OpenBLAS with one thread (cli/_threads.py), whose pool spins
        "the same, OPENBLAS_NUM_THREADS=1": [
            "env",
            "OPENBLAS_NUM_THREADS=1",
            sys.executable,
            "-c",
            "import numpy, click",
        ],
        "fairmark --version": [*FAIRMARK, "--version"],
        f"fairmark compare ({lines} lines each)": [*FAIRMARK, "compare", *big],
        f"fairmark compare --ministat-compat ({lines})": [*FAIRMARK, "compare", "--ministat-compat", *big],
        "fairmark compare (7 lines each)": [*FAIRMARK, "compare", *small],
    }
    if against is not None:  # run with PYTHONPATH=against (see main)
        out[f"older fairmark compare ({lines} lines each)"] = [*FAIRMARK, "compare", *big]
        out["older fairmark compare (7 lines each)"] = [*FAIRMARK, "compare", *small]
    if shutil.which("ministat"):
        out[f"ministat ({lines} lines each)"] = ["ministat", *big]
        out["ministat (7 lines each)"] = ["ministat", *small]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument(
        "--against", type=Path, help="an older fairmark's src/ directory, measured in the same turns"
    )
    _commit.add_option(ap)
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(SRC)
    compileall.compile_dir(str(SRC / "fairmark"), quiet=1)
    envs = {"": env}
    if args.against:
        compileall.compile_dir(str(args.against / "fairmark"), quiet=1)
        envs["older"] = env | {"PYTHONPATH": str(args.against.resolve())}
    with tempfile.TemporaryDirectory() as tmp:
        cmds = commands(Path(tmp), args.lines, args.against)
        load0 = os.getloadavg()
        runs: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
        for _ in range(args.repeats):
            for name, argv in cmds.items():
                runs[name].append(timed(argv, envs[name.split(" ")[0] if name.startswith("older") else ""]))
        rss = {
            name: peak_rss(argv, envs["older" if name.startswith("older") else ""])
            for name, argv in cmds.items()
        }
    print(
        f"commit {_commit.commit(args.commit)}, {os.cpu_count()} CPUs, load average {load0[0]:.1f} → "
        f"{os.getloadavg()[0]:.1f}; median of {args.repeats} runs in turns"
    )
    print(f"  {'command':<46} {'CPU s':>7} {'wall s':>7} {'peak RSS MB':>12}")
    cpu = {n: statistics.median(c for c, _ in r) for n, r in runs.items()}
    for name, r in runs.items():
        wall = statistics.median(w for _, w in r)
        print(f"  {name:<46} {cpu[name]:7.3f} {wall:7.2f} {rss[name]:12.1f}")
    big = f"fairmark compare ({args.lines} lines each)"
    ref = f"ministat ({args.lines} lines each)"
    if ref in cpu:
        print(
            f"\n{big} / ministat: CPU {cpu[big] / max(cpu[ref], 1e-3):.1f}×, peak RSS "
            f"{rss[big] / rss[ref]:.1f}×"
        )
    old = f"older fairmark compare ({args.lines} lines each)"
    if old in cpu:
        print(f"{big} / older: CPU {cpu[big] / cpu[old]:.2f}×, peak RSS {rss[big] / rss[old]:.2f}×")
    floor = "the same, OPENBLAS_NUM_THREADS=1"
    print(f"{big} − {floor}: CPU {cpu[big] - cpu[floor]:+.3f} s, peak RSS {rss[big] - rss[floor]:+.1f} MB")
    met = "met" if cpu[big] <= 0.3 and rss[big] <= 40 else "NOT met"
    print(f"goal ≤ 0.3 s of CPU and ≤ 40 MB: {cpu[big]:.3f} s, {rss[big]:.1f} MB — {met}")


if __name__ == "__main__":
    main()
