"""Screens that said something wrong or inconsistent (issue 34, "every screen right"), found after its second
round: one test (or more) per screen, each failing on the code before it (main at 8b769dd)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest


def _calibration(mde: float, scale: str | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "runs": 2,
        "false_positives": 0,
        "false_positive_rate": 0.0,
        "false_positive_ci": [0.0, 0.84],
        "alpha": 0.05,
        "mde_percent": mde,
        "trials_per_side": [3, 3],
    }
    return data | ({"scale": scale} if scale else {})


def test_calibrate_says_a_log_scale_detectable_change_as_a_fall_or_a_rise() -> None:
    """`fairmark calibrate` printed "detects ±90%" for a wall_s calibration (log scale): a factor of 1.9 either
    way is +90% or -47% (100·90/190 = 47.4), as the run's own verdicts say it."""
    from fairmark.cli.calibrate import _line

    row = {"group": "spin", "metric": "wall_s", "data": _calibration(90.0, "log")}
    assert "detects -47% or +90% with 80% power" in _line(row)
    raw = {"group": "spin", "metric": "ratio", "data": _calibration(90.0, "raw")}
    assert "detects ±90% with 80% power" in _line(raw)  # a difference on the raw scale is symmetric
    old = {"group": "spin", "metric": "wall_s", "data": _calibration(90.0, None)}
    assert "detects ±90% with 80% power" in _line(old)  # stored before the scale was: not guessed


def test_calibration_summary_keeps_the_verdicts_scale() -> None:
    from fairmark.stats.calibration import summarize

    comps = [
        {"significant": False, "mde_percent": m, "scale": "log", "n_baseline": 3, "n_other": 3}
        for m in (5, 9)
    ]
    assert summarize(comps, confidence=95)["scale"] == "log"
    comps[0]["scale"] = "raw"
    assert summarize(comps, confidence=95)["scale"] == "raw"


def test_a_verdicts_calibration_clause_says_the_fall_and_the_rise() -> None:
    """A run's verdict quoted the calibration as "changes beyond ±500%" beside its own "-70% or +220%"; a rise of
    +500% is a fall of 100·500/600 = -83%, two significant digits as the verdict's own detectable change."""
    from fairmark.verdict.compare import _calibration_clause

    clause = _calibration_clause(_calibration(500.0, "log"))
    assert "this machine shows changes beyond -83% or +500% for this workload" in clause, clause


def test_the_decision_stops_first_table_names_its_columns_as_the_text_does() -> None:
    """docs/statistics.md, "Stopping when decided": the first table's last column was relabelled "the paired t
    alone (superseded by the switch …)" while the paragraph above still introduced its figures as "after"."""
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "statistics.md").read_text()
    intro, table = text.split("## Stopping when decided", 1)[1].split("\n| case |", 1)
    columns = [c.split(": rate")[0].strip() for c in table.split("\n", 1)[0].strip(" |").split("|")[1:]]
    labels = [c.split(" (superseded")[0] for c in columns]
    assert labels == ["before (precision)", "before (decision)", "the paired t alone"], columns
    assert '"after"' not in intro and all(f'"{label}"' in intro for label in labels)


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client (ssh -G)")
def test_a_host_reached_through_loopback_runs_on_this_machine(tmp_path: Path) -> None:
    """A QEMU guest behind a forwarded port (tests/qemuguest.py: root@127.0.0.1 -p PORT), or an alias to it."""
    from fairmark.remote.connection import HostSpec, reaches_this_machine

    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        "Host guest\n  HostName 127.0.0.1\n  Port 2222\nHost far\n  HostName 192.0.2.7\n"
        "Host jumped\n  HostName 127.0.0.1\n  ProxyJump bastion\n"
    )
    f = ("-F", str(cfg))
    assert reaches_this_machine(HostSpec("g", "root@127.0.0.1", (*f, "-p", "2222")))
    assert reaches_this_machine(HostSpec("g", "guest", f))
    assert reaches_this_machine(HostSpec("g", "root@localhost", f))
    assert reaches_this_machine(HostSpec("g", "root@::1", f))
    assert not reaches_this_machine(HostSpec("g", "far", f))
    assert not reaches_this_machine(HostSpec("g", "jumped", f))  # the loopback of the jump host, not this one


# A QEMU boots run (2 vs 2 boots of a TCG guest, 1 CPU) with this VM at load 15-20: the headline quoted the
# guest's own load, which does not see the work competing for the guest's CPU here.
THIS = {"load": {"loadavg": [15.2, 17.0, 14.1]}, "threads": 2}
GUEST = {"finding_id": "load", "evidence": "host guest: load average 0.70 0.19 0.06 on 1 CPUs"}


