"""sysbench adapter (cpu, memory, threads, mutex, fileio): text parse on captured outputs, RAM rule, end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fairmark.console import console
from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError
from fairmark.run.workloads.sysbench import parse_text

FIX = Path(__file__).parent / "fixtures" / "tools" / "sysbench"


@pytest.fixture(autouse=True)
def _console_on_live_streams():
    # An earlier in-process CLI test may have left the console bound to its closed capture streams; the
    # adapters' setup() warns through it (size below 2 × RAM with a reason).
    console.configure()


needs_sysbench = pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench not installed")


def _parse(name: str) -> dict[str, float]:
    return parse_text((FIX / f"{name}.txt").read_text())


def test_parse_cpu():
    m = _parse("cpu")
    assert m["events_s"] == 2614.09 and m["latency_p95_ms"] == 4.33 and m["total_time_s"] == 1.0081


def test_parse_memory_uses_operations_per_second():
    m = _parse("memory")
    assert m["events_s"] == 2962846.05 and m["mib_s"] == 2893.40


def test_parse_threads_and_mutex_derive_events_per_second():
    assert _parse("threads")["events_s"] == pytest.approx(320 / 1.0078)
    m = _parse("mutex")
    assert m["events_s"] == pytest.approx(2 / m["total_time_s"])


def test_parse_fileio():
    m = _parse("fileio-rndrw")
    assert m["reads_s"] == 14220.74 and m["written_mib_s"] == 148.13
    assert m["events_s"] == pytest.approx(25165 / 1.02)


def test_parse_failures():
    with pytest.raises(ParseError, match="FATAL"):
        parse_text("FATAL: Cannot open file 'test_file.0' errno = 2 (No such file or directory)\n")
    cut = (FIX / "cpu.txt").read_text().split("General statistics")[0]
    with pytest.raises(ParseError, match="General statistics"):
        parse_text(cut)


def test_fileio_size_rule():
    a = adapter_for("sysbench")
    with pytest.raises(PlanError, match="2 × RAM"):
        a.resolve({"test": "fileio", "file_total_size": "64M"})
    assert a.resolve({"test": "fileio", "file_total_size": "64M", "file_extra_flags": "direct"})
    assert a.resolve({"test": "fileio", "file_total_size": "64M", "small_size_reason": "quick"})
    if tools.fs_type("/dev/shm") == "tmpfs":  # seed 002: a memory file system is the point there
        assert a.resolve({"test": "fileio", "file_total_size": "64M", "directory": "/dev/shm"})
    assert a.resolve({"test": "cpu", "file_total_size": "64M"})  # the rule is for fileio only


def test_params_checked():
    with pytest.raises(PlanError, match="test must be one of"):
        adapter_for("sysbench").resolve({"test": "oltp_magic"})


@needs_sysbench
def test_sysbench_cpu_end_to_end(tmp_path):
    m = tools.run_once(adapter_for("sysbench"), {"test": "cpu", "threads": 2, "time_s": 1}, tmp_path)
    assert m["events_s"] > 0 and m["latency_avg_ms"] >= 0


@needs_sysbench
def test_sysbench_memory_end_to_end(tmp_path):
    m = tools.run_once(adapter_for("sysbench"), {"test": "memory", "time_s": 1}, tmp_path)
    # --time, not the total size (100 GiB by default), bounded the run: it lasted its second
    assert m["mib_s"] > 0 and m["total_time_s"] >= 1


@needs_sysbench
def test_sysbench_fileio_prepare_run_cleanup(tmp_path):
    params = {
        "test": "fileio",
        "file_total_size": "16M",
        "file_num": 2,
        "time_s": 1,
        "directory": str(tmp_path),
        "small_size_reason": "test suite",
    }
    m = tools.run_once(adapter_for("sysbench"), params, tmp_path / "w")
    assert m["reads_s"] > 0 and m["writes_s"] > 0 and m["events_s"] > 0
    assert not list(tmp_path.glob("fairmark-sysbench-*"))  # files removed at teardown
