"""A stored run's verdicts, computed from its records: what `assemble.execute_run` gives its caller when the run ends, and
what `show`, `report`, `check`, `bisect` and `calibrate` read. Verdicts are never stored: they are a function of
the stored samples, so every reader gets today's rule applied to the same data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fairmark.store.records import RunReader, RunRecord
from fairmark.verdict.pairs import RunDesign, within_run
from fairmark.verdict.record import Verdict
from fairmark.verdict.values import MeasuredCell, load_cells
from fairmark.verdict.wrapcost import with_wrap_costs

if TYPE_CHECKING:  # loaded by a run stopped by decision or by boots only (LAZY_FOR_START)
    from fairmark.stats.sequential import Design


@dataclass(frozen=True)
class RunVerdicts:
    run: RunRecord
    design: RunDesign
    cells: tuple[MeasuredCell, ...]
    verdicts: tuple[Verdict, ...]


def design_of(store: RunReader, run: RunRecord) -> RunDesign:
    """How the run's verdicts are judged: its confidence and baseline, this host's calibrations, and whether each
    variant ran in boots of its own."""
    options = run.options or {}
    policy = options.get("policy") or {}
    variants = options.get("variants") or {}
    baseline, confidence = policy.get("baseline"), policy.get("confidence", 95.0)
    by_boot = any((v or {}).get("boot") for v in variants.values())
    return RunDesign(
        baseline=baseline if isinstance(baseline, str) and baseline else run.baseline,
        confidence=float(confidence) if isinstance(confidence, int | float) else 95.0,
        calibrations=store.calibrations(run.host_id),
        # A plan with boot variants measured each variant in its own boots: the boot is the verdict's unit.
        by_boot=by_boot,
        sequential=boot_design(policy) if by_boot else sequential_design(policy),
    )


def boot_design(policy: Mapping[str, object]) -> Design | None:
    """The boot-level looks of a run with boots = "auto" (stats.sequential.boot_looks), else None."""
    if policy.get("boots") != "auto":
        return None
    from fairmark.stats.sequential import boot_looks

    low, high = policy.get("min_boots", 2), policy.get("max_boots", 8)
    confidence, margin = policy.get("confidence", 95.0), policy.get("equivalence_pct", 2.0)
    return boot_looks(
        low if isinstance(low, int) else 2,
        high if isinstance(high, int) else 8,
        confidence=float(confidence) if isinstance(confidence, int | float) else 95.0,
        equivalence_pct=float(margin) if isinstance(margin, int | float) else 2.0,
    )


def sequential_design(policy: Mapping[str, object]) -> Design | None:
    """The looks of a run stopped when decided (its stored policy's `stop = "decision"`), else None."""
    if policy.get("stop") != "decision":
        return None
    from fairmark.stats.sequential import Design

    confidence, margin = policy.get("confidence", 95.0), policy.get("equivalence_pct", 2.0)
    first, last = policy.get("min_trials", 5), policy.get("max_trials", 30)
    beyond = policy.get("beyond_pct", 0.0)
    return Design(
        int(first) if isinstance(first, int) else 5,
        int(last) if isinstance(last, int) else 30,
        confidence=float(confidence) if isinstance(confidence, int | float) else 95.0,
        equivalence_pct=float(margin) if isinstance(margin, int | float) else 2.0,
        beyond_pct=float(beyond) if isinstance(beyond, int | float) else 0.0,
    )


def run_verdicts(store: RunReader, run_ref: str) -> RunVerdicts:
    """The run's cells and verdicts: each group's variants against its baseline, judged together."""
    run = store.get_run(run_ref)
    design = design_of(store, run)
    cells = load_cells(store, run)
    costs = (run.options or {}).get("wrap_costs") or {}
    return RunVerdicts(run, design, cells, with_wrap_costs(within_run(cells, design), costs))
