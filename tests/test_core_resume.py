"""kill -9 in the middle of a 30-trial run: every finished trial is in the store; resume completes the run.

The kill comes while the 9th trial runs, whatever the machine's speed: that trial waits for the test to let it go
on (a `hold` file), so exactly 8 trials are stored when fairmark is killed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, fairmark_subprocess, wait_until

PLAN = """
[run]
warmup = 0
min_trials = 15
max_trials = 15
seed = 11

[[workload]]
name = "nap"
shell = true
command = 'n=$(ls $GATE/started | wc -l); touch $GATE/started/$n; [ $n -lt 8 ] || while [ -e $GATE/hold ] && kill -0 $PPID; do sleep 0.05; done; sleep 0.15; echo ok'

[[variant]]
name = "A"

[[variant]]
name = "B"
"""


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=30) as c:
            return c.execute("select count(*) from trials").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_kill_9_then_show_then_resume(tmp_path: Path) -> None:
    plan = tmp_path / "thirty.toml"
    plan.write_text(PLAN)
    db = Path(os.environ["FAIRMARK_STORE"].removeprefix("sqlite:///"))
    tmp = tmp_path / "tmp"  # the run's scratch apart from every other fairmark's
    tmp.mkdir()
    gate = tmp_path / "gate"
    (gate / "started").mkdir(parents=True)
    (gate / "hold").touch()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fairmark", "run", str(plan), "--no-monitors", "--accept-risk"],
        env=os.environ | {"TMPDIR": str(tmp), "GATE": str(gate)},
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    ninth = gate / "started" / "8"
    wait_until(lambda: (_count(db) == 8 and ninth.exists()) or proc.poll() is not None, timeout_s=300)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    stored = _count(db)
    assert stored == 8  # the 9th trial was running: it waits for the hold file to go
    (gate / "hold").unlink()

    shown = fairmark_subprocess("show", "last", "--json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["run"]["status"] == "running"  # it never got to say anything else
    listed = sum(len(c["trials"]) for c in doc["cells"])
    assert listed == _count(db) >= stored

    assert list(tmp.glob("fairmark-scratch-nap-*"))  # left by the killed run
    res = fairmark_subprocess(
        "resume", doc["run"]["id"][:8], "--json", "--no-monitors", env={"TMPDIR": str(tmp), "GATE": str(gate)}
    )
    assert res.returncode == 0, res.stderr
    done = json.loads(res.stdout)
    assert done["run"]["status"] == "done"
    for cell in done["cells"]:
        assert cell["n_ok"] == 15
        seqs = [t["seq"] for t in cell["trials"]]
        assert len(seqs) == len(set(seqs)) == 15  # nothing lost, nothing duplicated
    all_seqs = sorted(t["seq"] for c in done["cells"] for t in c["trials"])
    assert all_seqs == list(range(1, 31))
    # The scratch directory the killed process left behind (in its own TMPDIR) is gone after the resume.
    assert not list(tmp.glob("fairmark-scratch-*"))


INTERRUPTING = """
[run]
warmup = 0
min_trials = 4
max_trials = 4
seed = 3

[[workload]]
name = "tick"
# The fourth trial interrupts fairmark (Ctrl-C, as a user would): three trials are stored, the fourth is not.
command = ["python3", "-c", '''
import os, pathlib, signal
p = pathlib.Path("{count}")
n = int(p.read_text()) + 1 if p.exists() else 1
p.write_text(str(n))
pid = os.getppid()  # fairmark (python -m fairmark), or the launcher it starts trials through
while b"-m\\0fairmark" not in pathlib.Path(f"/proc/{pid}/cmdline").read_bytes():
    pid = int(pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
if n == 4:
    os.kill(pid, signal.SIGINT)
''']

[[variant]]
name = "A"

[[variant]]
name = "B"
"""


def _counters(out: str) -> list[int]:
    """The counters of the per-trial lines (not a terminal: '[   4] cell …'). A line per trial at most every
    PLAIN_EVERY_S: trials quicker than that have some of their lines held back, and which ones depends on the
    machine's speed — but the first trial of a run (or a resume) is always shown, and so is the last before the
    end, so the first and the last counter are the test's."""
    counters = [int(line[1 : line.index("]")]) for line in out.splitlines() if line.startswith("[")]
    assert counters == sorted(set(counters)), out  # each shown once, in order
    return counters


@pytest.mark.slow
def test_resume_counts_on_from_the_trials_already_stored(tmp_path: Path) -> None:
    """The per-trial lines of a resumed run go on from the trials the store already has ([4] after three),
    not from [1] again: the counter is the trial's number in the run."""
    plan = tmp_path / "tick.toml"
    plan.write_text(INTERRUPTING.replace("{count}", str(tmp_path / "count")))
    first = fairmark_subprocess("run", str(plan), "--no-monitors", "--accept-risk")
    assert first.returncode != 0, first.stderr  # interrupted
    shown_first = _counters(first.stderr)
    assert (shown_first[0], shown_first[-1]) == (1, 3), first.stderr
    shown = json.loads(fairmark_subprocess("show", "last", "--json").stdout)
    assert shown["run"]["status"] == "interrupted"
    res = fairmark_subprocess("resume", shown["run"]["id"][:8], "--no-monitors")
    assert res.returncode == 0, res.stderr
    resumed = _counters(res.stderr)
    assert (resumed[0], resumed[-1]) == (4, 8), res.stderr
