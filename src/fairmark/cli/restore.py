"""`fairmark restore`: undo the system changes a killed fairmark left (sysctls, hotplug, scratch mounts).

Every fairmark command already does this first; this command does it explicitly and says so when nothing is
pending, so a script can call it after a crash and check the exit status.
"""

from __future__ import annotations

from pathlib import Path

import click

from fairmark.cli.common import common_options
from fairmark.console import console
from fairmark.errors import EnvironmentRefused, UsageError
from fairmark.remote.connection import HostConnection, HostSpec
from fairmark.run.variants.journal import default_state_dir
from fairmark.run.variants.system import pending_actions, pending_findings, recover_pending


@click.command("restore")
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="FAIRMARK_STATE_DIR",
    help="Where fairmark keeps its journal (default $XDG_STATE_HOME/fairmark).",
)
@click.option("--dry-run", is_flag=True, help="Say what would be put back; change nothing.")
@click.option(
    "--host",
    metavar="DEST",
    help="Undo what a dead fairmark agent left on this host (an ssh destination or alias), not here.",
)
@click.option("--ssh-option", "ssh_options", multiple=True, metavar="OPT", help="Passed to ssh (repeat).")
@common_options
def restore(state_dir: Path | None, dry_run: bool, host: str | None, ssh_options: tuple[str, ...]) -> None:
    """Put back what a killed fairmark changed: original sysctl values, CPUs online, scratch file systems
    unmounted, loop devices detached, images removed — here, or with --host on a host a run used."""
    if host:
        _on_host(host, ssh_options, dry_run)
        return
    folder = state_dir or default_state_dir()
    if dry_run:
        _dry_run(folder)
        return
    actions = recover_pending(folder)
    left = pending_findings(folder)
    if console.json_mode:
        console.emit_json({"state_dir": str(folder), "actions": actions, "still_pending": left})
    elif actions:
        for line in actions:
            console.text(line)
    else:
        console.text(f"nothing to restore: no pending journal in {folder / 'journal'}")
        console.note(ON_HOSTS)
    if left:
        raise EnvironmentRefused(
            "some changes could not be restored: " + "; ".join(f["evidence"] for f in left),
            hint="fix the cause shown above (e.g. run as root), then run `fairmark restore` again",
        )


# Where else a killed run's changes may remain: a run's changes on a host are journaled on that host.
ON_HOSTS = (
    "a run on hosts journals its changes there, not here: `fairmark restore --host DEST` undoes what a dead "
    "run left on a host"
)


def _on_host(host: str, ssh_options: tuple[str, ...], dry_run: bool) -> None:
    """A fresh agent on the host undoes the journals of dead agents there as it starts (its hello): the same
    journal, the same undo as at the next run's contact, now and on its own."""
    if dry_run:
        raise UsageError(
            "--dry-run --host: the host's agent undoes a dead agent's journal as it starts; "
            "`fairmark restore --host DEST` does it and lists each change put back"
        )

    with HostConnection(HostSpec(host, ssh=host, ssh_options=tuple(ssh_options))) as conn:
        lines = list(conn.hello.get("recovered", []))
        where = conn.hello.get("state_dir")
    if console.json_mode:
        console.emit_json({"host": host, "state_dir": where, "actions": lines})
        return
    for line in lines:
        console.text(f"host {host}: {line}")
    if not lines:
        console.text(f"nothing to restore on host {host}: no dead agent's journal in {where}/journal")
    if problems := [line for line in lines if line.startswith(("unreadable", "FAILED"))]:
        raise EnvironmentRefused(
            f"host {host}: some changes could not be restored: " + "; ".join(problems),
            hint=f"fix the cause shown above, then run `fairmark restore --host {host}` again",
        )


def _dry_run(folder: Path) -> None:
    """The pending journals' entries, newest change first (the order they would be undone in)."""
    actions = pending_actions(folder)
    if console.json_mode:
        console.emit_json({"state_dir": str(folder), "dry_run": True, "would": actions})
    elif actions:
        for line in actions:
            console.text(line)
        console.text("nothing was changed (--dry-run); `fairmark restore` does it")
    else:
        console.text(f"nothing to restore: no pending journal in {folder / 'journal'}")


commands = [restore]
