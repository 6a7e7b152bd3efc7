"""dbench adapter: parse on captured output, end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError
from fairmark.run.workloads.dbench import parse_text

FIX = Path(__file__).parent / "fixtures" / "tools" / "dbench"


def test_parse_throughput_line():
    text = (FIX / "2clients.txt").read_text()
    assert "failed to create barrier semaphore" in text  # harmless on Linux, must not fail the trial
    assert parse_text(text) == {"throughput_mb_s": 186.264, "max_latency_ms": 24.102}


def test_parse_without_result_is_error():
    text = (FIX / "2clients.txt").read_text().split("Throughput")[0]
    with pytest.raises(ParseError, match="Throughput"):
        parse_text(text)


def test_zero_throughput_is_not_a_result():
    text = (FIX / "2clients.txt").read_text().replace("Throughput 186.264 MB/sec", "Throughput 0 MB/sec")
    with pytest.raises(ParseError, match="too short"):
        parse_text(text)


def test_params_checked():
    with pytest.raises(PlanError, match="clients"):
        adapter_for("dbench").resolve({"clients": 0})
    with pytest.raises(PlanError, match="≥ 2"):
        adapter_for("dbench").resolve({"duration_s": 1})


@pytest.mark.skipif(shutil.which("dbench") is None, reason="dbench not installed")
def test_dbench_end_to_end(tmp_path):
    m = tools.run_once(
        adapter_for("dbench"), {"clients": 1, "duration_s": 2, "directory": str(tmp_path)}, tmp_path
    )
    assert m["throughput_mb_s"] > 0 and m["max_latency_ms"] >= 0
    assert not list(tmp_path.glob("fairmark-dbench-*"))
