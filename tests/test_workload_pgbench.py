"""pgbench adapter: parse on captured outputs, params, end to end against a managed PostgreSQL (restart,
fsync off, Unix socket), and nothing left behind — also when setup fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, servers, tools
from fairmark.run.workloads.base import ParseError, RawOutput, SetupError

FIX = Path(__file__).parent / "fixtures" / "tools" / "pgbench"
needs_pg = pytest.mark.skipif(
    shutil.which("pgbench") is None or not (servers.PG_BIN / "postgres").exists(),
    reason="PostgreSQL 15 missing",
)


def parse(name: str, stderr: str = "") -> dict[str, float]:
    return adapter_for("pgbench").parse(RawOutput((FIX / name).read_text(), stderr))


def test_parse_tpcb_and_select_only():
    m = parse("tpcb_c2_j2_T2.txt")
    assert m == {"tps": 269.511859, "latency_avg_ms": 7.421, "failed_transactions": 0, "transactions": 539}
    assert parse("select_only_c4_j2_T2.txt")["tps"] == 6590.20693


def test_missing_tps_is_a_failure_naming_stderr():
    err = (FIX / "refused.stderr.txt").read_text()
    with pytest.raises(ParseError, match="could not create connection"):
        adapter_for("pgbench").parse(RawOutput("", err, 0))


def test_zero_transactions_is_a_failure():
    text = (FIX / "tpcb_c2_j2_T2.txt").read_text().replace("processed: 539", "processed: 0")
    with pytest.raises(ParseError, match="no transaction"):
        adapter_for("pgbench").parse(RawOutput(text, ""))


def test_params_are_checked():
    a = adapter_for("pgbench")
    with pytest.raises(PlanError, match="mode"):
        a.resolve({"mode": "tpcc"})
    with pytest.raises(PlanError, match="threads"):
        a.resolve({"clients": 2, "threads": 4})
    with pytest.raises(PlanError, match="fsync"):
        a.resolve({"fsync": "off"})
    assert a.labels(a.resolve({"fsync": False}))["fsync"].startswith("off")


def no_leftovers(tmp_path: Path) -> None:
    assert psutil.Process().children(recursive=True) == []
    assert not (tmp_path / "scratch" / "postgres").exists()


@pytest.mark.slow
@needs_pg
def test_end_to_end_restart_unix_socket(srv_tmp: Path):
    params = {"scale": 1, "duration_s": 1, "clients": 2, "restart": True, "fsync": False, "transport": "unix"}
    m = tools.run_once(adapter_for("pgbench"), params, srv_tmp, timeout_s=120)
    assert m["tps"] > 0 and m["latency_avg_ms"] > 0 and m["failed_transactions"] == 0
    no_leftovers(srv_tmp)


@pytest.mark.slow
@needs_pg
def test_server_removed_when_setup_fails(srv_tmp: Path, monkeypatch: pytest.MonkeyPatch):
    a = adapter_for("pgbench")
    monkeypatch.setattr(
        a, "_conn", lambda server, transport: ["-h", "127.0.0.1", "-p", "1", "-U", "postgres"]
    )
    with pytest.raises(SetupError, match="pgbench -i failed"):
        tools.run_once(a, {"scale": 1}, srv_tmp, timeout_s=120)
    no_leftovers(srv_tmp)
