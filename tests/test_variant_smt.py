"""The `smt` kind (issue 33 item 1: a kind added by its driver and its row in the kinds table alone): SMT switched
through /sys/devices/system/cpu/smt/control — on a fixture control that reads `on` or `off` (this VM has no SMT:
its control reads `notsupported`), refused with the reason here and on a namespace host, where it is the same
kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import nethosts
from fairmark.errors import EnvironmentRefused
from fairmark.run.variants import driver, smt
from fairmark.run.variants.driver import Context
from fairmark.run.variants.journal import Journal

CONTROL = Path(smt.CONTROL)


def _here() -> str | None:
    """Why this machine's kernel cannot switch SMT (the driver's refusal), or None when it can."""
    try:
        smt.smt_settings("off")
    except EnvironmentRefused as exc:
        return exc.message
    return None


@pytest.fixture
def sysroot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A control file and a cgroup v1 cpuset hierarchy with one child cpuset, as the kernel has them."""
    (tmp_path / "smt").mkdir()
    (tmp_path / "cpuset" / "bench").mkdir(parents=True)
    (tmp_path / "cpuset" / "cpuset.cpus").write_text("0-3\n")
    (tmp_path / "cpuset" / "bench" / "cpuset.cpus").write_text("0-3\n")
    monkeypatch.setattr(smt, "CONTROL", str(tmp_path / "smt" / "control"))
    monkeypatch.setattr(smt, "CPUSET_ROOT", str(tmp_path / "cpuset"))
    return tmp_path


def _journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "state" / "journal" / "1-1.json", pid=1, start=None)


def test_the_smt_driver_is_found_by_its_kind_and_runs_on_hosts() -> None:
    from fairmark.plan.kinds import REMOTE_KEYS, USER_SPEED_KEYS, VARIANT_KINDS

    assert driver.load("smt") is smt and smt.SCOPE == "block"
    assert "smt" in REMOTE_KEYS and "smt" in USER_SPEED_KEYS and VARIANT_KINDS["smt"].machine_wide


def test_smt_off_is_journaled_switched_and_put_back_with_the_cpusets_it_shrinks(sysroot: Path) -> None:
    control, child = sysroot / "smt" / "control", sysroot / "cpuset" / "bench" / "cpuset.cpus"
    control.write_text("on\n")
    change = smt.check("off", Context("nosmt", freebsd=False))
    assert change.describe() == ["SMT: on → off"]
    journal = _journal(sysroot)
    assert change.apply(journal) == ["SMT → off"] and control.read_text() == "off"
    entries = json.loads(journal.path.read_text())["entries"]
    assert [(e["type"], e["label"], e["original"]) for e in entries] == [
        ("file", "cpuset bench", "0-3"),  # journaled first: offlining the siblings shrinks it for good
        ("file", "SMT", "on"),
    ]
    child.write_text("0,2\n")  # what the kernel does to a v1 cpuset when CPUs 1 and 3 go offline
    assert change.undo(journal) == (["restored SMT = on"], [])
    assert control.read_text() == "on" and child.read_text() == "0-3" and not journal.path.exists()


def test_smt_on_where_it_is_off_and_nothing_to_do_where_it_is_so(sysroot: Path) -> None:
    control = sysroot / "smt" / "control"
    control.write_text("off\n")
    journal = _journal(sysroot)
    change = smt.check("on", Context("smp", freebsd=False))
    assert change.apply(journal) == ["SMT → on"] and control.read_text() == "on"
    assert change.undo(journal) == (["restored SMT = off"], []) and control.read_text() == "off"
    same = smt.check("off", Context("nosmt", freebsd=False))
    assert same.apply(journal) == [] and not journal.path.exists()  # already off: nothing to put back


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        ("notsupported", "reads 'notsupported': this machine has no SMT to switch"),
        ("forceoff", "reads 'forceoff': SMT is forced off by the kernel command line"),
        ("notimplemented", "reads 'notimplemented': this architecture's kernel cannot switch SMT"),
        (None, "this kernel has no SMT control"),
    ],
)
def test_smt_is_refused_with_the_reason_where_the_kernel_cannot_switch_it(
    sysroot: Path, state: str | None, reason: str
) -> None:
    if state is not None:
        (sysroot / "smt" / "control").write_text(state + "\n")
    with pytest.raises(EnvironmentRefused, match=reason) as got:
        smt.check("off", Context("nosmt", freebsd=False))
    assert "remove `smt` from the plan" in str(got.value.hint)
    with pytest.raises(EnvironmentRefused, match="FreeBSD switches SMT only at boot"):
        smt.check("off", Context("nosmt", freebsd=True))


PLAN = '[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n[[workload]]\nname = "t"\ncommand = ["true"]\n'


def test_a_plan_with_smt_here_is_refused_with_the_reason_or_described(
    tmp_path: Path, fairmark_cli: Callable[..., tuple[int, str, str]]
) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN + '[[variant]]\nname = "smp"\n[[variant]]\nname = "up"\nsmt = "off"\n')
    code, out, err = fairmark_cli("run", str(path), "--dry-run")
    why = _here()
    if why is None:  # a machine that can switch SMT: the dry run says what it would do, and does nothing
        assert code == 0 and "SMT: on → off" in out, err
        return
    assert code == 3, err  # refused before any trial, with this kernel's reason
    assert why in " ".join(err.split()), err


@pytest.fixture(scope="module")
def net() -> Iterator[nethosts.NetHosts]:
    if nethosts.available() is not None:
        pytest.skip(str(nethosts.available()))
    with nethosts.NetHosts(["sm"]) as hosts:
        yield hosts


@pytest.mark.slow
def test_smt_on_a_namespace_host_is_refused_there_with_the_reason(
    tmp_path: Path, net: nethosts.NetHosts
) -> None:
    """The variant's smt goes to the host's agent (the same driver, shipped to it): this VM's kernel cannot switch
    SMT, so the run is refused before any trial, naming the variant, the host and the reason there."""
    why = _here()
    if why is None:
        pytest.skip("this machine can switch SMT: a refusal cannot be shown here")
    path = tmp_path / "plan.toml"
    path.write_text(
        PLAN + '[[variant]]\nname = "smp"\nhost = "sm"\n[[variant]]\nname = "up"\nhost = "sm"\nsmt = "off"\n'
    )
    path.write_text(path.read_text() + net.hosts_toml())
    res = subprocess.run(
        [sys.executable, "-m", "fairmark", "run", str(path), "--accept-risk"],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 3, res.stderr
    said = " ".join(res.stderr.split())
    assert f"variant 'up' on host sm: smt: {why}" in said, res.stderr
    assert "remove smt from variant 'up'" in said, res.stderr
