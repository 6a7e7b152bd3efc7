"""connections adapter (wrk against a managed nginx): parse of the done() JSON line, errors as data,
fd limit, end to end."""

from __future__ import annotations

import resource
import shutil
from pathlib import Path

import psutil
import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError, RawOutput, SetupError
from fairmark.run.workloads.connections import raise_fd_limit

FIX = Path(__file__).parent / "fixtures" / "tools" / "wrk"
needs_wrk = pytest.mark.skipif(
    shutil.which("wrk") is None or shutil.which("nginx") is None, reason="wrk/nginx"
)


def parse(name: str) -> dict[str, float]:
    return adapter_for("connections").parse(RawOutput((FIX / name).read_text(), ""))


def test_parse_done_hook_line():
    m = parse("c20_t2_d2.txt")
    assert m["requests_s"] == pytest.approx(16273 / 2.008963)
    assert m["errors_total"] == 0 and m["latency_avg_ms"] == pytest.approx(2.956174)
    assert m["latency_p50_ms"] == 2.055 and m["latency_p99_ms"] == 14.433
    assert m["transfer_mib_s"] == pytest.approx(15150163 / 2.008963 / 2**20)
    assert parse("c2000_t2_d2.txt")["latency_p99_ms"] == 319.05


def test_non_2xx_responses_are_counted_as_errors_not_hidden():
    m = parse("status_404.txt")
    assert m["errors_status"] == 12592 and m["errors_total"] == 12592


def test_no_summary_line_is_a_failure():
    with pytest.raises(ParseError, match="Connection refused"):
        parse("refused.txt")
    with pytest.raises(ParseError, match="malformed"):
        adapter_for("connections").parse(RawOutput('FAIRMARK_JSON {"requests": 1}', ""))


def test_params_are_checked():
    a = adapter_for("connections")
    with pytest.raises(PlanError, match="threads"):
        a.resolve({"connections": 2, "threads": 4})
    with pytest.raises(PlanError, match="server_workers"):
        a.resolve({"server_workers": "many"})


def test_fd_limit_raised_within_the_hard_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        target = min(hard, soft + 100) if hard != resource.RLIM_INFINITY else soft + 100
        resource.setrlimit(resource.RLIMIT_NOFILE, (target - 100, hard))
        raise_fd_limit(target)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= target
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_fd_limit_beyond_hard_limit_is_a_clear_error(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 4096))

    def refuse(*_):
        raise PermissionError

    monkeypatch.setattr(resource, "setrlimit", refuse)
    with pytest.raises(SetupError, match="hard limit is 4096"):
        raise_fd_limit(100_000)


@needs_wrk
def test_end_to_end_and_limits_restored(srv_tmp: Path):
    # srv_tmp, outside pytest's tmp dir: a concurrent pytest session resets it to 0700, cutting nginx's workers off
    tmp_path = srv_tmp
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    m = tools.run_once(
        adapter_for("connections"), {"connections": 50, "duration_s": 1}, tmp_path, timeout_s=120
    )
    assert m["requests_s"] > 0 and m["errors_total"] == 0 and m["latency_p99_ms"] >= m["latency_p50_ms"]
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == before
    assert psutil.Process().children(recursive=True) == []
    assert not (tmp_path / "scratch" / "nginx").exists()
