"""The table of variant kinds (plan/kinds.py) is the one list of system-change keys: it is derived from the plan
model's fields, and the variants' resolution, attribution and the remote hosts read it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fairmark.plan.kinds import KERNEL_PATH_KEYS, REMOTE_KEYS, USER_SPEED_KEYS, VARIANT_KINDS, given_keys
from fairmark.plan.model import SystemChanges
from fairmark.remote.agent import Session
from fairmark.remote.connection import shipped_modules
from fairmark.report.attribution import is_kernel_path_change
from fairmark.run.variants import driver


def test_every_system_change_field_is_a_kind_and_every_kind_has_its_driver() -> None:
    assert set(VARIANT_KINDS) == set(SystemChanges.model_fields) - {"settle_s"}
    assert set(KERNEL_PATH_KEYS) | set(USER_SPEED_KEYS) == set(VARIANT_KINDS)
    assert not set(KERNEL_PATH_KEYS) & set(USER_SPEED_KEYS)
    # one driver per kind, fairmark.run.variants.<kind>, found by its name
    for kind, module in driver.ordered(VARIANT_KINDS):
        assert module.__name__ == f"fairmark.run.variants.{kind}" and module.SCOPE in ("block", "variant")
    assert len({driver.load(k).ORDER for k in VARIANT_KINDS}) == len(VARIANT_KINDS)  # one order, no ties
    # the kinds that can run on a host: the agent's one `change` operation makes them with the same drivers,
    # shipped to it (the list derived from the kinds table)
    assert {"sysctl", "mount", "cpus", "thp", "governor", "aslr", "malloc_debug"} <= set(REMOTE_KEYS)
    assert callable(Session.op_change)
    assert {f"fairmark.run.variants.{k}" for k in REMOTE_KEYS} <= set(shipped_modules())
    for name in ("journal", "tunable", "driver", "basic", "system", "../x", "_private"):
        with pytest.raises(ValueError, match="no such kind"):
            driver.load(name)  # a module that is no driver, or a name off the wire that is no module


def test_kinds_of_a_stored_definition_include_its_tuning_set() -> None:
    tuning = {"fast": {"governor": "performance", "sysctl": {"vm.swappiness": 10}}}
    assert given_keys({"tuning": "fast", "env": {"X": "1"}}, tuning) == {"governor", "sysctl"}
    assert given_keys({"sysctl": {}, "malloc_debug": False, "cpus": None}) == set()
    assert is_kernel_path_change({"sysctl": {"vm.swappiness": 10}})
    assert not is_kernel_path_change({"tuning": "fast"}, tuning)  # the governor moves user-space speed too
    assert not is_kernel_path_change({"malloc_debug": True})
    # aslr = 0 (ASLR off) is a change of user-space speed, not nothing (0 == False in Python)
    assert given_keys({"aslr": 0, "sysctl": {"vm.swappiness": 10}}) == {"aslr", "sysctl"}
    assert not is_kernel_path_change({"aslr": 0, "sysctl": {"vm.swappiness": 10}})


HOST = '[hosts.box]\nssh = "root@box"\n[[workload]]\nname = "t"\ncommand = ["true"]\n'


def test_a_kind_that_cannot_run_on_a_host_is_refused_at_load_naming_variant_kind_and_host(
    tmp_path: Path, fairmark_cli: Callable[..., tuple[int, str, str]]
) -> None:
    assert not VARIANT_KINDS["online_cpus"].remote  # CPU hotplug stays on the controller
    path = tmp_path / "plan.toml"
    path.write_text(
        HOST
        + '[[variant]]\nname = "a"\nhost = "box"\n\n[[variant]]\nname = "up"\nhost = "box"\nonline_cpus = 1\n'
    )
    code, _, err = fairmark_cli("run", str(path), "--dry-run")
    assert code == 2, err
    assert (
        f"{path}:13: variant[1] \"up\".online_cpus: variant 'up' on host 'box': kind online_cpus cannot run on a host"
        in " ".join(err.split())
    ), err
    assert "run variant 'up' on this machine (no host), or remove online_cpus" in " ".join(err.split())


def test_a_tuning_sets_kind_is_refused_on_a_host_and_its_host_kinds_travel(
    tmp_path: Path, fairmark_cli: Callable[..., tuple[int, str, str]]
) -> None:
    from fairmark.plan.load import load_plan
    from fairmark.remote.hosts import wire_changes

    path = tmp_path / "plan.toml"
    tuning = '[tuning.lean]\nsysctl = { "vm.swappiness" = 10, "vm.dirty_ratio" = 5 }\n'
    path.write_text(
        tuning
        + HOST
        + '[[variant]]\nname = "a"\nhost = "box"\ntuning = "lean"\nsysctl = { "vm.swappiness" = 20 }\n'
    )
    loaded = load_plan(path)
    assert wire_changes(loaded.plan.variant[0], loaded.plan.tuning)["sysctl"] == {
        "vm.swappiness": 20,
        "vm.dirty_ratio": 5,
    }
    assert wire_changes(loaded.plan.variant[0])["sysctl"] == {"vm.swappiness": 20}  # no sets: its own only
    path.write_text(
        tuning + "online_cpus = 1\n" + HOST + '[[variant]]\nname = "a"\nhost = "box"\ntuning = "lean"\n'
    )
    code, _, err = fairmark_cli("run", str(path), "--dry-run")
    assert code == 2, err
    assert (
        f"{path}:3: tuning.lean.online_cpus: variant 'a' on host 'box': kind online_cpus (from its [tuning.lean] set) cannot run on a host"
        in " ".join(err.split())
    ), err


def test_host_moves_every_variant_and_its_kinds_are_checked_there(
    tmp_path: Path, fairmark_cli: Callable[..., tuple[int, str, str]]
) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(
        '[[workload]]\nname = "t"\ncommand = ["true"]\n[[variant]]\nname = "up"\nonline_cpus = 1\n'
    )
    code, _, err = fairmark_cli("run", str(path), "--dry-run")
    assert code == 0, err
    code, _, err = fairmark_cli("run", str(path), "--dry-run", "--host", "root@box")
    assert code == 2, err
    assert "variant 'up' on host 'root@box': kind online_cpus cannot run on a host" in " ".join(
        err.split()
    ), err


def test_a_hosts_variants_are_sent_kind_by_kind_and_settle_as_on_the_controller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RemoteHost.activate against a stand-in agent: a kind is sent when its value changes (a variant's own
    scratch file system and CPU set whenever the variant changes, with its name), and after a machine-wide
    setting was applied the host settles for the variant's settle_s, its tuning set's, or 1 s — not after a
    scratch file system, a CPU set or an undo alone."""
    from types import SimpleNamespace

    from fairmark.plan.load import load_plan
    from fairmark.remote import hosts as remote_hosts

    path = tmp_path / "plan.toml"
    path.write_text(
        '[tuning.calm]\nsettle_s = 0.25\nthp = "never"\n'
        + HOST
        + '[[variant]]\nname = "a"\nhost = "box"\nsysctl = { "vm.swappiness" = 10 }\nmount = { size = "64M" }\n'
        '[[variant]]\nname = "b"\nhost = "box"\nmount = { size = "64M" }\ncpus = 1\n'
        '[[variant]]\nname = "c"\nhost = "box"\ntuning = "calm"\n'
        '[[variant]]\nname = "d"\nhost = "box"\ntuning = "calm"\nsettle_s = 0\n'
    )
    plan = load_plan(path).plan
    calls: list[tuple[str, object, str]] = []
    slept: list[float] = []

    class Agent:
        def call(self, op: str, **req: object) -> dict[str, object]:
            assert op == "change"  # one operation for every kind
            calls.append((str(req["kind"]), req["set"], str(req["variant"])))
            return {"applied": [op] if req["set"] else [], "prepared": {}}

    host = remote_hosts.RemoteHost("box", plan.hosts["box"], tuning=plan.tuning)
    host.conn, host.executor = Agent(), SimpleNamespace(down=None)  # type: ignore[assignment]
    monkeypatch.setattr(remote_hosts.time, "sleep", slept.append)

    def activate(name: str) -> tuple[list[tuple[str, object, str]], list[float]]:
        calls.clear(), slept.clear()
        host.activate(plan.variant_named(name))
        return list(calls), list(slept)

    mount = {
        "fs": "ext4",
        "options": "",
        "size": "64M",
        "mkfs_options": "",
        "soft_updates": None,
        "image_dir": None,
    }
    assert activate("a") == ([("sysctl", {"vm.swappiness": 10}, "a"), ("mount", mount, "a")], [1.0])
    assert activate("a") == ([], [])  # already active: nothing sent
    assert activate("b") == ([("sysctl", None, "b"), ("mount", mount, "b"), ("cpus", 1, "b")], [])
    assert activate("c") == ([("mount", None, "c"), ("cpus", None, "c"), ("thp", "never", "c")], [0.25])
    assert activate("d") == ([], [])  # the same thp as c: nothing applied, nothing to settle
    activate("a")
    assert activate("d") == ([("sysctl", None, "d"), ("mount", None, "d"), ("thp", "never", "d")], [])