def test_a_guests_busy_headline_says_this_machines_load_and_the_guests() -> None:
    from fairmark.report.busy import busy_headline
    from fairmark.run.loop.gate import competing_here

    found = competing_here(["guest"], THIS)
    here = "this machine (host guest runs on it): load average 15.20 17.00 14.10 on 2 CPUs"
    assert [(f["id"], f["evidence"]) for f in found] == [("load", here)]
    assert competing_here([], THIS) == []  # no host runs here: the hosts' own loads are what competes
    # the gate stores this machine's findings first, then each host's (run.loop.gate.Gate._check_hosts)
    rows = [{"finding_id": f["id"], "evidence": f["evidence"]} for f in found] + [GUEST]
    line = busy_headline(SimpleNamespace(findings=rows, cells=[], verdicts=[]), {})  # type: ignore[arg-type]
    assert line is not None and line.startswith(f"busy machine: {here}; {GUEST['evidence']}. "), line


def test_between_rounds_this_machine_is_watched_for_a_guest_and_named() -> None:
    from fairmark.run.loop.gate import VolatileWatch

    stored: list[dict[str, Any]] = []
    store = SimpleNamespace(
        add_artifact=lambda *a, **k: None, add_findings=lambda _r, _p, rows: stored.extend(rows)
    )
    guest = SimpleNamespace(snapshot=dict)
    hosts = SimpleNamespace(
        variant_host={"a": "guest", "b": "guest"}, here=["guest"], remote={"guest": guest}
    )
    watch = VolatileWatch(enabled=True)
    watch.follow(hosts)
    assert not watch.local and watch.here == ["guest"]  # before: only the guest was watched
    notes: list[str] = []
    watch._judge(store, "r", notes.append, None, THIS, None)  # type: ignore[arg-type]
    said = "this machine (host guest runs on it): load average 15.20 17.00 14.10 on 2 CPUs"
    assert notes == [f"between rounds: The host is not idle: {said}"], notes
    assert [f["evidence"] for f in stored] == [said]
    # what does not compete with the guest (this machine's THP) is not said for it
    stored.clear()
    watch._judge(store, "r", notes.append, None, {"thp": "always"}, {"thp": "never"})  # type: ignore[arg-type]
    assert stored == [], stored


def _boots(store: Any, run: str, workload: str, variant: str, metric: str) -> list[np.ndarray]:
    """Each boot's logarithms of a cell's metric, from the stored trials."""
    (cell,) = [c for c in store.cells(run) if c.workload == workload and c.variant == variant]
    trials = {t.id: t.boot_id for t in store.trials(run) if t.cell_id == cell.id and not t.warmup}
    by: dict[str, list[float]] = {}
    for s in store.samples(run):
        if s.trial_id in trials and s.metric == metric:
            by.setdefault(trials[s.trial_id], []).append(s.value)
    return [np.log(v) for v in by.values()]


