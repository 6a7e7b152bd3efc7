#!/usr/bin/env python3
"""The README's "A short tour", run literally as a new user would, its output written to docs/tour.md.

    python3 scripts/tour.py           # a fresh clone of HEAD in a temporary directory, `make setup` in it, the tour
    python3 scripts/tour.py --here    # the same, but fairmark from this checkout's .venv (no `make setup`; this
                                      # checkout's source, uncommitted changes included, with the clone's plans)

The commands come from the README's tour block itself: each line there must have a recipe below (the concrete
arguments its placeholders take, and what it needs prepared), and each recipe a line there, or the script stops —
the two cannot drift apart. Every command runs in the clone with its own store, state and host lock in the
temporary directory (XDG_DATA_HOME, FAIRMARK_STATE_DIR, FAIRMARK_LOCK_PATH), COLUMNS=80, and its stdout and
stderr together as a terminal shows them. The script fails loudly on a traceback, on a line longer than 80
columns, or on an exit code the recipe did not expect; it writes docs/tour.md only when the whole tour passed.

Commands that need more than one machine get what they need here, or are shown refused: `bisect` gets a small git
repository made by the script (a C program whose fourth commit doubles its work); `compare-runs A1 A2 --vs B1 B2`
gets four runs made in this one boot (with no boot to tell them apart, each run is the verdict's unit); `run plans/kernels.toml --host
root@ADDR` is shown refused, pointed at 127.0.0.2 (loopback, checked to have no SSH server first: it would
reboot that host).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WIDTH = 80
TRACEBACK = "Traceback (most recent call last)"


@dataclass
class Step:
    shown: str  # the command as the tour shows it (what a user types)
    shell: str = ""  # what runs (default: `shown`)
    codes: tuple[int, ...] = (0,)  # exit codes this step may end with
    note: str = ""  # said above the output: what was prepared, why an argument was chosen

    def __post_init__(self) -> None:
        self.shell = self.shell or self.shown


@dataclass
class Done:
    step: Step
    code: int
    output: str
    seconds: float


@dataclass
class Tour:
    clone: Path
    tmp: Path
    env: dict[str, str]
    runs: list[dict] = field(default_factory=list)  # every run in the store, oldest first
    problems: list[str] = field(default_factory=list)

    def fairmark_json(self, *args: str) -> dict:
        out = subprocess.run(
            ["fairmark", *args, "--json"],
            cwd=self.clone,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(out.stdout)

    def refresh(self) -> list[dict]:
        """The store's runs, oldest first."""
        self.runs = list(reversed(self.fairmark_json("runs", "--limit", "1000")["runs"]))
        return self.runs

    def run(self, step: Step) -> Done:
        print(f"$ {step.shown}", file=sys.stderr, flush=True)
        start = time.monotonic()
        proc = subprocess.run(
            ["bash", "-c", step.shell],
            cwd=self.clone,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
            timeout=3600,
        )
        done = Done(step, proc.returncode, proc.stdout, time.monotonic() - start)
        self.check(done)
        return done

    def check(self, done: Done) -> None:
        where = f"`{done.step.shown}`"
        if TRACEBACK in done.output:
            self.problems.append(f"{where}: a traceback")
        long = [line for line in done.output.splitlines() if len(line) > WIDTH]
        if long:
            self.problems.append(f"{where}: {len(long)} line(s) over {WIDTH} columns, e.g. {long[0]!r}")
        if done.code not in done.step.codes:
            self.problems.append(
                f"{where}: exit {done.code} (expected {done.step.codes}):\n{done.output[-2000:]}"
            )


# -- recipes: what each README line runs ----------------------------------------------------------------------
def _id(run: dict) -> str:
    return run["id"][:8]


def _quick_runs(t: Tour) -> list[dict]:
    return [r for r in t.runs if r["plan_path"].endswith("quick.toml")]


