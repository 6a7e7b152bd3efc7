"""boots = "auto" (issue 31 item 5, issue 36): a boot run looks after every A B B A block and stops when the
boot-level answer is decided — a difference, or equivalence within equivalence_pct — or at max_boots, with α spent
over the looks (stats.sequential). Everything of a boot run but the reboot, as in test_boots_local: each block is
entered as if its boot had just been verified; the trials' times come from the scheduler tests' seeded fake
executor, so that the answer is known."""

from __future__ import annotations

from pathlib import Path

import pytest

from doubles import MockExecutor as FakeExecutor
from fairmark.errors import PlanError
from fairmark.plan.load import LoadedPlan, load_plan, parse_plan
from fairmark.report.load import load_report
from fairmark.run.loop import bootrun
from fairmark.run.loop.runner import Runner, RunOptions
from fairmark.store.db import Store

CMDLINE = Path("/proc/cmdline").read_text().strip()
BOOT = f'boot = {{ command = "true", reboot = ["true"], timeout_s = 5, expect = {{ "os.cmdline" = "{CMDLINE}" }} }}'


def plan_text(extra: str = "") -> str:
    return (
        f'[run]\nboots = "auto"\nmin_boots = 2\nmax_boots = 6\nmin_trials = 3\nmax_trials = 9\n{extra}'
        '[[workload]]\nname = "w"\ncommand = ["true"]\n'
        f'[[variant]]\nname = "a"\nenv = {{ FAKE_VARIANT = "a" }}\n{BOOT}\n'
        f'[[variant]]\nname = "b"\nenv = {{ FAKE_VARIANT = "b" }}\n{BOOT}\n'
    )


def boot_run(tmp_path: Path, monkeypatch, fake: FakeExecutor, extra: str = ""):
    entered: list[str] = []

    def enter(self, block, rec):  # the machine: already in a verified boot of the block's variant, its own
        entered.append(block.variant)
        self.machine.boot_id = lambda: (
            f"boot-{block.index}"
        )  # what a reboot changes (the unit of the verdict)
        self.verified = self.machine.boot_id()

    monkeypatch.setattr(bootrun.BootRun, "_enter", enter)
    text = plan_text(extra)
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    run_id = Runner(
        LoadedPlan(parse_plan(text), "p.toml", text), store, RunOptions(probe=False), executor=fake
    ).start()
    report = load_report(store, run_id)
    (verdict,) = [v for v in report.verdicts if v.metric == "wall_s"]
    return entered, report, verdict


def test_a_clear_difference_stops_after_the_first_abba_block(tmp_path: Path, monkeypatch) -> None:
    entered, report, v = boot_run(tmp_path, monkeypatch, FakeExecutor({"a": 1.0, "b": 1.2}, sd=0.002))
    assert entered == ["a", "b", "b", "a"], "decided at the first look: no more boots"
    for cell in report.cells:
        assert cell.stop_reason.startswith("boots = 'auto': decided after 2 boots per variant × 3 trials")
        assert "b vs a different" in cell.stop_reason
    assert v.sentence.startswith("decided after 2 boots per variant: b is slower than a")
    assert v.comparison.sequential["decision"] == "different"
    assert v.comparison.design == "boots as the unit"


def test_the_same_kernel_twice_is_proven_equivalent(tmp_path: Path, monkeypatch) -> None:
    entered, report, v = boot_run(tmp_path, monkeypatch, FakeExecutor({"a": 1.0, "b": 1.0}, sd=0.0005))
    assert len(entered) in (4, 8)
    assert all("within ±2%" in c.stop_reason for c in report.cells)
    assert v.comparison.sequential["decision"] == "equivalent"
    assert v.sentence.startswith("equivalent within ±2% after")


def test_noise_no_boot_count_can_settle_runs_to_max_boots(tmp_path: Path, monkeypatch) -> None:
    entered, report, v = boot_run(tmp_path, monkeypatch, FakeExecutor({"a": 1.0, "b": 1.0}, sd=0.3))
    assert entered == ["a", "b", "b", "a"] * 3, "max_boots 6: three A B B A blocks"
    assert all(
        c.stop_reason.startswith("boots = 'auto': undecided after 6 boots per variant") for c in report.cells
    )
    assert v.sentence.startswith("undecided after 6 boots per variant")


def test_boots_auto_bounds_are_checked_with_the_line(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(plan_text().replace("max_boots = 6", "max_boots = 7"))
    with pytest.raises(PlanError, match="must be even"):
        load_plan(path)
    path.write_text(plan_text().replace('boots = "auto"', 'boots = "many"'))
    with pytest.raises(PlanError) as err:
        load_plan(path)
    assert err.value.line == 2 and "run.boots" in (err.value.key or "")
