"""Every test gets its own store, host lock, state and data directories, so tests never touch the user's store
and concurrent test sessions never refuse each other through the host lock."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The session's bytecode — the tests' assertion-rewritten modules, fairmark's, and that of every Python the tests
# start — goes to one ignored folder of the checkout: no __pycache__ in src/ or tests/, nothing in /tmp, and the
# next session reuses it. Without it, with PYTHONDONTWRITEBYTECODE set, each session rewrote and compiled ~100
# test modules again (collection 6 s of CPU instead of 2) and every `python -m fairmark` the tests start compiled
# fairmark again; without either, src/ filled with __pycache__. (Only this file's own is written beside it.)
PYCACHE = Path(__file__).resolve().parent.parent / ".pycache"
sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Output is wrapped as for a pipe unless a test sets a width: pytest-xdist's workers inherit COLUMNS=80 and LINES=24
# from the controlling pytest (GNU readline, which it imports, puts its guess of the terminal in the environment),
# and a report then wrapped at 80 columns where the tests expect whole lines.
TERMINAL_SIZE = ("COLUMNS", "LINES")
for _name in TERMINAL_SIZE:
    os.environ.pop(_name, None)
    os.unsetenv(_name)  # also where readline set it behind os.environ's back (this process's children)

import helpers  # noqa: E402 - after the prefix
from helpers import FIXTURES, REPO, fairmark_subprocess, json_out  # noqa: E402, F401 - after the prefix; re-exported

# A suite started in the background by a shell without job control (`make test &` in a script, some CI runners)
# inherits SIGINT ignored, and every fairmark it starts would inherit that too: the Ctrl-C tests would send a
# signal nobody hears, and a run never interrupted leaves its children for later tests to trip over (12 failures
# in one such session). A Python handler here is reset to the default in every child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# Likewise a suite started under `nohup` inherits SIGHUP ignored, and a fairmark leaves an ignored SIGHUP alone (as
# nohup asks): the SIGHUP test's bisect ran to its end. Here a hang-up is still ignored, its children hear it.
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, lambda signum, frame: None)


@pytest.fixture(autouse=True)
def isolated_fairmark(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("fairmark-home")
    monkeypatch.setenv("FAIRMARK_STORE", f"sqlite:///{home / 'store.db'}")
    monkeypatch.setenv("FAIRMARK_LOCK_PATH", str(home / "host.lock"))
    monkeypatch.setenv("FAIRMARK_STATE_DIR", str(home / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    for name in TERMINAL_SIZE:  # unless the test sets them (see above)
        monkeypatch.delenv(name, raising=False)
    # the console as a command without --json or --quiet sets it: an earlier in-process `--json` run in this worker
    # must not send a later test's human output to stderr (which test runs before which depends on the workers)
    if "fairmark.console" in sys.modules:
        sys.modules["fairmark.console"].console.configure()
    return home


@pytest.fixture
def srv_tmp() -> Iterator[Path]:
    """A scratch directory outside pytest's own: concurrent pytest sessions reset /tmp/pytest-of-USER to 0700,
    which would cut an unprivileged server (postgres, nginx workers) off from its files mid-test."""
    path = Path(tempfile.mkdtemp(prefix="fairmark-test-srv-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The temporary directory of a command that borrows a repository (bisect's, ab's and backfill's checkouts),
    the test's own: tempfile's in this process (a process of its own is given it as TMPDIR), to see that nothing
    is left in it. The test runs at a raised priority (helpers.raised_priority)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    with helpers.raised_priority():
        yield tmp


@pytest.fixture
def fairmark_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    from fairmark.cli.main import main

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


# `make test` runs the suite in worker processes (pytest-xdist, `-n N --dist loadgroup`): most of its time is
# spent waiting (guests booting, servers starting, kills), not computing. Tests whose module shares a fixture
# (a QEMU guest, namespace hosts, a store) stay on one worker, so it is made once; those marked `machine` change
# or watch what the whole machine shares (pyproject.toml) and run one at a time, on one worker, beside the rest.
# Two such groups: `machine("perf")` — perf, whose sample rate the kernel lowers machine-wide, and stress-ng's
# /tmp directories counted by name — and plain `machine`: the system lock's sysctls, mounts, loop devices and
# cpusets, THP, /dev/kmsg, pbuild's namespaces. No test of one changes or watches what the other's do, and as
# one chain they were the suite's longest unit (2051 s of a run at load 15-17: perf 1029 s, the rest 1022 s).
# Without xdist (`pytest tests/test_x.py`) these marks do nothing.
ONE_WORKER_MODULES = {"test_architecture"}  # parses src/ once per process: once, not once per worker


def pytest_configure(config: pytest.Config) -> None:
    # xdist registers its `xdist_group` marker only when it is loaded: without it (`-p no:xdist`, or a machine
    # without pytest-xdist) the groups added below would fail --strict-markers before any test ran
    config.addinivalue_line("markers", "xdist_group(name): run on one xdist worker with its group (conftest)")
    if getattr(config.option, "dist", "no") == "loadgroup":
        # the controller hands the groups out in the order collected (longest first, below), not by how many
        # tests each has: xdist's default put the QEMU modules (1-4 tests of minutes each) behind dozens of
        # quick groups, so they started 17-23 minutes in and ended the suite
        config.option.loadscopereorder = False
        if not hasattr(config, "workerinput"):  # the controller: the workers write the tests' costs here
            fd, path = tempfile.mkstemp(prefix="fairmark-test-costs-", suffix=".json")
            os.close(fd)
            os.environ["FAIRMARK_TEST_COSTS"] = path  # before xdist starts them (tests/suite_schedule.py)
            config.add_cleanup(lambda: Path(path).unlink(missing_ok=True))


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: without xdist, none
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """--dist loadgroup, except that a long unit does not wait behind a worker's long test (tests/suite_schedule.py)."""
    if getattr(config.option, "dist", "no") != "loadgroup":
        return None
    import suite_schedule

    return suite_schedule.LongUnitsApart(config, log)  # type: ignore[arg-type]


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    scopes: dict[pytest.Item, str] = {}  # each test's work unit under xdist: its group, else itself
    for item in items:
        if mark := item.get_closest_marker("machine"):
            group = "-".join(("machine", *mark.args))  # `machine("perf")`: the perf group, apart
        elif item.module.__name__ in ONE_WORKER_MODULES or _uses_module_fixture(item):  # type: ignore[attr-defined]
            group = item.module.__name__  # type: ignore[attr-defined]
        else:
            scopes[item] = item.nodeid
            continue
        item.add_marker(pytest.mark.xdist_group(group))
        scopes[item] = group
    if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup (not in-process)
        _longest_first(items, scopes)


