"""`fairmark setup PLAN`: the packages of a plan's tools, one install command, idempotent, refuses without root."""

from __future__ import annotations

import json

import pytest

import fairmark.cli.setup as setup_mod

PLAN = """
[[workload]]
name = "build"
tool = "kbuild"

[[workload]]
name = "zstd"
tool = "compress"

[[workload]]
name = "lz"
tool = "lzbench"

[[workload]]
name = "plain"
command = ["true"]
"""


@pytest.fixture
def plan(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    return str(path)


@pytest.fixture
def debian(monkeypatch):
    """A Debian host where only `make` and `gcc` are installed, and installs are recorded, not run."""
    installed = {"make", "gcc"}
    calls: list[list[str]] = []
    monkeypatch.setattr(setup_mod, "os_family", lambda: "debian")
    monkeypatch.setattr(setup_mod, "is_installed", lambda family, pkg: pkg in installed)

    def fake_install(setup):
        calls.append(setup.command)
        installed.update(setup.missing)

    monkeypatch.setattr(setup_mod, "install", fake_install)
    return calls


def test_dry_run_lists_missing_packages_in_one_command(fairmark_cli, plan, debian):
    code, out, err = fairmark_cli("setup", plan, "--dry-run", "--json")
    assert code == 0 and debian == []
    doc = json.loads(out)
    assert doc["command"][:4] == ["apt-get", "install", "-y", "--no-install-recommends"]
    assert "linux-source-6.1" in doc["missing"] and "zstd" in doc["missing"] and "make" not in doc["missing"]
    assert doc["unpackaged_tools"] == ["lzbench"] and "lzbench" in err


def test_installs_once_then_nothing_to_do(fairmark_cli, plan, debian, monkeypatch):
    monkeypatch.setattr(setup_mod.os, "geteuid", lambda: 0)
    code, out, _ = fairmark_cli("setup", plan)
    assert code == 0 and len(debian) == 1 and "installed" in out
    assert "zstd" in debian[0] and "bison" in debian[0]
    code, out, _ = fairmark_cli("setup", plan)
    assert code == 0 and len(debian) == 1 and "are installed" in out  # idempotent: no second install


def test_not_root_says_what_to_run_and_exits_3(fairmark_cli, plan, debian, monkeypatch):
    monkeypatch.setattr(setup_mod.os, "geteuid", lambda: 1000)
    code, _, err = fairmark_cli("setup", plan)
    assert code == 3 and debian == []
    assert "sudo apt-get install -y --no-install-recommends" in err and "linux-source-6.1" in err


def test_unknown_tool_names_the_plan(fairmark_cli, tmp_path, debian):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[workload]]\nname = "x"\ntool = "no-such-tool"\n')
    code, _, err = fairmark_cli("setup", str(bad))
    assert code == 2 and "bad.toml" in err and "no-such-tool" in err


def test_real_package_query_on_this_host():
    if setup_mod.os_family() != "debian":
        pytest.skip("Debian host only")
    assert setup_mod.is_installed("debian", "coreutils")
    assert not setup_mod.is_installed("debian", "no-such-package-fairmark")
