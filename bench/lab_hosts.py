"""A lab of hosts (issue 26 item 2): `fairmark run PLAN --hosts` over N network-namespace hosts (default 50), each
with its own real OpenSSH sshd (tests/nethosts.py; needs root), from one controller, into one PostgreSQL store.

What it does, in one run on this machine:
  1. makes N namespace hosts and a PostgreSQL server on loopback (the test suite's PostgresServer);
  2. runs a short plan on every host at once with `fairmark run PLAN --hosts h00,…` (a command workload
     `sleep 0.05`, two variants, a few trials per cell), under /usr/bin/time and reaped with wait4: the rusage
     covers the controller and every process it waited for (the per-host controllers it forks, their ssh
     clients); /usr/bin/time's own report is the cross-check. The agents and trials run on the hosts (their
     sshd's sessions), not in the controller's tree, as on a real lab;
  3. watches the store and, once the victim host's run has stored its first trial, kills that host's sshd and
     every session it serves (the host drops off the network as far as SSH goes);
  4. restarts the victim's sshd after the fleet ended and runs `fairmark resume RUN` of its run.

Printed: the wall time of the fleet, the controller's CPU (user + system seconds from wait4's rusage, as cores on
average = CPU seconds / wall seconds, and per host), the runs done / interrupted, the victim's run (status, its
failed trial's error) and the resume's outcome, the most PostgreSQL sessions seen at once, and the load average.
Nothing is asserted about speed: the machine is shared, and on a busy one the wall time stretches (the CPU
seconds are the figure that carries over).

Everything it made is removed at the end, also after a failure, Ctrl-C or SIGTERM (namespaces, bridge, sshds,
agents, the PostgreSQL server and its directory).

Run: .venv/bin/python bench/lab_hosts.py [--hosts 50] [--trials 5] [--jobs N]
     (docs/performance.md, "A lab of 50 hosts", quotes its output)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import nethosts
from fairmark.run.workloads.servers import PG_BIN, PostgresServer
from fairmark.store.db import Store

VICTIM_INDEX = 7  # which host loses its sshd (not one of the first few the fleet starts)
DB = "fairmark_lab"


@contextlib.contextmanager
def postgres_store(n_hosts: int) -> Iterator[str]:
    """A PostgreSQL server on loopback with a database for the lab; its URL."""
    base = Path(tempfile.mkdtemp(prefix="fairmark-lab-pg-"))
    # room for a few sessions per host (the default 100 is about what 50 hosts use at once: see the output)
    server = PostgresServer(base / "pg", fsync=False, settings={"max_connections": str(4 * n_hosts + 20)})
    try:
        server.start()
        server.psql(f"CREATE DATABASE {DB}")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{server.port}/{DB}"
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def plan_text(net: nethosts.NetHosts, trials: int) -> str:
    return (
        'title = "lab of hosts"\n'
        f"[run]\nwarmup = 0\nmin_trials = {trials}\nmax_trials = {trials}\ntarget_ci_pct = 50\n"
        '[[workload]]\nname = "nap"\ncommand = ["sleep", "0.05"]\n'
        '[[variant]]\nname = "a"\n'
        '[[variant]]\nname = "b"\nenv = { LAB_VARIANT = "b" }\n' + net.hosts_toml()
    )


class Watcher(threading.Thread):
    """Polls the store: once the victim's run has stored a trial, kills the victim's sshd. Meanwhile it notes the
    PostgreSQL sessions open at once and the load average."""

    def __init__(self, url: str, net: nethosts.NetHosts, victim: str):
        super().__init__(daemon=True)
        self.url, self.net, self.victim, self.t0 = url, net, victim, time.monotonic()
        self.killed_at_s: float | None = None
        self.stored_before_kill = 0
        self.max_sessions = 0
        self.loads: list[float] = []
        self.done = threading.Event()

    def run(self) -> None:
        import sqlalchemy as sa

        store = Store.open(self.url)
        count = sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = :db")
        try:
            while not self.done.is_set():
                with store.engine.connect() as conn:
                    self.max_sessions = max(
                        self.max_sessions, int(conn.execute(count, {"db": DB}).scalar_one())
                    )
                self.loads.append(os.getloadavg()[0])
                if self.killed_at_s is None:
                    runs = store.list_runs(host=self.victim)
                    if runs and runs[0]["trials"] >= 1:
                        self.stored_before_kill = runs[0]["trials"]
                        self.net.stop_sshd(self.victim)
                        self.killed_at_s = time.monotonic() - self.t0
                self.done.wait(0.2)
        finally:
            store.engine.dispose()


@dataclass
class Timed:
    code: int
    wall_s: float
    user_s: float
    sys_s: float
    time_report: str  # /usr/bin/time's own line, or ""

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s


def fairmark(*args: str, log: Path) -> Timed:
    """`python -m fairmark ARGS` (under /usr/bin/time where there is one), reaped by wait4."""
    timer = (
        ["/usr/bin/time", "-f", "TIME user %U s system %S s elapsed %e s"]
        if Path("/usr/bin/time").exists()
        else []
    )
    with open(log, "wb") as out:
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [*timer, sys.executable, "-m", "fairmark", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a group of its own: stop_group() ends it on Ctrl-C or SIGTERM here
        )
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        except BaseException:
            stop_group(proc.pid)
            raise
        wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    found = re.findall(r"^TIME (.*)$", log.read_text(errors="replace"), re.M)
    return Timed(proc.returncode, wall, ru.ru_utime, ru.ru_stime, found[-1] if found else "")


def stop_group(pgid: int) -> None:
    """SIGTERM to the command's process group (fairmark unwinds: its runs stored as interrupted, its hosts'
    sessions ended), waited for until the group is empty, SIGKILL after 60 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pgid, os.WNOHANG)  # /usr/bin/time, our child: a zombie would keep the group alive
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def lab(args: argparse.Namespace, tmp: Path) -> None:
    names = [f"h{i:02d}" for i in range(args.hosts)]
    victim = names[min(VICTIM_INDEX, len(names) - 1)]
    print(f"load average before: {load()} ({os.cpu_count()} CPUs)", flush=True)
    t_setup = time.monotonic()
    with postgres_store(args.hosts) as url, nethosts.NetHosts(names) as net:
        up = time.monotonic() - t_setup
        print(
            f"{args.hosts} namespace hosts (OpenSSH sshd each) and a PostgreSQL store up in {up:.1f} s",
            flush=True,
        )
        plan = tmp / "lab.toml"
        plan.write_text(plan_text(net, args.trials))
        argv = ["run", str(plan), "--hosts", ",".join(names), "--store", url, "--accept-risk"]
        argv += ["--jobs", str(args.jobs)] if args.jobs else []
        watcher = Watcher(url, net, victim)
        watcher.start()
        try:
            timed = fairmark(*argv, log=tmp / "fleet.log")
        finally:
            watcher.done.set()
            watcher.join()
        report_fleet(args, url, names, victim, watcher, timed, tmp / "fleet.log")
        net.start_sshd(victim)
        resume(url, victim, tmp)
    print(f"load average after: {load()}")


