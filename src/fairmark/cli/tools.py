"""`fairmark tools [NAME]`: the workload adapters, their parameters (defaults, units) and metrics."""

from __future__ import annotations

import click
from rich.markup import escape

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
        _list(docs)
        return
    d = docs[0]
    console.print(
        f"[bold]{escape(d['name'])}[/bold]: {escape(console.wrap(d['summary'], first=len(d['name']) + 2))}"
    )
    if d["refused"]:
        console.text(f"refused on this host: {d['refused']}")
    t = console.table("param", "default", "unit", "meaning", wrap=("default", "meaning"))
    for p in d["params"]:
        t.add_row(p["name"], escape(repr(p["default"])), p["unit"], escape(p["help"]))
    console.print_table(t, "params")
    t = console.table("metric", "unit", "better")
    for m in d["metrics"]:
        t.add_row(m["name"], m["unit"], m["better"])
    console.print_table(t, "metrics (the first is the primary one)")


def _list(docs: list[dict]) -> None:
    """One line per tool (name, what it stresses, whether it can run here), what it runs wrapped below."""
    t = console.table("tool", "measures", "here", wrap=("here",))
    for d in docs:
        pkgs = ", ".join(d["packages"].get("debian", [])) or "not packaged"
        ok = "installed" if not d["missing"] else f"missing ({pkgs})"
        if d["refused"]:
            ok = f"refused on this host: {d['refused']}"
        t.add_row(d["name"], ", ".join(d["measures"]), escape(ok))
    console.print_table(t, "workload tools")
    console.print()
    for d in docs:
        console.text(f"{d['name']}: {d['summary']}")
    console.print()
    console.text("`fairmark tools NAME` shows a tool's parameters and metrics")


commands = [tools]
