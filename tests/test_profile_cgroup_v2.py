"""A cgroup v2 root that never enabled a controller for its children (a minimal init: a container, an initramfs
shell; systemd does enable some at boot): the kernel gives its new cgroups no perf_event state until one has
been, and `perf record -G` failed with "The cpu-clock event is not supported" (ENOENT) — every profiled trial
of a QEMU guest booted with cgroup_no_v1=all failed so, with nothing naming the cause. fairmark now enables one
controller for the root's children and disables it at once (cgroup.subtree_control as it was, perf_event
propagated), or, where it cannot, says why and the command that makes it work.

The kernel's behaviour and the fix are checked for real in the QEMU guest (tests/test_explain_qemu.py: a plan
with no set-up of its own, every boot's profiled trials by cgroup); this machine's cgroups are v1 and shared, so
here the root is a directory of plain files and the cgroupfs write is recorded (the order of the writes and
the refusal paths are what is tested)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairmark.run.hooks import HookContext
from fairmark.run.profiles import base
from fairmark.run.profiles.cpu import PerfCpuProfile


def _root(tmp_path: Path, controllers: str, subtree: str = "") -> Path:
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text(subtree + "\n")
    return root


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    done: list[str] = []

    def record(path: Path, value: str) -> None:
        assert path.name == "cgroup.subtree_control"
        done.append(value)

    monkeypatch.setattr(base, "_write", record)
    return done


def test_an_unwritten_v2_root_gets_a_controller_enabled_and_disabled_again(
    tmp_path: Path, writes: list[str]
) -> None:
    root = _root(tmp_path, "cpuset cpu io memory hugetlb pids rdma misc")
    assert base.perf_event_unpropagated(root)
    assert base.propagate_perf_event(root) is None
    assert writes == ["+pids", "-pids"]  # the most harmless one first; the file is left as it was


def test_nothing_is_written_where_a_controller_is_enabled_or_on_v1(tmp_path: Path, writes: list[str]) -> None:
    enabled = _root(tmp_path, "cpu memory pids", "memory pids")
    assert not base.perf_event_unpropagated(enabled)
    assert base.propagate_perf_event(enabled) is None
    v1 = tmp_path / "perf_event"  # a v1 hierarchy has no cgroup.controllers
    v1.mkdir()
    assert base.propagate_perf_event(v1) is None
    assert writes == []


def test_a_root_with_no_controller_to_enable_is_named_with_the_command(
    tmp_path: Path, writes: list[str]
) -> None:
    root = _root(tmp_path, "")
    problem = base.propagate_perf_event(root)
    assert problem is not None and writes == []
    assert f"{root / 'cgroup.subtree_control'} is empty" in problem
    assert "The cpu-clock event is not supported" in problem
    assert f"echo +pids > {root / 'cgroup.subtree_control'}" in problem


def test_a_profiled_trial_that_cannot_get_perf_event_fails_with_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _root(tmp_path, "cpu pids")

    def refused(path: Path, value: str) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(base, "_write", refused)
    monkeypatch.setattr(base, "cgroup_mount", lambda: root)
    profiler = PerfCpuProfile()
    ctx = HookContext("run", "cell", "w", "a", "t1", str(tmp_path), warmup=False)
    argv = ["true"]
    assert profiler.wrap(argv, ctx) == argv  # the trial runs unwrapped; no cgroup was made
    assert [p.name for p in root.iterdir() if p.is_dir()] == []
    profiler.start(ctx)
    (failure,) = profiler.stop(ctx, None)
    assert failure.name == "error"
    assert "+pids: Permission denied" in failure.data and "echo +pids >" in failure.data
