"""`fairmark doctor`: what on this host (or in a saved sysroot) would invalidate or blur a benchmark."""

from __future__ import annotations

import os

import click
from rich.markup import escape

from fairmark.cli.common import common_options
from fairmark.console import console
from fairmark.errors import InputError
from fairmark.probe.doctor import Finding, diagnose, worst_severity
from fairmark.probe.snapshot import take_snapshot
from fairmark.remote.connection import HostConnection, HostSpec
from fairmark.remote.probe import remote_snapshot

SEVERITY_STYLE = {"error": "bold red", "warn": "yellow", "info": "dim"}


def check_sysroot(sysroot: str | None) -> str:
    if sysroot is None:
        return "/"
    if not os.path.isdir(sysroot):
        raise InputError(
            f"--sysroot {sysroot}: not a directory", hint="give a tree with proc/ sys/ or sysctl.txt"
        )
    return sysroot


@click.command()
@click.option(
    "--sysroot", metavar="DIR", help="Read a saved tree (proc/, sys/ or sysctl.txt …), not this host."
)
@click.option(
    "--workdir",
    metavar="DIR",
    default=".",
    show_default=True,
    help="Directory whose file system and disk are checked.",
)
@click.option("--tool", "tools", multiple=True, metavar="NAME", help="Also record this tool's version.")
@click.option(
    "--host",
    metavar="DEST",
    help="Judge this host over SSH (an ssh destination or alias); "
    "also undoes system changes a dead fairmark agent left there.",
)
@click.option("--ssh-option", "ssh_options", multiple=True, metavar="OPT", help="Passed to ssh (repeat).")
@common_options
def doctor(
    sysroot: str | None, workdir: str, tools: tuple[str, ...], host: str | None, ssh_options: tuple[str, ...]
) -> None:
    """Findings on this host, each with severity, evidence and the fix.

    Exits 0 even with findings: refusing to run is `fairmark run`'s job (it stops on errors unless
    --accept-risk)."""
    if host:
        with HostConnection(HostSpec(host, ssh=host, ssh_options=tuple(ssh_options))) as conn:
            for line in conn.hello.get("recovered", []):
                console.warn(f"host {host}: {line}")
            snap = remote_snapshot(conn)
        root = f"ssh:{host}"
    else:
        root = check_sysroot(sysroot)
        snap = take_snapshot(root, tools=tools, workdir=workdir)
    findings = diagnose(snap)
    if (
        root == "/"
    ):  # a journal of system changes left by a killed fairmark (not restored here: doctor changes nothing)
        from fairmark.run.variants.system import pending_findings

        findings = [Finding(**f) for f in pending_findings()] + findings
    counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warn", "info")}
    if console.json_mode:
        console.emit_json(
            {
                "sysroot": None if root == "/" or host else os.path.abspath(root),
                "host": host,
                "host_id": snap["identity"]["host_id"],
                "os": {k: snap["os"].get(k) for k in ("kernel", "release")},
                "worst": worst_severity(findings),
                "counts": counts,
                "findings": [f.to_dict() for f in findings],
            }
        )
        return
    _show(findings, snap, "this host" if root == "/" else (f"host {host}" if host else root), counts)


def _show(findings: list, snap: dict, where: str, counts: dict[str, int]) -> None:
    """One block per finding: severity and id, then what was seen and the fix, wrapped under it."""
    kernel = f"{snap['os'].get('kernel')} {snap['os'].get('release') or ''}".strip()
    host_id = snap["identity"]["host_id"]
    head = console.wrap(f"{where} ({kernel}, host {host_id})", first=17)
    console.print(f"[bold]fairmark doctor[/bold]: {escape(head)}")
    if not findings:
        console.print("no findings")
        return
    for f in findings:
        console.print()
        console.print(f"[{SEVERITY_STYLE[f.severity]}]{f.severity}[/] {escape(f.id)}")
        console.text(f"  {f.title}: {f.evidence}")
        console.text(f"  fix: {f.fix}")
    console.print()
    console.text(
        f"{counts['error']} error(s), {counts['warn']} warning(s), {counts['info']} note(s); "
        "`--json` gives each finding's reason ('why')"
    )


commands = [doctor]