def report_fleet(
    args: argparse.Namespace, url: str, names: list[str], victim: str, watcher: Watcher, t: Timed, log: Path
) -> None:
    store = Store.open(url)
    runs = store.list_runs(limit=10 * len(names))
    cells = 2
    jobs = f", --jobs {args.jobs}" if args.jobs else ", all at once"
    print(
        f"fleet: `fairmark run PLAN --hosts` over {len(names)} hosts{jobs}; {cells} cells x {args.trials} trials"
    )
    print(f"  exit {t.code}; wall {t.wall_s:.1f} s")
    print(
        f"  controller CPU (wait4 rusage): user {t.user_s:.1f} s + system {t.sys_s:.1f} s = {t.cpu_s:.1f} s "
        f"= {t.cpu_s / t.wall_s:.2f} cores on average, {t.cpu_s / len(names):.2f} s per host"
    )
    if t.time_report:
        print(f"  /usr/bin/time: {t.time_report}")
    if watcher.loads:
        avg = sum(watcher.loads) / len(watcher.loads)
        print(f"  load average (1 min) during the run: mean {avg:.1f}, max {max(watcher.loads):.1f}")
    print(f"  PostgreSQL sessions open at once: at most {watcher.max_sessions}")
    status: dict[str, int] = {}
    for r in runs:
        status[r["status"]] = status.get(r["status"], 0) + 1
    print(f"  runs stored: {len(runs)} ({', '.join(f'{k} {v}' for k, v in sorted(status.items()))})")
    complete = [
        r for r in runs if r["status"] == "done" and r["trials_ok"] == r["trials"] >= cells * args.trials
    ]
    others = [r for r in runs if victim not in r["hosts"]]
    print(
        f"  complete (done, every trial ok): {len(complete)} of the {len(others)} hosts other than {victim}"
    )
    for r in others:
        if r not in complete:
            print(f"  NOT COMPLETE: {r['hosts']} {r['status']}, trials ok {r['trials_ok']} of {r['trials']}")
    if watcher.killed_at_s is None:
        print(f"  victim {victim}: its sshd was never killed (no trial of it stored while the fleet ran)")
    else:
        print(
            f"  victim {victim}: sshd killed at {watcher.killed_at_s:.1f} s, its run had {watcher.stored_before_kill} trial(s) stored"
        )
    for r in runs:
        if victim in r["hosts"]:
            failed = [tr.error for tr in store.trials(r["id"]) if tr.status != "ok"]
            print(f"  victim's run {r['id'][:8]}: {r['status']}, trials ok {r['trials_ok']} of {r['trials']}")
            for error in failed:
                print(f"    failed trial: {error}")
    tail = [line for line in log.read_text(errors="replace").splitlines() if "fleet run:" in line]
    print(f"  fleet's verdict: {tail[-1].strip() if tail else '(none)'}")
    store.engine.dispose()