def test_compare_runs_vs_interval_and_detectable_change_share_one_spread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fairmark_cli: Any
) -> None:
    """The golden `compare-runs A1 A2 --vs B1 B2` (tests/screens_store.py): crypto/nodebug's interval and its
    detectable change are both Welch's t on the boot means (Satterthwaite's df 1.0005) at the level α′ that keeps
    5% with 2 vs 2 boots (stats.levels.small_alpha), its se widened ×1.45 for drift; the screen's df is the one
    whose 95% quantile is that t. The change is large because its 80% power is averaged over the true spread,
    which one df leaves nearly unknown (stats.power). Checked here against scipy and a Monte Carlo."""
    import json

    from scipy import stats

    import screens_store as fx
    from fairmark.stats.levels import small_alpha
    from fairmark.stats.power import mde_factor
    from fairmark.store.db import Store

    db = tmp_path / "s.db"
    fx.build(db)
    monkeypatch.setenv("FAIRMARK_STORE", str(db))
    sides = [r[:8] for r in fx.RUN_IDS[3:5]], [r[:8] for r in fx.RUN_IDS[5:7]]
    code, out, err = fairmark_cli("compare-runs", *sides[0], "--vs", *sides[1], "--json")
    assert code == 0, err
    (c,) = [
        x
        for x in json.loads(out)["comparisons"]
        if (x["workload"], x["variant"], x["metric"]) == ("crypto", "nodebug", "bytes_s")
    ]
    store = Store.open(str(db))
    a = [m for r in fx.RUN_IDS[3:5] for m in _boots(store, r, "crypto", "nodebug", "bytes_s")]
    b = [m for r in fx.RUN_IDS[5:7] for m in _boots(store, r, "crypto", "nodebug", "bytes_s")]
    ma, mb = np.array([g.mean() for g in a]), np.array([g.mean() for g in b])
    welch = stats.ttest_ind(mb, ma, equal_var=False)
    va, vb = ma.var(ddof=1) / ma.size, mb.var(ddof=1) / mb.size
    df = (va + vb) ** 2 / (va**2 / (ma.size - 1) + vb**2 / (mb.size - 1))
    assert df == pytest.approx(1.0005, abs=1e-4)
    alpha = small_alpha(2, 2)
    t = stats.t.ppf(1 - alpha / 2, df)
    assert stats.t.ppf(0.975, c["df"]) == pytest.approx(t, rel=1e-6) and c["df"] < df
    low, high = math.log(c["ratio_ci_low"]), math.log(c["ratio_ci_high"])
    assert (low + high) / 2 == pytest.approx(mb.mean() - ma.mean(), abs=1e-12)  # centred on Welch's estimate
    se = (high - low) / (2 * t)
    assert se / math.sqrt(va + vb) == pytest.approx(1.45, abs=0.005)  # the widening the screen prints
    assert welch.statistic == pytest.approx((mb.mean() - ma.mean()) / math.sqrt(va + vb))
    level = 100 * (1 - alpha)
    assert c["mde_percent"] == pytest.approx(100 * math.expm1(mde_factor(df, level) * se), rel=1e-9)  # one se
    # the factor, independently: a repeat at the change c·s, σ = s/√u with u ~ χ²(df)/df, rejects 80% of the time
    rng = np.random.default_rng(7)
    u, v, z = rng.chisquare(df, 400_000) / df, rng.chisquare(df, 400_000) / df, rng.standard_normal(400_000)
    sigma = 1 / np.sqrt(u)
    power = np.mean(np.abs((mde_factor(df, level) + sigma * z) / (sigma * np.sqrt(v))) > t)
    assert power == pytest.approx(0.80, abs=0.005)
    assert "-39% to +60%" in c["sentence"] and "would detect a change of -77% or +340%" in c["sentence"]
    assert "interval and detectable change on df 0.9;" in c["sentence"]


def test_boots_as_the_unit_is_welch_and_the_pooled_t_on_the_boot_means() -> None:
    """stats.levels.unit_test with unequal between-boot spreads (side A's boots vary 10 times B's): its verdict
    needs both parts, Welch's t on the boot means (each side's own spread, Satterthwaite's df) and the nested
    model (σ_unit pooled: with equal trials per boot, the pooled t on the boot means). Hand-checked with scipy:
    its p is the larger of the two, its interval the union; Welch's part at 2 vs 6 boots at the level α′ of
    stats.levels.small_alpha (its df the one whose 95% quantile is Satterthwaite's t at α′). The pooling is the
    guard Welch's df needs at 2 vs 6 boots of equal spread, not the verdict's model of unequal ones
    (bench/boots_unequal.py)."""
    from scipy import stats

    from fairmark.stats.levels import levels, small_alpha, unit_test

    rng = np.random.default_rng(3)
    offsets = {"a": [0.06, -0.05], "b": [0.004, -0.003, 0.006, 0.001, -0.002, 0.0]}
    values: dict[str, list[float]] = {"a": [], "b": []}
    units: dict[str, list[str]] = {"a": [], "b": []}
    for s, offs in offsets.items():
        for i, off in enumerate(offs):
            values[s] += list(np.exp(1.0 + off + rng.normal(0.0, 0.01, 8)))
            units[s] += [f"{s}{i}"] * 8
    lv = levels(np.array(values["a"]), units["a"], np.array(values["b"]), units["b"])
    test = unit_test(lv, confidence=95.0)
    assert test is not None and test.parts == "Welch and the nested model"
    xa = np.array([np.log(g).mean() for g in lv.groups_baseline])
    xb = np.array([np.log(g).mean() for g in lv.groups_other])
    welch, pooled = (stats.ttest_ind(xb, xa, equal_var=e) for e in (False, True))
    assert stats.t.ppf(0.975, test.df) == pytest.approx(
        stats.t.ppf(1 - small_alpha(2, 6) / 2, welch.df), rel=1e-6
    )
    welch_p = 2 * stats.t.sf(abs(welch.statistic), test.df)  # Welch's t on the corrected df
    assert test.p_value == pytest.approx(max(welch_p, pooled.pvalue), rel=1e-9)
    assert test.p_value == pytest.approx(welch_p, rel=1e-9)  # the spreads differ: Welch's part decides
    ci = [welch.confidence_interval(0.95 + 0.05 - small_alpha(2, 6)), pooled.confidence_interval(0.95)]
    assert test.ratio_ci_low == pytest.approx(math.exp(min(c.low for c in ci)), rel=1e-9)
    assert test.ratio_ci_high == pytest.approx(math.exp(max(c.high for c in ci)), rel=1e-9)
