"""`fairmark run BUNDLE.json` (issue 26 item 5): a run exported, run again from its bundle in another store (what
someone else does with a result they must reproduce — seed 003), and `compare-runs` holding the two side by side.
Real short runs (`true` and `sleep 0.01`, three trials a cell); what the re-run must refuse, before anything is
written, with the file and the key."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import nethosts
from fairmark.run.guard.lock import HostLock
from fairmark.store.db import Store

PLAN = """title = "true vs sleep"
[run]
warmup = 0
min_trials = 3
max_trials = 3

[[workload]]
name = "w"
command = ["true"]

[[variant]]
name = "true"

[[variant]]
name = "sleep"
command = ["sleep", "0.01"]
"""
RUN = ("--no-monitors", "--accept-risk")  # the shared machine is busy: its doctor may say so


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict, Path]]:
    """One real run, tagged with a commit, and its bundle: (the run as `run --json` printed it, the bundle). Made
    once for the module, with a store, host lock and state of its own (as conftest gives each test)."""
    from fairmark.cli.main import main

    tmp = tmp_path_factory.mktemp("orig")
    (tmp / "plan.toml").write_text(PLAN)
    store = str(tmp / "orig.db")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FAIRMARK_LOCK_PATH", str(tmp / "host.lock"))
        mp.setenv("FAIRMARK_STATE_DIR", str(tmp / "state"))
        mp.setenv("XDG_DATA_HOME", str(tmp / "data"))
        args = ["run", str(tmp / "plan.toml"), *RUN, "--tag", "commit=deadbeef", "--store", store, "--json"]
        assert _main_to(main, args, tmp / "run.json") == 0
        export = ["export", json.loads((tmp / "run.json").read_text())["run"]["id"], "--out", str(tmp)]
        assert _main_to(main, [*export, "--store", store], tmp / "export.txt") == 0
    yield json.loads((tmp / "run.json").read_text()), next(tmp.glob("fairmark-*.json"))


def _main_to(main: Callable[[list[str]], int], args: list[str], out: Path) -> int:
    """main() with stdout into a file (a module's fixture has no capsys)."""
    with out.open("w") as f, contextlib.redirect_stdout(f):
        return main(args)


def _order(doc: dict) -> list[str]:
    """The cells in the order their trials ran."""
    trials = [(t["seq"], c["key"]) for c in doc["cells"] for t in c["trials"]]
    return [key for _, key in sorted(trials)]


def test_a_bundle_is_run_again_and_compare_runs_holds_both(exported, tmp_path: Path, fairmark_cli) -> None:
    orig, bundle = exported
    elsewhere = str(tmp_path / "elsewhere.db")  # someone else's store: the bundle is all they have
    code, out, err = fairmark_cli("run", str(bundle), *RUN, "--store", elsewhere, "--json")
    assert code == 0, err
    again = json.loads(out)
    oid, rid = orig["run"]["id"], again["run"]["id"]
    assert rid != oid
    # the bundle's plan text, seed and scale: the same trial order, the same plan by its hash
    assert again["run"]["seed"] == orig["run"]["seed"]
    assert again["run"]["plan_sha256"] == orig["run"]["plan_sha256"]
    assert again["run"]["plan_text"] == PLAN
    assert _order(again) == _order(orig)
    rerun_of = again["run"]["options"]["rerun_of"]
    assert rerun_of["run_id"] == oid and rerun_of["commit"] == "deadbeef"
    assert rerun_of["hostname"] == orig["run"]["hostname"] and rerun_of["bundle"] == str(bundle)
    assert f"imported the bundle's run {oid}" in err
    # the same machine: no difference that can change a result; only the variables this test session sets
    # (the run's own environment warnings — a busy host — are said on stderr too with --json: issue 34 item 7)
    warnings = [
        line for line in err.splitlines() if line.startswith("fairmark: warning:") and "differ" in line
    ]
    assert warnings == [
        "fairmark: warning: environment variables differ: FAIRMARK_LOCK_PATH, FAIRMARK_STATE_DIR, "
        "FAIRMARK_STORE, PYTEST_CURRENT_TEST, XDG_DATA_HOME"
    ], err

    code, out, _ = fairmark_cli("show", rid[:8], "--store", elsewhere)
    assert code == 0 and f"re-run of run {oid}" in out and "commit deadbeef" in out
    assert f"compare-runs {oid[:8]} {rid[:8]}" in out

    code, out, err = fairmark_cli("compare-runs", oid, rid, "--store", elsewhere, "--json")
    assert code == 0, err
    cmp = json.loads(out)
    assert (cmp["a"], cmp["b"]) == (oid, rid)
    assert (
        cmp["rerun"]
        == f"{rid[:8]} re-ran {oid[:8]} from its bundle (its plan text, seed and scale) on the same machine"
    )
    assert sorted(c["variant"] for c in cmp["comparisons"]) == ["sleep", "true"]
    # and each run's own verdict, sleep against true within the run: what a reproduction elsewhere reproduces
    own = [(r["group"], r["variant"], r["baseline"], r["metric"]) for r in cmp["own_verdicts"]]
    assert ("w", "sleep", "true", "wall_s") in own
    verdicts = {v["metric"]: v for v in orig["verdicts"] if v["variant"] == "sleep"}
    row = next(r for r in cmp["own_verdicts"] if r["metric"] == "wall_s")
    sign = "+" if verdicts["wall_s"]["change_percent"] >= 0 else "-"
    # the original's own verdict, as its run said; on a loaded machine sleep 0.01 vs true can round to "0% (…)"
    assert row["a"].startswith((sign, "0%")), (row, verdicts["wall_s"])
    code, out, _ = fairmark_cli("compare-runs", oid, rid, "--store", elsewhere)
    assert code == 0 and f"A = {oid[:8]} (baseline)   B = {rid[:8]}" in out and "re-ran" in out
    assert "each run's own verdicts" in out and "verdict(s) the same in both runs" in out

    # a second re-run into the same store finds the original there
    code, out, err = fairmark_cli("run", str(bundle), *RUN, "--store", elsewhere, "--json")
    assert code == 0, err and "imported" not in err
    assert len(Store.open(elsewhere).list_runs()) == 3


def test_how_this_machine_differs_is_warned_before_the_first_trial(
    exported, tmp_path: Path, fairmark_cli
) -> None:
    orig, bundle = exported
    doc = json.loads(bundle.read_text())
    run = doc["tables"]["runs"][0]
    env = run["env_before"]
    env["os"]["release"] = "0.0.0-elsewhere"
    env["cpu"]["model"] = "Imaginary CPU 9000"
    env["toolchain"]["gcc"] = {
        "path": "/opt/gcc-0.1/bin/gcc",
        "version": "0.1",
        "raw": "gcc 0.1",
        "error": None,
    }
    env["identity"]["host_id"] = run["host_id"] = "0" * 16
    run["options"]["variants"]["sleep"]["command"] = ["sleep", "0.02"]  # not what its plan text says
    path = tmp_path / "moved.json"
    path.write_text(json.dumps(doc))
    store = str(tmp_path / "s.db")
    code, out, err = fairmark_cli("run", str(path), *RUN, "--store", store, "--json")
    assert code == 0, err  # warnings, not a refusal
    first_trial = err.index("[   1]")
    for line in (
        "this machine is not the one the bundle's run was made on",
        "os.release: 0.0.0-elsewhere in the bundle's run,",
        "cpu.model: Imaginary CPU 9000 in the bundle's run,",
        "toolchain.gcc.version: 0.1 in the bundle's run,",
        "variant 'sleep' command: the bundle's run had ['sleep', '0.02'], its plan text gives ['sleep', '0.01']",
    ):
        assert "warning: " + line in err, (line, err)
        assert err.index(line) < first_trial
    assert "toolchain.gcc.path" not in err  # the version stands for the tool
    rid = json.loads(out)["run"]["id"]
    # compare-runs, as always, refuses what can invalidate the comparison until it is named
    code, _, err = fairmark_cli("compare-runs", orig["run"]["id"], rid, "--store", store)
    assert code == 3 and "os.release" in err
    code, out, _ = fairmark_cli(
        "compare-runs", orig["run"]["id"], rid, "--store", store, "--because", "a reproduction elsewhere"
    )
    assert code == 0 and "on another machine" in out


def _damaged(bundle: Path, tmp_path: Path, damage) -> Path:
    doc = copy.deepcopy(json.loads(bundle.read_text()))
    damage(doc)
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc))
    return path


