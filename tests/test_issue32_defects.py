"""Issue 32 item 4, defects of runs on hosts, each failing before its fix:
- a run measured on hosts only took this machine's lock as if --allow-concurrent: it printed "running concurrently
  as asked (--allow-concurrent): both are perturbed" though nothing was asked and nothing here was perturbed (in a
  fleet once per host, naming a sibling's PID). A local run beside a held lock is refused as before;
- `--dry-run` of a host variant said both "setting sysctl … on host h00" and "no system changes", and never named
  the client host."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from fairmark.assemble import _host_lock
from fairmark.errors import FairmarkError
from fairmark.run.guard.lock import HostLock


def request() -> SimpleNamespace:
    return SimpleNamespace(
        hold_lock=True,
        lock_label="",
        resume=None,
        loaded=SimpleNamespace(path="plan.toml"),
        allow_concurrent=False,
        wait_lock=0.0,
    )


def test_a_remote_only_run_neither_waits_for_nor_notes_this_machines_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIRMARK_LOCK_PATH", str(tmp_path / "lock"))
    held = HostLock({"plan": "other.toml", "run_id": "r-1"}).__enter__()
    try:
        notes: list[str] = []
        with _host_lock(request(), True, notes.append):  # type: ignore[arg-type]
            pass
        assert notes == []
        with pytest.raises(FairmarkError), _host_lock(request(), False, notes.append):  # type: ignore[arg-type]
            pass
    finally:
        held.__exit__(None, None, None)


def test_dry_run_of_host_variants_speaks_of_this_machine_and_names_the_client_host(
    tmp_path: Path, fairmark_cli
) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(
        '[hosts.h0]\nssh = "root@h0"\n[hosts.h1]\nssh = "root@h1"\n'
        '[[workload]]\nname = "kv"\ntool = "redis"\nparams = { requests = 1000 }\n'
        '[[variant]]\nname = "a"\nhost = "h0"\nclient_host = "h1"\nsysctl = { "vm.swappiness" = 10 }\n'
    )
    code, out, err = fairmark_cli("run", str(path), "--dry-run")
    assert code == 0, err
    assert "variant a runs on host h0 (ssh root@h0), setting sysctl vm.swappiness=10 there" in out
    assert "kv × a: its client runs on host h1 (ssh root@h1)" in out
    assert "no system changes on this machine (the hosts' changes are listed above)" in out
    assert "no system changes (env/wrap/command variants only)" not in out


FLEET_PLAN = (
    '[hosts.f00]\nssh = "root@f00"\n[hosts.f01]\nssh = "root@f01"\n[hosts.cl]\nssh = "root@cl"\n'
    '[[workload]]\nname = "kv"\ntool = "redis"\nparams = { requests = 1000, transport = "tcp" }\n'
    'client_host = "cl"\n[[variant]]\nname = "a"\n[[variant]]\nname = "b"\n'
)


def test_a_fleet_whose_client_host_is_one_of_its_hosts_is_refused_before_it_starts(
    tmp_path: Path, fairmark_cli
) -> None:
    """Before: every host's run but one failed with "host cl is in use by another fairmark run", and the fleet
    then suggested `resume` for runs that did not exist."""
    path = tmp_path / "plan.toml"
    path.write_text(FLEET_PLAN)
    code, _out, err = fairmark_cli("run", str(path), "--hosts", "f00,cl")
    assert code == 2, err
    assert "client_host 'cl' is also one of --hosts" in err
    assert "resume" not in err


def test_a_fleet_sharing_one_client_host_runs_its_hosts_one_at_a_time(tmp_path: Path) -> None:
    from fairmark.cli.run import fleet_jobs
    from fairmark.plan.load import load_plan

    path = tmp_path / "plan.toml"
    path.write_text(FLEET_PLAN)
    loaded = load_plan(str(path))
    assert fleet_jobs(loaded, ["f00", "f01"], None) == 1
    assert fleet_jobs(loaded, ["f00", "f01"], 4) == 1
    path.write_text(FLEET_PLAN.replace('client_host = "cl"\n', ""))
    assert fleet_jobs(load_plan(str(path)), ["f00", "f01"], None) is None
