"""`fairmark env`: the environment snapshot recorded with every run, and the differences between two runs'."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape

from fairmark.cli.common import common_options, open_store
from fairmark.cli.doctor import check_sysroot
from fairmark.console import console
from fairmark.errors import UsageError
from fairmark.probe.capture import save_sysroot
from fairmark.probe.diff import comparison_findings, diff_snapshots
from fairmark.probe.snapshot import take_snapshot

CATEGORY_STYLE = {"validity": "bold red", "environment": "yellow", "info": "dim"}


@click.command()
@click.option("--sysroot", metavar="DIR", help="Describe a saved tree instead of this host.")
@click.option(
    "--workdir",
    metavar="DIR",
    default=".",
    show_default=True,
    help="Directory whose file system is described.",
)
@click.option("--tool", "tools", multiple=True, metavar="NAME", help="Also record this tool's version.")
@click.option(
    "--diff",
    "diff_runs",
    nargs=2,
    metavar="RUN_A RUN_B",
    help="Compare the environments stored with two runs (ids, prefixes or 'last').",
)
@click.option(
    "--declare",
    "declared",
    multiple=True,
    metavar="KEY",
    help="With --diff: a key (prefix) that is the intended difference, e.g. os.release.",
)
@click.option("--after", is_flag=True, help="With --diff: use the snapshots taken after the runs.")
@click.option(
    "--save-sysroot",
    metavar="DIR",
    help="Save this host's probe inputs as a sysroot tree in DIR (for `doctor --sysroot` elsewhere).",
)
@common_options
def env(
    sysroot: str | None,
    workdir: str,
    tools: tuple[str, ...],
    diff_runs: tuple[str, str] | None,
    after: bool,
    save_sysroot: str | None,
    declared: tuple[str, ...],
) -> None:
    """The environment snapshot fairmark records with every run (secrets redacted)."""
    if diff_runs:
        if sysroot or save_sysroot:
            raise UsageError(
                "--diff reads stored runs; it cannot be combined with --sysroot or --save-sysroot"
            )
        _diff(*diff_runs, after=after, declared=declared)
        return
    if save_sysroot:
        if sysroot:
            raise UsageError("--save-sysroot saves this host; it cannot be combined with --sysroot")
        _save(save_sysroot)
        return

    snap = take_snapshot(check_sysroot(sysroot), tools=tools, workdir=workdir)
    if console.json_mode:
        console.emit_json(snap)
        return
    _print_snapshot(snap)


def _save(dest: str) -> None:
    files = save_sysroot(dest)
    if console.json_mode:
        console.emit_json({"sysroot": dest, "files": files})
        return
    console.text(
        f"saved {len(files)} files to {dest} (environment redacted); "
        f"check it with `fairmark doctor --sysroot {dest}`"
    )


def _rows(value: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Nested dicts become dotted keys; a list of records (caches, per-CPU settings) one line per record."""
    rows: list[tuple[str, str]] = []
    for key, v in value.items():
        name = f"{prefix}{key}"
        if isinstance(v, dict):
            rows += _rows(v, name + ".")
        elif key == "error" and v is None:  # a tool found and asked without error: no "error unknown" row
            continue
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            rows += [
                (f"{name}[{i}]", ", ".join(f"{k}={_fmt(x)}" for k, x in rec.items()))
                for i, rec in enumerate(v)
            ]
        else:
            rows.append((name, _fmt(v)))
    return rows


def _print_snapshot(snap: dict[str, Any]) -> None:
    skip = {"env", "schema"}
    for section, value in snap.items():
        if section in skip or not isinstance(value, dict):
            continue
        rows = _rows(value)
        console.print()
        if not rows:
            console.text(f"{section}: (nothing recorded)")
            continue
        table = console.table("key", "value", wrap=("value",), show_header=False)
        for key, text in rows:
            table.add_row(escape(key), escape(text))
        console.print_table(table, section)
    env_vars = snap.get("env") or {}
    console.print(f"[bold]env[/bold]: {len(env_vars)} variables (secrets redacted; `--json` lists them)")
    console.print(f"[dim]taken {snap.get('taken_at')} in {snap.get('elapsed_s')} s[/dim]")


def _fmt(v: Any) -> str:
    if v is None:
        return "unknown"
    if isinstance(v, list):
        return ", ".join(_fmt(x) for x in v) or "(none)"
    return str(v)


def _diff(ref_a: str, ref_b: str, *, after: bool, declared: tuple[str, ...]) -> None:
    store = open_store()
    runs = [store.get_run(ref_a), store.get_run(ref_b)]
    snaps = []
    for run in runs:
        snap = run.env_after if after else run.env_before
        if not snap:
            which = "after" if after else "before"
            raise UsageError(
                f"run {run.id} has no environment snapshot ({which}); it was run without probing"
            )
        snaps.append(snap)
    diffs = diff_snapshots(snaps[0], snaps[1])
    findings = comparison_findings(snaps[0], snaps[1], declared=declared)
    if console.json_mode:
        console.emit_json(
            {
                "a": runs[0].id,
                "b": runs[1].id,
                "declared": list(declared),
                "differences": diffs,
                "findings": [f.to_dict() for f in findings],
            }
        )
        return
    if not diffs:
        console.text(f"no differences between the environments of {runs[0].id[:8]} and {runs[1].id[:8]}")
        return
    table = console.table("category", "key", "A", "B", wrap=("key", "A", "B"))
    for d in diffs:
        style = CATEGORY_STYLE.get(d["category"], "")
        a, b = ("—" if v is None else _fmt(v) for v in (d["a"], d["b"]))
        table.add_row(f"[{style}]{d['category']}[/]", escape(d["key"]), escape(a), escape(b))
    console.print_table(table, f"environment differences: A={runs[0].id[:8]}  B={runs[1].id[:8]}")
    n_valid = sum(f.severity == "error" for f in findings)
    if n_valid:
        console.text(
            f"{n_valid} undeclared difference(s) can invalidate a comparison of these runs; "
            "`--declare KEY` marks one as the difference under test"
        )


commands = [env]
