"""Where a difference went across boots (issue 35 item 5): `compare-runs A1 A2 A3 --vs B1 B2 B3` takes each run
(a boot of its own) as the verdict's unit, and the per-function differences take it as theirs: each run's mean
CPU time per function is one observation, so the boot-to-boot variance is in every interval."""

from __future__ import annotations

import hashlib
import json
import random

from fairmark.plan.metric import MetricSpec
from fairmark.stats.attribution_diff import ProfiledTrial, compare_profiles, compare_units
from fairmark.store.records import CellRecord, Sample, TrialRecord
from test_report_fixture import open_store, store_now

PLAN = 'title = "boot"\n[[workload]]\nname = "w0"\ncommand = ["lz"]\n\n[[variant]]\nname = "k"\n'
STACKS = "lz;main;compress {c}\nlz;main;read;ksys_read_[k] {r}\n"


def _run(store, rng: random.Random, planted: bool, boot_shift: float) -> str:
    """One run, one boot: 6 measured trials and 4 profiled ones. `boot_shift`: this boot's own offset of
    compress's share (a boot-to-boot effect the trials of one boot cannot see)."""
    run_id = store.create_run(
        plan_path="plan.toml",
        plan_text=PLAN,
        plan_sha256=hashlib.sha256(PLAN.encode()).hexdigest(),
        title="boot",
        seed=1,
        host_id="h1",
        hostname="lab",
        status="done",
        command_line="fairmark run plan.toml --profile cpu",
        fairmark_version="0.1.0",
        accept_risk=False,
        options={"policy": {"confidence": 95.0, "baseline": "k"}},
        env_before={},
        env_after={},
        notes=[],
    )
    cell = CellRecord(
        key="w0|k|()",
        workload="w0",
        variant="k",
        point=(),
        primary_metric="wall_s",
        metrics=(MetricSpec("wall_s", "s", "lower"),),
        status="done",
        stop_reason="max_trials",
        command=("lz",),
    )
    cid = store.ensure_cells(run_id, [cell])[cell.key]
    boot = f"boot-{run_id[:8]}"
    for r in range(10):
        profiled = r >= 6
        wall = rng.gauss(1.2 if planted else 1.0, 0.005)
        t = TrialRecord(
            run_id=run_id,
            cell_id=cid,
            seq=r,
            round=r,
            warmup=profiled,
            profiled=profiled,
            status="ok",
            started_at=store_now(),
            wall_s=wall,
            user_s=0.9 * wall,
            sys_s=0.1 * wall,
            argv=cell.command,
            boot_id=boot,
        )
        samples = [] if profiled else [Sample(t.id, cid, "wall_s", wall, "s", "lower")]
        arts = []
        if profiled:
            c = int(900 * (1 + boot_shift)) + rng.randint(-5, 5)
            text = STACKS.format(c=c, r=100 + rng.randint(-5, 5))
            text += f"lz;main;extra_work {200 + rng.randint(-5, 5)}\n" if planted else ""
            arts.append(
                {
                    "cell_key": cell.key,
                    "kind": "profile.cpu",
                    "name": "folded",
                    "content_type": "text/plain",
                    "data": None,
                    "text": text,
                }
            )
        store.add_trial(t, samples, arts)
    return run_id


def test_compare_units_takes_the_boot_as_its_unit() -> None:
    """A boot-to-boot effect on compress (each boot its own share) is claimed when the trials are pooled as if
    independent, and not when the boot is the unit; the planted function is claimed either way."""
    rng = random.Random(5)

    def trial(shift: float, planted: bool, r: int) -> ProfiledTrial:
        c = int(900 * (1 + shift)) + rng.randint(-5, 5)
        x = 200 + rng.randint(-5, 5) if planted else 0
        folded = STACKS.format(c=c, r=100) + (f"lz;main;extra_work {x}\n" if planted else "")
        return ProfiledTrial(r, folded, (c + 100 + x) / 1000)  # 1 ms of CPU a sample

    def unit(shift: float, planted: bool, k: int) -> list[ProfiledTrial]:
        return [trial(shift, planted, 100 * k + r) for r in range(20)]

    a = [unit(s, False, k) for k, s in enumerate((0.0, 0.04, -0.02))]
    b = [unit(s, True, 10 + k) for k, s in enumerate((0.05, 0.0, 0.03))]  # other rounds
    d = compare_units(a, b)
    assert d is not None and d.design == "units" and (d.n_a, d.n_b) == (3, 3)
    assert [f.function for f in d.claimed("self")] == ["extra_work"]
    pooled = compare_profiles([t for u in a for t in u], [t for u in b for t in u])
    assert pooled is not None and pooled.design == "welch"
    assert "compress" in [f.function for f in pooled.claimed("self")]  # the boots' effect, taken for B's
    assert compare_units(a[:1], b) is None  # one boot a side: no boot-to-boot variance known


def test_compare_runs_across_boots_says_where_it_went(tmp_path, fairmark_cli) -> None:
    store = open_store(tmp_path / "x.db")
    rng = random.Random(7)
    a = [_run(store, rng, False, s) for s in (-0.04, 0.0, 0.04)]
    b = [_run(store, rng, True, s) for s in (0.03, -0.03, 0.0)]
    db = f"sqlite:///{tmp_path / 'x.db'}"
    code, out, err = fairmark_cli(
        "compare-runs", *a, "--vs", *b, "--because", "kernel", "--store", db, "--json"
    )
    assert code == 0, err
    (e,) = json.loads(out)["explain"]
    assert e["design"] == "units" and e["units"] == [3, 3]
    top = e["functions"][0]
    assert (top["function"], top["mode"], top["claimed"]) == ("extra_work", "self", True)
    assert e["where"].startswith("+") and "in `extra_work`" in e["where"]
    code, out, err = fairmark_cli("compare-runs", *a, "--vs", *b, "--because", "kernel", "--store", db)
    assert code == 0, err
    flat = " ".join(out.split())
    assert "where it went (w0, boots as the unit): +" in flat
    assert "3 + 3 boots (runs) as the unit" in flat
