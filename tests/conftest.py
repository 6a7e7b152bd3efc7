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

from helpers import FIXTURES, REPO, fairmark_subprocess, json_out  # noqa: E402, F401 - after the prefix; re-exported

# A suite started in the background by a shell without job control (`make test &` in a script, some CI runners)
# inherits SIGINT ignored, and every fairmark it starts would inherit that too: the Ctrl-C tests would send a
# signal nobody hears, and a run never interrupted leaves its children for later tests to trip over (12 failures
# in one such session). A Python handler here is reset to the default in every child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def isolated_fairmark(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("fairmark-home")
    monkeypatch.setenv("FAIRMARK_STORE", f"sqlite:///{home / 'store.db'}")
    monkeypatch.setenv("FAIRMARK_LOCK_PATH", str(home / "host.lock"))
    monkeypatch.setenv("FAIRMARK_STATE_DIR", str(home / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    return home


@pytest.fixture
def srv_tmp() -> Iterator[Path]:
    """A scratch directory outside pytest's own: concurrent pytest sessions reset /tmp/pytest-of-USER to 0700,
    which would cut an unprivileged server (postgres, nginx workers) off from its files mid-test."""
    path = Path(tempfile.mkdtemp(prefix="fairmark-test-srv-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


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
