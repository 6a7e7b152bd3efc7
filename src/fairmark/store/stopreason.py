"""The reason a cell stopped, as the store keeps it (`cells.stop_reason`): worded here from the numbers of the
precision stop (stats.stopping.GroupStop), written by run/loop/stoprule.py, and read back by verdict/pairs.py — how the
cell's length was chosen decides the spread its verdict takes (stats.paired). One format, its writer and its
readers in one place."""

from __future__ import annotations

import re
from collections.abc import Sequence

from fairmark.stats.digits import format_spread
from fairmark.stats.stopping import Capped, GroupStop, widest_ci_pct


def precision_reason(g: GroupStop) -> str:
    """Why a group stopped by precision ('planned length 11 (from the first 6 trials' spread, CI target ±1%); the
    compared cells stopped together; CI achieved ±0.8%'), or where it stands while it runs."""
    if g.state == "first_stage":
        return "first stage"
    if g.state == "running":
        return f"running to {g.target_n} trials"
    achieved = achieved_text(g.widest_ci_pct)
    if g.state == "max_trials":
        return (
            f"max_trials ({g.max_trials}) reached before the CI target ±{g.target_ci_pct:g}% (the length planned "
            f"from the first {g.min_trials} trials' spread is longer); the compared cells stopped together; "
            f"{achieved}"
        )
    planned = f"from the first {g.min_trials} trials' spread, CI target ±{g.target_ci_pct:g}%"
    return f"planned length {g.target_n} ({planned}); the compared cells stopped together; {achieved}"


def achieved_text(widest_pct: float | None) -> str:
    if widest_pct is None:
        return "CI achieved: unknown (a mean of 0)"
    return (
        f"CI achieved ±{format_spread(widest_pct, '%')}"  # two digits, no exponent ('±120%', not '±1.2e+02%')
    )


def own_ci(reason: str, values: Sequence[float], confidence: float) -> str:
    """A cell's stop reason with its own CI achieved, not its group's widest ("CI achieved ±33%" was said of a
    cell at ±15% when its partner was at ±33%)."""
    head, sep, _ = reason.rpartition("; CI achieved")
    return f"{head}; {achieved_text(widest_ci_pct([values], confidence))}" if sep else reason


FIRST_STAGE = re.compile(r"from the first (\d+) trials")


def length_was_planned(stop_reason: str | None) -> bool:
    """Whether a cell ran to the length its first stage planned (not cut at max_trials): then that stage's spread
    set the standard error the run reached, which is what the stated detectable change assumes (stats.paired)."""
    return (stop_reason or "").startswith("planned length")


CAPPED = re.compile(r"max_trials \((\d+)\) reached before the CI target ±([0-9.eE+-]+)%")


def length_regime(stop_reasons: Sequence[str | None]) -> bool | Capped:
    """How the compared cells' length ended: True at the length their first stage planned, their rule (Capped)
    when cut at max_trials, False otherwise (a fixed budget, or cells that ended differently)."""
    if all(length_was_planned(r) for r in stop_reasons):
        return True
    rules = {
        (int(m.group(1)), float(m.group(2))) if (m := CAPPED.search(r or "")) else None for r in stop_reasons
    }
    rule = rules.pop() if len(rules) == 1 else None
    return Capped(*rule) if rule is not None else False


def first_stage_of(stop_reason: str | None) -> int | None:
    """The first stage from which a cell's length was planned, read from its stored stop reason (this wording
    and the one before it both name it); None when the length was not chosen from the data (a fixed trial
    budget, failures = "measure", boot blocks): the verdict then takes the spread of all its rounds alone."""
    m = FIRST_STAGE.search(stop_reason or "")
    return int(m.group(1)) if m else None
