"""Workload adapters: one module per tool. Modules here that define an `Adapter` subclass with a `name` are
registered automatically, so adding a tool is adding one file."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from fairmark.errors import PlanError
from fairmark.run.workloads.base import Adapter


@cache
def registry() -> dict[str, type[Adapter]]:
    found: dict[str, type[Adapter]] = {}
    for mod in pkgutil.iter_modules(__path__):
        if mod.name in ("base",) or mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{mod.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Adapter)
                and obj is not Adapter
                and "name" in vars(obj)
            ):
                found[obj.name] = obj
    return found


def adapter_for(tool: str) -> Adapter:
    tools = registry()
    if tool not in tools:
        raise PlanError(
            f"unknown tool {tool!r}; known tools: {', '.join(sorted(tools)) or 'none'}", key="tool"
        )
    return tools[tool]()
