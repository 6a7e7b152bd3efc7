"""`fairmark compare-hosts [--fleet ID]`: the fleet view of a `run --hosts` (report/fleet.py) — which hosts differ
from the rest of the fleet beyond the noise, and how their snapshots differ."""

from __future__ import annotations

import click

from fairmark.cli.common import common_options, open_store


@click.command("compare-hosts")
@click.option(
    "--fleet", "fleet", metavar="ID", help="The fleet (its runs' tag fleet=ID); default: the newest."
)
@common_options
def compare_hosts(fleet: str | None) -> None:
    """Which hosts of a fleet differ from the others beyond the noise (FDR across hosts), per cell."""
    from fairmark.report.fleet import fleet_view, render

    render(fleet_view(open_store(), fleet))


commands = [compare_hosts]