def _set(key: str, value):
    def damage(doc: dict) -> None:
        doc["tables"]["runs"][0][key] = value

    return damage


def _plan(old: str, new: str):
    def damage(doc: dict) -> None:
        run = doc["tables"]["runs"][0]
        run["plan_text"] = run["plan_text"].replace(old, new)

    return damage


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (
            lambda d: d["tables"]["runs"][0].pop("plan_text"),
            "tables.runs[0].plan_text: the bundle carries no plan",
        ),
        (_set("plan_text", "  \n"), "tables.runs[0].plan_text: the bundle carries no plan text"),
        (_set("seed", "42"), "tables.runs[0].seed: expected the run's seed (an integer), got str '42'"),
        (_set("options", []), "tables.runs[0].options: expected an object"),
        (lambda d: d.update(version=99), "bundle version 99/schema"),
        (lambda d: d.pop("format"), "not a fairmark bundle"),
        (_plan("min_trials = 3", 'min_trials = "three"'), "tables.runs[0].plan_text:4: run.min_trials"),
        (_plan('["true"]', '["no-such-program-26"]'), "executable 'no-such-program-26' not found"),
        (lambda d: d["tables"]["trials"][0].update(cell_id=999), "malformed bundle"),
        (lambda d: d["tables"]["samples"][0].update(value="fast"), "tables.samples.value"),
    ],
    ids=[
        "no-plan-text",
        "blank-plan-text",
        "seed",
        "options",
        "version",
        "format",
        "plan-key",
        "executable",
        "trial-cell",
        "sample-value",
    ],
)
def test_a_damaged_bundle_is_refused_naming_file_and_key_and_nothing_is_written(
    exported, tmp_path: Path, fairmark_cli, damage, expected: str
) -> None:
    _, bundle = exported
    path = _damaged(bundle, tmp_path, damage)
    store = tmp_path / "s.db"
    code, out, err = fairmark_cli("run", str(path), *RUN, "--store", str(store))
    assert code == 2, err
    assert str(path) in err and expected in err, err
    assert "Traceback" not in err and out == ""
    assert not store.exists() or Store.open(str(store)).list_runs() == []


