"""The `fairmark` command's entry point (the console script and `python -m fairmark`).

`fairmark agent` — what a controller starts over SSH on a host at every connection, so at every boot of a boot
run — goes straight to the agent's own `main`, as the shipped agent does: the agent is standard library only,
and click with the CLI's modules were most of its start (in a QEMU guest under TCG, where a start is seconds:
docs/performance.md). Any other command line, `fairmark agent --help` included, goes through the CLI."""

from __future__ import annotations

import sys

from fairmark.cli import _threads


def entry() -> None:
    _threads.install()  # before anything imports numpy: its BLAS on one thread, in fairmark's process only
    if sys.argv[1:] == ["agent"]:
        from fairmark.remote import agent

        sys.exit(agent.main())
    from fairmark.cli.main import main

    sys.exit(main())
