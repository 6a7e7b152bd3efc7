"""nfs: the refusal names what the host lacks; on this machine (no NFS client, no nfsd) it refuses, and a
sysroot with both does not."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from fairmark.errors import EnvironmentRefused
from fairmark.run.workloads import adapter_for, tools
from fairmark.run.workloads.base import ParseError, RawOutput
from fairmark.run.workloads.nfs import missing


def _sysroot(tmp: Path, filesystems: str, config: str) -> Path:
    (tmp / "proc/sys/kernel").mkdir(parents=True)
    (tmp / "proc/sys/kernel/osrelease").write_text("6.1.0-test\n")
    (tmp / "proc/filesystems").write_text(filesystems)
    (tmp / "proc/config.gz").write_bytes(gzip.compress(config.encode()))
    return tmp


def test_no_client_no_server_is_refused_with_reasons(tmp_path: Path):
    root = _sysroot(tmp_path, "nodev\ttmpfs\n\text4\n", "CONFIG_FUSE_FS=y\n")
    lacking = missing(root, ganesha=False)
    assert len(lacking) == 2
    assert "no 'nfs' or 'nfs4' in /proc/filesystems, CONFIG_NFS_FS=unset" in lacking[0]
    assert "no loadable modules" in lacking[0] and "no user-space ganesha.nfsd" in lacking[1]
    assert missing(root, ganesha=True) == lacking[:1]  # Ganesha would serve, but nothing could mount it


def test_kernel_with_both_is_not_refused(tmp_path: Path):
    root = _sysroot(tmp_path, "nodev\tnfs\nnodev\tnfs4\nnodev\tnfsd\n", "CONFIG_NFS_FS=y\nCONFIG_NFSD=y\n")
    assert missing(root, ganesha=False) == []
    modular = _sysroot(tmp_path / "m", "nodev\ttmpfs\n", "CONFIG_NFS_FS=m\nCONFIG_NFSD=m\n")
    (modular / "lib/modules/6.1.0-test/kernel/fs/nfsd").mkdir(parents=True)
    (modular / "lib/modules/6.1.0-test/kernel/fs/nfsd/nfsd.ko").touch()
    (modular / "lib/modules/6.1.0-test/kernel/fs/nfs").mkdir(parents=True)
    (modular / "lib/modules/6.1.0-test/kernel/fs/nfs/nfs.ko.xz").touch()
    assert missing(modular, ganesha=False) == []


def test_this_host_refusal_is_right(tmp_path: Path):
    """On this machine's kernel (no nfs/nfs4/nfsd file systems, no modules) the run is refused with both reasons;
    on a host whose kernel has them the test checks nothing is claimed missing for them."""
    fs = set(Path("/proc/filesystems").read_text().split())
    lacking = missing(ganesha=False)
    assert any(r.startswith("an NFS client") for r in lacking) == (
        not {"nfs", "nfs4"} & fs and not _modules()
    )
    assert any(r.startswith("an NFS server") for r in lacking) == ("nfsd" not in fs and not _modules())
    if lacking:
        with pytest.raises(EnvironmentRefused, match="cannot run on this host; it lacks an NFS"):
            tools.run_once(adapter_for("nfs"), {"version": 3}, tmp_path)


def _modules() -> bool:
    release = Path("/proc/sys/kernel/osrelease").read_text().strip()
    return (
        any(Path("/lib/modules", release).rglob("nfs*.ko*"))
        if Path("/lib/modules", release).is_dir()
        else False
    )


def test_version_is_checked():
    with pytest.raises(Exception, match="version must be one of 3, 4"):
        adapter_for("nfs").resolve({"version": 2})


def test_parse_has_no_result():
    text = (Path(__file__).parent / "fixtures/tools/nfs/refused-this-host.txt").read_text()
    with pytest.raises(ParseError, match="not implemented"):
        adapter_for("nfs").parse(RawOutput(text, ""))
