"""What a run on hosts shows beside its verdicts: the hosts it ran on, where each side of each cell ran (the
server on the variant's host, the client on its client host), and how the hosts' environments differ. Used by
`show`, `report --text/--markdown/--html` and every `--json`."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fairmark.console import console
from fairmark.probe.diff import diff_snapshots
from fairmark.probe.hosts import declare_word
from fairmark.report.section import Context, Section

if TYPE_CHECKING:
    from fairmark.report.data import RunReport
    from fairmark.report.writer import Writer


def host_diff(store: Any, run_id: str) -> list[dict[str, Any]]:
    """Differences between the environment snapshots of the run's hosts (the first host against each other),
    each with `declared`: whether the plan's `declare` names it as the point of the comparison."""
    return snapshot_diff(store.artifacts(run_id, kind="env.host"), lambda: store.get_run(run_id).plan_text)


def snapshot_diff(artifacts: list[Any], plan_text: Callable[[], str]) -> list[dict[str, Any]]:
    """host_diff of the run's "env.host" artifacts; `plan_text()`: the run's plan, read only for two hosts or
    more (its `declare`)."""

    snaps = {a["name"]: a["data"] for a in artifacts}
    names = list(snaps)
    declared = _declared(plan_text) if len(names) > 1 else set()
    out = []
    for other in names[1:]:
        for d in diff_snapshots(snaps[names[0]], snaps[other]):
            out.append({"hosts": [names[0], other], **d, "declared": declare_word(d["key"]) in declared})
    return out


def _declared(plan_text: Callable[[], str]) -> set[str]:
    """The run's plan's `declare` words (the plan text is stored with the run)."""
    try:
        return set(tomllib.loads(plan_text()).get("declare") or ())
    except (tomllib.TOMLDecodeError, AttributeError, TypeError):
        return set()


def print_host_diff(store: Any, run_id: str) -> None:
    diffs = host_diff(store, run_id)
    snaps = store.artifacts(run_id, kind="env.host")
    if len(snaps) < 2:
        return
    console.print(
        f"[bold]hosts' environments[/bold] ({', '.join(a['name'] for a in snaps)}): "
        f"{len(diffs)} difference(s)"
    )
    for d in diff_lines(diffs):
        console.text("  " + d)


def diff_lines(diffs: list[dict[str, Any]]) -> list[str]:
    out = []
    for d in diffs:
        a, b = d["hosts"]
        mark = " (declared: the point of the comparison)" if d.get("declared") else ""
        out.append(f"[{d['category']}] {d['key']}: {a} {d['a']!r} vs {b} {d['b']!r}{mark}")
    return out


def hosts_of(report: RunReport) -> dict[str, dict[str, Any]]:
    """The hosts a run measured on ({} for a run on the controller alone), as the run recorded them."""
    return dict((report.run.options or {}).get("hosts") or {})


def where_ran(report: RunReport) -> list[str]:
    """One line per cell: where its trials (and, with client_host, its server and its client) ran."""
    out = []
    for c in report.cells:
        labels = c.labels or {}
        if "host" not in labels:
            continue
        client = labels.get("client host")
        where = (
            f"server on {labels['host']}, client on {client}"
            if client and client != labels["host"]
            else f"on {labels['host']}"
        )
        out.append(f"{c.group} / {c.variant}: {where}")
    return out


def hosts_json(report: RunReport) -> dict[str, Any]:
    """The `hosts` part of a run's JSON: the hosts, where each cell ran, the hosts' environment differences."""
    hosts = hosts_of(report)
    if not hosts:
        return {}
    return {
        "hosts": hosts,
        "where_ran": where_ran(report),
        "host_differences": snapshot_diff(report.artifacts("env.host"), lambda: report.run.plan_text),
    }


def host_lines(report: RunReport) -> list[str]:
    """The same for the text and HTML reports, in words."""
    hosts = hosts_of(report)
    if not hosts:
        return []
    here = [f"{c.group} / {c.variant}" for c in report.cells if "host" not in (c.labels or {})]
    out = [
        f"controller {report.run.hostname}: "
        + (f"ran {', '.join(here)}" if here else "measured nothing itself")
    ]
    for name, h in hosts.items():
        out.append(f"host {name}: ssh {h.get('ssh')}, boot {h.get('boot_id') or '?'}")
    out += where_ran(report)
    diffs = snapshot_diff(report.artifacts("env.host"), lambda: report.run.plan_text)
    if len(hosts) > 1:
        out.append(f"the hosts' environments: {len(diffs)} difference(s)")
        out += ["  " + d for d in diff_lines(diffs)]
    return out


# -- the section: where each side ran (report/sections.py; `show` prints print_host_diff after a run) ---------
def _text(w: Writer, r: RunReport, _: Context) -> None:
    lines = host_lines(r)
    if lines:
        w.heading("Hosts (where each side ran)", 3)
        for line in lines:
            w.para(line.strip(), "    " if line.startswith("  ") else "- ")


SECTION = Section("hosts", text=_text, json=lambda r, _: hosts_json(r), html=lambda r, _: host_lines(r))
