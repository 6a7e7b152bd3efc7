"""The agent alone, without SSH: it answers only its own protocol; and its FreeBSD paths (no /proc: `sysctl` reads and writes, kern.boottime as the boot id, the journal of
a dead agent undone), driven by a fake `sysctl` on PATH that answers from a captured FreeBSD sysctl tree and
with FreeBSD's own error messages (tests/fixtures) — there is no FreeBSD host here."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from fairmark.remote import agent
from fairmark.run.machine import host

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SYSCTL_TXT = FIXTURES / "sysroots" / "freebsd-current-debug" / "sysctl.txt"
HOSTUUID = "4c4c4544-0042-3510-8052-b4c04f4e4e32"  # planted: the captured tree has no kern.hostuuid

FAKE = r'''#!PYTHON
"""FreeBSD's sysctl(8) as far as the agent uses it: -n NAME…, NAME=VALUE (the agent runs it with a bare env)."""
import json, os, sys
state = "STATE"
tree = json.load(open(state))
fixtures = "FIXTURES"
args = sys.argv[1:]
if args and args[0] == "-n":
    for name in args[1:]:
        if name not in tree["values"]:
            sys.stderr.write(open(fixtures + "/freebsd-sysctl-unknown.txt").read().replace(
                "net.inet.tcp.nosuchthing", name))
            sys.exit(1)
        print(tree["values"][name])
    sys.exit(0)
name, value = args[0].split("=", 1)
if name in tree["read_only_tunables"]:
    sys.stderr.write(open(fixtures + "/freebsd-sysctl-readonly-tunable.txt").read().replace(
        "dev.ix.0.iflib.simple_tx", name))
    sys.exit(1)
