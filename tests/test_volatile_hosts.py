"""Each host's own noise (issue 32 item 2): between rounds a run on hosts samples each host through its agent and
diffs it against that host's own snapshot before the run. Before, the controller's sample was diffed against the
first host's snapshot: a guest with THP `never` and load 0.16 stored "thp: 'never' -> 'madvise'" and "The host is
not idle: load 10.5" — both the controller's. The QEMU guest case: tests/test_cgroup_v2.py."""

from __future__ import annotations

import copy
from typing import Any

from fairmark.probe.snapshot import take_snapshot
from fairmark.run.loop.gate import VolatileWatch
from fairmark.store.db import Store


def _host(thp: str, load: float) -> dict[str, Any]:
    snap = copy.deepcopy(BASE)
    snap["memory"]["thp"] = thp
    snap["load"] = {"loadavg": [load, load, load], "busy_processes": []}
    return snap


BASE = take_snapshot("/")


def test_a_hosts_run_is_watched_on_its_hosts_and_never_against_this_machine(tmp_path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    run_id = store.create_run(
        plan_path="p.toml",
        plan_text="",
        plan_sha256="0" * 64,
        seed=1,
        status="running",
        fairmark_version="test",
    )
    samples = iter([_host("never", 0.16), _host("never", 50.0)])
    notes: list[str] = []
    watch = VolatileWatch(enabled=True, env_before=_host("never", 0.16), local=False)
    watch.hosts = {"guest": lambda: next(samples)}
    watch.hosts_before = {"guest": _host("never", 0.16)}
    watch.sample(store, run_id, notes.append)
    assert notes == []  # the guest is as it was: nothing of this (busy, THP madvise) machine is said
    watch.last = 0.0
    watch.sample(store, run_id, notes.append)
    assert notes and all(
        n.startswith("between rounds: ") and "host guest: load average 50.00" in n for n in notes
    )
    found = store.findings(run_id)
    assert found and all(f["evidence"].startswith("host guest: ") for f in found), found
    arts = store.artifacts(run_id, kind="env.volatile")
    assert len(arts) == 2 and all(
        a["name"].startswith("guest ") and a["data"]["host"] == "guest" for a in arts
    )
