"""wrk adapter: its text report parsed on real captured outputs (tests/fixtures/tools/wrk/latency_*: wrk 4.1.0
--latency against the managed nginx here), errors counted, a run with no request a failure, the server's
address for a client elsewhere, and a real run against nginx on loopback."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError, RawOutput, TrialContext, WorkloadContext

FIX = Path(__file__).parent / "fixtures" / "tools" / "wrk"
needs_wrk = pytest.mark.skipif(
    shutil.which("wrk") is None or shutil.which("nginx") is None, reason="wrk/nginx"
)


def parse(name: str) -> dict[str, float]:
    return adapter_for("wrk").parse(RawOutput((FIX / name).read_text(), ""))


def test_parse_rate_percentiles_and_transfer():
    m = parse("latency_c50_t2_d2.txt")
    assert m["requests_s"] == 62452.10 and m["requests"] == 125974
    assert m["latency_p50_ms"] == pytest.approx(0.696) and m["latency_p75_ms"] == pytest.approx(1.24)
    assert m["latency_p90_ms"] == pytest.approx(2.53) and m["latency_p99_ms"] == pytest.approx(5.52)
    assert m["latency_avg_ms"] == pytest.approx(1.03)
    assert m["transfer_mib_s"] == pytest.approx(50.68)  # wrk's MB are 2**20 bytes
    assert m["errors_total"] == 0
    assert set(m) <= {s.name for s in adapter_for("wrk").metrics}


def test_socket_errors_and_non_2xx_are_counted():
    m = parse("latency_c400_t2_d2_socket_errors.txt")  # nginx with 64 worker connections, 400 clients
    assert m["errors_read"] == 47365 and m["errors_total"] == 47365 and m["requests"] == 10078
    assert m["latency_p99_ms"] == pytest.approx(40.20)
    m = parse("latency_c20_t2_d1_404.txt")
    assert m["errors_status"] == 69249 == m["requests"] and m["errors_total"] == 69249
    assert m["latency_p50_ms"] == pytest.approx(0.194)


def test_no_request_is_a_failure_not_zero():
    # wrk exits 0 and prints 0.00us latencies when nothing completed
    with pytest.raises(ParseError, match=r"no request in 1.00s$"):
        parse("latency_no_response_d1.txt")
    with pytest.raises(ParseError, match=r"no request in 1.03s \(errors: write 104032\)"):
        parse("latency_refused.txt")
    with pytest.raises(ParseError, match="Connection refused"):
        parse("refused.txt")


def test_output_without_latency_distribution_is_a_failure():
    with pytest.raises(ParseError, match="latency distribution"):
        parse("c20_t2_d2.txt")  # the connections tool's run: no --latency


def test_params_are_checked():
    a = adapter_for("wrk")
    with pytest.raises(PlanError, match="wrk: threads"):
        a.resolve({"connections": 2, "threads": 4})
    with pytest.raises(PlanError, match="server_workers"):
        a.resolve({"server_workers": "many"})


def test_a_client_elsewhere_connects_to_the_servers_address(tmp_path: Path):
    a = adapter_for("wrk")
    ctx = WorkloadContext("w", {}, tmp_path, tmp_path, True)
    server = type("S", (), {"port": 8080, "address": "10.9.0.2"})()
    server.url_at = lambda host: f"http://{host}:8080/file"  # type: ignore[attr-defined]
    ctx.state["server"] = server
    here = a.command(TrialContext(ctx, a.resolve({}), tmp_path, "A"))
    there = a.command(TrialContext(ctx, a.resolve({"connections": 8}), tmp_path, "A", client_remote=True))
    assert here[-1] == "http://127.0.0.1:8080/file" and there[-1] == "http://10.9.0.2:8080/file"
    assert "--latency" in here and there[there.index("-c") + 1] == "8"


@needs_wrk
def test_end_to_end_against_nginx_on_loopback(srv_tmp: Path):
    # srv_tmp, outside pytest's tmp dir: a concurrent pytest session resets it to 0700, cutting nginx's workers off
    m = tools.run_once(adapter_for("wrk"), {"connections": 8, "duration_s": 1}, srv_tmp, timeout_s=120)
    assert m["requests"] > 0 and m["requests_s"] > 0 and m["errors_total"] == 0
    assert m["latency_p99_ms"] >= m["latency_p90_ms"] >= m["latency_p50_ms"] > 0
    assert psutil.Process().children(recursive=True) == []  # nginx stopped
    assert not (srv_tmp / "scratch" / "nginx").exists()