old = tree["values"][name]
tree["values"][name] = value
json.dump(tree, open(state, "w"))
print(f"{name}: {old} -> {value}")
'''


def captured_tree() -> dict[str, str]:
    """`name: value` lines of the captured `sysctl -a` (continuation lines of multi-line values dropped)."""
    values = {}
    for line in SYSCTL_TXT.read_text().splitlines():
        name, sep, value = line.partition(": ")
        if sep and name and " " not in name and "\t" not in name:
            values[name] = value
    return values


@pytest.fixture
def freebsd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "sysctl"
    state = tmp_path / "sysctl-state.json"
    fake.write_text(
        FAKE.replace("PYTHON", sys.executable)
        .replace("STATE", str(state))
        .replace("FIXTURES", str(FIXTURES / "variants"))
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    values = captured_tree() | {"kern.hostuuid": HOSTUUID}
    state.write_text(json.dumps({"values": values, "read_only_tunables": ["vm.pmap.pg_ps_enabled"]}))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAIRMARK_AGENT_STATE", str(tmp_path / "agent-state"))
    monkeypatch.setattr(agent.sys, "platform", "freebsd14")
    return state


def _value(state: Path, name: str) -> str:
    return json.loads(state.read_text())["values"][name]


def test_the_boot_id_of_a_freebsd_host_is_its_boottime_and_hostuuid(freebsd: Path, monkeypatch) -> None:
    real_open = open

    def no_proc(path, *a, **kw):  # FreeBSD has no /proc/sys/kernel/random/boot_id
        if str(path).startswith("/proc/"):
            raise FileNotFoundError(path)
        return real_open(path, *a, **kw)

    monkeypatch.setattr("builtins.open", no_proc)
    assert agent.boot_id() == f"{{ sec = 1640848383, usec = 512345 }} Thu Dec 30 07:13:03 2021 {HOSTUUID}"
    assert host.boot_id() == agent.boot_id()  # the controller's own copy (run/ never imports remote/)


def test_the_controller_and_its_agent_name_a_linux_boot_alike() -> None:
    assert host.boot_id() == agent.boot_id() != ""


def test_the_shipped_agent_is_the_launcher_and_the_agent_in_one_standard_library_program() -> None:
    """The agent travels as one text (python3 -c) to hosts without fairmark: run/launch/launcher.py's, the modules of
    system changes it reuses (their text), then agent.py's; of fairmark it imports only what it ships, or what
    only an installed fairmark has (the launcher, a tool adapter, a profiler), and what it ships imports only the standard
    library and itself."""
    import ast

    from fairmark.remote.connection import agent_source, shipped_modules

    def imports(tree: ast.AST) -> set[str]:
        """What runs: not the imports under `if TYPE_CHECKING:` (only a type checker reads those)."""
        for n in ast.walk(tree):
            if isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING":
                n.body = []
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        return names | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}

    tree = ast.parse(agent_source())
    names = imports(tree)
    shipped = shipped_modules()
    # what only an installed fairmark has (a tool adapter, a profiler), the launcher (shipped ahead), the rest
    # shipped: the drivers of the kinds an agent applies and what they import
    installed = {"fairmark.run.launch.launcher", "fairmark.remote.tooling", "fairmark.remote.profiling"}
    assert {n for n in names if n.split(".")[0] == "fairmark"} - installed <= set(shipped)
    assert {
        "fairmark.run.launch.placer",
        "fairmark.run.variants.driver",
        "fairmark.run.variants.sysctl",
    } <= set(shipped)
    assert all(n.split(".")[0] in (*sys.stdlib_module_names, "fairmark") for n in names), names
    top = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    assert len(top) == 1 and tree.body.index(top[0]) == 1  # after the launcher's docstring, once
    (text,) = [n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "_SHIPPED"]
    sources = ast.literal_eval(text)
    assert set(sources) == set(shipped)
    for name, text in sources.items():
        # psutil: only in the controller's own journal's liveness check (Journal.for_this_process, owner_alive),
        # which the agent does not call: its journal is its own, locked while it lives
        used = imports(ast.parse(text or "")) - ({"psutil"} if name.endswith(".journal") else set())
        assert all(n in sources or n.split(".")[0] in sys.stdlib_module_names for n in used), (name, used)


def test_a_freebsd_sysctl_is_journaled_set_and_restored(freebsd: Path) -> None:
    """The sysctl driver (fairmark.run.variants.sysctl, the controller's own) through the agent's one `change`
    operation, on a FreeBSD sysctl(8) that answers with FreeBSD's own outputs."""
    from fairmark.errors import EnvironmentRefused

    assert agent.state_dir().endswith("agent-state")
    original = _value(freebsd, "hw.ibrs_disable")
    want = "0" if original == "1" else "1"
    session = agent.Session()

    def change(value: object) -> dict:
        return session.op_change({"kind": "sysctl", "set": value, "variant": "a"})

    got = change({"hw.ibrs_disable": want})
    assert (
        got["applied"] == [f"sysctl hw.ibrs_disable → {want}"] and _value(freebsd, "hw.ibrs_disable") == want
    )
    (journal,) = (Path(agent.state_dir()) / "journal").glob("*.json")
    (entry,) = json.loads(journal.read_text())["entries"]
    assert {k: entry[k] for k in ("type", "name", "original")} == {
        "type": "freebsd-sysctl",
        "name": "hw.ibrs_disable",
        "original": original,
    }
    # a loader tunable cannot be set at run time: FreeBSD's reason, and nothing left changed or journaled
    with pytest.raises(EnvironmentRefused, match=r"vm.pmap.pg_ps_enabled: a loader tunable"):
        change({"hw.ibrs_disable": want, "vm.pmap.pg_ps_enabled": "0"})
    assert _value(freebsd, "vm.pmap.pg_ps_enabled") == captured_tree()["vm.pmap.pg_ps_enabled"]
    assert _value(freebsd, "hw.ibrs_disable") == original and not journal.exists()
    refused = session.op_check({"changes": {"sysctl": {"kern.nosuch": 1}}, "variant": "a"})["refused"]
    assert refused == {"sysctl": "sysctl kern.nosuch: no such sysctl on this kernel"}
    with pytest.raises(OSError, match=r"unknown oid 'kern\.nosuch'"):
        agent.sysctl_read("kern.nosuch")
    change({"hw.ibrs_disable": want})
    assert session.restore() == [f"restored sysctl hw.ibrs_disable = {original}"]
    assert _value(freebsd, "hw.ibrs_disable") == original and list(journal.parent.iterdir()) == []


def test_a_dead_freebsd_agents_journal_is_undone_by_the_next(freebsd: Path) -> None:
    original = _value(freebsd, "hw.ibrs_disable")
    want = "0" if original == "1" else "1"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    journal = Path(agent.state_dir()) / "journal" / f"{dead.stdout.strip()}-dead.json"
    journal.parent.mkdir(parents=True)
    entry = {"type": "sysctl", "name": "hw.ibrs_disable", "original": original, "want": want}
    journal.write_text(json.dumps({"format": 1, "pid": int(dead.stdout), "started": 0, "entries": [entry]}))
    subprocess.run(["sysctl", f"hw.ibrs_disable={want}"], check=True, capture_output=True)
    lines = agent.recover_dead()
    assert lines == [
        f"restored sysctl hw.ibrs_disable = {original} (was {want}) (left by agent {int(dead.stdout)})"
    ]
    assert _value(freebsd, "hw.ibrs_disable") == original and not journal.exists()


def test_the_agent_accepts_only_its_protocol_and_acts_on_nothing_else(tmp_path: Path) -> None:
    """The shipped agent (as the controller starts it over SSH) fed lines that are not protocol requests: each
    gets an error answer, none is acted upon, and end of input ends it."""
    from fairmark.remote.connection import shipped_agent_command, shipped_agent_payload

    planted = tmp_path / "planted"
    lines = [
        "id; touch " + str(planted),  # a shell command
        "{not json",
        json.dumps([1, "exec"]),
        json.dumps({"v": agent.PROTOCOL + 1, "id": 1, "op": "hello"}),  # another protocol version
        json.dumps({"v": agent.PROTOCOL, "id": 2}),  # no op
        json.dumps({"v": agent.PROTOCOL, "id": 3, "op": "shell", "cmd": f"touch {planted}"}),
        json.dumps({"v": agent.PROTOCOL, "id": 4, "op": "_exec", "spec": {"argv": ["touch", str(planted)]}}),
        json.dumps({"v": agent.PROTOCOL, "id": 5, "op": "hello", "recover": False}),
    ]
    # a bare environment, but no __pycache__ in src/: the agent's hello imports fairmark when it can
    env = {
        "PATH": os.environ["PATH"],
        "FAIRMARK_AGENT_STATE": str(tmp_path / "state"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    res = subprocess.run(
        ["sh", "-c", shipped_agent_command(sys.executable)],
        input=shipped_agent_payload() + ("\n".join(lines) + "\n").encode(),
        capture_output=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    answers = [json.loads(a) for a in res.stdout.splitlines()]
    assert len(answers) == len(lines) and not planted.exists()
    assert all(not a["ok"] for a in answers[:-1]) and answers[-1]["ok"]
    assert [a["error"].split(":")[0] for a in answers[:5]] == ["bad request"] * 5
    assert answers[5]["error"] == "unknown op 'shell'" and answers[6]["error"] == "unknown op '_exec'"
    assert answers[-1]["result"]["protocol"] == agent.PROTOCOL and answers[-1]["id"] == 5


def test_a_hosts_machine_wide_kinds_are_journaled_switched_and_undone_and_a_dead_agents_by_its_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """thp and aslr on a host, made by the agent with the controller's own drivers (fairmark.run.variants.thp, aslr)
    on stand-ins of their kernel files: each original journaled before the change, a switch to another value or
    to none puts the original back, and the journal of an agent that died with a change in place is undone by
    the next one — known dead by its journal's lock, though its PID (this process's) is alive."""
    from fairmark.run.variants import aslr as aslr_driver
    from fairmark.run.variants import thp as thp_driver

    thp, aslr = tmp_path / "enabled", tmp_path / "randomize_va_space"
    thp.write_text("always [madvise] never\n")
    aslr.write_text("2\n")
    monkeypatch.setattr(thp_driver, "THP", str(thp))
    monkeypatch.setattr(aslr_driver, "ASLR", str(aslr))
    monkeypatch.setenv("FAIRMARK_AGENT_STATE", str(tmp_path / "state"))
    session = agent.Session()

    def change(kind: str, value: object, variant: str) -> dict:
        return session.op_change({"kind": kind, "set": value, "variant": variant})

    got = change("thp", "never", "a")
    assert got["applied"] == ["transparent hugepages → never"] and thp.read_text() == "never"
    (journal,) = (tmp_path / "state" / "journal").glob("*.json")
    (entry,) = json.loads(journal.read_text())["entries"]
    assert entry["type"] == "file" and entry["path"] == str(thp) and entry["original"] == "madvise"
    assert change("aslr", 0, "a")["applied"] == ["ASLR kernel.randomize_va_space → 0"]
    assert change("aslr", None, "b")["reverted"] == ["restored ASLR kernel.randomize_va_space = 2"]
    assert aslr.read_text() == "2" and len(json.loads(journal.read_text())["entries"]) == 1
    # the agent dies with thp changed: its lock goes with it (the kernel drops a dead process's flock)
    dead = session.journal
    assert dead.lock_fd is not None
    os.close(dead.lock_fd)
    agent._MINE.discard(str(dead.path))
    assert agent.recover_dead() == [
        f"restored transparent hugepages = madvise (was never) (left by agent {os.getpid()})"
    ]
    assert thp.read_text() == "madvise"
    assert list((tmp_path / "state" / "journal").iterdir()) == []  # no journal, no lock file left
    # an agent from before the lock left its journal (no lock file), and its PID is this process's now
    entry = {"type": "file", "path": str(aslr), "original": "2", "select": "plain", "label": "ASLR"}
    old = tmp_path / "state" / "journal" / f"{os.getpid()}-old.json"
    old.write_text(json.dumps({"format": 1, "pid": os.getpid(), "started": 0, "entries": [entry]}))
    aslr.write_text("0")
    assert agent.recover_dead() == [f"restored ASLR = 2 (was 0) (left by agent {os.getpid()})"]
    assert aslr.read_text() == "2" and not old.exists()
