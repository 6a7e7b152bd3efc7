"""The monitor hook on the real /proc: a short trial still has totals; a longer one a row per interval."""

import platform
import subprocess
import sys
import time

import pytest

from fairmark.errors import UsageError
from fairmark.run.hooks import HookContext
from fairmark.run.monitors import SystemMonitor, default_hooks

pytestmark = pytest.mark.skipif(platform.system() != "Linux", reason="reads /proc")
CTX = HookContext("run", "cell", "w", "A", "t1", "/tmp", False)


def test_default_hooks_are_available_here():
    hooks = default_hooks()
    assert len(hooks) == 1 and hooks[0].unavailable is None and hooks[0].interval_s == 1.0


def test_short_trial_has_totals():
    hook = SystemMonitor(1.0)
    hook.start(CTX)
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    (art,) = hook.stop(CTX, None)
    assert art.kind == "monitor" and art.content_type == "application/json"
    assert len(art.data["t_s"]) == 1
    assert art.data["totals"]["counters"]["forks"] >= 1
    assert art.data["ncpu"] >= 1


def test_busy_trial_samples_each_interval_and_sees_user_time():
    hook = SystemMonitor(0.1)
    hook.start(CTX)
    t_end = time.monotonic() + 0.6
    while time.monotonic() < t_end:
        pass  # this thread is the CPU-bound "trial"
    (art,) = hook.stop(CTX, None)
    s = art.data
    assert 4 <= len(s["t_s"]) <= 9
    assert s["totals"]["cpu_pct"]["user"] > 20  # one of the CPUs was spinning in user space
    assert set(s["per_cpu_pct"]) >= {"cpu0"}
    hook.close()


def test_bad_interval_refused():
    with pytest.raises(UsageError, match="monitor-interval"):
        SystemMonitor(0)


def test_stop_without_start_gives_nothing():
    assert SystemMonitor(1.0).stop(CTX, None) == []
