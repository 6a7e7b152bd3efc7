"""A verdict as every command gives it: which cells were compared on which metric, and the judgement (the
comparison, its Benjamini-Hochberg decision) — a frozen record from the judge to the report and the gates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fairmark.verdict.compare import Comparison
from fairmark.verdict.judge import Judgement

if TYPE_CHECKING:  # in annotations only: `compare` of files loads no store (issue 31 item 7)
    from fairmark.jsonvalue import JSONObject
    from fairmark.plan.schedule import Point


@dataclass(frozen=True)
class Verdict:
    """`variant`'s cell against the `baseline` variant's cell of one group (workload × sweep point) on `metric`."""

    group: str
    workload: str
    point: Point
    metric: str
    unit: str
    baseline: str
    variant: str
    judgement: Judgement[object]  # tagged as the pairs were (verdict.pairs): the tag is not read here
    # What the variant's own `wrap` costs on this machine (measured before the run; verdict/wrapcost.py words it),
    # with its "note"; None for a variant without one or a metric it cannot reach.
    wrap_cost: JSONObject | None = None

    @property
    def comparison(self) -> Comparison:
        return self.judgement.comparison

    @property
    def fdr_significant(self) -> bool:
        return self.judgement.fdr_significant

    @property
    def q_value(self) -> float:
        return self.judgement.q_value

    @property
    def significant(self) -> bool:
        return self.comparison.significant

    @property
    def sentence(self) -> str:
        return self.comparison.sentence

    @property
    def calibration(self) -> bool:
        """This verdict is the A/A twin's against its baseline (`run --calibrate`)."""
        return self.judgement.pair.calibration

    @property
    def warnings(self) -> tuple[str, ...]:
        """The comparison's warnings, and the A/A twin's when it came out different."""
        return self.judgement.warnings

    def comparison_dict(self) -> JSONObject:
        """The judgement as JSON shows it (the fields of `compare --json`, the A/A flag, the wrapper's cost)."""
        out = self.judgement.to_dict()
        if self.wrap_cost is not None:
            out["wrap_cost"] = dict(self.wrap_cost)
        return out

    def to_dict(self) -> JSONObject:
        head: JSONObject = {
            "group": self.group,
            "workload": self.workload,
            "point": [[k, v] for k, v in self.point],
            "metric": self.metric,
            "unit": self.unit,
            "baseline": self.baseline,
            "variant": self.variant,
            "fdr_significant": self.fdr_significant,
        }
        return head | self.comparison_dict()