def _tagged(t: Tour) -> list[dict]:
    """The runs the tour tagged branch=main (calibration runs carry tags of their own)."""
    return [r for r in t.runs if r["tags"].get("branch") == "main"]


def r_run_quick(t: Tour, line: str) -> list[Step]:
    return [Step(line)]


def r_resume(t: Tour, line: str) -> list[Step]:
    """A run killed with SIGKILL after 6 trials, then resumed: what `resume` is for."""
    argv = ["fairmark", "run", "plans/quick.toml", "--quick"]
    proc = subprocess.Popen(
        argv,
        cwd=t.clone,
        env=t.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    run_id = ""
    assert proc.stderr is not None
    for text in proc.stderr:
        if m := re.match(r"fairmark: run ([0-9a-f-]{36})", text):
            run_id = m[1]
        if text.startswith("[   6]"):
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    note = (
        f"prepared: `fairmark run plans/quick.toml --quick` killed with SIGKILL after its 6th trial "
        f"(run {run_id[:8]})"
    )
    return [Step(f"fairmark resume {run_id[:8]}", note=note)]


GO_BENCH = "goos: linux\ngoarch: amd64\npkg: example.org/tour\n{rows}PASS\n"


def r_compare_bench(t: Tour, line: str) -> list[Step]:
    """Two `go test -bench` outputs (8 runs of two benchmarks each): Alloc 6% slower in new.txt, Parse the same."""
    for name, factor in (("old.txt", 1.0), ("new.txt", 1.06)):
        rows = "".join(
            f"BenchmarkAlloc-2   \t 1000000\t      {1050 * factor * (1 + 0.01 * math.sin(i + 3 * factor)):.1f} ns/op\n"
            f"BenchmarkParse-2   \t  200000\t      {5230 * (1 + 0.012 * math.cos(i + 2 * factor)):.1f} ns/op\n"
            for i in range(8)
        )
        (t.clone / name).write_text(GO_BENCH.format(rows=rows))
    note = "prepared: old.txt and new.txt, `go test -bench` output of two benchmarks, 8 runs each; Alloc made 6% slower"
    return [Step(line, note=note)]


def r_compare_files(t: Tour, line: str) -> list[Step]:
    first = _id(t.runs[0])
    note = (
        f"prepared: a.txt and b.txt are alloc's wall_s of run {first}, nodebug and malloc-debug "
        f"(`fairmark export {first} --format ministat`)"
    )
    out = t.tmp / "ministat"
    subprocess.run(
        ["fairmark", "export", first, "--format", "ministat", "--out", str(out)],
        cwd=t.clone,
        env=t.env,
        check=True,
        capture_output=True,
    )
    for name, variant in (("a.txt", "nodebug"), ("b.txt", "malloc-debug")):
        (t.clone / name).write_text((out / f"alloc__{variant}__wall_s.txt").read_text())
    return [Step("fairmark compare a.txt b.txt", note=note)]


def r_export(t: Tour, line: str) -> list[Step]:
    run = _id(t.runs[0])
    return [Step(f"fairmark export {run} --format {f} --out exported") for f in ("json", "csv", "ministat")]


def r_import(t: Tour, line: str) -> list[Step]:
    bundle = next((t.clone / "exported").glob("*.json")).relative_to(t.clone)
    note = "into a second store (the run is already in the first): as on another machine"
    return [
        Step(f"fairmark import {bundle} --store elsewhere.db", note=note),
        Step("fairmark runs --store elsewhere.db"),
    ]


def r_rerun(t: Tour, line: str) -> list[Step]:
    bundle = next((t.clone / "exported").glob("*.json")).relative_to(t.clone)
    note = (
        "the bundle exported above, run again in the second store, which holds its run since `import`; "
        "then the two side by side (`last`: the re-run)"
    )
    return [
        Step(f"fairmark run {bundle} --store elsewhere.db", note=note),
        Step(f"fairmark compare-runs {_id(t.runs[0])} last --store elsewhere.db"),
    ]


def r_env(t: Tour, line: str) -> list[Step]:
    a, b = _id(t.runs[0]), _id(_quick_runs(t)[-1])
    return [Step("fairmark env"), Step(f"fairmark env --diff {a} {b}")]


def r_report(t: Tour, line: str) -> list[Step]:
    run = _id(t.runs[0])
    return [Step(f"fairmark report {run} --html report.html"), Step(f"fairmark report {run} --text")]


def r_profile(t: Tour, line: str) -> list[Step]:
    return [
        Step(
            "fairmark run plans/quick.toml --quick --profile cpu,locks",
            note="PLAN: the default plan, --quick",
        )
    ]


def r_explain(t: Tour, line: str) -> list[Step]:
    return [
        Step(
            "fairmark run plans/quick.toml --quick --explain",
            note="PLAN: the default plan, --quick; alloc's difference is the one proven",
        )
    ]


def r_setup(t: Tour, line: str) -> list[Step]:
    return [Step("fairmark setup plans/quick.toml")]


def r_compare_runs(t: Tour, line: str) -> list[Step]:
    tagged = _tagged(t)
    a, b = _id(tagged[0]), _id(tagged[1])
    return [
        Step(
            f"fairmark compare-runs {a} {b}", note="two --quick runs of the default plan, tagged branch=main"
        )
    ]


def r_compare_runs_vs(t: Tour, line: str) -> list[Step]:
    tagged = [_id(r) for r in _tagged(t)][:4]
    note = (
        "four --quick runs of the default plan, tagged branch=main, all made in this machine's one boot: with "
        "no boot to tell them apart, each run is the verdict's unit"
    )
    return [Step(f"fairmark compare-runs {tagged[0]} {tagged[1]} --vs {tagged[2]} {tagged[3]}", note=note)]


def r_kernels(t: Tour, line: str) -> list[Step]:
    with socket.socket() as s:
        s.settimeout(2)
        listening = s.connect_ex(("127.0.0.2", 22)) == 0
    if listening:
        raise SystemExit("tour: something listens on 127.0.0.2:22; refusing to point a reboot plan at it")
    note = (
        "shown refused: it reboots the host it is given, and this tour has no second machine; 127.0.0.2 is "
        "loopback with no SSH server (checked)"
    )
    return [Step("fairmark run plans/kernels.toml --host root@127.0.0.2", codes=(3,), note=note)]


def r_calibrate(t: Tour, line: str) -> list[Step]:
    return [
        Step(
            "fairmark calibrate plans/quick.toml --quick --runs 3",
            note="PLAN: the default plan, --quick; K = 3",
        )
    ]


def r_restore(t: Tour, line: str) -> list[Step]:
    return [Step("fairmark restore --dry-run"), Step("fairmark restore")]


def r_tag(t: Tour, line: str) -> list[Step]:
    cmd = "fairmark run plans/quick.toml --quick --tag branch=main --tag commit=$(git rev-parse HEAD)"
    note = (
        "PLAN: the default plan, --quick; the clone's HEAD as the commit. Run 4 times (the history, check and "
        "compare-runs --vs below need several runs); the output of the 4th"
    )
    for _ in range(3):
        subprocess.run(["bash", "-c", cmd], cwd=t.clone, env=t.env, check=True, capture_output=True)
    return [Step(cmd, note=note)]


def r_runs_tag(t: Tour, line: str) -> list[Step]:
    return [Step(line)]


def r_history(t: Tour, line: str) -> list[Step]:
    return [Step("fairmark history alloc:wall_s --tag branch=main")]


def r_check(t: Tour, line: str) -> list[Step]:
    note = "the last tagged run against the three before it"
    return [Step("fairmark check last --against tag:branch=main --junit j.xml", codes=(0, 1), note=note)]


def r_ab(t: Tour, line: str) -> list[Step]:
    repo = t.tmp / "prog-ab"
    shas = _bisect_repo(repo)
    (t.clone / "ab.toml").write_text(BISECT_PLAN)
    note = (
        f"prepared: a git repository in {repo.name}/ — the C program of the bisect below; its 4th commit doubles "
        "its work: HEAD is that commit, the base the one before; ab.toml runs the program of each build"
    )
    shown = f"fairmark ab --base {shas[2][:12]} --head {shas[3][:12]} --plan ab.toml --build make"
    run = f"{shown} --repo {shlex.quote(str(repo))}"
    return [Step(shown, run, codes=(0, 1), note=note + f" (run with --repo {repo.name})")]


def r_bisect(t: Tour, line: str) -> list[Step]:
    repo = t.tmp / "prog"
    shas = _bisect_repo(repo)
    (t.clone / "bisect.toml").write_text(BISECT_PLAN)
    note = (
        f"prepared: a git repository in {repo.name}/ — a C program, 6 commits, the 4th doubles its work; "
        "bisect.toml runs the program of each checkout"
    )
    shown = f"fairmark bisect --good {shas[0][:12]} --bad {shas[-1][:12]} --plan bisect.toml --build 'make'"
    return [
        Step(shown, f"{shown} --repo {shlex.quote(str(repo))}", note=note + f" (run with --repo {repo.name})")
    ]


def r_publish(t: Tour, line: str) -> list[Step]:
    return [Step("fairmark publish --out site --repo-url 'https://git.example.org/fairmark/commit/{sha}'")]


# README line (its command, as written there) → recipe, in the README's order
RECIPES: dict[str, Callable[[Tour, str], list[Step]]] = {
    "fairmark run plans/quick.toml": r_run_quick,
    "fairmark runs": lambda t, line: [Step(line)],
    "fairmark show last": lambda t, line: [Step(line)],
    "fairmark resume RUN": r_resume,
    "fairmark compare a.txt b.txt": r_compare_files,
    "fairmark compare old.txt new.txt": r_compare_bench,
    "fairmark export RUN --format json|csv|ministat --out DIR": r_export,
    "fairmark import BUNDLE.json": r_import,
    "fairmark run BUNDLE.json": r_rerun,
    "fairmark doctor": lambda t, line: [Step(line)],
    "fairmark env [--diff RUN_A RUN_B]": r_env,
    "fairmark report RUN --html FILE": r_report,
    "fairmark run PLAN --profile cpu,locks": r_profile,
    "fairmark run PLAN --explain": r_explain,
    "fairmark setup PLAN": r_setup,
    "fairmark compare-runs RUN_A RUN_B": r_compare_runs,
    "fairmark compare-runs A1 A2 --vs B1 B2": r_compare_runs_vs,
    "fairmark run plans/kernels.toml --host root@ADDR": r_kernels,
    "fairmark calibrate PLAN --runs K": r_calibrate,
    "fairmark restore [--dry-run]": r_restore,
    "fairmark run PLAN --tag branch=main --tag commit=$(git rev-parse HEAD)": r_tag,
    "fairmark runs --tag branch=main": r_runs_tag,
    "fairmark history WORKLOAD[:METRIC]": r_history,
    "fairmark check RUN --against tag:branch=main --junit j.xml": r_check,
    "fairmark ab --base main --head HEAD --plan P --build make": r_ab,
    "fairmark bisect --good G --bad B --plan P --build 'make'": r_bisect,
    "fairmark publish --out site --repo-url 'https://…/commit/{sha}'": r_publish,
}
# Some commands need runs made later in the README (compare-runs wants the tagged runs): they run after those.
LATER = {
    "fairmark compare-runs RUN_A RUN_B",
    "fairmark compare-runs A1 A2 --vs B1 B2",
    "fairmark env [--diff RUN_A RUN_B]",
    # its run would be `check last`'s (the README's next line), which wants the last tagged run of quick.toml
    "fairmark ab --base main --head HEAD --plan P --build make",
}

BISECT_PLAN = """title = "the tour's bisect: prog of each checkout"
[run]
warmup = 1
min_trials = 5
max_trials = 8
[[workload]]
name = "prog"
command = ["sh", "-c", 'exec "$FAIRMARK_CHECKOUT/prog"']
"""
PROG = """#include <stdio.h>
int main(void) {
    unsigned long x = 1;
    for (long i = 0; i < %dL; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    printf("%%lu\\n", x);
    return 0;
}
"""


def _bisect_repo(repo: Path) -> list[str]:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, check=True, capture_output=True, text=True
        ).stdout.strip()

    repo.mkdir()
    git("init", "-q", "-b", "main")
    git("config", "user.email", "tour@example.org")
    git("config", "user.name", "tour")
    (repo / "Makefile").write_text("prog: prog.c\n\tcc -O1 -o prog prog.c\n")
    shas = []
    history = [
        (40_000_000, "First version"),
        (40_000_000, "Add a README"),
        (40_000_000, "Comment the loop"),
        (80_000_000, "Run twice the rounds"),
        (80_000_000, "Tidy the Makefile"),
        (80_000_000, "Release 1.1"),
    ]
    for i, (loops, subject) in enumerate(history):
        (repo / "prog.c").write_text(PROG % loops + f"/* {i} */\n")
        git("add", "-A")
        git("commit", "-q", "-m", subject)
        shas.append(git("rev-parse", "HEAD"))
    return shas


