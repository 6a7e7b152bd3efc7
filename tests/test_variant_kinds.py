"""The table of variant kinds (plan/kinds.py) is the one list of system-change keys: it is derived from the plan
model's fields, and the variants' resolution, attribution and the remote hosts read it."""

from __future__ import annotations

from fairmark.plan.kinds import KERNEL_PATH_KEYS, REMOTE_KEYS, USER_SPEED_KEYS, VARIANT_KINDS, given_keys
from fairmark.plan.model import SystemChanges
from fairmark.report.attribution import is_kernel_path_change
from fairmark.run.variants.system import RESOLVE


def test_every_system_change_field_is_a_kind_and_every_kind_resolves() -> None:
    assert set(VARIANT_KINDS) == set(SystemChanges.model_fields) - {"settle_s"}
    assert set(RESOLVE) == set(VARIANT_KINDS)
    assert set(KERNEL_PATH_KEYS) | set(USER_SPEED_KEYS) == set(VARIANT_KINDS)
    assert not set(KERNEL_PATH_KEYS) & set(USER_SPEED_KEYS)
    assert REMOTE_KEYS == ("sysctl",)


def test_kinds_of_a_stored_definition_include_its_tuning_set() -> None:
    tuning = {"fast": {"governor": "performance", "sysctl": {"vm.swappiness": 10}}}
    assert given_keys({"tuning": "fast", "env": {"X": "1"}}, tuning) == {"governor", "sysctl"}
    assert given_keys({"sysctl": {}, "malloc_debug": False, "cpus": None}) == set()
    assert is_kernel_path_change({"sysctl": {"vm.swappiness": 10}})
    assert not is_kernel_path_change({"tuning": "fast"}, tuning)  # the governor moves user-space speed too
    assert not is_kernel_path_change({"malloc_debug": True})
