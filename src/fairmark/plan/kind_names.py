"""The variant kinds' names by what they act on, as data, and which of them a variant changes.

plan/kinds.py derives its table from the plan model's fields (pydantic: ~0.15 s of `fairmark show`'s CPU to
import); `show` needs only the names, for report/attribution's kernel-path bound. tests/test_variant_kinds.py
checks these are the table's; plan/kinds.py re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping

KERNEL_PATH_KEYS = ("sysctl", "mount")  # act only on the kernel's path
USER_SPEED_KEYS = (
    "cpus",
    "online_cpus",
    "thp",
    "governor",
    "aslr",
    "malloc_debug",
    "smt",
)  # on user-space speed


def given_keys(
    definition: Mapping[str, object], tuning: Mapping[str, Mapping[str, object]] | None = None
) -> set[str]:
    """The kinds a stored variant definition changes, its [tuning.NAME] set's included (a value such as
    None, {}, "" or False changes nothing; aslr = 0 does)."""
    keys = {k for k, v in definition.items() if given(v)}
    name = definition.get("tuning")
    if "tuning" in keys and isinstance(name, str):
        keys |= {k for k, v in (tuning or {}).get(name, {}).items() if given(v)}
        keys.discard("tuning")
    return keys & {*KERNEL_PATH_KEYS, *USER_SPEED_KEYS}


def given(value: object) -> bool:
    """Whether a kind's value changes anything (aslr = 0 does; None, false, {} and "" do not)."""
    if value is None or value is False:
        return False
    return not (isinstance(value, dict | list | str) and not value)
