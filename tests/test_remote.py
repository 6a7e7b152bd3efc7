"""Hosts over SSH: real sshd in network namespaces made here (tests/nethosts.py), fairmark's agent at the other end.

Costs ~1 s of set-up per module (namespaces, keys, sshd) plus the runs below."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import nethosts
from fairmark.remote.connection import AgentError, ConnectionLost, HostConnection, HostSpec
from helpers import PYTHON_TOML, draw_workload, fairmark_subprocess
from test_core_store import postgres_url  # noqa: F401 - a real PostgreSQL on loopback (fixture)

pytestmark = pytest.mark.skipif(nethosts.available() is not None, reason=str(nethosts.available()))
SYSCTL = "net.ipv4.tcp_slow_start_after_idle"  # per network namespace: each test host has its own


@pytest.fixture(scope="module")
def net() -> Iterator[nethosts.NetHosts]:
    with nethosts.NetHosts(["h1", "h2"]) as hosts:
        yield hosts


def spec(net: nethosts.NetHosts, name: str) -> HostSpec:
    return HostSpec(name, ssh=name, ssh_options=("-F", str(net.ssh_config)))


def plan(tmp_path: Path, net: nethosts.NetHosts, body: str, name: str = "plan.toml", top: str = "") -> str:
    head = top + "[run]\nwarmup = 0\nmin_trials = 5\nmax_trials = 8\ntarget_ci_pct = 50\nmax_failures = 3\n"
    path = tmp_path / name
    path.write_text(head + body + net.hosts_toml())
    return str(path)


@pytest.mark.slow
def test_teardown_leaves_nothing() -> None:
    hosts = nethosts.NetHosts(["t1"])
    with hosts:
        assert subprocess.run([*hosts.ssh("t1"), "true"], check=False).returncode == 0
    assert hosts.leftovers() == []


@pytest.mark.slow
def test_a_failed_setup_leaves_the_other_test_hosts_alone() -> None:
    """A second NetHosts whose bridge cannot be made (here: the first's name, forced) fails with what `ip` said,
    and its teardown deletes nothing of the first's (it deleted the first's bridge under its running hosts)."""
    with nethosts.NetHosts(["t1"]) as first:
        with pytest.raises(RuntimeError, match="ip link add"), nethosts.NetHosts(["t2"], tag=first.tag):
            pass
        assert subprocess.run([*first.ssh("t1"), "true"], check=False).returncode == 0
        assert first.bridge in first.leftovers()
    assert first.leftovers() == []


@pytest.mark.slow
def test_agent_runs_a_trial_spec_with_local_semantics(net: nethosts.NetHosts, tmp_path: Path) -> None:
    from fairmark.remote import agent
    from fairmark.remote.executor import RemoteExecutor
    from fairmark.run.spec import SPEC_VERSION, TrialSpec

    assert agent.SPEC_VERSION == SPEC_VERSION  # the stdlib-only agent executes the seam's current spec
    with HostConnection(spec(net, "h1")) as host:
        assert host.hello["protocol"] == agent.PROTOCOL and host.hello["boot_id"]
        assert host.hello["fairmark"] is False  # the shipped stdlib-only copy, not the package
        run = RemoteExecutor(host)
        out = str(tmp_path)
        failed = run(TrialSpec(("sh", "-c", "echo out; echo err >&2; exit 3"), out, timeout_s=10))
        assert (failed.status, failed.exit_code, failed.error) == ("failed", 3, "exit status 3")
        assert (
            Path(failed.stdout_path).read_text() == "out\n"
            and Path(failed.stderr_path).read_text() == "err\n"
        )
        assert run.last_boot_id == host.hello["boot_id"]
        ok = run(TrialSpec(("python3", "-c", "x = bytearray(50 << 20)"), out))
        assert ok.status == "ok" and ok.max_rss_kib > 50 << 10 and ok.minor_faults > 0 and ok.wall_s > 0
        t = run(TrialSpec(("sh", "-c", "sleep 30 & sleep 30"), out, timeout_s=0.3, grace_s=0.3))
        assert t.status == "timeout" and "process group killed" in str(t.error)
        assert net.hosts["h1"].count("sleep 30") == 0  # nothing of the killed tree is left on the host
        with pytest.raises(AgentError, match="unknown op"):
            host.call("shell", cmd="id")
        with pytest.raises(AgentError, match="spec version"):
            host.call("exec", spec={"argv": ["true"], "out_dir": out, "version": SPEC_VERSION + 1})
        # only sshd listens in the host's namespace: the agent opens no port
        listen = net.hosts["h1"].exec("ss", "-Hltnup").stdout
        assert listen.count("LISTEN") == 1 and "sshd" in listen


def test_a_host_that_cannot_be_reached_is_a_clear_error(net: nethosts.NetHosts) -> None:
    bad = HostSpec("nope", ssh="nope", ssh_options=("-F", str(net.ssh_config), "-o", "ConnectTimeout=2"))
    before = _connection_dirs_of(os.getpid())  # this process's: other tests' come and go meanwhile
    with pytest.raises(ConnectionLost, match="cannot connect with `ssh nope`"), HostConnection(bad):
        pass
    assert _connection_dirs_of(os.getpid()) <= before  # its connection directory is gone too


def _connection_dirs_of(pid: int) -> set[Path]:
    return {d for d in Path("/tmp").glob("fm-ssh-*") if _read(d / "owner") == str(pid)}


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


@pytest.mark.slow
@pytest.mark.representative
def test_aa_over_two_hosts(tmp_path: Path, net: nethosts.NetHosts, fairmark_cli) -> None:
    # Both hosts' trials print seeded draws of one distribution (helpers.DRAW_PY): the verdict is fixed, where
    # the wall time of two namespaces of this shared VM is whatever the load makes it.
    body = (
        draw_workload(tmp_path, "spin")
        + '[[variant]]\nname = "a"\nhost = "h1"\nenv = { V = "a" }\n'
        + '[[variant]]\nname = "b"\nhost = "h2"\nenv = { V = "b" }\n'
    )
    path = Path(plan(tmp_path, net, body))
    code, out, err = fairmark_cli("run", str(path), "--json")
    assert code == 0, err
    report = json.loads(out)
    (verdict,) = [v for v in report["verdicts"] if v["metric"] == "value"]
    assert not verdict["significant"] and "no difference proven" in verdict["sentence"], verdict["sentence"]
    boot = net.hosts["h1"].exec("cat", "/proc/sys/kernel/random/boot_id").stdout.strip()
    trials = [t for c in report["cells"] for t in c["trials"]]
    assert {t["host"] for t in trials} == {"h1", "h2"} and {t["boot_id"] for t in trials} == {boot}
    # interleaved round by round: each round has one trial on each host, one round after the other
    by_seq = sorted(trials, key=lambda t: t["seq"])
    rounds = [t["round"] for t in by_seq]
    assert rounds == sorted(rounds) and all(
        {t["host"] for t in by_seq if t["round"] == r} == {"h1", "h2"} for r in set(rounds)
    )
    from fairmark.report.hosts import host_diff
    from fairmark.store.db import Store

    store = Store.open(os.environ["FAIRMARK_STORE"])
    diffs = host_diff(store, report["run"]["id"])
    assert diffs and {d["key"].split(".")[0] for d in diffs} == {"remote"}, diffs  # only host identity
    # each trial's monitor series was sampled by the agent on its host
    series = [a["data"] for a in store.artifacts(report["run"]["id"], kind="monitor")]
    assert len(series) == len(trials) and {s["host"] for s in series} == {"h1", "h2"}
    assert all(s["totals"]["wall_s"] > 0 and "user" in s["totals"]["cpu_pct"] for s in series)
    code, out, err = fairmark_cli("show", report["run"]["id"])  # the env diff is shown with the verdicts
    assert code == 0, err
    assert "no difference proven" in out and "hosts' environments (h1, h2)" in out and "remote.host" in out


@pytest.mark.slow
def test_a_hardware_difference_between_hosts_is_refused(
    tmp_path: Path, net, fairmark_cli, monkeypatch
) -> None:
    """Planted in h2's probe answer: another CPU model (hardware) and another kernel release (software)."""
    from fairmark.remote import hosts

    real = hosts.remote_snapshot

    def planted(conn, **kw):
        snap = real(conn, **kw)
        if conn.spec.name == "h2":
            snap["cpu"]["model"] = "Planted CPU 9000"
            snap["os"]["release"] = "9.9.9-planted"
        return snap

    monkeypatch.setattr(hosts, "remote_snapshot", planted)  # where the run's hosts take it from
    body = '[[workload]]\nname = "t"\ncommand = ["true"]\n[[variant]]\nname = "a"\nhost = "h1"\n'
    body += '[[variant]]\nname = "b"\nhost = "h2"\n'
    code, _, err = fairmark_cli("run", plan(tmp_path, net, body))
    assert code == 3 and "cpu_model" in err and "Planted CPU 9000" in err and "declare" in err
    # declaring the OS and kernel as the point does not excuse a hardware difference
    code, _, err = fairmark_cli(
        "run", plan(tmp_path, net, body, "p1.toml", top='declare = ["os", "kernel"]\n')
    )
    assert code == 3 and "Planted CPU 9000" in err and "['cpu_model']" in err, err
    # the hardware declared, the kernel not: the run goes on, with a warning naming the kernel difference
    code, out, err = fairmark_cli(
        "run", plan(tmp_path, net, body, "p2.toml", top='declare = ["cpu_model"]\n'), "--json"
    )
    assert code == 0, err
    (warned,) = [f for f in json.loads(out)["findings"] if f["finding_id"] == "hosts-differ"]
    assert (
        warned["severity"] == "warn" and "9.9.9-planted" in warned["evidence"] and "kernel" in warned["fix"]
    )
    # all declared: no warning, and the shown environment difference says it is the point
    top = 'declare = ["os", "kernel", "cpu_model"]\n'
    code, out, err = fairmark_cli("run", plan(tmp_path, net, body, "p3.toml", top=top), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert not [f for f in report["findings"] if f["finding_id"] == "hosts-differ"]
    release = [d for d in report["host_differences"] if d["key"] == "os.release"]
    assert release and release[0]["declared"] and release[0]["b"] == "9.9.9-planted"
    code, out, err = fairmark_cli("show", report["run"]["id"])
    assert code == 0 and "9.9.9-planted' (declared: the point of the comparison)" in out, err


@pytest.mark.slow
def test_doctor_judges_a_host_over_ssh(net: nethosts.NetHosts, fairmark_cli) -> None:
    code, out, err = fairmark_cli(
        "doctor", "--host", "h1", "--ssh-option=-F", f"--ssh-option={net.ssh_config}", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["host"] == "h1" and doc["os"]["kernel"] == "Linux" and doc["host_id"]


def _sysctl(net: nethosts.NetHosts, host: str) -> str:
    return net.hosts[host].exec("sysctl", "-n", SYSCTL).stdout.strip()


def _wait(predicate, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _start_sysctl_run(tmp_path: Path, net: nethosts.NetHosts, name: str) -> tuple[subprocess.Popen, str, str]:
    before = _sysctl(net, "h1")
    flipped = "0" if before == "1" else "1"
    body = (
        f'[[workload]]\nname = "wait"\ncommand = ["sleep", "30"]\n[[variant]]\nname = "a"\nhost = "h1"\n'
        f'sysctl = {{ "{SYSCTL}" = {flipped} }}\n[[variant]]\nname = "b"\nhost = "h1"\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "fairmark", "run", plan(tmp_path, net, body, name), "--accept-risk"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait(lambda: _sysctl(net, "h1") == flipped)
    return proc, before, flipped


@pytest.mark.slow
def test_kill_9_of_the_controller_leaves_no_sysctl_changed_on_the_host(tmp_path, net) -> None:
    from fairmark.remote.connection import sweep_stale_dirs

    proc, before, _ = _start_sysctl_run(tmp_path, net, "p1.toml")
    assert _sysctl(net, "h2") == before  # another host (namespace) is untouched
    kids = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(proc.pid)], capture_output=True, text=True
    ).stdout
    (master,) = [
        int(k) for k in kids.split() if b"ControlMaster=yes" in Path(f"/proc/{k}/cmdline").read_bytes()
    ]
    owned = [d for d in Path("/tmp").glob("fm-ssh-*") if (d / "owner").is_file()]
    (conn_dir,) = [d for d in owned if (d / "owner").read_text() == str(proc.pid)]
    proc.kill()
    proc.wait()
    _wait(lambda: _sysctl(net, "h1") == before, 30)  # the agent saw its input end and put the host back
    _wait(lambda: not Path(f"/proc/{master}").exists() or "Z" in Path(f"/proc/{master}/stat").read_text())
    assert str(conn_dir) in sweep_stale_dirs() and not conn_dir.exists()  # what the next contact does


@pytest.mark.slow
@pytest.mark.parametrize("command", ["doctor", "restore"])
def test_a_dead_agents_journal_is_undone_at_the_next_contact(tmp_path, net, command) -> None:
    """`doctor --host` undoes it as it looks; `restore --host` (issue 32: it said "nothing to restore" while the
    host kept its changes) does it on purpose and says so."""
    proc, before, flipped = _start_sysctl_run(tmp_path, net, f"p2-{command}.toml")
    try:
        journal = list((net.hosts["h1"].state_dir / "journal").glob("*.json"))
        assert len(journal) == 1 and json.loads(journal[0].read_text())["entries"][0]["original"] == before
        agent_pid = json.loads(journal[0].read_text())["pid"]
        # controller and agent both die (frozen first, so it cannot reconnect): only the journal is left
        proc.send_signal(signal.SIGSTOP)
        os.kill(agent_pid, signal.SIGKILL)
        proc.kill()
        proc.wait()
        _wait(lambda: not Path(f"/proc/{agent_pid}").exists())
        assert _sysctl(net, "h1") == flipped
    finally:
        if proc.poll() is None:
            proc.kill()
    res = fairmark_subprocess(command, "--host", "h1", "--ssh-option=-F", f"--ssh-option={net.ssh_config}")
    assert res.returncode == 0, res.stderr
    assert f"restored sysctl {SYSCTL} = {before}" in res.stdout + res.stderr
    assert _sysctl(net, "h1") == before  # 0 tunables left changed
    assert not list((net.hosts["h1"].state_dir / "journal").glob("*.json"))


@pytest.mark.slow
def test_connection_lost_mid_trial_fails_that_trial_and_the_run_goes_on(tmp_path, net) -> None:
    body = (
        '[[workload]]\nname = "nap"\ncommand = ["sleep", "0.7"]\n'
        '[[variant]]\nname = "a"\nhost = "h1"\n[[variant]]\nname = "b"\nhost = "h1"\n'
    )
    path = plan(tmp_path, net, body, top="[quick]\nmax_trials = 3\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fairmark", "run", path, "--quick", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait(lambda: net.hosts["h1"].count("sleep 0.7") > 0)
    for pid in net.hosts["h1"].sshd_children():  # the host's side of the SSH connection dies mid-trial
        os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    report = json.loads(out)
    trials = [t for c in report["cells"] for t in c["trials"]]
    lost = [t for t in trials if t["status"] == "failed"]
    assert len(lost) == 1 and "connection lost to host h1" in lost[0]["error"], lost
    assert report["run"]["status"] == "done" and all(c["n_ok"] >= 3 for c in report["cells"])
    assert net.hosts["h1"].count("sleep 0.7") == 0  # the lost trial's tree was killed


@pytest.mark.slow
def test_a_fleet_runs_concurrently_into_one_postgresql_store(tmp_path: Path, postgres_url: str) -> None:  # noqa: F811
    from fairmark.store.db import Store

    with nethosts.NetHosts(["f1", "f2", "f3"]) as fleet:
        # A barrier in the workload's setup: it passes only when all three hosts are in it at once, so the
        # runs must be concurrent (a sequential fleet would fail it after 120 s).
        barrier = tmp_path / "barrier"
        barrier.mkdir()
        setup = (
            f'touch {barrier}/$(echo $SSH_CONNECTION | cut -d" " -f3); i=0; '
            f"while [ $(ls {barrier} | wc -l) -lt 3 ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done; "
            f"[ $(ls {barrier} | wc -l) -eq 3 ]"
        )
        body = (
            f'[[workload]]\nname = "spin"\ncommand = [{PYTHON_TOML}, "-c", "sum(range(100000))"]\n'
            f"setup = '{setup}'\n"
            '[[variant]]\nname = "a"\n[[variant]]\nname = "b"\n'
        )
        path = plan(tmp_path, fleet, body, top="[quick]\nmax_trials = 3\n")
        res = fairmark_subprocess("run", path, "--hosts", "f1,f2,f3", "--quick", "--store", postgres_url)
        assert res.returncode == 0, res.stdout + res.stderr
        listed = fairmark_subprocess("runs", "--host", "f2", "--json", "--store", postgres_url)
    runs = Store.open(postgres_url).list_runs()
    assert sorted(h for r in runs for h in r["hosts"]) == ["f1", "f2", "f3"]
    assert all(r["status"] == "done" and r["trials_ok"] >= 6 for r in runs)
    assert [r["hosts"] for r in json.loads(listed.stdout)["runs"]] == [["f2"]]


@pytest.mark.slow
def test_a_command_and_a_tool_workload_run_on_a_host(tmp_path, net, fairmark_cli) -> None:
    """iperf3's server and client run in namespace h1 (the adapter runs there, inside `fairmark agent`)."""
    body = (
        f'[[workload]]\nname = "spin"\ncommand = [{PYTHON_TOML}, "-c", "sum(range(100000))"]\n'
        # 64 MB, not a second at full speed (client and server each a busy CPU): what is tested is where it runs
        '[[workload]]\nname = "net"\ntool = "iperf3"\nparams = { bytes = "64M" }\n'
        '[[variant]]\nname = "a"\n[[variant]]\nname = "b"\n'
    )
    path = tmp_path / "plan.toml"
    path.write_text(
        "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n"
        + body
        + net.hosts_toml(agent=[sys.executable, "-m", "fairmark", "agent"])
    )
    code, out, err = fairmark_cli("run", str(path), "--host", "h1", "--json")
    assert code == 0, err
    report = json.loads(out)
    boot = net.hosts["h1"].exec("cat", "/proc/sys/kernel/random/boot_id").stdout.strip()
    trials = [t for c in report["cells"] for t in c["trials"]]
    assert len(trials) == 12 and all(t["status"] == "ok" for t in trials), [t["error"] for t in trials]
    assert {(t["host"], t["boot_id"]) for t in trials} == {("h1", boot)}
    assert all(c["n_ok"] == 3 for c in report["cells"])
    # nothing of the servers is left on the host
    assert net.hosts["h1"].count("iperf3") == 0


@pytest.mark.slow
def test_a_workload_with_loops_is_calibrated_and_run_on_a_host(tmp_path, net, fairmark_cli) -> None:
    """loops = "auto" through the shipped agent: the calibration trials and the trials run on h1, the count
    reaches the command there as $FAIRMARK_LOOPS (variant a) and in its argv (variant b), and the times are
    stored per loop."""
    loop = "i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"
    body = (
        '[[workload]]\nname = "count"\nloops = "auto"\n'
        f"command = {json.dumps(['sh', '-c', loop.format(n='$FAIRMARK_LOOPS')])}\n"
        '[[variant]]\nname = "a"\nhost = "h1"\n'
        f'[[variant]]\nname = "b"\nhost = "h1"\ncommand = {json.dumps(["sh", "-c", loop.format(n="{loops}")])}\n'
    )
    path = tmp_path / "plan.toml"
    path.write_text("[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n" + body + net.hosts_toml())
    code, out, err = fairmark_cli("run", str(path), "--json")
    assert code == 0, err
    report = json.loads(out)
    for c in report["cells"]:
        n = c["loops"]
        assert n and n > 1 and 'loops = "auto"' in c["loops_note"], c["loops_note"]
        trials = c["trials"]
        assert len(trials) == 3 and all(t["status"] == "ok" and t["host"] == "h1" for t in trials)
        for t in trials:
            assert t["samples"]["wall_s_per_loop"] == pytest.approx(t["wall_s"] / n, rel=1e-9)
            if c["variant"] == "b":
                assert f"-lt {n} ]" in t["argv"][-1]


@pytest.mark.slow
def test_pgbench_client_on_another_host(tmp_path, net, fairmark_cli) -> None:
    """Seed 003: PostgreSQL on h1, the pgbench client on h1 itself vs on h2 — the verdict says by how much."""
    from fairmark.run.workloads.servers import PG_BIN

    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL server binaries not installed ({PG_BIN})")
    body = (
        '[[workload]]\nname = "pg"\ntool = "pgbench"\n'
        'params = { scale = 1, clients = 2, duration_s = 1, fsync = false, mode = "select-only" }\n'
        '[[variant]]\nname = "client-on-server"\nhost = "h1"\n'
        '[[variant]]\nname = "client-on-h2"\nhost = "h1"\nclient_host = "h2"\n'
    )
    path = tmp_path / "plan.toml"
    path.write_text(
        "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n"
        + body
        + net.hosts_toml(agent=[sys.executable, "-m", "fairmark", "agent"])
    )
    code, out, err = fairmark_cli("run", str(path), "--json")
    assert code == 0, err
    report = json.loads(out)
    cells = {c["variant"]: c for c in report["cells"]}
    assert all(c["n_ok"] == 3 for c in cells.values()), [
        t["error"] for c in cells.values() for t in c["trials"]
    ]
    assert cells["client-on-h2"]["labels"]["client host"] == "h2"
    assert (
        cells["client-on-h2"]["labels"]["host"] == "h1"
        and cells["client-on-server"]["labels"]["host"] == "h1"
    )
    argv = cells["client-on-h2"]["trials"][0]["argv"]
    assert net.hosts["h1"].address in argv  # the client connected over the test network
    # seed 003's finding: how much the server's throughput changes with the client moved off it, with its CI
    (moved,) = [v for v in report["verdicts"] if v["variant"] == "client-on-h2" and v["metric"] == "tps"]
    assert moved["name_baseline"] == "client-on-server" and moved["ratio"] > 0
    lo, hi = moved["ratio_ci_low"], moved["ratio_ci_high"]  # None: Fieller's interval is unbounded (n = 3)
    assert lo is None or hi is None or lo <= moved["ratio"] <= hi
    assert "95% CI" in moved["sentence"], moved["sentence"]  # by how much, with its interval
    assert not [p for p in net.hosts["h1"].processes() if "postgres" in p]
    # every form of the report says where each side ran
    where = "pg / client-on-h2: server on h1, client on h2"
    assert where in report["where_ran"] and "pg / client-on-server: on h1" in report["where_ran"]
    assert set(report["hosts"]) == {"h1", "h2"} and report["hosts"]["h1"]["boot_id"]
    run_id = report["run"]["id"]
    code, out, err = fairmark_cli("show", run_id)
    assert code == 0 and "client host: h2" in out, err
    code, text, err = fairmark_cli("report", run_id, "--text")
    assert code == 0 and where in " ".join(text.split()) and "Hosts (where each side ran)" in text, err
    code, _, err = fairmark_cli("report", run_id, "--html", str(tmp_path / "r.html"))
    assert code == 0, err
    assert where in (tmp_path / "r.html").read_text()


@pytest.mark.slow
def test_a_host_that_stays_away_interrupts_the_run_for_resume(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FAIRMARK_RECONNECT_BACKOFF_S", "0.2,0.2")
    with nethosts.NetHosts(["r1"]) as net:
        body = (
            '[[workload]]\nname = "nap"\ncommand = ["sleep", "0.5"]\n'
            '[[variant]]\nname = "a"\nhost = "r1"\n[[variant]]\nname = "b"\nhost = "r1"\n'
        )
        path = plan(tmp_path, net, body, top="[quick]\nmax_trials = 3\n")
        proc = subprocess.Popen(
            [sys.executable, "-m", "fairmark", "run", path, "--quick"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait(lambda: net.hosts["r1"].count("sleep 0.5") > 0)
        net.stop_sshd("r1")
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 3 and "could not reconnect" in err and "fairmark resume" in err, err
        runs = json.loads(fairmark_subprocess("runs", "--json").stdout)["runs"]
        assert runs[0]["status"] == "interrupted"
        net.start_sshd("r1")
        res = fairmark_subprocess("resume", runs[0]["id"], "--json")
        assert res.returncode == 0, res.stderr
        done = json.loads(res.stdout)
        assert done["run"]["status"] == "done" and all(c["n_ok"] >= 3 for c in done["cells"])
        failed = [t for c in done["cells"] for t in c["trials"] if t["status"] != "ok"]
        assert len(failed) == 1 and "connection lost" in failed[0]["error"]  # the trial in flight
        assert "could not reconnect" in failed[0]["error"]


class _FakeFreeBSD:
    """What a FreeBSD host's agent answers, made of captured FreeBSD outputs (tests/fixtures): the controller's
    FreeBSD paths are tested on them (no FreeBSD machine here)."""

    def __init__(self) -> None:
        self.spec = HostSpec("bsd", ssh="bsd")
        self.hello = {
            "os": "freebsd",
            "boot_id": "{ sec = 1700000000, usec = 1 } 4c4c4544",
            "address": "10.9.9.9",
        }
        self.root = Path(__file__).parent / "fixtures" / "sysroots" / "freebsd-current-debug"

    def call(self, op: str, **kw: object) -> dict:
        import base64

        if op == "capture":
            assert kw["commands"] and "sysctl.txt" in kw["commands"]  # FreeBSD: commands, not /proc files
            texts = {n: (self.root / n).read_text() for n in ("sysctl.txt", "uname.txt", "mount.txt")}
            dmesg = base64.b64encode((self.root / "dmesg.boot").read_bytes()).decode()
            return {
                "os": "freebsd",
                "files": {"var/run/dmesg.boot": dmesg},
                "dirs": [],
                "commands": texts,
                "links": {},
                "environ": {"PATH": "/sbin:/bin", "API_TOKEN": "planted-secret-1234"},
                "hostname": "bsd-box",
            }
        assert op == "exec"
        fix = Path(__file__).parent / "fixtures" / "h4"
        samples = [
            {"t_s": t, "texts": {"command": (fix / f"freebsd_sysctl_{n}.txt").read_text()}}
            for t, n in ((0.0, "a"), (1.0, "b"))
        ]
        measured = {
            "argv": ["true"],
            "status": "ok",
            "exit_code": 0,
            "signal": None,
            "wall_s": 1.0,
            "user_s": 0.1,
            "sys_s": 0.2,
            "max_rss_kib": 1000,
            "error": None,
            "version": 1,
        }
        return {
            "measured": measured,
            "stdout_b64": "",
            "stderr_b64": "",
            "files": {},
            "boot_id": self.hello["boot_id"],
            "monitor": {"samples": samples, "errors": []},
        }


def test_a_freebsd_host_is_probed_and_monitored_with_the_freebsd_parsers(tmp_path: Path) -> None:
    from fairmark.probe.doctor import diagnose
    from fairmark.remote.executor import RemoteExecutor
    from fairmark.remote.probe import remote_snapshot
    from fairmark.run.spec import TrialSpec

    fake = _FakeFreeBSD()
    snap = remote_snapshot(fake)  # type: ignore[arg-type]
    assert snap["source"] == {"root": "ssh:bsd", "live": True, "os_family": "freebsd"}
    assert snap["remote"]["host"] == "bsd" and "planted-secret-1234" not in json.dumps(snap)
    assert snap["os"]["kernel"] == "FreeBSD" and snap["os"]["release"] == "14.0-CURRENT"
    assert "debug-kernel" in {f.id for f in diagnose(snap) if f.severity == "error"}  # WITNESS on that host
    run = RemoteExecutor(fake, monitor_interval_s=1.0)  # type: ignore[arg-type]
    measured = run(TrialSpec(("true",), str(tmp_path)))
    assert measured.status == "ok" and run.last_boot_id == fake.hello["boot_id"]
    (series,) = run.take_artifacts()
    assert series.data["os"] == "freebsd" and series.data["host"] == "bsd"
    assert "iowait" not in series.data["totals"]["cpu_pct"]  # FreeBSD has no such tick: absent, not zero


@pytest.mark.slow
def test_wait_reboot_is_done_when_the_boot_id_changed_and_times_out_otherwise(net: nethosts.NetHosts) -> None:
    with HostConnection(spec(net, "h2")) as host:
        now = host.boot_id()
        assert host.wait_reboot("an earlier boot", timeout_s=30)["boot_id"] == now
        with pytest.raises(ConnectionLost, match="no new boot"):
            host.wait_reboot(now, timeout_s=0.5, poll_s=0.1)  # a namespace cannot reboot: same boot


@pytest.mark.slow
def test_one_run_at_a_time_measures_a_host(net: nethosts.NetHosts, tmp_path: Path, fairmark_cli) -> None:
    with HostConnection(spec(net, "h2")) as holder:
        assert holder.call("lock", owner={"pid": 1, "plan": "other.toml"})["held"]
        body = '[[workload]]\nname = "t"\ncommand = ["true"]\n[[variant]]\nname = "a"\nhost = "h2"\n'
        code, _, err = fairmark_cli("run", plan(tmp_path, net, body), "--accept-risk")
        assert code == 3 and "host h2 is in use by another fairmark run" in err and "other.toml" in err
        code, _, err = fairmark_cli(
            "run", plan(tmp_path, net, body, "p2.toml"), "--accept-risk", "--allow-concurrent"
        )
        assert code == 0, err
    code, _, err = fairmark_cli("run", plan(tmp_path, net, body, "p3.toml"), "--accept-risk")  # released
    assert code == 0, err


@pytest.mark.slow
def test_iperf3_redis_and_sysbench_oltp_clients_on_another_host(tmp_path, net, fairmark_cli) -> None:
    """iperf3's server, redis-server and PostgreSQL on h1; iperf3, redis-benchmark and sysbench on h1 itself vs
    on h2, over the test network (one plan: one connection and probe for the three tools)."""
    import shutil

    from fairmark.run.workloads.servers import PG_BIN

    if not shutil.which("redis-server") or not shutil.which("sysbench") or not (PG_BIN / "initdb").exists():
        pytest.skip("redis-server, sysbench or PostgreSQL not installed (packages/debian-test.txt)")
    body = (
        # 64 MB, not a second at full speed (as above)
        '[[workload]]\nname = "net"\ntool = "iperf3"\nparams = { bytes = "64M" }\n'
        '[[workload]]\nname = "kv"\ntool = "redis"\nparams = { requests = 10000, clients = 4 }\n'
        '[[workload]]\nname = "oltp"\ntool = "sysbench-oltp"\n'
        "params = { tables = 1, table_size = 1000, time_s = 1, threads = 2, fsync = false }\n"
        '[[variant]]\nname = "same-host"\nhost = "h1"\n'
        '[[variant]]\nname = "from-h2"\nhost = "h1"\nclient_host = "h2"\n'
    )
    path = tmp_path / "plan.toml"
    hosts = net.hosts_toml(agent=[sys.executable, "-m", "fairmark", "agent"])
    path.write_text("[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n" + body + hosts)
    code, out, err = fairmark_cli("run", str(path), "--json")
    assert code == 0, err
    report = json.loads(out)
    cells = {(c["workload"], c["variant"]): c for c in report["cells"]}
    assert all(c["n_ok"] == 3 for c in cells.values()), [
        t["error"] for c in cells.values() for t in c["trials"]
    ]
    address = net.hosts["h1"].address
    assert cells["net", "from-h2"]["labels"]["client host"] == "h2"
    assert address in cells["net", "from-h2"]["trials"][0]["argv"]
    assert net.hosts["h1"].count("iperf3") == 0 and net.hosts["h2"].count("iperf3") == 0
    assert address in cells["kv", "from-h2"]["trials"][0]["argv"]
    assert "127.0.0.1" in cells["kv", "same-host"]["trials"][0]["argv"]
    assert f"--pgsql-host={address}" in cells["oltp", "from-h2"]["trials"][0]["argv"]
    assert "--pgsql-host=127.0.0.1" in cells["oltp", "same-host"]["trials"][0]["argv"]
    assert {"kv / from-h2: server on h1, client on h2", "oltp / from-h2: server on h1, client on h2"} <= set(
        report["where_ran"]
    )
    assert net.hosts["h1"].count("redis-server") == 0
    assert not [p for p in net.hosts["h1"].processes() if "postgres" in p]
    # what cannot cross hosts is refused before anything runs
    for old, new, why in (
        ("clients = 4 }", "clients = 4, transport = 'unix' }", "transport = 'tcp'"),
        ("fsync = false }", "fsync = false, db = 'mysql' }", "db = 'pgsql'"),
    ):
        path.write_text(
            "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n" + body.replace(old, new) + hosts
        )
        code, _, err = fairmark_cli("run", str(path))
        assert code == 2 and "variant 'from-h2'" in err and why in err, err


def test_dry_run_names_each_variants_host_and_leaves_its_sysctls_to_it(tmp_path: Path, fairmark_cli) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(
        '[hosts.bsd]\nssh = "root@bsd-box"\n[[workload]]\nname = "t"\ncommand = ["true"]\n'
        '[[variant]]\nname = "a"\nhost = "bsd"\nsysctl = { "kern.sched.slice" = 3 }\n'
    )
    code, out, err = fairmark_cli("run", str(path), "--dry-run")  # a FreeBSD name: not checked on this Linux
    assert code == 0, err
    assert "variant a runs on host bsd (ssh root@bsd-box), setting sysctl kern.sched.slice=3 there" in out
