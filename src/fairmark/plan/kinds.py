"""The table of variant kinds: every kind of system change a variant (or a [tuning.NAME] set) can make, with
what it is (plan.model.VariantKind), derived from the plan model's fields. Attribution (is this a change on the
kernel's path?), the remote hosts (which kinds an agent applies) and the variants' resolution
(run/variants/system.py: key → the module that resolves, applies and undoes it) all read this one table
instead of keeping their own lists of keys."""

from __future__ import annotations

from collections.abc import Mapping

from fairmark.plan.model import SystemChanges, VariantKind


def _kinds() -> dict[str, VariantKind]:
    out = {}
    for name, info in SystemChanges.model_fields.items():
        kind = next((m for m in info.metadata if isinstance(m, VariantKind)), None)
        if kind is not None:
            out[name] = kind
    return out


VARIANT_KINDS: dict[str, VariantKind] = _kinds()  # key → kind, in the plan model's order
KERNEL_PATH_KEYS = tuple(k for k, kind in VARIANT_KINDS.items() if kind.kernel_path)
USER_SPEED_KEYS = tuple(k for k, kind in VARIANT_KINDS.items() if not kind.kernel_path)
REMOTE_KEYS = tuple(k for k, kind in VARIANT_KINDS.items() if kind.remote)


def given_keys(
    definition: Mapping[str, object], tuning: Mapping[str, Mapping[str, object]] | None = None
) -> set[str]:
    """The kinds a stored variant definition changes, its [tuning.NAME] set's included (a value such as
    None, {}, "" or False changes nothing)."""
    keys = {k for k, v in definition.items() if v not in (None, {}, [], "", False)}
    name = definition.get("tuning")
    if "tuning" in keys and isinstance(name, str):
        keys |= {k for k, v in (tuning or {}).get(name, {}).items() if v not in (None, {}, [], "", False)}
        keys.discard("tuning")
    return keys & set(VARIANT_KINDS)
