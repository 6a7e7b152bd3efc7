"""Boot variants in local mode (issue 14 part 3): `fairmark run` on the machine it reboots. This machine is never
rebooted: the boot hook goes into a sysroot ($FAIRMARK_BOOTHOOK_ROOT) and the plan's reboot command is `true`,
so the code path runs up to the reboot and the tests check what it leaves behind — the hook while it waits for
the shutdown, nothing once the run ends, and nothing after the next fairmark command when it is killed. ~10 s."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fairmark.store.db import Store
from helpers import REPO, wait_until

UNIT = "etc/systemd/system/fairmark-resume.service"


def cmdline() -> str:
    return Path("/proc/cmdline").read_text().strip()


def plan(tmp_path: Path, timeout_s: float) -> str:
    boot = (
        f'boot = {{ command = "true", reboot = ["true"], timeout_s = {timeout_s}, '
        f'expect = {{ "os.cmdline" = "{cmdline()}" }} }}'
    )
    text = (
        '[run]\nboots = 1\nmin_trials = 3\nmax_trials = 3\n[[workload]]\nname = "w"\ncommand = ["true"]\n'
        f'[[variant]]\nname = "a"\n{boot}\n[[variant]]\nname = "b"\n{boot}\n'
    )
    path = tmp_path / "local.toml"
    path.write_text(text)
    return str(path)


def env(root: Path) -> dict[str, str]:
    return {**os.environ, "FAIRMARK_BOOTHOOK_ROOT": str(root)}


def start(tmp_path: Path, root: Path, timeout_s: float) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "fairmark", "run", plan(tmp_path, timeout_s), "--accept-risk"]
    return subprocess.Popen(
        argv, cwd=REPO, env=env(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.slow
def test_without_systemd_a_local_boot_run_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"  # no run/systemd/system: nothing would resume the run after the reboot
    root.mkdir()
    p = start(tmp_path, root, 5)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 3 and "need systemd" in err, err
    assert not (root / UNIT).exists()


@pytest.mark.slow
def test_the_hook_waits_for_the_reboot_and_is_removed_when_none_comes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "run/systemd/system").mkdir(parents=True)
    p = start(tmp_path, root, 8)
    # while it waits for the shutdown, the one-shot unit that resumes this run in the next boot is installed
    # (enabled last, once the unit is written: the unit alone can still be empty — seen under load)
    wants = root / "etc/systemd/system/multi-user.target.wants/fairmark-resume.service"
    assert wait_until(wants.is_symlink, timeout_s=120), p.stderr
    unit = (root / UNIT).read_text()
    assert " -m fairmark resume " in unit and "--accept-risk --store sqlite:" in unit
    assert os.readlink(wants)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 3 and "did not go down within 8 s" in err, err
    assert not (root / UNIT).exists()  # the run ended: its hook is gone
    store = Store.open(os.environ["FAIRMARK_STORE"])
    (run,) = store.list_runs()
    assert run["status"] == "interrupted" and store.trials(run["id"]) == []
    (rec,) = [a["data"] for a in store.artifacts(run["id"], kind="boot")]
    assert rec["phase"] == "rebooting" and rec["variant"] == "a" and rec["previous_boot_id"]


@pytest.mark.slow
def test_a_killed_local_run_leaves_no_hook_after_the_next_fairmark_command(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "run/systemd/system").mkdir(parents=True)
    p = start(tmp_path, root, 300)
    assert wait_until(lambda: (root / UNIT).exists(), timeout_s=120)
    p.send_signal(signal.SIGKILL)  # as the shutdown of a reboot would end it, or a user's kill -9
    p.communicate(timeout=60)
    assert (root / UNIT).exists()  # still there: it resumes the run in the next boot …
    res = subprocess.run(
        [sys.executable, "-m", "fairmark", "runs"],
        cwd=REPO,
        env=env(root),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "removed boot hook (systemd)" in res.stderr  # … and the first fairmark command there removes it
    assert not (root / UNIT).exists()


def test_the_blocks_trial_loop_in_this_boot(tmp_path: Path, monkeypatch) -> None:
    """Everything of a boot run but the reboot (which would take this machine down): each block is entered as if
    its boot had just been verified, then runs its variant's cells — stage, a warm-up, the trials of one boot.
    Fast, so a change of the runner's API breaks here and not only in the QEMU test."""
    from doubles import MockExecutor
    from fairmark.plan.load import LoadedPlan, parse_plan
    from fairmark.run.loop import bootrun
    from fairmark.run.loop.runner import Runner, RunOptions

    entered = []

    def enter(self, block, rec):  # the machine: already in a verified boot of the block's variant
        entered.append(block.variant)
        self.verified = self.machine.boot_id()

    monkeypatch.setattr(bootrun.BootRun, "_enter", enter)
    text = Path(plan(tmp_path, 5)).read_text().replace("boots = 1", "boots = 2")
    store = Store.open(os.environ["FAIRMARK_STORE"])
    fake = MockExecutor({}, sd=0.01)  # the blocks' order and counts are the runner's: no process needed
    run_id = Runner(
        LoadedPlan(parse_plan(text), "p.toml", text), store, RunOptions(probe=False), executor=fake
    ).start()
    assert entered == ["a", "b", "b", "a"]
    assert len(fake.calls) == 16  # per variant, 2 boots × (a warm-up + 3 trials)
    cells = {c.id: c for c in store.cells(run_id)}
    trials = store.trials(run_id)
    for cell in cells.values():
        mine = [t for t in trials if t.cell_id == cell.id]
        assert sorted(t.round for t in mine) == [-2, -1, 0, 1, 2, 3, 4, 5]  # per boot: a warm-up, 3 trials
        assert cell.status == "done" and "2 boots per variant × 3 trials per boot" in (cell.stop_reason or "")
    assert store.get_run(run_id).status == "done"
