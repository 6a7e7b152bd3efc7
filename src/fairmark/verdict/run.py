"""A stored run's verdicts, computed from its records: what `assemble.execute_run` gives its caller when the run ends, and
what `show`, `report`, `check`, `bisect` and `calibrate` read. Verdicts are never stored: they are a function of
the stored samples, so every reader gets today's rule applied to the same data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fairmark.store.db import RunRecord
from fairmark.verdict.pairs import RunDesign, within_run
from fairmark.verdict.record import Verdict
from fairmark.verdict.values import MeasuredCell, load_cells
from fairmark.verdict.wrapcost import with_wrap_costs

if TYPE_CHECKING:
    from fairmark.store.db import Store


@dataclass(frozen=True)
class RunVerdicts:
    run: RunRecord
    design: RunDesign
    cells: tuple[MeasuredCell, ...]
    verdicts: tuple[Verdict, ...]


def design_of(store: Store, run: RunRecord) -> RunDesign:
    """How the run's verdicts are judged: its confidence and baseline, this host's calibrations, and whether each
    variant ran in boots of its own."""
    options = run.options or {}
    policy = options.get("policy") or {}
    variants = options.get("variants") or {}
    baseline, confidence = policy.get("baseline"), policy.get("confidence", 95.0)
    return RunDesign(
        baseline=baseline if isinstance(baseline, str) and baseline else run.baseline,
        confidence=float(confidence) if isinstance(confidence, int | float) else 95.0,
        calibrations=store.calibrations(run.host_id),
        # A plan with boot variants measured each variant in its own boots: the boot is the verdict's unit.
        by_boot=any((v or {}).get("boot") for v in variants.values()),
    )


def run_verdicts(store: Store, run_ref: str) -> RunVerdicts:
    """The run's cells and verdicts: each group's variants against its baseline, judged together."""
    run = store.get_run(run_ref)
    design = design_of(store, run)
    cells = load_cells(store, run)
    costs = (run.options or {}).get("wrap_costs") or {}
    return RunVerdicts(run, design, cells, with_wrap_costs(within_run(cells, design), costs))
