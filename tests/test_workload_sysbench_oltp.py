"""sysbench-oltp adapter: parse on captured outputs, params, end to end against a managed PostgreSQL and a
managed MariaDB."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, servers, tools
from fairmark.run.workloads.base import ParseError, RawOutput

FIX = Path(__file__).parent / "fixtures" / "tools" / "sysbench-oltp"
needs_pg = pytest.mark.skipif(
    shutil.which("sysbench") is None or not (servers.PG_BIN / "postgres").exists(),
    reason="sysbench/PG missing",
)


def parse(name: str) -> dict[str, float]:
    return adapter_for("sysbench-oltp").parse(RawOutput((FIX / name).read_text(), ""))


def test_parse_read_write():
    m = parse("read_write_t2.txt")
    assert m["tps"] == 214.84 and m["qps"] == 4314.65 and m["ignored_errors_s"] == 0.99
    assert m["latency_avg_ms"] == 9.25 and m["latency_p95_ms"] == 18.28 and m["latency_max_ms"] == 28.51


def test_parse_read_only():
    m = parse("read_only_t2.txt")
    assert m["tps"] > 0 and m["qps"] > m["tps"] and m["reconnects_s"] == 0


def test_fatal_output_is_a_failure():
    with pytest.raises(ParseError, match="Connection to database failed"):
        parse("refused.txt")


def test_parse_mariadb_output():
    m = parse("mariadb_read_write_t4.txt")
    assert m["tps"] == 1904.05 and m["qps"] == 38092.24 and m["ignored_errors_s"] == 0.67
    assert m["latency_avg_ms"] == 2.10 and m["latency_p95_ms"] == 4.57 and m["latency_max_ms"] == 36.94
    with pytest.raises(ParseError, match="unable to connect to MySQL server"):
        parse("mariadb_refused.txt")


def test_params_are_checked():
    a = adapter_for("sysbench-oltp")
    with pytest.raises(PlanError, match="test"):
        a.resolve({"test": "oltp_everything"})
    with pytest.raises(PlanError, match="db must be one of pgsql, mysql"):
        a.resolve({"db": "oracle"})
    with pytest.raises(PlanError, match="threads"):
        a.resolve({"threads": 0})


@pytest.mark.slow
@needs_pg
def test_end_to_end_read_write(srv_tmp: Path):
    params = {"test": "oltp_read_write", "threads": 2, "time_s": 1, "tables": 2, "table_size": 1000}
    m = tools.run_once(adapter_for("sysbench-oltp"), params, srv_tmp, timeout_s=120)
    # No order between p95 and the mean: a few very slow transactions on a busy host pull the mean past p95.
    assert m["tps"] > 0 and m["qps"] > m["tps"] and m["latency_p95_ms"] > 0 and m["latency_avg_ms"] > 0
    assert psutil.Process().children(recursive=True) == []
    assert not (srv_tmp / "scratch" / "postgres").exists()


@pytest.mark.skipif(
    shutil.which("sysbench") is None or shutil.which("mariadbd") is None, reason="sysbench/mariadbd missing"
)
@pytest.mark.slow
def test_end_to_end_mariadb(srv_tmp: Path):
    """fairmark starts mariadbd itself (no systemd), runs one trial, and stops and removes it."""
    params = {
        "db": "mysql",
        "test": "oltp_read_only",
        "threads": 2,
        "time_s": 1,
        "tables": 1,
        "table_size": 500,
    }
    m = tools.run_once(adapter_for("sysbench-oltp"), params, srv_tmp, timeout_s=120)
    assert m["tps"] > 0 and m["qps"] > m["tps"]
    assert psutil.Process().children(recursive=True) == []
    assert not (srv_tmp / "scratch" / "mariadb").exists()
