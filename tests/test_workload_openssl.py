"""openssl speed adapter: parse on captured tables, end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError
from fairmark.run.workloads.openssl import parse_speed

FIX = Path(__file__).parent / "fixtures" / "tools" / "openssl"


def test_parse_aes_gcm_table():
    m = parse_speed((FIX / "aes-256-gcm.txt").read_text())
    assert m["bytes_s_16B"] == pytest.approx(32269.69e3)
    assert m["bytes_s"] == m["bytes_s_16384B"] == pytest.approx(2497649.78e3)
    assert len(m) == 7


def test_parse_digest_table():
    m = parse_speed((FIX / "sha256.txt").read_text())
    assert m["bytes_s_1024B"] == pytest.approx(1102744.25e3)


def test_parse_single_block_size():
    m = parse_speed((FIX / "sha256-bytes16384.txt").read_text())
    assert set(m) == {"bytes_s", "bytes_s_16384B"} and m["bytes_s"] > 1e8


def test_parse_without_table_is_error():
    with pytest.raises(ParseError, match="no result table"):
        parse_speed((FIX / "aes-256-gcm.stderr.txt").read_text())
    with pytest.raises(ParseError, match="no result row"):
        parse_speed("type             16 bytes     64 bytes\n")


def test_params_checked():
    a = adapter_for("openssl")
    with pytest.raises(PlanError, match="seconds"):
        a.resolve({"seconds": 0})
    with pytest.raises(PlanError, match="algorithm"):
        a.resolve({"algorithm": "aes; rm -rf /"})
    assert a.metrics[0].name == "bytes_s"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
def test_openssl_end_to_end(tmp_path):
    m = tools.run_once(
        adapter_for("openssl"), {"algorithm": "sha256", "seconds": 1, "bytes": 16384}, tmp_path
    )
    assert m["bytes_s"] > 0 and m["bytes_s"] == m["bytes_s_16384B"]  # the units: test_parse_* on fixtures