# -- the README's block ---------------------------------------------------------------------------------------
def tour_lines(readme: Path) -> list[tuple[str, str]]:
    """(command, comment) of each line of the README's tour block."""
    text = readme.read_text()
    block = re.search(r"^## A short tour\n+```sh\n(.*?)^```", text, re.S | re.M)
    if not block:
        raise SystemExit(f"tour: no ```sh block under '## A short tour' in {readme}")
    out = []
    for line in block[1].splitlines():
        command, *comment = re.split(r"\s+#\s", line, maxsplit=1)  # a comment: '#' after a blank
        out.append((command.strip(), " ".join(comment).strip()))
    return out


def check_recipes(lines: list[tuple[str, str]]) -> None:
    commands = [c for c, _ in lines]
    missing = [c for c in commands if c not in RECIPES]
    stale = [c for c in RECIPES if c not in commands]
    if missing or stale:
        raise SystemExit(
            "tour: the README's tour and scripts/tour.py differ:\n"
            + "".join(f"  no recipe for README line: {c}\n" for c in missing)
            + "".join(f"  recipe for a line the README no longer has: {c}\n" for c in stale)
        )


# -- the clone and its environment ----------------------------------------------------------------------------
def prepare(tmp: Path, here: bool) -> tuple[Path, dict[str, str], str]:
    clone = tmp / "fairmark"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAIRMARK_") and k not in ("NO_COLOR",)}
    env |= {
        "XDG_DATA_HOME": str(tmp / "data"),  # the default store: $XDG_DATA_HOME/fairmark/fairmark.db
        "FAIRMARK_STATE_DIR": str(tmp / "state"),
        "FAIRMARK_LOCK_PATH": str(tmp / "host.lock"),
        "COLUMNS": str(WIDTH),
        "PYTHONUNBUFFERED": "1",  # stdout and stderr in the order a terminal shows them
    }
    if here:
        setup = f"fairmark from {REPO}/.venv (--here)"
        venv = REPO / ".venv" / "bin"
    else:
        start = time.monotonic()
        proc = subprocess.run(["make", "setup"], cwd=clone, capture_output=True, text=True, check=False)
        if proc.returncode:
            raise SystemExit(
                f"tour: `make setup` failed in the clone:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
            )
        setup = f"`make setup` in the clone: {time.monotonic() - start:.0f} s"
        venv = clone / ".venv" / "bin"
    env["PATH"] = f"{venv}:{env.get('PATH', '/usr/bin:/bin')}"
    return clone, env, setup


