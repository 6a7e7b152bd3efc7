"""A run's resolved baseline and variant definitions, as the run stored them (`options.baseline`,
`options.variants`), so that reports never read the plan again. Runs stored before fairmark kept them (and
bundles exported from such runs) get them here, once per read, from the plan text the run kept."""

from __future__ import annotations

import tomllib
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONObject


class Definitions(TypedDict, total=False):
    """A run's resolved baseline and its variants' definitions (name → the plan model's fields)."""

    baseline: str | None
    variants: dict[str, JSONObject]


def legacy_definitions(plan_text: str, plan_path: str) -> Definitions:
    """{"baseline": name, "variants": {name: definition}} of a run stored without them; empty if the plan text
    no longer parses (a plan from another fairmark version: the report then says less, but still works)."""
    # Imported here: only runs from before the definitions were stored need the plan loader (and pydantic).
    from fairmark.plan.load import parse_plan

    try:
        plan = parse_plan(plan_text, plan_path)
    except Exception:
        return {}
    return {"baseline": plan.baseline, "variants": {v.name: v.model_dump(mode="json") for v in plan.variant}}


def legacy_tuning(plan_text: str) -> dict[str, JSONObject]:
    """The [tuning.NAME] sets of a run stored without them, read from the plan text it kept (as TOML: the
    sets' keys are all a report needs, even from a plan another fairmark version wrote)."""
    try:
        sets = tomllib.loads(plan_text).get("tuning", {})
    except tomllib.TOMLDecodeError:
        return {}
    return {name: keys for name, keys in sets.items() if isinstance(keys, dict)}
