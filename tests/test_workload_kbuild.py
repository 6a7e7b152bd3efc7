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


def test_a_source_extracted_by_several_processes_at_once_is_extracted_once_and_whole(tmp_path):
    """Test workers (and two fairmarks) may set up the same cached source at once: the others wait for the
    first one's extraction instead of replacing the tree under its build."""
    import subprocess
    import sys

    from helpers import wait_until

    src = tmp_path / "pkg-1.0"
    src.mkdir()
    for i in range(2000):
        (src / f"f{i}.c").write_text("int x;\n")
    tarball = tmp_path / "pkg-1.0.tar.gz"
    subprocess.run(["tar", "-czf", str(tarball), "-C", str(tmp_path), "pkg-1.0"], check=True)
    cache, go = tmp_path / "cache", tmp_path / "go"
    # each process waits for the others, extracts, then watches the tree while the others finish theirs
    code = (
        "import sys, time; from pathlib import Path; from fairmark.run.workloads import tools\n"
        "Path(sys.argv[3] + '-' + sys.argv[4]).touch()\n"
        "while not Path(sys.argv[3]).exists(): time.sleep(0.001)\n"
        "top = tools.extract_once(Path(sys.argv[1]), Path(sys.argv[2])); seen = set()\n"
        "end = time.monotonic() + 2\n"
        "while time.monotonic() < end: seen.add(len(list(top.glob('*.c'))))\n"
        "print(top, sorted(seen))"
    )
    argv = [sys.executable, "-c", code, str(tarball), str(cache), str(go)]
    procs = [subprocess.Popen([*argv, str(n)], stdout=subprocess.PIPE, text=True) for n in range(4)]
    assert wait_until(lambda: len(list(tmp_path.glob("go-*"))) == 4)
    go.touch()
    outs = [p.communicate(timeout=120)[0].split(maxsplit=1) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    assert {top for top, _ in outs} == {str(cache / "pkg-1.0" / "pkg-1.0")}
    assert {seen.strip() for _, seen in outs} == {"[2000]"}  # never a tree being replaced or half there
    assert not list(cache.glob(".extract-*"))