def _longest_first(items: list[pytest.Item], scopes: dict[pytest.Item, str]) -> None:
    """Items ordered so that the work units xdist hands out (a group, or a test of none) come longest first, the
    classic rule for the shortest schedule on a few workers: the machine group and the QEMU guests start at
    once, on workers of their own, while the rest fill in. A test's length is its own timeout mark (only the
    tests of minutes have one: 600-3600 s), else 60 if it is slow, else 1; a unit's is its tests' sum. Stable:
    each unit keeps its order, and every worker collects the same order (xdist checks)."""
    cost: dict[str, float] = {}
    own: dict[str, float] = {}
    for item in items:
        mark = item.get_closest_marker("timeout")
        own[item.nodeid] = (
            float(mark.args[0]) if mark and mark.args else (60.0 if item.get_closest_marker("slow") else 1.0)
        )
        cost[scopes[item]] = cost.get(scopes[item], 0.0) + own[item.nodeid]
    items.sort(key=lambda item: -cost[scopes[item]])
    if os.environ.get("FAIRMARK_TEST_COSTS"):  # for the controller's scheduler (tests/suite_schedule.py)
        import suite_schedule

        suite_schedule.write_costs(own)


def _uses_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info else ()
    return any(d and d[-1].scope in ("module", "package") for d in defs)


@pytest.hookimpl(trylast=True)  # after xdist's hook, which puts each test's group in its node ID
def pytest_collection_finish(session: pytest.Session) -> None:
    """Refuse to run the `machine` tests at once: a pytest whose node IDs xdist cannot extend loses the groups
    without a word (pytest 9.2, pytest-dev/pytest-xdist#1386; pyproject.toml pins below it)."""
    if not getattr(session.config.option, "loadgroup", False):  # xdist's workers under --dist loadgroup
        return
    lost = [i.nodeid for i in session.items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if lost:
        raise pytest.UsageError(f"--dist loadgroup: xdist did not group {lost[0]} (and {len(lost) - 1} more)")
