"""Attribution with real tools here: zstd is user-bound, stress-ng fork and pipe are system-heavy."""

import os
import resource
import shutil
import subprocess
import time

import pytest

from fairmark.report.attribution import attribute
from fairmark.run.hooks import HookContext
from fairmark.run.monitors import SystemMonitor

CTX = HookContext("run", "cell", "w", "A", "t1", "/tmp", False)


def _measure(argv):
    hook = SystemMonitor(0.5)
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    hook.start(CTX)
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    (art,) = hook.stop(CTX, None)
    r1, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    trial = {"user_s": r1.ru_utime - r0.ru_utime, "sys_s": r1.ru_stime - r0.ru_stime, "wall_s": wall}
    return trial, art.data


@pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd not installed")
def test_zstd_is_user_bound(tmp_path):
    data = tmp_path / "data"
    words = [f"word{i % 977} {i * 7919 % 10007} " for i in range(200_000)]
    data.write_text("".join(words))
    trial, series = _measure(["zstd", "-q", "-b3", "-i1", str(data)])
    a = attribute("compress", [trial], [series])
    assert a.user_pct >= 90, a.sentence
    assert a.system_pct < 10


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed")
@pytest.mark.parametrize("stressor", ["fork", "pipe"])
def test_stress_ng_is_system_heavy(stressor, tmp_path):
    argv = ["stress-ng", f"--{stressor}", "1", "-t", "1", "--temp-path", str(tmp_path)]
    trial, series = _measure(argv)
    a = attribute(f"stress-ng {stressor}", [trial], [series])
    assert a.system_pct >= 40, a.sentence
    assert not a.user_bound
    assert os.cpu_count() and a.sentence.startswith(f"stress-ng {stressor}: ")
