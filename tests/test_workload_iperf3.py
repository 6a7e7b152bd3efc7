"""iperf3 adapter: parse on captured -J outputs (including an error that exits 0), command, end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError, RawOutput, TrialContext, WorkloadContext

FIX = Path(__file__).parent / "fixtures" / "tools" / "iperf3"
needs_iperf3 = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed")


def parse(name: str) -> dict[str, float]:
    return adapter_for("iperf3").parse(RawOutput((FIX / name).read_text(), ""))


def test_parse_time_based_run():
    m = parse("client_t2.json")
    assert m["gbit_s_sent"] == pytest.approx(10.889712223381138)
    assert m["gbit_s_received"] == pytest.approx(10.880007278451654)
    assert m["retransmits"] == 1
    assert m["cpu_pct_host"] == pytest.approx(41.76675068563063)
    assert m["cpu_pct_remote"] == pytest.approx(41.72537360091923)


def test_parse_reverse_parallel_and_bytes_runs():
    assert parse("client_p2_reverse.json")["retransmits"] == 16
    assert parse("client_bytes_200M.json")["gbit_s_sent"] == pytest.approx(9.1819766964574)


def test_error_in_json_is_a_failure_even_with_exit_0():
    with pytest.raises(ParseError, match="Connection refused"):
        parse("client_refused_exit0.json")


@pytest.mark.parametrize("text", ["", "not json", '{"end": {}}', '{"end": {"sum_sent": {}}}'])
def test_missing_result_is_a_failure(text: str):
    with pytest.raises(ParseError):
        adapter_for("iperf3").parse(RawOutput(text, ""))


def test_params_are_checked():
    a = adapter_for("iperf3")
    with pytest.raises(PlanError, match="no parameter"):
        a.resolve({"streams": 2})
    with pytest.raises(PlanError, match="parallel"):
        a.resolve({"parallel": 0})
    with pytest.raises(PlanError):
        a.resolve({"bytes": "lots"})


def test_command_uses_json_omit_and_options(tmp_path: Path):
    a = adapter_for("iperf3")
    ctx = WorkloadContext("net", {}, tmp_path, tmp_path, True)
    ctx.state["server"] = type("S", (), {"port": 5201, "address": "127.0.0.1"})()
    t = TrialContext(ctx, a.resolve({"parallel": 4, "reverse": True}), tmp_path, "A")
    argv = a.command(t)
    assert argv[:5] == ["iperf3", "-c", "127.0.0.1", "-p", "5201"]
    assert (
        {"-J", "-R"} <= set(argv) and argv[argv.index("-P") + 1] == "4" and argv[argv.index("-O") + 1] == "1"
    )
    argv = a.command(TrialContext(ctx, a.resolve({"bytes": "1G"}), tmp_path, "A"))
    assert argv[argv.index("-n") + 1] == str(2**30) and "-t" not in argv


@pytest.mark.slow
@needs_iperf3
def test_end_to_end_on_loopback(tmp_path: Path):
    m = tools.run_once(adapter_for("iperf3"), {"duration_s": 2}, tmp_path, timeout_s=120)
    assert m["gbit_s_sent"] > 0 and 0 <= m["cpu_pct_host"] <= 100 * psutil.cpu_count()
    assert psutil.Process().children(recursive=True) == []
    assert not (tmp_path / "scratch" / "iperf3-server").exists()


@needs_iperf3
def test_server_is_stopped_after_a_failing_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    a = adapter_for("iperf3")
    monkeypatch.setattr(a, "command", lambda ctx: ["false"])
    with pytest.raises(ParseError):
        tools.run_once(a, {}, tmp_path, timeout_s=120)
    assert psutil.Process().children(recursive=True) == []
