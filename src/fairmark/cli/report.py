"""`fairmark report RUN [RUN_B …]`: the HTML report (--html FILE, --png DIR) and the 80-column text or
Markdown report for mailing lists. Reads only the store."""

from __future__ import annotations

from pathlib import Path

import click

from fairmark.cli.common import common_options, open_store
from fairmark.console import console
from fairmark.errors import UsageError


@click.command("report")
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN_B …]")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Write one self-contained HTML file (inline SVG, no network).",
)
@click.option(
    "--png",
    "png_dir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Also save every plot as PNG into DIR.",
)
@click.option(
    "--text",
    "text",
    is_flag=False,
    flag_value="-",
    default=None,
    metavar="[FILE]",
    help="80-column plain-text report into FILE, or on stdout without FILE (the default).",
)
@click.option(
    "--markdown",
    is_flag=False,
    flag_value="-",
    default=None,
    metavar="[FILE]",
    help="The text report as Markdown into FILE, or on stdout without FILE.",
)
@common_options
def report(
    runs: tuple[str, ...],
    html_path: Path | None,
    png_dir: Path | None,
    text: str | None,
    markdown: str | None,
) -> None:
    """Report one or more runs (a run id, a unique prefix, or 'last'), read from the store."""
    from fairmark.report.load import load_report

    if text == "-" and markdown == "-":
        raise UsageError("choose one of --text and --markdown on stdout (or give each a FILE)")
    if png_dir is not None and html_path is None:
        raise UsageError("--png DIR saves the HTML report's plots: give --html FILE too")
    store = open_store()
    reports = [load_report(store, ref) for ref in runs]
    out: dict[str, object] = {"runs": [r.run.id for r in reports]}
    if html_path is not None:
        out |= _html(reports, html_path, png_dir)
    wanted = [(target, md) for target, md in ((text, False), (markdown, True)) if target is not None]
    if not wanted and html_path is None:
        wanted = [("-", False)]
    for target, md in wanted:
        out |= _text(reports, target, md)
    if console.json_mode:
        console.emit_json(out)


def _text(reports: list, target: str, markdown: bool) -> dict[str, object]:
    """The text (or Markdown) report on stdout ("-") or into a file."""
    from fairmark.report.text import render_text

    body = render_text(reports, markdown=markdown)
    key = "markdown" if markdown else "text"
    if target == "-":
        console.block(body.rstrip("\n"))  # already laid out for 80 columns: as it is
        return {key: body}
    path = Path(target)
    try:
        path.write_text(body)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    console.note(f"wrote {path} ({len(body.splitlines())} lines)")
    return {key: body, f"{key}_path": str(path)}


def _html(reports: list, path: Path, png_dir: Path | None) -> dict[str, object]:
    from fairmark.report.html import write_html

    try:
        pngs = write_html(reports, path, png_dir=png_dir)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    console.note(
        f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)" + (f" and {len(pngs)} PNG files" if pngs else "")
    )
    return {"html": str(path), "html_bytes": path.stat().st_size, "png": [str(p) for p in pngs]}


commands = [report]
