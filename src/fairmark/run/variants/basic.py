"""The variant kinds every plan can use: environment (set or unset), a command wrapper, a replacement command."""

from __future__ import annotations

from collections.abc import Mapping

from fairmark.plan.model import Variant, Workload


def apply_env(base: Mapping[str, str], *layers: Mapping[str, str | bool]) -> dict[str, str]:
    """Later layers win; a value of False unsets the variable."""
    env = dict(base)
    for layer in layers:
        for key, value in layer.items():
            if value is False:
                env.pop(key, None)
            else:
                env[key] = str(value)
    return env


def command_for(workload: Workload, variant: Variant) -> list[str] | None:
    """The argv of a command workload under a variant (None for tool workloads)."""
    if workload.tool is not None:
        return None
    cmd = variant.commands.get(
        workload.name, variant.command if variant.command is not None else workload.command
    )
    assert cmd is not None
    shell = variant.shell if variant.shell is not None and cmd is not workload.command else workload.shell
    if isinstance(cmd, str) or shell:
        return ["/bin/sh", "-c", cmd if isinstance(cmd, str) else " ".join(cmd)]
    return list(cmd)


def intended_env(variants: list[Variant]) -> dict[str, str]:
    """Variables that some variant sets on purpose: an intended difference, not a doctor finding."""
    out: dict[str, str] = {}
    for v in variants:
        for key, value in v.env.items():
            if value is not False:
                out[key] = str(value)
    return out
