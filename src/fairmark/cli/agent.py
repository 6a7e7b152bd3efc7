"""`fairmark agent`: the remote side of a host connection (started by the controller over SSH, not by users)."""

from __future__ import annotations

import click

from fairmark.remote import agent as agent_mod


@click.command(hidden=False)
def agent() -> None:
    """Serve fairmark's agent protocol on stdin/stdout (the controller starts this over SSH).

    Speaks versioned JSON lines, one request per line; opens no port. See fairmark/remote/agent.py."""
    raise SystemExit(agent_mod.main())


commands = [agent]
