"""`fairmark compare-runs`: environment differences first, refusal (exit 3) unless --because/--declare,
matching cells, verdicts from fairmark.stats.compare. One real run is made; the others are copies of it in the
store with a changed environment, variant name or scaled values, so the expected verdicts are known exactly."""

from __future__ import annotations

import copy
import json
import uuid
from dataclasses import replace

import pytest

from fairmark.store import schema as S
from fairmark.store.db import Store
from helpers import PYTHON_TOML, fairmark_subprocess

PLAN = """
[run]
warmup = 0
min_trials = 3
max_trials = 3

[[workload]]
name = "spin"
command = [PYTHON, "-c", "sum(range(200_000))"]
""".replace("PYTHON", PYTHON_TOML)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(store URL, run id) of one real run with its environment snapshot."""
    d = tmp_path_factory.mktemp("compare-runs")
    (d / "plan.toml").write_text(PLAN)
    url = f"sqlite:///{d / 'x.db'}"
    res = fairmark_subprocess(
        "run",
        str(d / "plan.toml"),
        "--store",
        url,
        "--json",
        "--no-monitors",
        "--accept-risk",
        "--allow-concurrent",
        env={"FAIRMARK_LOCK_PATH": str(d / "lock")},
    )
    assert res.returncode == 0, res.stderr
    return url, json.loads(res.stdout)["run"]["id"]


def clone(
    url: str, src: str, *, factor=1.0, variant=None, env_patch=None, run_patch=None, wall_s=None, boot_id=None
) -> str:
    """A copy of run `src` in the store: values × factor (wall_s replaced by the given values, in trial order,
    for verdicts that do not depend on this machine's noise), cells renamed to `variant`, env_before patched."""
    store, new = Store.open(url), str(uuid.uuid4())
    run = store.export_rows(S.runs, src)[0] | {"id": new} | (run_patch or {})
    if env_patch:
        run["env_before"] = copy.deepcopy(run["env_before"])
        env_patch(run["env_before"])
    store.insert_rows({S.runs: [run]})
    cell_ids = {}
    for c in store.cells(src):
        if variant:
            c = replace(c, variant=variant, key=c.key.replace(f"/{c.variant}", f"/{variant}"))
        cell_ids[c.id] = store.ensure_cells(new, [c])[c.key]
    trial_ids = {}
    for t in store.trials(src):
        trial_ids[t.id] = str(uuid.uuid4())
        store.add_trial(
            replace(
                t, id=trial_ids[t.id], run_id=new, cell_id=cell_ids[t.cell_id], boot_id=boot_id or t.boot_id
            )
        )
    walls = iter(wall_s or [])
    samples = []
    for s in store.samples(src):
        value = next(walls) if wall_s and s.metric == "wall_s" else s.value
        samples.append(
            replace(s, cell_id=cell_ids[s.cell_id], trial_id=trial_ids[s.trial_id], value=value * factor)
        )
    store.insert_rows({S.samples: [s.row(new) for s in samples]})
    return new


@pytest.fixture
def compare_runs(fairmark_cli):
    """In process (fast): compare_runs(url, *args) → (exit code, stdout, stderr)."""
    return lambda url, *args: fairmark_cli("compare-runs", *args, "--store", url)


def other_kernel(env: dict) -> None:
    env["os"]["kernel"] = "6.1.0-debug+INVARIANTS"


@pytest.mark.slow
def test_same_environment_shows_the_difference_of_two_runs_without_a_claim(real_run, compare_runs):
    """Two runs are not interleaved: whatever changed between them is in the difference, so one run per side
    shows the difference with its within-run interval, labelled as such, and claims nothing (issue 23 item 3)."""
    url, a = real_run
    a = clone(url, a, wall_s=[1.0, 1.01, 0.99])
    b = clone(url, a, factor=1.5)  # every value 50% larger: wall_s, lower is better
    code, out, err = compare_runs(url, a[:8], b[:8], "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["environment"]["findings"] == [] and doc["because"] is None
    (row,) = doc["comparisons"]  # default: the primary metric of each cell
    assert row["metric"] == "wall_s" and row["workload"] == "spin"
    assert row["percent"] == pytest.approx(50) and not row["significant"] and row["change"] == "none"
    assert row["design"] == "one run per side" and row["claim"] is False
    assert "no difference claimed: the sides are different runs" in row["sentence"]
    assert row["levels"]["within_lower_bound"]["significant"]  # what the trials alone would have "proven"


def test_runs_as_the_unit_find_a_known_slowdown(real_run, compare_runs):
    url, src = real_run
    a = [clone(url, src, wall_s=w) for w in ([1.0, 1.01, 0.99], [1.005, 0.995, 1.0], [0.99, 1.0, 1.01])]
    b = [
        clone(url, src, factor=1.5, wall_s=w)
        for w in ([1.0, 1.01, 0.99], [1.01, 1.0, 0.995], [1.0, 0.99, 1.0])
    ]
    doc = json.loads(compare_runs(url, *a, "--vs", *b, "--json")[1])
    (row,) = doc["comparisons"]
    assert row["design"] == "runs as the unit" and row["significant"] and row["change"] == "worse"
    assert row["levels"]["levels"][0]["n_baseline"] == 3 and row["levels"]["levels"][0]["n_other"] == 3


def test_undeclared_kernel_difference_is_refused_with_exit_3(real_run, compare_runs):
    url, a = real_run
    b = clone(url, a, env_patch=other_kernel)
    code, out, err = compare_runs(url, a, b)
    assert code == 3
    assert "os.kernel" in err and "--because" in err
    assert "6.1.0-debug+INVARIANTS" in out  # the differences were shown before refusing


def test_because_names_the_intended_difference(real_run, compare_runs):
    url, a = real_run
    a = clone(url, a, wall_s=[1.0, 1.01, 0.99])
    b = clone(url, a, factor=1.3, env_patch=other_kernel)
    code, out, err = compare_runs(url, a, b, "--because", "kernel debug options")
    assert code == 0, err
    assert out.index("differences between the runs") < out.index("A = ")  # environment first
    assert "kernel debug options" in out and "claimed" in out  # the table may fold "no difference claimed"
    assert "wall_s in s" in out and "1.000 ± 0.025" in out  # means rounded to the digits their CI supports
    doc = json.loads(compare_runs(url, a, b, "--because", "kernel debug options", "--json")[1])
    assert doc["because"] == "kernel debug options" and doc["environment"]["accepted"]
    assert doc["comparisons"][0]["percent"] == pytest.approx(30) and doc["comparisons"][0]["change"] == "none"


def test_declare_key_is_enough_without_because(real_run, compare_runs):
    url, a = real_run
    b = clone(url, a, env_patch=other_kernel)
    code, out, err = compare_runs(url, a, b, "--declare", "os.kernel", "--json")
    assert code == 0, err
    assert json.loads(out)["environment"]["findings"] == []


def test_runs_with_one_variant_each_match_across_names_and_all_metrics(real_run, compare_runs):
    url, a = real_run
    b = clone(url, a, variant="nodebug")
    doc = json.loads(compare_runs(url, a, b, "--all-metrics", "--json")[1])
    metrics = {r["metric"] for r in doc["comparisons"]}
    assert doc["only_in"] == {"a": [], "b": []}
    assert {"wall_s", "user_s", "sys_s"} <= metrics
    assert all(not r["significant"] for r in doc["comparisons"])  # identical values: no difference
    assert all(0 <= r["q_value"] <= 1 for r in doc["comparisons"] if r["q_value"] is not None)


def test_bad_references_are_usage_errors(real_run, compare_runs):
    url, a = real_run
    assert compare_runs(url, a, a)[0] == 2
    code, _, err = compare_runs(url, a, "ffffffff")
    assert code == 2 and "ffffffff" in err
    code, _, err = compare_runs(url, a, clone(url, a), "--metric", "no_such_metric")
    assert code == 2 and "no_such_metric" in err


def test_missing_snapshot_needs_because(real_run, compare_runs):
    url, a = real_run
    b = clone(url, a)
    Store.open(url).update_run(b, env_before=None)
    assert compare_runs(url, a, b)[0] == 3
    assert compare_runs(url, a, b, "--because", "other machine, no probe")[0] == 0


def test_different_plan_or_scale_is_refused_unless_declared(real_run, compare_runs):
    url, a = real_run
    b = clone(url, a, run_patch={"plan_sha256": "f" * 64})
    code, _, err = compare_runs(url, a, b)
    assert code == 3 and "plan.sha256" in err
    assert compare_runs(url, a, b, "--declare", "plan")[0] == 0
    quick = clone(url, a, run_patch={"options": {"quick": True}})
    code, _, err = compare_runs(url, a, quick)
    assert code == 3 and "run.quick" in err


# -- boots as a level (issue 14) --------------------------------------------------------------------------------
def test_every_trial_records_this_machines_boot(real_run):
    url, a = real_run
    with open("/proc/sys/kernel/random/boot_id") as fh:
        boot = fh.read().strip()
    assert {t["boot_id"] for t in Store.open(url).export_rows(S.trials, a)} == {boot}


def boots(url, src, means, kernel):
    """One run per boot: wall_s of 3 trials around each mean (±0.1%), its own boot_id, `kernel` in its env."""
    return [
        clone(
            url,
            src,
            wall_s=[m * 0.999, m, m * 1.001],
            boot_id=f"boot-{kernel}-{i}",
            env_patch=lambda env: env["os"].__setitem__("kernel", kernel),
        )
        for i, m in enumerate(means)
    ]


def test_vs_takes_the_boot_as_the_unit_and_reports_each_level(real_run, compare_runs):
    url, src = real_run
    # Boot offsets of ±3% with 0.1% noise within a boot, and no kernel effect: trials pooled across boots see a
    # "difference"; with the boot as the unit there is none.
    a = boots(url, src, [1.00, 1.06], "k-a")
    b = boots(url, src, [1.03, 1.05], "k-b")
    code, out, err = compare_runs(url, *a, "--vs", *b, "--declare", "os.kernel", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["runs_a"] == a and doc["runs_b"] == b
    (row,) = doc["comparisons"]
    assert row["design"] == "boots as the unit" and not row["significant"] and row["change"] == "none"
    boot, trial = row["levels"]["levels"]
    assert (boot["level"], boot["n"], boot["n_baseline"], boot["n_other"]) == ("boot", 4, 2, 2)
    split = boot["split_baseline"]  # each side's, on the test's scale (logarithms)
    assert row["levels"]["scale"] == "log" and boot["means_baseline"] == pytest.approx([1.0, 1.06])
    assert split["sd"] > 0.01 and split["sd_trial"] < 0.002 and (trial["level"], trial["n"]) == ("trial", 12)
    assert row["levels"]["advice"]["next"] == "more boots"
    code, out, _ = compare_runs(url, *a, "--vs", *b, "--declare", "os.kernel")
    assert code == 0 and "boot means" in out and "between-boot sd" in out and "within-boot sd" in out


def test_one_boot_per_side_claims_no_kernel_difference(real_run, compare_runs):
    url, src = real_run
    a, b = boots(url, src, [1.00], "k-a"), boots(url, src, [1.014], "k-b")
    doc = json.loads(compare_runs(url, *a, "--vs", *b, "--declare", "os.kernel", "--json")[1])
    (row,) = doc["comparisons"]
    assert not row["significant"] and row["p_value"] is None and row["design"] == "one boot per side"
    assert "boot-to-boot variance is unknown" in row["sentence"] and "lower bound" in row["sentence"]
    assert row["levels"]["within_lower_bound"][
        "significant"
    ]  # what the old pooled verdict would have claimed
    # The two-run form takes the same path once the trials know their (different) boots.
    assert not json.loads(compare_runs(url, a[0], b[0], "--declare", "os.kernel", "--json")[1])[
        "comparisons"
    ][0]["significant"]


def test_vs_usage_errors(real_run, compare_runs):
    url, a = real_run
    assert compare_runs(url, a, "--vs")[0] == 2
    assert compare_runs(url, a, "--vs", a)[0] == 2
    assert compare_runs(url, a, a, a)[0] == 2


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_two_back_to_back_aa_runs_of_the_quick_plan_make_no_claim(tmp_path):
    """The issue's case: two A/A runs of plans/quick.toml (--quick) one after the other in one boot, compared with
    compare-runs, said "−19% (−31% to −5%)": the trials of separate runs were pooled as if interleaved. Now
    each verdict says the runs differ and claims nothing."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    env = {"FAIRMARK_LOCK_PATH": str(tmp_path / "lock")}
    ids = []
    for _ in range(2):
        res = fairmark_subprocess(
            "run",
            "plans/quick.toml",
            "--quick",
            "--store",
            url,
            "--json",
            "--no-monitors",
            "--accept-risk",
            "--allow-concurrent",
            env=env,
            timeout=900,
        )
        assert res.returncode == 0, res.stderr
        ids.append(json.loads(res.stdout)["run"]["id"])
    res = fairmark_subprocess("compare-runs", *ids, "--all-metrics", "--store", url, "--json", env=env)
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["comparisons"]
    assert rows and all(not r["significant"] and r["change"] == "none" for r in rows)
    assert all(r["design"] == "one run per side" or "no variation" in r["sentence"] for r in rows)
    assert any("the sides are different runs" in r["sentence"] for r in rows)
