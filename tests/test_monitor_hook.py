"""The monitor hook on the real /proc: a short trial still has totals; a longer one a row per interval."""

import itertools
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
    # The busy "trial" is a child process, as in a real run: the sampler thread must not compete with it for the
    # GIL. How many samples a busy machine lets the thread take is not fixed, so the assertions are the ones that
    # hold at any load: samples are never closer than the interval, at least one falls inside the trial, there
    # are never more than the elapsed time allows, and the series' last point is the end of the trial.
    interval = 0.1
    hook = SystemMonitor(interval)
    t0 = time.monotonic()
    hook.start(CTX)
    spin = "import time\nt=time.monotonic()+0.6\nwhile time.monotonic()<t: pass"
    subprocess.run([sys.executable, "-c", spin], check=True)
    (art,) = hook.stop(CTX, None)
    elapsed = time.monotonic() - t0
    s = art.data
    t = s["t_s"]
    assert 2 <= len(t) <= elapsed / interval + 1
    gaps = [b - a for a, b in itertools.pairwise(t)]
    assert all(g >= interval * 0.9 for g in gaps[:-1])  # the last gap ends at stop(), which may come sooner
    assert t[-1] <= elapsed + 0.01
    assert s["totals"]["cpu_pct"]["user"] > 20  # one of the CPUs was spinning in user space
    assert set(s["per_cpu_pct"]) >= {"cpu0"}
    hook.close()


def test_bad_interval_refused():
    with pytest.raises(UsageError, match="monitor-interval"):
        SystemMonitor(0)


def test_stop_without_start_gives_nothing():
    assert SystemMonitor(1.0).stop(CTX, None) == []