def resume(url: str, victim: str, tmp: Path) -> None:
    store = Store.open(url)
    mine = store.list_runs(host=victim)
    if not mine:
        return
    run_id = mine[0]["id"]
    t = fairmark("resume", run_id, "--store", url, log=tmp / "resume.log")
    after = store.list_runs(host=victim)[0]
    print(
        f"resume of {run_id[:8]} after its sshd restarted: exit {t.code}, {after['status']}, trials ok "
        f"{after['trials_ok']} of {after['trials']}, wall {t.wall_s:.1f} s, CPU {t.cpu_s:.1f} s"
    )
    keys = {c.id: c.key for c in store.cells(run_id)}
    per_cell: dict[str, list[str]] = {}
    for tr in sorted(store.trials(run_id), key=lambda tr: tr.seq):
        per_cell.setdefault(keys[tr.cell_id], []).append(f"{tr.round}:{tr.status}")
    for key, trials in per_cell.items():
        print(f"  {key}: round:status {' '.join(trials)}")
    store.engine.dispose()


def _terminate(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # unwinds like Ctrl-C: every `with` closes what it made


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--trials", type=int, default=5, help="trials per cell (2 cells per host)")
    parser.add_argument("--jobs", type=int, default=0, help="hosts run at once (default: all)")
    args = parser.parse_args()
    why = nethosts.available() or (None if (PG_BIN / "initdb").exists() else f"no PostgreSQL at {PG_BIN}")
    if why:
        print(f"skipped: {why}")
        return
    signal.signal(signal.SIGTERM, _terminate)
    try:
        with tempfile.TemporaryDirectory(prefix="fairmark-lab-") as tmp:
            lab(args, Path(tmp))
    except KeyboardInterrupt:
        print("interrupted: the hosts, the store and the fleet are gone")
        sys.exit(130)


if __name__ == "__main__":
    main()