def test_a_host_whose_agent_cannot_undo_a_change_is_a_loud_error_at_close() -> None:
    """As the controller's own SystemState.close: the session still ends, and the error names the host and what
    is left (the agent's journal keeps it for the next contact)."""
    from types import SimpleNamespace

    from fairmark.plan.model import HostEntry
    from fairmark.remote.connection import AgentError
    from fairmark.remote.hosts import RemoteHost
    from fairmark.run.variants.tunable import RevertError

    ended: list[bool] = []

    class Agent:
        def call(self, op: str, **req: object) -> dict[str, object]:
            raise AgentError(
                "host box: restore: OSError: not restored: cannot remove /sys/fs/cgroup/cpuset/x: busy"
            )

        def close(self) -> None:
            ended.append(True)

    host = RemoteHost("box", HostEntry(ssh="root@box"))
    host.conn, host.executor = Agent(), SimpleNamespace(down=None)  # type: ignore[assignment]
    host.wanted = {"cpus": 1}
    with pytest.raises(RevertError, match=r"host box is NOT as fairmark found it: .*cpuset/x: busy"):
        host.close()
    assert ended == [True] and host.conn is None
    host.close()  # idempotent


def test_the_kind_names_shipped_as_data_are_the_tables() -> None:
    """plan/kind_names.py holds the names without the plan model (`show` need not import pydantic for them)."""
    from fairmark.plan import kind_names

    assert (kind_names.KERNEL_PATH_KEYS, kind_names.USER_SPEED_KEYS) == (KERNEL_PATH_KEYS, USER_SPEED_KEYS)
