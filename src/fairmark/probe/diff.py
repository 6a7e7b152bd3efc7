"""What differs between two environment snapshots, each difference labelled by how much it matters."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fairmark.probe.rules import DIFF_CATEGORIES, DIFF_IGNORED_PREFIXES, RULES

CATEGORY_ORDER = {"validity": 0, "environment": 1, "info": 2}


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted keys down to scalars; lists of scalars stay whole (a list of governors is one value)."""
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(obj, list) and any(isinstance(v, Mapping) for v in obj):
        out = {}
        for i, v in enumerate(obj):
            label = v.get("cpu", v.get("name", i)) if isinstance(v, Mapping) else i
            out.update(flatten(v, f"{prefix}.{label}"))
        return out
    return {prefix: obj}


def _matches(key: str, prefix: str) -> bool:
    return key == prefix or key.startswith(prefix + ".")


def category_of(key: str) -> str:
    for prefix, category in DIFF_CATEGORIES:
        if _matches(key, prefix):
            return category
    return "info"


def diff_snapshots(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """[{"key", "a", "b", "category"}], validity-relevant first; missing on one side is None there."""
    fa, fb = flatten(a), flatten(b)
    out = []
    for key in sorted(set(fa) | set(fb)):
        if any(_matches(key, p) for p in DIFF_IGNORED_PREFIXES):
            continue
        # a key one snapshot lacks and the other holds as null (a tool's `error` when it has none) is no
        # difference: both say "nothing here", and a row of "— / —" says nothing
        va, vb = fa.get(key), fb.get(key)
        if va == vb:
            continue
        out.append({"key": key, "a": va, "b": vb, "category": category_of(key)})
    out.sort(key=lambda d: (CATEGORY_ORDER.get(str(d["category"]), 9), str(d["key"])))
    return out


def comparison_findings(
    a: Mapping[str, Any], b: Mapping[str, Any], *, declared: Iterable[str] = ()
) -> list[Any]:
    """Findings for comparing two runs: each undeclared validity difference is an error, each undeclared
    environment-variable difference a warning. `declared`: key prefixes the user says are the variant
    (e.g. "os.release", "env.GLIBC_TUNABLES")."""
    from fairmark.probe.doctor import Finding

    declared = tuple(declared)
    out = []
    for d in diff_snapshots(a, b):
        if any(_matches(d["key"], p) for p in declared) or d["category"] == "info":
            continue
        rid = "comparison-validity" if d["category"] == "validity" else "comparison-environment"
        rule = RULES[rid]
        ev = f"{d['key']}: {d['a']!r} vs {d['b']!r}"
        out.append(Finding(rid, rule.severity, rule.title, ev, rule.why, rule.fix))
    return out