def test_not_json_is_refused(tmp_path: Path, fairmark_cli) -> None:
    path = tmp_path / "cut.json"
    path.write_text('{"format": "fairmark-bundle", "tables": {"runs": [')
    code, _, err = fairmark_cli("run", str(path), *RUN, "--store", str(tmp_path / "s.db"))
    assert code == 2 and f"{path}: not JSON" in err


HOSTS = '\n[hosts.far]\nssh = "someone@192.0.2.1"\n'


def test_a_plan_on_the_authors_hosts_needs_them_named_here(exported, tmp_path: Path, fairmark_cli) -> None:
    _, bundle = exported

    def on_far(doc: dict) -> None:
        run = doc["tables"]["runs"][0]
        run["plan_text"] = run["plan_text"].replace('name = "sleep"', 'name = "sleep"\nhost = "far"') + HOSTS

    path = _damaged(bundle, tmp_path, on_far)
    store = tmp_path / "s.db"
    code, _, err = fairmark_cli("run", str(path), *RUN, "--store", str(store))
    assert code == 2 and "far (ssh someone@192.0.2.1)" in err and "--map-host NAME=DEST" in err, err
    code, _, err = fairmark_cli("run", str(path), *RUN, "--store", str(store), "--map-host", "near=x")
    assert code == 2 and "the bundle's plan has no [hosts.near] (it has: far)" in err
    code, out, err = fairmark_cli("run", str(path), "--dry-run", "--map-host", "far=root@10.9.9.9")
    assert code == 0, err
    assert "variant sleep runs on host far (ssh root@10.9.9.9)" in out
    assert not store.exists() or Store.open(str(store)).list_runs() == []


def test_map_host_is_for_bundles_only(tmp_path: Path, fairmark_cli) -> None:
    (tmp_path / "p.toml").write_text(PLAN)
    code, _, err = fairmark_cli("run", str(tmp_path / "p.toml"), "--map-host", "a=b", "--dry-run")
    assert code == 2 and "--map-host" in err


