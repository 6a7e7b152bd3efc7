"""`fairmark tools [NAME]`: the workload adapters, their parameters (defaults, units) and metrics."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from fairmark.cli.common import common_options
from fairmark.console import console
from fairmark.run.workloads import adapter_for, registry


def _describe(name: str) -> dict:
    a = adapter_for(name)
    return {
        "name": a.name,
        "summary": a.summary,
        "measures": list(a.measures),
        "packages": {k: list(v) for k, v in a.packages.items()},
        "executables": list(a.executables),
        "missing": a.missing_executables(),
        "refused": a.host_problem(),
        "params": [{"name": p.name, "default": p.default, "unit": p.unit, "help": p.help} for p in a.params],
        "metrics": [{"name": m.name, "unit": m.unit, "better": m.better} for m in a.metrics],
    }


@click.command()
@click.argument("name", required=False)
@common_options
def tools(name: str | None) -> None:
    """List the workload tools (`tool = "NAME"` in a plan), or one tool's parameters and metrics."""
    names = [name] if name else sorted(registry())
    docs = [_describe(n) for n in names]
    if console.json_mode:
        console.emit_json({"tools": docs})
        return
    if not name:
        t = Table(title="workload tools", title_justify="left")
        for col in ("tool", "measures", "installed", "what it runs"):
            t.add_column(col, overflow="fold")
        for d in docs:
            pkgs = ", ".join(d["packages"].get("debian", [])) or "not packaged"
            ok = "yes" if not d["missing"] else f"no ({pkgs})"
            if d["refused"]:
                ok = f"refused on this host: {d['refused']}"
            t.add_row(d["name"], ", ".join(d["measures"]), escape(ok), escape(d["summary"]))
        console.print(t)
        console.text("`fairmark tools NAME` shows a tool's parameters and metrics")
        return
    d = docs[0]
    console.print(f"[bold]{escape(d['name'])}[/bold]: {escape(d['summary'])}")
    if d["refused"]:
        console.print(f"refused on this host: {escape(d['refused'])}")
    t = Table(title="params", title_justify="left")
    for col in ("param", "default", "unit", "meaning"):
        t.add_column(col, overflow="fold")
    for p in d["params"]:
        t.add_row(p["name"], escape(repr(p["default"])), p["unit"], escape(p["help"]))
    console.print(t)
    t = Table(title="metrics (the first is the primary one)", title_justify="left")
    for col in ("metric", "unit", "better"):
        t.add_column(col)
    for m in d["metrics"]:
        t.add_row(m["name"], m["unit"], m["better"])
    console.print(t)


commands = [tools]
