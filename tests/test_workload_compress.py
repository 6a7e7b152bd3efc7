"""compress (zstd benchmark mode) and lzbench adapters: parse on captured/constructed output, end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError, RawOutput
from fairmark.run.workloads.compress import parse_zstd
from fairmark.run.workloads.lzbench import parse_lzbench

FIX = Path(__file__).parent / "fixtures" / "tools"


def test_parse_zstd_levels_captured():
    m = parse_zstd((FIX / "zstd" / "b1-e3.txt").read_text())
    assert m["compress_mb_s"] == m["compress_mb_s_L1"] == 332.51
    assert m["decompress_mb_s_L1"] == 673.2
    assert m["ratio_L3"] == 1.333
    assert {"compress_mb_s_L2", "compress_mb_s_L3"} <= set(m)


def test_parse_zstd_single_high_level():
    m = parse_zstd((FIX / "zstd" / "b19.txt").read_text())
    assert m["compress_mb_s"] == 2.39 and m["ratio"] == 1.332


def test_parse_zstd_no_result_is_error():
    with pytest.raises(ParseError, match="no benchmark line"):
        parse_zstd("bench 1.5.4 : input 4194304 bytes, 0 seconds, 0 KB blocks\n")


def test_parse_zstd_gap_in_levels_is_error():
    lines = (FIX / "zstd" / "b1-e3.txt").read_text().splitlines()
    with pytest.raises(ParseError, match=r"levels \[2\] are missing"):
        parse_zstd("\n".join(line for line in lines if not line.startswith("-2")))


def test_compress_metrics_declared_and_primary():
    a = adapter_for("compress")
    names = [m.name for m in a.metrics]
    assert names[0] == "compress_mb_s" and "ratio_L22" in names
    assert all(m.better == "higher" for m in a.metrics)


def test_compress_params_checked():
    a = adapter_for("compress")
    with pytest.raises(PlanError, match="level_min ≤ level_max"):
        a.resolve({"level_min": 5, "level_max": 3})
    with pytest.raises(PlanError, match="no parameter"):
        a.resolve({"levels": 3})


def test_deterministic_file_is_cached_and_reproducible(tmp_path):
    a = tools.deterministic_text_file(tmp_path / "a", 1, seed=7)
    b = tools.deterministic_text_file(tmp_path / "b", 1, seed=7)
    assert a.read_bytes() == b.read_bytes() and a.stat().st_size == tools.MIB
    mtime = a.stat().st_mtime_ns
    assert tools.deterministic_text_file(tmp_path / "a", 1, seed=7).stat().st_mtime_ns == mtime
    assert set(a.read_bytes()[:4096]) <= set(
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    )


@pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd not installed")
def test_compress_end_to_end(tmp_path):
    m = tools.run_once(adapter_for("compress"), {"size_mib": 4, "level_min": 1, "level_max": 2}, tmp_path)
    assert (
        m["compress_mb_s"] > 0 and m["decompress_mb_s"] > 0 and m["compress_mb_s_L2"] > 0
    )  # rates: the load's
    assert 1.2 < m["ratio"] < 1.45  # base64 carries 6 bits per byte: ratio about 4/3
    assert list((tmp_path / "cache").iterdir())  # the input file stays cached for the next run


def test_parse_lzbench_csv_constructed_fixture():
    m = parse_lzbench((FIX / "lzbench" / "zstd-1-3.csv").read_text())
    assert m["compress_mb_s"] == 301.27 and m["decompress_mb_s_L3"] == 668.04
    assert m["ratio_L1"] == pytest.approx(67108864 / 50338192)
    assert "compress_mb_s_L0" not in m  # the memcpy row is not a level


def test_parse_lzbench_text_table_from_seed():
    m = parse_lzbench((FIX / "lzbench" / "seed000-text.txt").read_text())
    assert m["compress_mb_s_L5"] == 345 and m["decompress_mb_s_L9"] == 1324
    assert m["ratio"] == pytest.approx(100 / 75.37)


def test_parse_lzbench_empty_is_error():
    with pytest.raises(ParseError):
        adapter_for("lzbench").parse(RawOutput("lzbench 1.8\nCompressor name,Compression speed\n", ""))


def test_lzbench_command_and_missing_tool():
    a = adapter_for("lzbench")
    params = a.resolve({"level_min": 1, "level_max": 3})
    assert params["compressor"] == "zstd"
    if shutil.which("lzbench") is None:
        assert a.missing_executables() == ["lzbench"]
