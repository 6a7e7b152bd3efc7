"""nfs (issue 25 item 9): the measured path runs here — NFS-Ganesha in a namespace of its own, libnfs's nfs-cp
over v3 and v4 — and a host that cannot run it is refused with each missing piece, which `fairmark tools` says
too ("refused on this host: …", never "installed")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fairmark.errors import EnvironmentRefused
from fairmark.run.workloads import adapter_for, nfs, tools
from fairmark.run.workloads.base import ParseError, RawOutput
from helpers import REPO

FIX = Path(__file__).parent / "fixtures" / "tools" / "nfs"
HERE = nfs.missing()
needs_path = pytest.mark.skipif(bool(HERE), reason=f"this host lacks {'; '.join(HERE)}")


def test_a_host_without_the_pieces_is_refused_naming_each():
    assert nfs.missing(system="FreeBSD") == [
        "Linux: the server runs in Linux network and mount namespaces (this is FreeBSD)"
    ]
    lacking = nfs.missing(Path("/nonexistent"), system="Linux", euid=1000, which=lambda name: None)
    assert lacking[0].startswith("root, to give the server network and mount namespaces")
    assert "ganesha.nfsd (nfs-ganesha)" in lacking[1] and "nfs-cp (libnfs-utils)" in lacking[1]
    assert lacking[2].startswith("NFS-Ganesha's VFS back end: no /usr/lib/*/ganesha/libfsalvfs.so")
    if next(Path("/").glob(nfs.FSAL_VFS[0]), None):  # root, every program and the back end: nothing lacking
        assert nfs.missing(Path("/"), system="Linux", euid=0, which=lambda name: f"/usr/bin/{name}") == []


def test_tools_says_refused_never_installed_when_the_host_cannot_run_it(monkeypatch, fairmark_cli):
    monkeypatch.setattr(
        nfs, "missing", lambda *a, **k: ["root, to give the server … (unshare --net --mount)"]
    )
    code, out, _ = fairmark_cli("tools", "--json")
    assert code == 0
    (doc,) = [d for d in json.loads(out)["tools"] if d["name"] == "nfs"]
    assert doc["refused"].startswith("root, to give the server")
    code, out, _ = fairmark_cli("tools")
    (row,) = [line for line in out.splitlines() if line.startswith("nfs ")]
    assert "refused on" in row and "installed" not in row
    code, out, _ = fairmark_cli("tools", "nfs")
    assert "refused on this host: root, to give the server" in " ".join(out.split())
    with pytest.raises(EnvironmentRefused, match="cannot run on this host; it lacks root"):
        adapter_for("nfs").setup(None)


def test_tools_says_installed_here_only_when_nothing_is_lacking(fairmark_cli):
    _, out, _ = fairmark_cli("tools", "--json")
    (doc,) = [d for d in json.loads(out)["tools"] if d["name"] == "nfs"]
    assert (doc["refused"] is None) == (HERE == [])


def test_parameters_are_checked():
    with pytest.raises(Exception, match="version must be one of 3, 4"):
        adapter_for("nfs").resolve({"version": 2})
    with pytest.raises(Exception, match="mode must be one of read, write"):
        adapter_for("nfs").resolve({"mode": "append"})


def test_parse_checks_what_nfs_cp_copied():
    a = adapter_for("nfs")
    out = (FIX / "nfs-cp-read-32mib.txt").read_text()
    assert a.parse(RawOutput(out, "", 0, {"expected-bytes": str(32 * 2**20)})) == {}
    with pytest.raises(ParseError, match="copied 33554432 bytes of 67108864"):
        a.parse(RawOutput(out, "", 0, {"expected-bytes": str(64 * 2**20)}))
    err = (FIX / "nfs-cp-v4-write-libnfs-4.0.0.stderr.txt").read_text()
    with pytest.raises(ParseError, match="ZDR error"):
        a.parse(RawOutput("", err, 10, {}))


@pytest.mark.slow
@needs_path
@pytest.mark.parametrize(("version", "mode"), [("3", "read"), ("4", "read"), ("3", "write")])
def test_a_file_is_copied_over_nfs(tmp_path: Path, version: str, mode: str):
    """One trial's whole life cycle: the server in its namespace, nfs-cp checked byte for byte, all stopped."""
    params = {"version": version, "mode": mode, "size_mib": 8}
    assert tools.run_once(adapter_for("nfs"), params, tmp_path) == {}
    assert not (tmp_path / "scratch" / "nfs-ganesha").exists()  # the server's directory is gone with it
    left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout
    assert left.strip() == "", left


@pytest.mark.slow
@needs_path
def test_a_v4_write_either_works_or_fails_with_libnfs_own_words(tmp_path: Path):
    try:
        tools.run_once(adapter_for("nfs"), {"version": 4, "mode": "write", "size_mib": 1}, tmp_path)
    except ParseError as exc:  # Debian 12's libnfs 4.0.0: "ZDR error: Failed to encode COMPOUND4args"
        assert "libnfs:1 error:" in exc.message


@pytest.mark.slow
def test_the_shipped_plan_runs_or_is_refused_with_the_reason(tmp_path: Path):
    argv = [sys.executable, "-m", "fairmark", "run", str(REPO / "plans" / "nfs.toml"), "--quick", "--json"]
    argv += [
        "--store",
        f"sqlite:///{tmp_path / 'x.db'}",
        "--accept-risk",
        "--no-monitors",
        "--allow-concurrent",
    ]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=REPO)
    if HERE:
        assert res.returncode == 3 and "cannot run on this host; it lacks" in res.stderr, res.stderr[-2000:]
        return
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    cells = {c["variant"]: c for c in doc["cells"]}
    assert set(cells) == {"v3", "v4"}
    assert all(c["n_ok"] >= 3 and c["n_failed"] == 0 for c in cells.values()), res.stderr[-2000:]
    assert len(doc["verdicts"]) == 1
