"""`--wait-lock DURATION` (issue 31 item 2): a run that finds this machine's lock held waits for it, says once who
holds it (PID, plan, run id — the lock file names the run that holds it), and runs when it is free; or gives up with
exit 3 once DURATION has passed. The lock is held here by this test process (HostLock, as a run holds it), the
runs are real `fairmark` processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fairmark.cli._lockwait import parse_duration, runs_here
from fairmark.run.guard.lock import HostLock
from helpers import wait_until

PLAN = """
[run]
warmup = 0
min_trials = 3
max_trials = 3

[[workload]]
name = "nap"
command = ["sleep", "0.3"]
metrics = [{ name = "wall_s" }]

[[variant]]
name = "a"

[[variant]]
name = "b"
"""


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fairmark", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"NO_COLOR": "1"},
    )


def read_until(proc: subprocess.Popen[str], text: str, *, timeout_s: float) -> str:
    """What `proc` wrote on stderr up to the first line holding `text` (or all it wrote within the timeout)."""
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if text in line:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout_s)
    return "".join(lines)


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    return path


@pytest.mark.slow
def test_a_run_waits_for_the_lock_says_once_who_holds_it_then_runs(plan: Path) -> None:
    lock = HostLock({"plan": "other.toml", "run_id": "r-1"}).__enter__()
    try:
        proc = start("run", str(plan), "--accept-risk", "--no-monitors", "--wait-lock", "10m", "--json")
        # Until it has looked and said so (a fixed 3 s was too short for a start at load 20: it found the lock
        # already free), then it waits, far from its 10 minutes.
        before = read_until(proc, "host lock is held by", timeout_s=240)
        assert proc.poll() is None, before
    finally:
        lock.__exit__(None, None, None)
    out, err = proc.communicate(timeout=300)
    err = before + err
    assert proc.returncode == 0, err[-3000:]
    said = [line for line in err.splitlines() if "host lock is held by" in line]
    assert said == [
        f"fairmark: the host lock is held by PID {os.getpid()}, plan other.toml, run r-1, for "
        + said[0].split(", for ", 1)[1]
    ], err
    assert said[0].endswith("; waiting up to 10 min for it")
    assert json.loads(out)["run"]["status"] == "done"


@pytest.mark.slow
def test_a_run_gives_up_with_exit_3_after_the_duration(plan: Path) -> None:
    with HostLock({"plan": "other.toml", "run_id": "r-1"}):
        t0 = time.monotonic()
        proc = start("run", str(plan), "--accept-risk", "--no-monitors", "--wait-lock", "2s")
        _, err = proc.communicate(timeout=120)
        waited = time.monotonic() - t0
    assert proc.returncode == 3, err
    assert waited >= 2.0
    assert err.count("host lock is held by") == 1  # said once, while waiting
    assert f"another fairmark run holds the host lock: PID {os.getpid()}, plan other.toml, run r-1" in err
    assert "waited 2 s" in err


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ["calibrate", "{plan}", "--runs", "2", "--wait-lock", "1s"],
        [
            "bisect",
            "--good",
            "HEAD~1",
            "--bad",
            "HEAD",
            "--plan",
            "{plan}",
            "--build",
            "true",
            "--wait-lock",
            "1s",
        ],
        [
            "ab",
            "--base",
            "HEAD~1",
            "--head",
            "HEAD",
            "--plan",
            "{plan}",
            "--build",
            "true",
            "--wait-lock",
            "1s",
        ],
    ],
)
def test_every_measuring_command_waits_and_gives_up_alike(plan: Path, command: list[str]) -> None:
    with HostLock({"plan": "other.toml", "run_id": "r-1"}):
        proc = start(*(a.format(plan=plan) for a in command))
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    assert err.count("host lock is held by") == 1 and "waited 1 s" in err


REFUSAL_PROBE = """
import sys
from fairmark.cli.main import main
code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"numpy", "scipy", "pydantic", "sqlalchemy"})
print(code, " ".join(heavy) or "-", file=sys.stderr)
"""


@pytest.mark.parametrize(
    "command",
    [
        ["run", "{plan}", "--accept-risk"],
        ["calibrate", "{plan}", "--runs", "2"],
        ["ab", "--base", "HEAD~1", "--head", "HEAD", "--plan", "{plan}", "--build", "true"],
        ["bisect", "--good", "HEAD~1", "--bad", "HEAD", "--plan", "{plan}", "--build", "true"],
    ],
)
def test_a_refusal_comes_before_the_heavy_imports(plan: Path, command: list[str]) -> None:
    """The look at the lock comes first: a refused command has loaded none of the libraries a run needs (their
    CPU, 1.3 s at load 18, is what bench/lock_refusal.py measured a refusal paying before); rich, which prints
    the error, is the one library it loads."""
    with HostLock({"plan": "other.toml", "run_id": "r-1"}):
        res = subprocess.run(
            [sys.executable, "-c", REFUSAL_PROBE, *(a.format(plan=plan) for a in command)],
            capture_output=True,
            text=True,
            env=os.environ | {"NO_COLOR": "1"},
            timeout=120,
        )
    assert res.stderr.strip().splitlines()[-1] == "3 -", res.stderr[-2000:]


def test_without_wait_a_run_is_refused_at_once_naming_the_holder(plan: Path, fairmark_cli) -> None:
    with HostLock({"plan": "other.toml", "run_id": "r-1"}):
        code, _, err = fairmark_cli("run", str(plan), "--accept-risk")
    assert code == 3 and "PID" in err and "other.toml" in err and "run r-1" in err
    assert "held by" not in err  # nothing waited


@pytest.mark.slow
def test_the_lock_file_names_the_run_that_holds_it(plan: Path) -> None:
    proc = start("run", str(plan), "--accept-risk", "--no-monitors", "--json")
    lock = Path(os.environ["FAIRMARK_LOCK_PATH"])

    def held() -> dict:
        try:
            return json.loads(lock.read_text() or "{}")
        except (OSError, ValueError):
            return {}

    assert wait_until(lambda: bool(held().get("run_id")), timeout_s=120), proc.stderr
    during = held()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    assert during["run_id"] == json.loads(out)["run"]["id"] and during["plan"] == str(plan)
    assert during["pid"] == proc.pid


def test_durations() -> None:
    assert [parse_duration(t) for t in ("90", "90s", "10m", "1.5h", "1h30m", "2d")] == [
        90,
        90,
        600,
        5400,
        5400,
        172800,
    ]
    for bad in ("", "ten minutes", "5x", "-3s"):
        with pytest.raises(ValueError, match="duration"):
            parse_duration(bad)


def test_a_plan_whose_every_variant_runs_on_a_host_does_not_look_at_this_machines_lock(
    tmp_path: Path,
) -> None:
    remote = tmp_path / "remote.toml"
    remote.write_text(
        '[hosts.b]\nssh = "root@b"\n[[workload]]\nname = "w"\ncommand = ["true"]\n'
        '[[variant]]\nname = "v"\nhost = "b"\n'
    )
    assert not runs_here(str(remote))
    local = tmp_path / "local.toml"
    local.write_text(remote.read_text() + '[[variant]]\nname = "here"\n')
    assert runs_here(str(local))
    assert runs_here(str(tmp_path / "nothing.toml")) is False  # the loader says what is wrong with it
