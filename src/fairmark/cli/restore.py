"""`fairmark restore`: undo the system changes a killed fairmark left (sysctls, hotplug, scratch mounts).

Every fairmark command already does this first; this command does it explicitly and says so when nothing is
pending, so a script can call it after a crash and check the exit status.
"""

from __future__ import annotations

from pathlib import Path

import click

from fairmark.cli.common import common_options
from fairmark.console import console
from fairmark.errors import EnvironmentRefused
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
@common_options
def restore(state_dir: Path | None, dry_run: bool) -> None:
    """Put back what a killed fairmark changed: original sysctl values, CPUs online, scratch file systems
    unmounted, loop devices detached, images removed."""
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
    if left:
        raise EnvironmentRefused(
            "some changes could not be restored: " + "; ".join(f["evidence"] for f in left),
            hint="fix the cause shown above (e.g. run as root), then run `fairmark restore` again",
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