def test_boot_variants_need_a_host_named_here(exported, tmp_path: Path, fairmark_cli) -> None:
    _, bundle = exported
    boot = '\nboot = { kexec = { kernel = "/vmlinuz", append = "ro quiet" } }'

    def both(doc: dict) -> None:
        for name in ("true", "sleep"):
            _plan(f'name = "{name}"', f'name = "{name}"' + boot.replace("quiet", name))(doc)

    path = _damaged(bundle, tmp_path, both)
    code, _, err = fairmark_cli("run", str(path), *RUN, "--store", str(tmp_path / "s.db"))
    assert code == 2 and "boot variants (true, sleep)" in err and "--host DEST" in err, err
    assert Store.open(str(tmp_path / "s.db")).list_runs() == []


def test_a_refused_rerun_takes_back_the_import_it_came_with(exported, tmp_path: Path, fairmark_cli) -> None:
    _, bundle = exported
    store = tmp_path / "s.db"
    with HostLock({"plan": "other.toml", "run_id": "r-1"}):
        code, _, err = fairmark_cli("run", str(bundle), *RUN, "--store", str(store))
    assert code == 3, err
    assert Store.open(str(store)).list_runs() == []


def test_dry_run_of_a_bundle_writes_nothing(exported, tmp_path: Path, fairmark_cli) -> None:
    _, bundle = exported
    store = tmp_path / "s.db"
    code, out, err = fairmark_cli("run", str(bundle), "--dry-run", "--store", str(store))
    assert code == 0, err
    assert "w/sleep: sleep 0.01" in out and "w/true: true" in out
    assert not store.exists() or Store.open(str(store)).list_runs() == []


@pytest.mark.skipif(nethosts.available() is not None, reason=str(nethosts.available()))
def test_the_authors_host_mapped_to_one_here_runs_there(exported, tmp_path: Path, fairmark_cli) -> None:
    """A plan that ran on the author's [hosts.far]: --map-host far='-F CONFIG h1' runs it on a real sshd here
    (a network namespace), with ssh options that replace the author's."""
    _, bundle = exported

    def on_far(doc: dict) -> None:
        run = doc["tables"]["runs"][0]
        text = run["plan_text"].replace('name = "true"', 'name = "true"\nhost = "far"')
        run["plan_text"] = text.replace('name = "sleep"', 'name = "sleep"\nhost = "far"') + HOSTS
        run["plan_text"] += 'ssh_options = ["-p", "2222"]\n'

    path = _damaged(bundle, tmp_path, on_far)
    with nethosts.NetHosts(["h1"]) as net:
        dest = f"far=-F {net.ssh_config} h1"
        code, out, err = fairmark_cli(
            "run", str(path), *RUN, "--store", str(tmp_path / "s.db"), "--map-host", dest, "--json"
        )
    assert code == 0, err
    doc = json.loads(out)
    assert {t["host"] for c in doc["cells"] for t in c["trials"]} == {"far"}
    assert doc["run"]["options"]["hosts"]["far"]["ssh"] == "h1"
    assert doc["run"]["options"]["rerun_of"]["run_id"] == json.loads(bundle.read_text())["run_id"]


def test_where_a_rerun_runs_is_named_here() -> None:
    """Without a run: the placement rules of cli/_rerun.py on plans parsed from text."""
    from fairmark.cli._rerun import _place, parse_map_hosts
    from fairmark.errors import UsageError
    from fairmark.plan.load import parse_plan

    plan = parse_plan(PLAN)
    # a run made with --host (or one host of a fleet): here it runs on this machine unless told otherwise
    placed, notes = _place(plan, {"hosts": {"lab-3": {}}}, "b.json", host=None, map_hosts={})
    assert not placed.remote and notes == [
        "the bundle's run ran on host lab-3; this re-run runs on this machine (--host DEST runs it on a host)"
    ]
    placed, notes = _place(plan, {"hosts": {"lab-3": {}}}, "b.json", host="me@box", map_hosts={})
    assert {v.host for v in placed.variant} == {"me@box"} and notes == []
    assert parse_map_hosts(("far=-p 2222 me@box",)) == {"far": ("me@box", ["-p", "2222"])}
    for bad in ("far", "=x", "far=", "far=-p 2222", "far='unclosed"):
        with pytest.raises(UsageError, match="--map-host"):
            parse_map_hosts((bad,))
    with pytest.raises(UsageError, match="given twice"):
        parse_map_hosts(("far=a", "far=b"))
