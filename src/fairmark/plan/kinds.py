"""The table of variant kinds: every kind of system change a variant (or a [tuning.NAME] set) can make, with
what it is (plan.model.VariantKind), derived from the plan model's fields. Attribution (is this a change on the
kernel's path?), the remote hosts (which kinds an agent applies) and the variants' resolution
(run/variants/driver.py: key → its driver, run/variants/<key>.py, which checks, applies and undoes it) all read
this one table instead of keeping their own lists of keys."""

from __future__ import annotations

from dataclasses import dataclass

from fairmark.plan.kind_names import given as given
from fairmark.plan.kind_names import given_keys as given_keys
from fairmark.plan.model import Plan, SystemChanges, VariantKind


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
REMOTE_KEYS = tuple(k for k, kind in VARIANT_KINDS.items() if kind.remote)  # the kinds that can run on a host


@dataclass(frozen=True)
class HostRefusal:
    """A variant on a [hosts.NAME] that uses a kind no agent applies there (VariantKind.remote is False)."""

    index: int  # the variant's place in the plan's [[variant]] list
    variant: str
    host: str
    kind: str
    tuning: str | None  # the [tuning.NAME] set the kind comes from; None: the variant's own key

    @property
    def message(self) -> str:
        source = f" (from its [tuning.{self.tuning}] set)" if self.tuning else ""
        return (
            f"variant {self.variant!r} on host {self.host!r}: kind {self.kind}{source} cannot run on a host "
            f"(an agent applies {', '.join(REMOTE_KEYS)} there)"
        )

    @property
    def hint(self) -> str:
        return f"run variant {self.variant!r} on this machine (no host), or remove {self.kind} from it"


def host_refusals(plan: Plan) -> list[HostRefusal]:
    """Every kind a variant on a host would need applied there that the kinds table says cannot run on a
    host: its own keys, and those of its [tuning.NAME] set it does not override."""
    out = []
    for i, v in enumerate(plan.variant):
        if not v.host:
            continue
        tuning = plan.tuning.get(v.tuning) if v.tuning else None
        for key, kind in VARIANT_KINDS.items():
            if kind.remote:
                continue
            if given(getattr(v, key)):
                out.append(HostRefusal(i, v.name, v.host, key, None))
            elif tuning is not None and key not in v.model_fields_set and given(getattr(tuning, key)):
                out.append(HostRefusal(i, v.name, v.host, key, v.tuning))
    return out
