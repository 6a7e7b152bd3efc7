"""What `ab`, `bisect` and `run --commits` share: the options of a plan measured on builds of commits, the
BisectOptions they make, and the job run under this machine's lock with the repository put back."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from fairmark.cli._tags import parse_tags
from fairmark.cli.common import profilers, stack
from fairmark.console import console
from fairmark.run.guard.signals import unwinding

if TYPE_CHECKING:
    from fairmark.bisect.search import BisectOptions


class _Job(Protocol):
    @property
    def cleanup_problems(self) -> tuple[str, ...]: ...


J = TypeVar("J", bound=_Job)


def build_options(plan_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--plan, --build and --repo of a command that measures one plan on builds of commits."""
    return stack(
        click.option("--plan", "plan_path", required=True, type=click.Path(dir_okay=False), help=plan_help),
        click.option(
            "--build", required=True, metavar="CMD", help="Shell command that builds a checkout (run in it)."
        ),
        click.option(
            "--repo",
            default=".",
            show_default=True,
            type=click.Path(file_okay=False),
            help="The git repository.",
        ),
    )


def bisect_options(
    *,
    no_monitors: bool,
    tag_items: tuple[str, ...] | None = None,
    profile: str | None = None,
    explain: bool = False,
    **fields: Any,
) -> BisectOptions:
    """BisectOptions from a command's own options: the command line, tags, monitors and profilers as every
    run of it records them."""
    from fairmark.bisect.search import BisectOptions

    if tag_items is not None:
        fields["tags"] = parse_tags(tag_items)
    return BisectOptions(
        command_line=shlex.join(["fairmark", *sys.argv[1:]]),
        monitors=not no_monitors,
        **profilers(profile, explain),
        **fields,
    )


def run_locked(
    job: Callable[[], J], plan_path: str, kind: str, *, allow_concurrent: bool, wait_s: float
) -> J:
    """The job under this machine's lock. SIGTERM/SIGHUP (a CI cancel) unwind from here on: the lock released,
    the repository put back, exit 128+N; what could not be put back is said."""
    from fairmark.assemble import host_lock

    with unwinding(), host_lock(plan_path, kind, allow_concurrent=allow_concurrent, wait_s=wait_s):
        done = job()
    for problem in done.cleanup_problems:
        console.warn(f"the repository is not as it was: {problem}")
    return done