# -- docs/tour.md ---------------------------------------------------------------------------------------------
def render(lines, results: dict[str, list[Done]], head: dict[str, str]) -> str:
    def para(text: str) -> list[str]:
        return textwrap.wrap(text, WIDTH, break_long_words=False, break_on_hyphens=False)

    out = [
        "# The README's tour, run",
        "",
        *para(
            "Every command of the README's [short tour](../README.md#a-short-tour), run on a fresh clone with "
            "its own store, as a new user would, at 80 columns; stdout and stderr together, as a terminal shows "
            "them. Generated by `python3 scripts/tour.py`, which reads the commands from the README: do not "
            "edit this file, run the script."
        ),
        "",
        *(f"- {k}: {v}" for k, v in head.items()),
        "",
        *para(
            "Placeholders (RUN, PLAN, …) take the values shown with each command. What needs more than this "
            "machine: `bisect` gets a small git repository the script makes; `compare-runs … --vs …` gets four "
            "runs of this one boot; `run plans/kernels.toml --host root@ADDR` is shown refused (it reboots the "
            "host it is given)."
        ),
    ]
    for command, comment in lines:
        out += ["", f"## `{command}`", ""]
        if comment:
            out += [*para(f"*{comment}*"), ""]
        for done in results[command]:
            if done.step.note:
                out += [*para(f"({done.step.note})"), ""]
            status = "" if done.code == 0 else f"  # exit {done.code}"
            output = [line.rstrip() for line in done.output.rstrip("\n").splitlines()]
            out += ["```text", *prompt(done.step.shown + status), *output, "```", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def prompt(command: str) -> list[str]:
    """'$ command', continued with a backslash as a shell transcript does when it is longer than the width."""
    lines, line = [], "$"
    for word in command.split(" "):
        if len(line) + 1 + len(word) > WIDTH - 2 and line != "$":
            lines.append(line + " \\")
            line = "   "
        line += " " + word
    return [*lines, line]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--here", action="store_true", help="fairmark from this checkout's .venv, no `make setup`"
    )
    ap.add_argument(
        "--out", type=Path, default=REPO / "docs" / "tour.md", help="where to write (docs/tour.md)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    lines = tour_lines(REPO / "README.md")
    check_recipes(lines)
    tmp = Path(tempfile.mkdtemp(prefix="fairmark-tour-"))
    clone, env, setup = prepare(tmp, args.here)
    commit = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.strip()
    tour = Tour(clone, tmp, env)
    load_before = os.getloadavg()
    start = time.monotonic()
    results: dict[str, list[Done]] = {}
    order = [c for c, _ in lines if c not in LATER] + [c for c, _ in lines if c in LATER]
    for command in order:
        tour.refresh()
        results[command] = [tour.run(step) for step in RECIPES[command](tour, command)]
    load_after = os.getloadavg()
    if tour.problems:
        print("tour: FAILED\n" + "\n".join(f"- {p}" for p in tour.problems), file=sys.stderr)
        print(f"tour: kept {tmp} for a look", file=sys.stderr)
        return 1
    head = {
        "commit": f"`{commit}`" + (" (fairmark from the working tree: --here)" if args.here else ""),
        "when": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.uname().sysname} {os.uname().release}, {os.cpu_count()} CPUs",
        "load average (1 min)": f"{load_before[0]:.2f} before, {load_after[0]:.2f} after",
        "setup": setup,
        "the tour took": f"{(time.monotonic() - start) / 60:.1f} min",
    }
    doc = render(lines, results, head)
    long = [line for line in doc.splitlines() if len(line) > WIDTH]
    if long:
        print(
            f"tour: FAILED: {len(long)} line(s) of the page over {WIDTH} columns:",
            *long,
            sep="\n",
            file=sys.stderr,
        )
        return 1
    args.out.write_text(doc)
    print(f"tour: wrote {args.out} ({len(order)} README lines, all passed)", file=sys.stderr)
    if not args.keep:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
