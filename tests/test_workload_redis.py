"""redis adapter: --csv parse on captured outputs, primary test, TCP and Unix socket end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError, RawOutput, TrialContext, WorkloadContext

FIX = Path(__file__).parent / "fixtures" / "tools" / "redis"
needs_redis = pytest.mark.skipif(shutil.which("redis-benchmark") is None, reason="redis not installed")


def parse(name: str, primary: str | None = None) -> dict[str, float]:
    files = {"primary-test": primary} if primary else {}
    return adapter_for("redis").parse(RawOutput((FIX / name).read_text(), "", 0, files))


def test_parse_per_command_metrics():
    m = parse("tcp_set_get_c50.csv")
    assert m["rps_set"] == 16433.85 and m["latency_p50_ms_set"] == 1.023 and m["latency_p99_ms_set"] == 12.519
    assert m["rps_get"] == 27855.15 and m["latency_p99_ms_get"] == 5.479


def test_primary_is_the_plans_first_test_not_the_output_order():
    # redis-benchmark ran SET before GET although -t said get,set
    m = parse("unix_get_set_P4_d64.csv", primary="get")
    assert m["rps"] == 169491.53 and m["latency_p50_ms"] == 0.727 and m["latency_avg_ms"] == 0.749
    assert parse("unix_get_set_P4_d64.csv")["rps"] == 129032.26  # without the hint: the first row
    with pytest.raises(ParseError, match="primary test 'incr'"):
        parse("unix_get_set_P4_d64.csv", primary="incr")


def test_no_rows_is_a_failure_with_stderr():
    err = (FIX / "refused.stderr.txt").read_text()
    with pytest.raises(ParseError, match="Connection refused"):
        adapter_for("redis").parse(RawOutput("", err, 0))


def test_every_parsed_name_is_a_declared_metric():
    declared = {m.name for m in adapter_for("redis").metrics}
    assert set(parse("tcp_set_get_c50.csv")) <= declared


def test_params_are_checked():
    a = adapter_for("redis")
    with pytest.raises(PlanError, match="transport"):
        a.resolve({"transport": "udp"})
    with pytest.raises(PlanError, match="unknown test"):
        a.resolve({"tests": "get,frobnicate"})
    assert a.test_list(a.resolve({"tests": ["LPUSH", "get"]})) == ["lpush", "get"]


def test_command_per_transport(tmp_path: Path):
    a = adapter_for("redis")
    ctx = WorkloadContext("r", {}, tmp_path, tmp_path, True)
    ctx.state["server"] = type("S", (), {"port": 6390, "socket": tmp_path / "redis.sock"})()
    tcp = a.command(TrialContext(ctx, a.resolve({"pipeline": 8}), tmp_path, "A"))
    assert (
        tcp[1:5] == ["-h", "127.0.0.1", "-p", "6390"] and tcp[tcp.index("-P") + 1] == "8" and "--csv" in tcp
    )
    unix = a.command(TrialContext(ctx, a.resolve({"transport": "unix"}), tmp_path, "A"))
    assert unix[1:3] == ["-s", str(tmp_path / "redis.sock")] and "-h" not in unix
    by_variant = a.resolve({"transport": {"A": "tcp", "B": "unix"}})
    assert a.command(TrialContext(ctx, by_variant, tmp_path, "B"))[1] == "-s"
    assert a.command(TrialContext(ctx, by_variant, tmp_path, "A"))[1] == "-h"
    with pytest.raises(PlanError, match="no entry for variant 'C'"):
        a.command(TrialContext(ctx, by_variant, tmp_path, "C"))
    with pytest.raises(PlanError, match="transport"):
        a.resolve({"transport": {"A": "udp"}})


@pytest.mark.slow
@needs_redis
@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_end_to_end(transport: str, tmp_path: Path):
    params = {"transport": transport, "requests": 20000, "tests": "get,set", "clients": 10}
    m = tools.run_once(adapter_for("redis"), params, tmp_path, timeout_s=120)
    assert m["rps"] == m["rps_get"] > 0 and m["rps_set"] > 0
    assert 0 < m["latency_p50_ms"] <= m["latency_p99_ms"]
    assert psutil.Process().children(recursive=True) == []
    assert not (tmp_path / "scratch" / "redis-server").exists()
