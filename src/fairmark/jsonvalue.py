"""JSON-shaped values: what a plan's tool parameters, the store's JSON columns and the JSON reports carry.

One definition for every layer (the plan's model validates parameters against it, the store's records hold
it), so a value read from a plan has the type it is stored and reported with. `TypeAliasType` because pydantic
needs a named alias to validate a recursive type.
"""

from __future__ import annotations

from typing import TypeAlias

from typing_extensions import TypeAliasType

Scalar: TypeAlias = str | int | float | bool | None
JSONValue = TypeAliasType("JSONValue", "Scalar | list[JSONValue] | dict[str, JSONValue]")
JSONObject: TypeAlias = dict[
    str, JSONValue
]  # a JSON document (a run's options, a calibration, tool params …)
