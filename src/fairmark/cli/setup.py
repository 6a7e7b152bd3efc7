"""`fairmark setup PLAN`: install the OS packages the plan's tool workloads need, in one package-manager
command, and only those missing (so running it twice installs nothing the second time)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

import click
from rich.markup import escape

from fairmark.cli.common import common_options
from fairmark.console import console
from fairmark.errors import EnvironmentRefused, FairmarkError, PlanError
from fairmark.plan.load import command_programs, load_plan
from fairmark.run.workloads import adapter_for

# family → (package manager, install argv prefix)
INSTALLERS = {
    "debian": ("apt-get", ["apt-get", "install", "-y", "--no-install-recommends"]),
    "fedora": ("dnf", ["dnf", "install", "-y"]),
    "freebsd": ("pkg", ["pkg", "install", "-y"]),
}


@dataclass(frozen=True)
class SetupPlan:
    family: str
    wanted: tuple[str, ...]  # every package the plan's tools need, in first-use order
    missing: tuple[str, ...]
    unpackaged: tuple[str, ...]  # tools this OS has no package for (e.g. lzbench on Debian)
    programs: tuple[tuple[str, bool], ...] = ()  # command workloads' own programs, and whether each is found
    remote: bool = False  # some variant runs on a host: its programs are that host's

    @property
    def command(self) -> list[str]:
        return [*INSTALLERS[self.family][1], *self.missing] if self.missing else []

    def to_dict(self) -> dict[str, object]:
        return {
            "family": self.family,
            "packages": list(self.wanted),
            "missing": list(self.missing),
            "unpackaged_tools": list(self.unpackaged),
            "command": self.command,
            "command_programs": {name: found for name, found in self.programs},
        }

    def summary(self) -> str:
        """What setup found, without claiming more than the tool workloads' packages."""
        if not self.wanted:
            return "the plan has no tool workload with packages to install"
        return f"all {len(self.wanted)} package(s) the plan's tool workloads need are installed"

    def programs_line(self) -> str | None:
        """The command workloads' own programs: setup cannot know their packages, so it says which are found."""
        if not self.programs:
            return None
        listed = ", ".join(f"{name} ({'found' if ok else 'NOT FOUND'})" for name, ok in self.programs)
        where = " (variants on hosts need them on their host)" if self.remote else ""
        todo = "; install what is not found yourself" if not all(ok for _, ok in self.programs) else ""
        return (
            f"the programs the command workloads start (each shell line's commands) are not setup's to "
            f"install{where}: {listed}{todo}"
        )


def os_family() -> str:
    if sys.platform.startswith("freebsd"):
        return "freebsd"
    for family, (manager, _) in INSTALLERS.items():
        if shutil.which(manager):
            return family
    raise EnvironmentRefused("no supported package manager found (apt-get, dnf, pkg)")


def is_installed(family: str, package: str) -> bool:
    queries = {
        "debian": ["dpkg-query", "-W", "-f=${Status}", package],
        "fedora": ["rpm", "-q", "--whatprovides", package],
        "freebsd": ["pkg", "info", "-e", package],
    }
    proc = subprocess.run(queries[family], capture_output=True, text=True, check=False)
    if family == "debian":
        return proc.returncode == 0 and proc.stdout.strip().endswith(" installed")
    return proc.returncode == 0


def plan_packages(path: str, family: str) -> SetupPlan:
    loaded = load_plan(path, check_executables=False)
    wanted: list[str] = []
    unpackaged: list[str] = []
    for workload in loaded.plan.workload:
        if not workload.tool:
            continue
        try:
            adapter = adapter_for(workload.tool)
        except PlanError as exc:
            raise PlanError(exc.detail, path=loaded.path, key=f"workload {workload.name!r} tool") from None
        pkgs = tuple(adapter.packages.get(family, ()))
        if not pkgs and workload.tool not in unpackaged:
            unpackaged.append(workload.tool)
        wanted += [p for p in pkgs if p not in wanted]
    missing = tuple(p for p in wanted if not is_installed(family, p))
    programs = tuple((p, _found(p)) for p in command_programs(loaded.plan))
    remote = any(v.host for v in loaded.plan.variant)
    return SetupPlan(family, tuple(wanted), missing, tuple(unpackaged), programs, remote)


def _found(program: str) -> bool:
    return os.path.exists(program) if "/" in program else shutil.which(program) is not None


def install(setup: SetupPlan) -> None:
    # The package manager's chatter goes to stderr, so --json keeps stdout for the one JSON document.
    proc = subprocess.run(setup.command, stdout=sys.stderr, stderr=sys.stderr, check=False)
    if proc.returncode != 0 and setup.family == "debian":
        console.note(
            "apt-get install failed; refreshing the package lists (apt-get update) and retrying once"
        )
        subprocess.run(["apt-get", "update"], stdout=sys.stderr, stderr=sys.stderr, check=False)
        proc = subprocess.run(setup.command, stdout=sys.stderr, stderr=sys.stderr, check=False)
    if proc.returncode != 0:
        raise FairmarkError(f"`{' '.join(setup.command)}` failed with exit status {proc.returncode}")


@click.command("setup")
@click.argument("plan", type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Only say what would be installed.")
@common_options
def setup_command(plan: str, dry_run: bool) -> None:
    """Install the OS packages the tools of PLAN need (apt-get, dnf or pkg; one command; idempotent)."""
    setup = plan_packages(plan, os_family())
    for tool in setup.unpackaged:
        console.warn(
            f"tool {tool!r} has no {setup.family} package: install it yourself (see its adapter's docs)"
        )
    if not setup.missing:
        console.text(setup.summary())
    elif dry_run:
        console.print(escape("would run: " + " ".join(setup.command)), soft_wrap=True)
    elif os.geteuid() != 0:
        _report(setup, dry_run)
        raise EnvironmentRefused(
            f"installing packages needs root; run:\n  sudo {' '.join(setup.command)}",
            hint=f"then `fairmark run {plan}`",
        )
    else:
        console.note("running: " + " ".join(setup.command))
        install(setup)
        console.text(f"installed {len(setup.missing)} package(s): {' '.join(setup.missing)}")
    programs = setup.programs_line()
    if programs:
        console.text(programs)
    _report(setup, dry_run)


def _report(setup: SetupPlan, dry_run: bool) -> None:
    if console.json_mode:
        console.emit_json(setup.to_dict() | {"dry_run": dry_run})


commands = [setup_command]
