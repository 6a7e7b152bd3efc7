"""The host lock cannot be turned against its user by another local user (issue 37, item 6): it lives where only
its user can write, is created 0600, is never opened through a symbolic link, and is refused unless it is a regular
file of the user with one name. The hostile files here are planted by another user (nobody, through setpriv) in a
world-writable sticky directory, as in /tmp; with fs.protected_symlinks off (this VM, FreeBSD, many containers) the
old lock, opened through the planted link, truncated the root-owned file it named."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fairmark.errors import EnvironmentRefused
from fairmark.run.guard.lock import HostLock, lock_path
from fairmark.run.variants.syslock import SystemLock

NOBODY = 65534
SRC = Path(__file__).resolve().parent.parent / "src"

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="plants files as another user: root and setpriv",
)


def as_nobody(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A directory like /tmp: every user may create entries (sticky, 1777). Outside pytest's own temporary
    directory, which is 0700 (the other user could not reach it)."""
    path = Path(tempfile.mkdtemp(prefix="fairmark-test-lock-"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of this user that only this user may read or write (a key, a password database)."""
    path = tmp_path / "secret-of-root"
    path.write_text("do not truncate me\n")
    path.chmod(0o600)
    return path


@needs_root
def test_a_link_planted_by_another_user_is_refused_and_its_target_untouched(
    shared_tmp: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = shared_tmp / "fairmark-host.lock"
    done = as_nobody("ln", "-s", str(victim), str(planted))
    assert done.returncode == 0, done.stderr
    assert os.lstat(planted).st_uid == NOBODY
    monkeypatch.setenv("FAIRMARK_LOCK_PATH", str(planted))
    refusals = []
    for take in (lambda: HostLock({"plan": "p.toml"}).__enter__(), lambda: SystemLock(planted).acquire()):
        try:
            take()
        except EnvironmentRefused as exc:
            refusals.append(exc.message)
        assert victim.read_text() == "do not truncate me\n"  # the old lock truncated it here
    assert len(refusals) == 2 and all("is a symbolic link" in m for m in refusals), refusals


@needs_root
def test_a_file_planted_by_another_user_is_refused(shared_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planted = shared_tmp / "fairmark-host.lock"
    done = as_nobody("sh", "-c", f"echo mine > {planted}; chmod 666 {planted}")
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("FAIRMARK_LOCK_PATH", str(planted))
    with pytest.raises(EnvironmentRefused, match=f"belongs to uid {NOBODY}"), HostLock({"plan": "p.toml"}):
        pass
    assert planted.read_text() == "mine\n"  # not truncated, not locked for the other user to see


def test_a_hard_link_to_another_file_is_refused(
    tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    linked = tmp_path / "host.lock"
    os.link(victim, linked)
    monkeypatch.setenv("FAIRMARK_LOCK_PATH", str(linked))
    with pytest.raises(EnvironmentRefused, match="2 names"), HostLock({"plan": "p.toml"}):
        pass
    assert victim.read_text() == "do not truncate me\n"


def test_the_lock_file_is_0600_and_an_older_0666_one_is_narrowed(monkeypatch: pytest.MonkeyPatch) -> None:
    path = Path(os.environ["FAIRMARK_LOCK_PATH"])
    with HostLock({"plan": "p.toml"}):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o666)  # as fairmark made it before
    with HostLock({"plan": "p.toml"}):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_root_keeps_its_lock_in_a_private_directory_of_run(monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("root's directory")
    monkeypatch.delenv("FAIRMARK_LOCK_PATH")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/tmp")  # a `sudo -E` kept another user's: not used by root
    path = lock_path()
    assert path.parent == Path("/run/fairmark") and path.name == "host.lock"
    st = os.lstat(path.parent)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o022


@needs_root
def test_another_user_gets_a_private_directory_of_its_own(shared_tmp: Path) -> None:
    """Run as nobody with the system Python (fairmark's virtual environment is under /root): with
    XDG_RUNTIME_DIR its fairmark/ directory there, without it a 0700 directory of /tmp named by the uid; a
    directory of that name planted by somebody else is refused."""
    code = (
        "import os, stat; from fairmark.run.guard.lock import HostLock\n"
        "with HostLock({'plan': 'p'}) as lock:\n"
        "    st = os.lstat(lock.path.parent)\n"
        "    print(lock.path, oct(stat.S_IMODE(st.st_mode)), st.st_uid, oct(stat.S_IMODE(os.lstat(lock.path).st_mode)))\n"
    )
    runtime = shared_tmp / "runtime"
    runtime.mkdir(mode=0o700)
    os.chown(runtime, NOBODY, NOBODY)
    base = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(SRC), "PYTHONDONTWRITEBYTECODE": "1"}
    got = as_nobody("/usr/bin/python3", "-c", code, env=base | {"XDG_RUNTIME_DIR": str(runtime)})
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == [str(runtime / "fairmark" / "host.lock"), "0o700", str(NOBODY), "0o600"]

    got = as_nobody("/usr/bin/python3", "-c", code, env=base | {"TMPDIR": str(shared_tmp)})
    assert got.returncode == 0, got.stderr
    assert got.stdout.split()[0] == str(shared_tmp / f"fairmark-{NOBODY}" / "host.lock")

    shutil.rmtree(shared_tmp / f"fairmark-{NOBODY}")
    (shared_tmp / f"fairmark-{NOBODY}").mkdir(mode=0o777)  # planted by root, standing for any other user
    got = as_nobody("/usr/bin/python3", "-c", code, env=base | {"TMPDIR": str(shared_tmp)})
    assert got.returncode != 0 and "belongs to uid 0" in got.stderr
