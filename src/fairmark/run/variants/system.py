"""System-changing variants (sysctl, scratch mounts, CPU sets, THP, governor, ASLR, malloc debugging).

Interface the runner uses (keep it): SystemState(plan, *, state_dir) with
  .changes_system -> bool      True when any variant changes the system (the runner then orders trials in
                               A B B A blocks instead of shuffling every trial)
  .activate(variant_name)      apply that variant's changes (journaled first); revert the previous variant's
  .prepare(variant_name)       -> dict with optional "env" (dict), "wrap" (argv prefix), "workdir" (path)
  .close()                     revert everything and verify original values; raise on mismatch
This placeholder changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairmark.plan.model import Plan


class SystemState:
    def __init__(self, plan: Plan, *, state_dir: Path | None = None, dry_run: bool = False):
        self.plan = plan
        self.active: str | None = None

    @property
    def changes_system(self) -> bool:
        return False

    def prepare(self, variant_name: str) -> dict[str, Any]:
        return {}

    def activate(self, variant_name: str) -> None:
        self.active = variant_name

    def close(self) -> None:
        self.active = None


def recover_pending() -> list[str]:
    """Restore whatever a killed fairmark left changed; return one line per action taken."""
    return []
