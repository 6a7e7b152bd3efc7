"""Boot runs take CPU-profiled trials in every boot, and where the difference went takes the boot as its unit
(issue 35 item 5): everything of a boot run but the reboot, as in tests/test_boots_auto.py — each block is
entered as if its boot had just been verified, under a boot id of its own — with the real trials of a C program
(frame pointers on) whose B variant calls an extra function, profiled by the real perf.

What makes it hold at any load: the planted function doubles the CPU time (a difference no load hides at 4 boots
a side), and the test asserts which function is named and where the profiled trials ran, never a figure."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fairmark.plan.load import LoadedPlan, parse_plan
from fairmark.report.explain import explanations, profiled_boots
from fairmark.report.load import load_report
from fairmark.run.loop import bootrun
from fairmark.run.loop.runner import Runner, RunOptions
from fairmark.run.profiles import hooks_for
from fairmark.store.db import Store
from helpers import build_planted

pytestmark = pytest.mark.machine("perf")  # perf: one at a time under xdist (tests/conftest.py)


CMDLINE = Path("/proc/cmdline").read_text().strip()
BOOT = f'boot = {{ command = "true", reboot = ["true"], timeout_s = 5, expect = {{ "os.cmdline" = "{CMDLINE}" }} }}'
BOOTS, PROFILED = 4, 2


def plan_text(exe: Path) -> str:
    return (
        f"[run]\nboots = {BOOTS}\nwarmup = 1\nmin_trials = 3\nmax_trials = 12\nprofiled_trials = {PROFILED}\n"
        f'[[workload]]\nname = "planted"\ncommand = ["{exe}", "40000000"]\nmetrics = [{{ name = "cpu_s" }}]\n'
        f'[[variant]]\nname = "A"\n{BOOT}\n'
        f'[[variant]]\nname = "B"\nenv = {{ PLANT = "1" }}\n{BOOT}\n'
    )


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_every_boot_is_profiled_and_the_boot_is_the_unit(tmp_path: Path, monkeypatch) -> None:
    hooks = hooks_for(["cpu"])
    if any(h.unavailable for h in hooks) or shutil.which("cc") is None:
        pytest.skip("; ".join(h.unavailable or "" for h in hooks) or "no C compiler")
    exe = build_planted(tmp_path)

    def enter(self, block, rec):  # the machine: already in a verified boot of the block's variant, its own
        self.machine.boot_id = lambda: f"boot-{block.index}"  # what a reboot changes
        self.verified = self.machine.boot_id()

    monkeypatch.setattr(bootrun.BootRun, "_enter", enter)
    text = plan_text(exe)
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    options = RunOptions(probe=False, accept_risk=True, allow_concurrent=True, hooks=hooks)
    run_id = Runner(LoadedPlan(parse_plan(text), "p.toml", text), store, options).start()

    report = load_report(store, run_id)
    for cell in report.cells:
        profiled = [t for t in cell.trials if t.profiled]
        assert all(t.status == "ok" for t in profiled), [t.error for t in profiled]
        # PROFILED in each of the variant's boots, after its measured trials there, in the same boot
        boots = [t.boot_id for t in cell.trials if not t.warmup]
        assert len(set(boots)) == BOOTS
        assert sorted(t.boot_id or "" for t in profiled) == sorted(
            b for b in set(boots) for _ in range(PROFILED)
        )
        units = profiled_boots(report, cell)
        assert sorted(len(u) for u in units) == [PROFILED] * BOOTS
    (e,) = explanations(report)
    assert e["verdict"].comparison.design == "boots as the unit"
    d = e["diff"]
    assert d.design == "units" and (d.n_a, d.n_b) == (BOOTS, BOOTS)
    top = d.claimed("self")[0]
    assert (top.function, top.space) == ("planted_extra", "user") and top.low_s > 0
    assert "ms per trial in `planted_extra`" in e["sentence"].split(": ", 1)[1].split(";")[0], e["sentence"]
