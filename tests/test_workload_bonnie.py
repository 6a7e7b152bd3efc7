"""bonnie++ adapter: CSV parse with `+++++` (never a number), the 2× RAM rule, end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fairmark.console import console
from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError
from fairmark.run.workloads.bonnie import parse_csv, unmeasurable

FIX = Path(__file__).parent / "fixtures" / "tools" / "bonnie"


@pytest.fixture(autouse=True)
def _console_on_live_streams():
    # An earlier in-process CLI test may have left the console bound to its closed capture streams; the
    # adapters' setup() warns through it (size below 2 × RAM with a reason).
    console.configure()


def test_parse_direct_run():
    text = (FIX / "direct-64M.csv").read_text()
    m = parse_csv(text)
    assert m["put_block_kib_s"] > 1000 and m["put_block_latency_us"] > 0
    assert "rewrite_kib_s" not in m and "get_block_kib_s" not in m  # +++++ there: no number invented
    assert unmeasurable(text) == ["rewrite_kib_s", "get_block_kib_s", "seeks_s"]


def test_all_plus_is_failed_trial():
    with pytest.raises(ParseError, match=r"too fast to measure \(\+\+\+\+\+\)"):
        parse_csv((FIX / "fast-all-plus.csv").read_text())


def test_latency_units():
    row = (FIX / "perchar-64M.csv").read_text().strip().split(",")
    row[11] = "5000"  # make put_block measurable
    row[-12:] = ["1s", "15ms", "22182us", "", "", "", "", "", "", "", "", ""]
    m = parse_csv(",".join(row))
    assert m["putc_kib_s"] == 641 and m["getc_kib_s"] == 927
    assert (
        m["putc_latency_us"] == 1e6
        and m["put_block_latency_us"] == 15000
        and m["rewrite_latency_us"] == 22182
    )


def test_no_csv_is_error():
    with pytest.raises(ParseError, match="no CSV result line"):
        parse_csv("Version 2.00a  ------Sequential Output------\n")


def test_size_below_twice_ram_refused_without_reason():
    a = adapter_for("bonnie")
    with pytest.raises(PlanError, match=r"less than 2 × RAM.*seed 003"):
        a.resolve({"size_mib": 64})
    assert a.resolve({"size_mib": 64, "small_size_reason": "quick run"})["size_mib"] == 64
    assert a.resolve({})["size_mib"] == 0  # 0 = 2 × RAM


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bonnie++") is None, reason="bonnie++ not installed")
def test_bonnie_end_to_end(tmp_path):
    params = {
        "size_mib": 128,  # 32 MiB with O_DIRECT finished too fast to measure (+++++) on a quiet host
        "files": 0,
        "direct": True,
        "small_size_reason": "test",
        "directory": str(tmp_path),
    }
    m = tools.run_once(adapter_for("bonnie"), params, tmp_path / "w")
    assert m["put_block_kib_s"] > 0  # measured and parsed (how fast is the disk's and the load's business)
    assert not list(tmp_path.glob("fairmark-bonnie-*"))
