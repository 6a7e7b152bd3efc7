"""kbuild adapter: build-output checks on captured make output, parameters, and (slow, opt-in) a real build."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fairmark.errors import PlanError
from fairmark.run.workloads import adapter_for
from fairmark.run.workloads.base import ParseError, TrialContext, WorkloadContext
from fairmark.run.workloads.kbuild import find_tarball, parse_build

FIX = Path(__file__).parent / "fixtures" / "tools" / "kbuild"


def test_parse_real_build_output():
    assert parse_build((FIX / "mm.stdout.txt").read_text(), (FIX / "mm.stderr.txt").read_text()) == {}


def test_up_to_date_tree_is_not_a_build():
    with pytest.raises(ParseError, match="compiled nothing"):
        parse_build((FIX / "uptodate.stdout.txt").read_text(), "")


def test_make_error_is_failed_trial():
    with pytest.raises(ParseError, match="unrecognized command-line option"):
        parse_build((FIX / "error.stdout.txt").read_text(), (FIX / "error.stderr.txt").read_text())


def test_primary_metric_is_wall_time():
    a = adapter_for("kbuild")
    assert a.metrics[0].name == "wall_s" and a.metrics[0].better == "lower"
    assert "linux-source-6.1" in a.packages["debian"] and "flex" in a.packages["debian"]


def test_params_checked():
    a = adapter_for("kbuild")
    with pytest.raises(PlanError, match="config must be one of"):
        a.resolve({"config": "allyesconfig"})
    with pytest.raises(PlanError, match="targets"):
        a.resolve({"targets": ["../../etc"]})
    with pytest.raises(PlanError, match="targets"):
        a.resolve({"targets": "kernel/"})
    assert a.resolve({})["targets"] == ["kernel/", "mm/"]


def test_missing_source_is_reported_before_any_trial(monkeypatch):
    import fairmark.run.workloads.kbuild as kb

    monkeypatch.setattr(kb, "find_tarball", lambda: None)
    assert kb.TARBALLS in adapter_for("kbuild").missing_executables()


def test_before_trial_removes_only_target_objects(tmp_path):
    a = adapter_for("kbuild")
    build = tmp_path / "build"
    for d in ("mm", "kernel", "scripts"):
        (build / d).mkdir(parents=True)
        (build / d / "x.o").write_text("")
    ctx = WorkloadContext("k", a.resolve({"targets": ["mm/"]}), tmp_path, tmp_path, True, {"build": build})
    a.before_trial(TrialContext(ctx, ctx.params, tmp_path / "t", "A"))
    assert (
        not (build / "mm").exists() and (build / "scripts" / "x.o").exists() and (build / "kernel").exists()
    )


@pytest.mark.slow
@pytest.mark.skipif(find_tarball() is None, reason="linux-source not installed (fairmark setup installs it)")
@pytest.mark.skipif(
    not os.environ.get("FAIRMARK_SLOW_TESTS"),
    reason="a real kernel build takes minutes (extract + configure + priming build); set FAIRMARK_SLOW_TESTS=1",
)
def test_kbuild_end_to_end(tmp_path):
    from fairmark.run.workloads import tools

    # The product's own cache: the source is extracted once, here as in real runs.
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fairmark" / "kbuild"
    a = adapter_for("kbuild")
    params = {"targets": ["lib/ctype.o"], "jobs": 2}
    assert tools.run_once(a, params, tmp_path, cache=cache, timeout_s=900) == {}


def test_jobs_follow_the_trial_cpu_set(tmp_path):
    a = adapter_for("kbuild")
    state = {"src": tmp_path / "src", "build": tmp_path / "build"}
    for jobs, expect in ((0, '-j"$(nproc)"'), (3, "-j3")):
        ctx = WorkloadContext("k", a.resolve({"jobs": jobs}), tmp_path, tmp_path, True, dict(state))
        argv = a.command(TrialContext(ctx, ctx.params, tmp_path / "t", "A"))
        assert any(expect in arg for arg in argv) and "kernel/" in argv
