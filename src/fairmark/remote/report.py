"""What a run on several hosts shows beside its verdicts: how the hosts' environments differ."""

from __future__ import annotations

from typing import Any

from fairmark.console import console


def host_diff(store: Any, run_id: str) -> list[dict[str, Any]]:
    """Differences between the environment snapshots of the run's hosts (the first host against each other)."""
    from fairmark.probe.diff import diff_snapshots

    snaps = {a["name"]: a["data"] for a in store.artifacts(run_id, kind="env.host")}
    names = list(snaps)
    out = []
    for other in names[1:]:
        for d in diff_snapshots(snaps[names[0]], snaps[other]):
            out.append({"hosts": [names[0], other], **d})
    return out


def print_host_diff(store: Any, run_id: str) -> None:
    diffs = host_diff(store, run_id)
    snaps = store.artifacts(run_id, kind="env.host")
    if len(snaps) < 2:
        return
    console.print(f"[bold]hosts' environments[/bold] ({', '.join(a['name'] for a in snaps)}): "
                  f"{len(diffs)} difference(s)")  # fmt: skip
    for d in diffs:
        a, b = d["hosts"]
        console.text(f"  [{d['category']}] {d['key']}: {a} {d['a']!r} vs {b} {d['b']!r}")
