"""The A/A false-positive rate of real commands through the real harness (issue 39), with its 95% intervals.

    .venv/bin/python bench/aa_rate.py [--runs K] [--batch B] [--plans gz,alloc,sleep] [--monitors on,off]
                                      [--trees SRC,...] [--out FILE.jsonl] [--until HH:MM]
    .venv/bin/python bench/aa_rate.py --summarize [--markdown] FILE.jsonl ...

K A/A runs (default 20; the issue asked 200) of each plan × monitors on/off × tree, `calibrate`'s way: the plan's baseline against
an exact twin of it, interleaved, the plan's trial counts, each run a run of its own (a new seed, its own hooks,
the environment probe and gate), B runs (default 5) in one process before the next configuration takes its turn,
so that every configuration sees the same hours of this machine. A tree is a fairmark source directory (default:
this one's src); an older tree (40c48e4, before `calibrate --no-monitors`) is driven through the same calls.

Plans (committed: plans/aa-gzip.toml, aa-alloc.toml, aa-sleep.toml; one protocol: 2 warm-ups, a fixed 12 trials
a side, 95%): gz — the issue's pipeline (`head -c 2000000 /dev/zero | gzip -1 > /dev/null`); alloc —
plans/quick.toml's allocation workload; sleep — `sleep 0.02`.

Resumable: runs already in --out count towards K (by plan file, tree and monitors), so the same command started
again goes on where it stopped; --until HH:MM (UTC) starts no batch past that time. Several sweeps may run at once
(one plan each, the same --out or not): every run takes `--allow-concurrent`'s path.

Prints one line per configuration: claims/runs, the rate, Wilson's and Clopper–Pearson's 95% intervals, the
load average (1 min) at its runs' starts (mean, range), and whether it meets issue 39's acceptance (rate <= 5.5%,
the upper end of the interval <= 8%: "yes" by both intervals). One JSON line per run goes to --out (default aa-rate.jsonl), which
--summarize reads again (several files: their runs together).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _commit  # bench/: git's commit of a tree

REPO = Path(__file__).resolve().parent.parent
# The three plans of issue 39, one protocol (2 warm-ups, a fixed 12 trials a side, 95%): committed files, so that
# a figure names the plan it measured.
PLANS = {
    name: REPO / "plans" / f"aa-{file}.toml"
    for name, file in (("gz", "gzip"), ("alloc", "alloc"), ("sleep", "sleep"))
}

# B A/A runs of PLAN in one process (argv: PLAN B on|off TREE-LABEL), one JSON line each on stdout. The calls of
# cli/calibrate.py's loop, spelled so that a tree from before aa_runs and `calibrate --no-monitors` runs too.
DRIVER = r"""
import json, os, sys, time
from fairmark.cli.calibrate import aa_plan
from fairmark.plan.load import LoadedPlan, load_plan
from fairmark.store.db import Store
plan_path, k, monitors, tree = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "on", sys.argv[4]
loaded = load_plan(plan_path)
try:
    p = aa_plan(loaded.plan, loaded.path)
except TypeError:  # before a30d3ca
    p = aa_plan(loaded.plan)
aa = LoadedPlan(plan=p, path=loaded.path, text=loaded.text)
store = Store.open(os.environ["FAIRMARK_STORE"])

def one_run():
    try:  # since issue 33: a run is assembled by fairmark.assemble
        from fairmark.assemble import RunRequest, execute_run
    except ImportError:
        from fairmark.cli.run import _hooks
        from fairmark.run.loop.runner import Runner, RunOptions
        opts = RunOptions(accept_risk=True, allow_concurrent=True, hooks=_hooks(monitors, 1.0, None))
        try:
            runner = Runner(aa, store, opts, hosts=None)
        except TypeError:
            runner = Runner(aa, store, opts)
        run_id = runner.start()
        if hasattr(runner, "verdicts"):
            return run_id, [(v.metric, v.comparison_dict()) for v in runner.verdicts.verdicts if v.calibration]
        from fairmark.plan.model import AA_SUFFIX
        return run_id, [(v.metric, v.comparison) for v in runner.report.verdicts if v.variant.endswith(AA_SUFFIX)]
    request = RunRequest(aa, accept_risk=True, allow_concurrent=True, hold_lock=False, monitors=monitors)
    result = execute_run(request, store)
    return result.run_id, [(v.metric, v.comparison_dict()) for v in result.verdicts.verdicts if v.calibration]

for i in range(k):
    t0, load0 = time.time(), os.getloadavg()[0]
    run_id, comps = one_run()
    for m, c in comps:
        if m == "wall_s":
            print(json.dumps({"tree": tree, "plan": os.path.basename(plan_path), "monitors": monitors,
                              "run_id": run_id, "significant": bool(c.get("significant")),
                              "p": c.get("p_value"), "t0": t0, "dt": time.time() - t0, "load0": load0,
                              "load1": os.getloadavg()[0]}), flush=True)
