"""Workload adapters: one module per tool. Modules here that define an `Adapter` subclass with a `name` are
registered automatically, so adding a tool is adding one file (with its test and captured fixture). What the
adapters share lives beside them: base.py (the interface), tools.py (test files, sizes, parsing helpers,
`run_once`), servers.py (the servers fairmark starts)."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import shlex
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from fairmark.errors import PlanError
from fairmark.run.workloads.base import Adapter, DataSet

SUPPORT = ("base", "tools", "servers")  # what the adapters share: not adapters themselves


@cache
def registry() -> dict[str, type[Adapter]]:
    found: dict[str, type[Adapter]] = {}
    for mod in pkgutil.iter_modules(__path__):
        if mod.name in SUPPORT or mod.name.startswith("_"):
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


_SYSTEM_PROGRAM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")  # a bare name, looked up on PATH
_SYSTEM_DIRS = ("/usr/", "/bin/", "/sbin/")  # Debian's pgbench is /usr/share/postgresql-common/pg_wrapper
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Shell words that are not a program whose version means anything.
_NOT_PROGRAMS = frozenset(
    {
        "cd",
        "exec",
        "env",
        "time",
        "nice",
        "sh",
        "bash",
        ".",
        "source",
        "set",
        "export",
        "if",
        "for",
        "while",
        "case",
        "{",
        "(",
        "!",
        "true",
        "false",
        "test",
        "[",
    }
)


def programs_of(
    workload: Any, adapter: Adapter | None, params: Mapping[str, Any]
) -> dict[str, tuple[str, ...]]:
    """The executables a workload runs → how to ask each its version (the adapter's declaration; () = none,
    --version when unknown). A command workload's program is its first word (after VAR=value words), when
    that names a program on PATH: `zstd -b3 …` records zstd's version, not the workload's name."""
    if adapter is not None:
        return {
            exe: tuple(adapter.version_args.get(exe, ("--version",)))
            for exe in adapter.executables_for(params)
        }
    command = workload.command
    words = shlex.split(command, comments=True) if isinstance(command, str) else list(command or [])
    words = [w for w in words if not _ASSIGNMENT.match(w)][:1]
    if not words or words[0] in _NOT_PROGRAMS or not _SYSTEM_PROGRAM.fullmatch(words[0]):
        return {}
    # Only an installed program: the plan's own script (a path, or on PATH outside the system's directories)
    # might ignore --version and run its whole benchmark.
    path = shutil.which(words[0])
    if path is None or not os.path.realpath(path).startswith(_SYSTEM_DIRS):
        return {}
    return {words[0]: ("--version",)}


def versions_to_record(
    items: Iterable[tuple[Any, Adapter | None, Mapping[str, Any]]],
) -> dict[str, tuple[str, ...]]:
    """Every program the plan's workloads run, for the environment snapshot: (workload, adapter, params)."""
    out: dict[str, tuple[str, ...]] = {}
    for workload, adapter, params in items:
        try:
            out.update(programs_of(workload, adapter, params))
        except ValueError:  # a shell string shlex cannot split (an open quote): sh decides what it runs
            continue
    return out


def data_set_of(workload: Any, adapter: Adapter | None, params: Mapping[str, Any]) -> DataSet | None:
    """The data set a workload works on: its adapter's (fio size × jobs, bonnie size, dbench clients …) or a
    command workload's declared `data_size` (in its `cwd`, else the scratch directory)."""
    if adapter is not None:
        return adapter.data_set(params)
    if workload.data_size is None:
        return None
    from fairmark.run.workloads.tools import parse_size

    size = parse_size(workload.data_size, "data_size")
    return DataSet(size, workload.cwd or "", False, workload.small_size_reason)


def data_set_info(workload: Any, adapter: Adapter | None, params: Mapping[str, Any]) -> dict[str, Any]:
    """What the doctor judges a workload's test size by (the keys of its `_test_size`)."""
    ds = data_set_of(workload, adapter, params)
    if ds is None:
        return {}

    return {
        "data_size_bytes": ds.size_bytes,
        "directory": ds.directory or tempfile.gettempdir(),  # scratch directories are made there
        "direct": ds.bypasses_cache,
        "cache_reason": ds.cache_reason,
        "measures": sorted({*(adapter.measures if adapter else ()), "disk"}),
    }
