"""fio adapter: JSON parse on captured outputs, RAM rule for buffered tests, end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fairmark.console import console
from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError
from fairmark.run.workloads.fio import parse_json

FIX = Path(__file__).parent / "fixtures" / "tools" / "fio"


@pytest.fixture(autouse=True)
def _console_on_live_streams():
    # An earlier in-process CLI test may have left the console bound to its closed capture streams; the
    # adapters' setup() warns through it (size below 2 × RAM with a reason).
    console.configure()


def test_parse_randread_direct():
    m = parse_json((FIX / "randread-direct.json").read_text())
    assert m["iops"] == pytest.approx(15104.447776) and m["write_iops"] == 0
    assert m["bw_mib_s"] == pytest.approx(61867818 / 2**20)
    assert m["clat_p50_us"] < m["clat_p99_us"] < m["clat_p99_9_us"]
    assert m["usr_cpu_pct"] == 5.35 and m["sys_cpu_pct"] == 39.7


def test_parse_mixed_sums_rates_and_takes_worse_latency():
    m = parse_json((FIX / "randrw-2jobs.json").read_text())
    assert m["iops"] == pytest.approx(m["read_iops"] + m["write_iops"])
    assert m["clat_p99_us"] == pytest.approx(4947.968)  # write's p99, the worse of the two


def test_parse_failures():
    with pytest.raises(ParseError, match="not JSON"):
        parse_json("{ truncated")
    with pytest.raises(ParseError, match="no job results"):
        parse_json("")
    with pytest.raises(ParseError, match="error 5"):
        parse_json('{"jobs": [{"error": 5}]}')


def test_buffered_small_size_refused_unless_reason_or_tmpfs():
    a = adapter_for("fio")
    with pytest.raises(PlanError, match="2 × RAM"):
        a.resolve({"direct": False, "size": "64M"})
    assert a.resolve({"direct": False, "size": "64M", "small_size_reason": "quick test"})
    if tools.fs_type("/dev/shm") == "tmpfs":
        assert a.resolve({"direct": False, "size": "64M", "directory": "/dev/shm"})
    assert a.resolve({"direct": True, "size": "64M"})  # O_DIRECT bypasses the page cache


def test_params_checked():
    a = adapter_for("fio")
    with pytest.raises(PlanError, match="rw must be one of"):
        a.resolve({"rw": "sideways"})
    with pytest.raises(PlanError, match="does not exist"):
        a.resolve({"directory": "/nonexistent/dir"})


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_fio_end_to_end(tmp_path):
    params = {"rw": "randread", "size": "16M", "runtime_s": 1, "iodepth": 4, "directory": str(tmp_path)}
    m = tools.run_once(adapter_for("fio"), params, tmp_path / "w")
    assert m["iops"] > 0 and m["clat_p50_us"] > 0  # how many is the disk's and the load's business
    assert m["bw_mib_s"] == pytest.approx(m["iops"] * 4096 / 2**20, rel=0.01)  # the units: 4 KiB per I/O
    assert not list(tmp_path.glob("fairmark-fio-*"))  # laid-out files removed at teardown


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_fio_setup_error_leaves_nothing_behind(tmp_path):
    from fairmark.run.workloads.base import SetupError

    params = {"size": "1M", "ioengine": "no-such-engine", "directory": str(tmp_path)}
    with pytest.raises(SetupError, match="could not lay out"):
        tools.run_once(adapter_for("fio"), params, tmp_path / "w")
    assert not list(tmp_path.glob("fairmark-fio-*"))  # teardown ran after the failed prime
