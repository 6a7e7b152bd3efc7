"""JSON-shaped values: what a plan's tool parameters, the store's JSON columns and the JSON reports carry.

One definition for every layer (the plan's model validates parameters against it, the store's records hold
it), so a value read from a plan has the type it is stored and reported with. `TypeAliasType` because pydantic
needs a named alias to validate a recursive type.

On Python 3.11 that alias comes from typing_extensions, whose import is ~15 ms of `show`'s and `history`'s CPU
(issue 34 item 15): the two aliases are made when a module asks for them at run time (the plan model, the
agent's wire); the modules that name them in annotations only import them under TYPE_CHECKING.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TypeAlias

Scalar: TypeAlias = str | int | float | bool | None

if TYPE_CHECKING:
    from typing_extensions import TypeAliasType

    JSONValue = TypeAliasType("JSONValue", "Scalar | list[JSONValue] | dict[str, JSONValue]")
    JSONObject: TypeAlias = dict[
        str, JSONValue
    ]  # a JSON document (a run's options, a calibration, tool params …)
else:

    def __getattr__(name: str) -> object:
        """JSONValue and JSONObject, made at their first use at run time (PEP 562)."""
        if name not in ("JSONValue", "JSONObject"):
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        if sys.version_info >= (3, 12):
            from typing import TypeAliasType
        else:
            from typing_extensions import TypeAliasType
        value = TypeAliasType("JSONValue", "Scalar | list[JSONValue] | dict[str, JSONValue]")
        globals().update(JSONValue=value, JSONObject=dict[str, value])
        return globals()[name]