"""


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    p = k / n
    d = 1 + z * z / n
    centre, half = (p + z * z / (2 * n)) / d, z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """The exact binomial interval (scipy's beta quantiles; fairmark's own calibration uses the same)."""
    from scipy.stats import beta

    low = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return low, high


def tree_label(src: str) -> str:
    """A tree by its commit (its working copy's changes are not told apart), else its directory's name."""
    return _commit.tree_commit(src) or Path(src).parent.name


def meets(k: int, n: int) -> str:
    """Issue 39's acceptance: a rate of at most 5.5% with the upper end of its 95% interval at most 8%."""
    if k / n > 0.055:
        return "no (rate)"
    ok = [
        name for name, (_, high) in (("Wilson", wilson(k, n)), ("C-P", clopper_pearson(k, n))) if high <= 0.08
    ]
    return "yes" if len(ok) == 2 else f"{ok[0]} only" if ok else "no (upper)"


def _setting(monitors: bool | str) -> str:
    return monitors if isinstance(monitors, str) else "on" if monitors else "off"


def summarize(rows: list[dict], markdown: bool = False) -> None:
    """One line per (plan, tree, monitors); --markdown: as rows of docs/reproductions.md's table."""
    groups: dict[tuple[str, str, bool | str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["plan"], r["tree"], r["monitors"]), []).append(r)
        groups.setdefault(("all", r["tree"], "both"), []).append(
            r
        )  # every plan and setting of a tree together
    head = [
        "plan",
        "tree",
        "monitors",
        "claims",
        "rate",
        "Wilson 95%",
        "C-P 95%",
        "load (mean, range)",
        "meets",
    ]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head) if markdown else "\t".join(head))
    for (plan, tree, monitors), rs in sorted(groups.items()):
        k, n = sum(r["significant"] for r in rs), len(rs)
        (wl, wh), (cl, ch) = wilson(k, n), clopper_pearson(k, n)
        loads = [r["load0"] for r in rs]
        cells = [
            plan,
            tree,
            _setting(monitors),
            f"{k}/{n}",
            f"{100 * k / n:.1f}%",
        ]
        cells += [f"{100 * wl:.1f}–{100 * wh:.1f}%", f"{100 * cl:.1f}–{100 * ch:.1f}%"]
        cells += [f"{statistics.mean(loads):.1f} ({min(loads):.0f}–{max(loads):.0f})", meets(k, n)]
        print("| " + " | ".join(cells) + " |" if markdown else "\t".join(cells))
    if (
        not markdown
    ):  # p-values of exchangeable cells are uniform: their shares below 0.1 and 0.2 use every run
        for (plan, tree, monitors), rs in sorted(groups.items()):
            ps = [r["p"] for r in rs if r.get("p") is not None]
            shares = " ".join(
                f"p<={q}: {100 * sum(p <= q for p in ps) / len(ps):.1f}%" for q in (0.05, 0.1, 0.2)
            )
            print(f"{plan} {tree} {_setting(monitors)}: {shares} (uniform: 5, 10, 20%; n={len(ps)})")


def args(argv: list[str]) -> dict[str, str]:
    out = {"--runs": "20", "--batch": "5", "--plans": "gz,alloc,sleep", "--monitors": "on,off"}
    out |= {"--trees": str(REPO / "src"), "--out": "aa-rate.jsonl", "--until": ""}
    it = iter(argv)
    for key in it:
        if key not in out:
            sys.exit(__doc__)
        out[key] = next(it, "")
    return out


def done_counts(out: Path) -> dict[tuple[str, str, bool], int]:
    """The runs --out already holds, by (plan file, tree, monitors): a sweep started again resumes where it was."""
    counts: dict[tuple[str, str, bool], int] = {}
    if out.exists():
        for line in out.read_text().splitlines():
            if line:
                r = json.loads(line)
                key = (r["plan"], r["tree"], r["monitors"])
                counts[key] = counts.get(key, 0) + 1
    return counts


def past(until: str) -> bool:
    """Whether the UTC clock is past --until (HH:MM; empty: never)."""
    if not until:
        return False
    now = time.gmtime()
    return (now.tm_hour, now.tm_min) >= tuple(int(x) for x in until.split(":"))


def batch_of(path: Path, tree: str, label: str, store: Path, monitors: str, batch: int) -> str:
    """B A/A runs of one configuration in a process of their own, their JSON lines."""
    env = os.environ | {"PYTHONPATH": tree, "FAIRMARK_STORE": f"sqlite:///{store}"}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(path), str(batch), monitors, label],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"{path.name} at {tree}, monitors {monitors}: {done.stderr[-2000:]}")
    return done.stdout


def main() -> None:
    if sys.argv[1:2] == ["--summarize"]:
        files = [f for f in sys.argv[2:] if f != "--markdown"]
        rows = [json.loads(line) for f in files for line in Path(f).read_text().splitlines() if line]
        summarize(rows, markdown="--markdown" in sys.argv)
        return
    a = args(sys.argv[1:])
    runs, batch = int(a["--runs"]), int(a["--batch"])
    trees = [str(Path(t).resolve()) for t in a["--trees"].split(",")]
    out = Path(a["--out"])
    labels = [tree_label(t) for t in trees]
    with tempfile.TemporaryDirectory(prefix="aa-rate-") as tmp:
        for _ in range(math.ceil(runs / batch)):
            for name in a["--plans"].split(","):
                for i, tree in enumerate(trees):
                    for monitors in a["--monitors"].split(","):
                        key = (PLANS[name].name, labels[i], monitors == "on")
                        if past(a["--until"]) or done_counts(out).get(key, 0) >= runs:
                            continue
                        lines = batch_of(
                            PLANS[name], tree, labels[i], Path(tmp) / f"tree{i}.db", monitors, batch
                        )
                        with out.open("a") as fh:
                            fh.write(lines)
    summarize([json.loads(line) for line in out.read_text().splitlines() if line])


if __name__ == "__main__":
    main()
