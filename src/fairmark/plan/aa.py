"""The name of a baseline's A/A twin (`calibrate`, `aa = true`): apart from the plan model, so the verdicts'
module names it without importing pydantic (`history` sizing a change point: issue 34 item 15)."""

from __future__ import annotations

AA_SUFFIX = ".aa"


def aa_twin_name(baseline: str) -> str:
    return baseline + AA_SUFFIX
