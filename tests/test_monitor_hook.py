"""The monitor hook on the real /proc: a short trial still has totals; a longer one a row per interval."""

import itertools
import os
import platform
import subprocess
import sys
import time

import pytest

from fairmark.errors import UsageError
from fairmark.run.hooks import HookContext
from fairmark.run.monitors import SystemMonitor, default_hooks
from helpers import wait_until

pytestmark = pytest.mark.skipif(platform.system() != "Linux", reason="reads /proc")
CTX = HookContext("run", "cell", "w", "A", "t1", "/tmp", False)


def test_default_hooks_are_available_here():
    hooks = default_hooks()
    assert len(hooks) == 1 and hooks[0].unavailable is None and hooks[0].interval_s == 1.0


def test_short_trial_has_totals():
    hook = SystemMonitor(3600.0)  # the trial is shorter than the interval whatever the load
    hook.start(CTX)
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    (art,) = hook.stop(CTX, None)
    assert art.kind == "monitor" and art.content_type == "application/json"
    assert len(art.data["t_s"]) == 1
    assert art.data["totals"]["counters"]["forks"] >= 1
    assert art.data["ncpu"] >= 1


def test_busy_trial_samples_each_interval_and_sees_user_time():
    # The busy "trial" is a child process, as in a real run: the sampler thread must not compete with it for the
    # GIL. It spins until the sampler took two samples inside it (a busy machine may take long to let the thread
    # run: the test waits for that event instead of hoping a fixed spin is long enough). What holds at any load:
    # samples are never closer than the interval, never more than the elapsed time allows, the series' last
    # point is the end of the trial, and the system-wide user share includes at least the spinner's own CPU time.
    interval = 0.1
    hook = SystemMonitor(interval)
    t0 = time.monotonic()
    hook.start(CTX)
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert wait_until(lambda: sum(s.t_s > t0 + interval / 2 for s in hook._samples) >= 4, timeout_s=120)
    finally:
        spinner.kill()
    _, _, rusage = os.wait4(spinner.pid, 0)
    (art,) = hook.stop(CTX, None)
    elapsed = time.monotonic() - t0
    s = art.data
    t = s["t_s"]
    assert 3 <= len(t) <= elapsed / interval + 1
    gaps = [b - a for a, b in itertools.pairwise(t)]
    # the sampler keeps its own clock (a sample late on a busy machine, the next on time): rows at least half an
    # interval apart, and none within half an interval of the trial's start or end
    assert all(g >= interval * 0.45 for g in gaps) and t[0] >= interval * 0.45
    assert t[-1] <= elapsed + 0.01
    # /proc/stat counts CPU time in ticks (10 ms): a few of them of slack.
    spun_pct = 100 * (rusage.ru_utime - 0.05) / (s["ncpu"] * elapsed)
    assert s["totals"]["cpu_pct"]["user"] >= spun_pct, (s["totals"]["cpu_pct"], rusage.ru_utime, elapsed)
    assert set(s["per_cpu_pct"]) >= {"cpu0"}
    hook.close()


def test_bad_interval_refused():
    with pytest.raises(UsageError, match="monitor-interval"):
        SystemMonitor(0)


def test_stop_without_start_gives_nothing():
    assert SystemMonitor(1.0).stop(CTX, None) == []


def _leaves(doc, path=""):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _leaves(v, f"{path}/{k}")
    elif isinstance(doc, list):
        for v in doc:
            yield from _leaves(v, path)
    else:
        yield path, doc


def test_the_series_is_numbers_under_fairmarks_names_so_the_scrubber_skips_it():
    """A series skips the run's secret scrubber (0.1 ms a millisecond trial): what it holds must be numbers under
    names fairmark chose — the OS name aside; a sample's error text makes it scrubbed again."""
    import re

    hook = SystemMonitor(3600.0)
    hook.exact_min_s = 0.0  # the cell's second trial too takes its own snapshots (the claimed: below)
    hook.start(CTX)
    subprocess.run(["true"], check=True)
    (art,) = hook.stop(CTX, None)
    assert art.numbers_only
    for path, value in _leaves(art.data):
        assert re.fullmatch(r"(/[a-z0-9_]+)+", path), path
        assert value is None or type(value) in (int, float) or (path == "/os" and value == "linux"), (
            path,
            value,
        )
    hook.start(CTX)
    hook.errors.append("OSError: something the reader said")
    (art,) = hook.stop(CTX, None)
    assert not art.numbers_only and art.data["sample_errors"]
    hook.close()
