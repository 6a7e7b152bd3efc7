"""A run's trials start through one launch server (issue 24 item 3): the same server for every trial, each
trial with exactly its environment, nothing of it left after the run; an interrupted trial's group is killed
and the next trial gets a new server, as does one after the server was killed."""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
import uuid
from pathlib import Path

import psutil
import pytest

from fairmark.plan.load import LoadedPlan, parse_plan
from fairmark.run.launch import launch_server
from fairmark.run.launch.executor import execute
from fairmark.run.launch.launch_server import serving
from fairmark.run.loop.runner import Runner, RunOptions
from fairmark.run.spec import TAIL_BYTES
from fairmark.store.db import Store
from helpers import wait_until

pytestmark = pytest.mark.skipif(launch_server.server_path() is None, reason="no C compiler builds the server")
STARTER = "echo $PPID"  # what started the command


def _children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]


def _anywhere(marker: str) -> list[int]:
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        if p.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(p.info["cmdline"] or ()):
            found.append(p.pid)
    return found


def test_a_runs_trials_start_through_one_server_with_their_own_environment(tmp_path: Path) -> None:
    command = json.dumps(["sh", "-c", f"echo $({STARTER}) $FOO"])  # JSON strings are TOML strings
    text = (
        "[run]\nwarmup = 1\nmin_trials = 6\nmax_trials = 6\nseed = 3\n"
        f"[[workload]]\nname = 'w'\ncommand = {command}\n"
        "[[variant]]\nname = 'A'\nenv = { FOO = 'a' }\n[[variant]]\nname = 'B'\nenv = { FOO = 'b' }\n"
    )
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    run_id = Runner(LoadedPlan(parse_plan(text), "plan.toml", text), store, RunOptions(probe=False)).start()
    variant = {c.id: c.variant for c in store.cells(run_id)}
    trials = store.trials(run_id)
    assert len(trials) == 14 and all(t.status == "ok" for t in trials)
    # the rounds interleave A and B: each trial sees its own variant's environment, not the last one sent
    assert [t.stdout_tail.split()[1] for t in trials] == [variant[t.cell_id].lower() for t in trials]
    servers = {t.stdout_tail.split()[0] for t in trials}
    assert len(servers) == 1 and servers != {str(os.getpid())}, servers
    assert _children() == []  # the server ended with the workload's rounds


def test_an_interrupted_trial_is_killed_and_the_next_trial_gets_a_new_server(tmp_path: Path) -> None:
    marker = f"fmint{uuid.uuid4().hex[:8]}"
    with serving():
        first = execute(["sh", "-c", STARTER], out_dir=tmp_path, name="first")
        server = Path(first.stdout_path).read_text().strip()

        def interrupt() -> None:
            wait_until(lambda: any(marker in " ".join(p.cmdline()) for p in _children()))
            os.kill(os.getpid(), signal.SIGINT)

        thread = threading.Thread(target=interrupt)
        thread.start()
        with pytest.raises(KeyboardInterrupt):
            execute(["sh", "-c", f"sleep 300; : {marker}"], out_dir=tmp_path, name="long", grace_s=0.5)
        thread.join()
        assert wait_until(lambda: not any(marker in " ".join(p.cmdline()) for p in _children()))
        again = execute(["sh", "-c", STARTER], out_dir=tmp_path, name="again")
        assert again.status == "ok" and Path(again.stdout_path).read_text().strip() not in ("", server)
    assert _children() == []


