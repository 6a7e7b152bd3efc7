"""`fairmark publish --out DIR`: a static dashboard of the store (index, series, runs, bisects)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from fairmark.cli._tags import parse_tags, tag_option
from fairmark.cli.common import common_options, open_store
from fairmark.cli.history import commit_order, order_options
from fairmark.console import console


def _repo_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    if "{sha}" not in value or not value.startswith(("https://", "http://")):
        raise click.BadParameter(
            f"{value!r}: expected an http(s) URL with {{sha}} where the commit goes, e.g. "
            "https://github.com/OWNER/REPO/commit/{sha}"
        )
    return value


def _window(ctx: click.Context, param: click.Parameter, value: int) -> int | None:
    if value < 0:
        raise click.BadParameter(f"{value}: expected a number of runs ≥ 0 (0: the whole series)")
    return value or None


@click.command()
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="The site's directory.")
@tag_option("Only runs with this tag (repeatable: all of them).")
@click.option(
    "--repo-url",
    callback=_repo_url,
    metavar="URL",
    help="Link commits (tag commit=SHA) here: https://…/commit/{sha}.",
)
@order_options
@click.option("--by-tag", "order_tag", metavar="KEY", help="Order a series' points by this tag, not by time.")
@click.option(
    "--alpha",
    type=float,
    default=0.01,
    show_default=True,
    help="Each split's significance level (at most 0.05); a history's false alarms stay within 2α.",
)
@click.option(
    "--window",
    type=int,
    default=500,
    show_default=True,
    callback=_window,
    metavar="N",
    help="Look for change points among the last N runs of each series (0: all of them).",
)
@click.option(
    "--jobs",
    "workers",
    type=click.IntRange(0, 64),
    default=0,
    metavar="N",
    help="Processes drawing run pages (default: one per CPU, at most 4).",
)
@common_options
def publish(
    out: str,
    tag_items: tuple[str, ...],
    repo_url: str | None,
    order_tag: str | None,
    order: str,
    repo: str,
    alpha: float,
    window: int | None,
    workers: int,
) -> None:
    """Write a static site from the store: an index of hosts × workloads × metrics (latest value and CI, trend,
    latest change point), a page per series, per run and per bisect. A second publish renders only what
    changed."""
    from fairmark.report.publish.site import PublishOptions
    from fairmark.report.publish.site import publish as write_site

    if not 0 < alpha < 1:
        raise click.BadParameter(f"{alpha}: expected a level between 0 and 1", param_hint="--alpha")
    opts = PublishOptions(
        out=Path(out),
        tags=parse_tags(tag_items),
        repo_url=repo_url,
        alpha=alpha,
        window=window,
        order_tag=order_tag,
        commit_order=commit_order(order, repo, order_tag),
        workers=workers,
    )
    outcome = write_site(open_store(), opts)
    if console.json_mode:
        console.emit_json({"out": str(Path(out).resolve()), **outcome.to_dict()})
        return
    summary(Path(out), outcome)


def summary(out: Path, outcome: Any) -> None:
    """What a publish wrote, skipped and removed, and how long it took."""
    console.text(f"published {out / 'index.html'}: {outcome.sentence()}")


commands = [publish]