def test_an_interrupt_right_after_the_request_left_still_kills_the_trial(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C between the server taking the request and fairmark learning it was sent (a signal handler runs
    at the next bytecode after sendmsg returns; seen in a fresh-clone suite under load): the trial still goes."""
    marker = f"fmrace{uuid.uuid4().hex[:8]}"
    real_start = launch_server.LaunchServer.start

    def start_then_interrupted(
        self, *args, **kwargs
    ):  # the request left; the interrupt comes before `return`
        assert real_start(self, *args, **kwargs)
        raise KeyboardInterrupt

    with serving():
        monkeypatch.setattr(launch_server.LaunchServer, "start", start_then_interrupted)
        with pytest.raises(KeyboardInterrupt):
            execute(["sh", "-c", f"sleep 300; : {marker}"], out_dir=tmp_path, name="long", grace_s=0.5)
        monkeypatch.undo()
        assert wait_until(lambda: _anywhere(marker) == []), _anywhere(marker)  # an orphan is no child of ours
        again = execute(["sh", "-c", STARTER], out_dir=tmp_path, name="again")
        assert again.status == "ok"
    assert _children() == []


def test_a_server_killed_between_trials_is_replaced(tmp_path: Path) -> None:
    with serving():
        first = execute(["sh", "-c", STARTER], out_dir=tmp_path, name="first")
        server = int(Path(first.stdout_path).read_text())
        os.kill(server, signal.SIGKILL)
        assert wait_until(lambda: psutil.Process(server).status() == psutil.STATUS_ZOMBIE)
        again = execute(["sh", "-c", STARTER], out_dir=tmp_path, name="again")
        assert again.status == "ok", again.error
        assert int(Path(again.stdout_path).read_text()) != server
    assert _children() == []


def test_a_request_too_large_for_the_server_starts_as_without_it(tmp_path: Path) -> None:
    """An environment of more than the server's buffer (2 MiB) goes the Popen way: the same outcome either way
    (here the kernel's E2BIG: more than an exec takes)."""
    env = {f"V{i}": "x" * 100_000 for i in range(22)} | {"PATH": os.environ["PATH"]}
    alone = execute(["true"], env=env, out_dir=tmp_path, name="alone")
    with serving():
        served = execute(["true"], env=env, out_dir=tmp_path, name="served")
    assert (served.status, served.error) == (alone.status, alone.error) == ("failed", served.error)
    assert "cannot start" in (served.error or ""), served.error


def test_a_runs_trials_keep_their_output_tails_and_a_failed_trial_its_raw_output(tmp_path: Path) -> None:
    """The tails are read from the descriptors the trial wrote through (launch server): an ok trial keeps the
    last TAIL_BYTES of each stream, a failed one up to RAW_BYTES; a stream the command left empty is ""."""
    script = "yes o | head -c 20000; yes e | head -c 12000 >&2; exit $CODE"  # (lines: the scrub is slow on one word)
    text = (
        "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\nseed = 3\n"
        f"[[workload]]\nname = 'w'\ncommand = {json.dumps(['sh', '-c', script])}\n"
        "[[workload]]\nname = 'quiet'\ncommand = ['true']\n"
        "[[variant]]\nname = 'ok'\nenv = { CODE = '0' }\n[[variant]]\nname = 'bad'\nenv = { CODE = '1' }\n"
    )
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    run_id = Runner(LoadedPlan(parse_plan(text), "plan.toml", text), store, RunOptions(probe=False)).start()
    cells = {c.id: (c.workload, c.variant) for c in store.cells(run_id)}
    trials = store.trials(run_id)
    assert len(trials) == 12
    for t in trials:
        workload, variant = cells[t.cell_id]
        if workload == "quiet":
            assert (t.status, t.stdout_tail, t.stderr_tail) == ("ok", "", "")
        elif variant == "ok":
            assert t.status == "ok"
            assert (t.stdout_tail, t.stderr_tail) == ("o\n" * (TAIL_BYTES // 2), "e\n" * (TAIL_BYTES // 2))
        else:
            assert t.status == "failed" and (t.stdout_tail, t.stderr_tail) == ("o\n" * 10000, "e\n" * 6000)


def _cpus(text: str) -> set[int]:
    """A kernel CPU list ("0-1,3") as a set."""
    out: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        out |= set(range(int(low), int(high or low) + 1))
    return out


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to draw")
def test_a_trial_starts_on_a_cpu_drawn_for_it_and_its_command_keeps_every_cpu(tmp_path: Path) -> None:
    """Issue 39: on an idle machine the CPU a trial's command started on alternated with the trial's number (the
    server woken where the last command ended, the new one placed on the other CPU), tying a round's first and
    second trials to two CPUs. The server now vforks each trial on a CPU drawn for it: during the trial it is
    pinned there (its /proc status, read by the command), the draws of 60 trials are neither constant nor an
    alternation (at random, fewer than 10 or more than 49 changes of 59 come about once in 10^8), and the
    command may run on every CPU this process may (it is not pinned)."""
    # the command's allowed CPUs and its parent's (the server's), as the kernel lists them
    script = "grep Cpus_allowed_list /proc/$$/status /proc/$PPID/status | cut -f2"
    drawn, allowed = [], set()
    mine = frozenset(os.sched_getaffinity(0))
    with serving():
        for i in range(60):
            done = execute(["sh", "-c", script], out_dir=tmp_path, name=f"t{i}")
            assert done.status == "ok", done.error
            command, server = Path(done.stdout_path).read_text().split()
            allowed.add(frozenset(_cpus(command)))
            drawn.append(_cpus(server))
    assert allowed == {mine}
    assert all(len(d) == 1 and d <= mine for d in drawn), drawn
    changes = sum(a != b for a, b in itertools.pairwise(drawn))
    assert 10 <= changes <= 49, drawn
