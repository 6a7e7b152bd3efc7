"""Failure as a result (seed 004: "frequently able to run at 3000 connections, but not consistently"): the
failure rate of every cell of a workload that had failures, with its Wilson interval, and for a sweep the
point where errors start. Computed from the stored trials only; warm-up trials are not counted."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from fairmark.stats.spread import RESAMPLES, SpreadVerdict
from fairmark.store.records import TrialRecord


@dataclass(frozen=True)
class FailureRate:
    workload: str
    variant: str
    point: tuple[tuple[str, Any], ...]
    failed: int
    trials: int  # measured (non-warm-up) trials, failed ones included
    low: float  # Wilson interval of the failure probability
    high: float

    @property
    def rate(self) -> float:
        return self.failed / self.trials if self.trials else 0.0

    @property
    def sentence(self) -> str:
        where = ",".join(f"{k}={v}" for k, v in self.point)
        name = f"{self.workload}{f'[{where}]' if where else ''}/{self.variant}"
        return (
            f"{name}: {self.failed} of {self.trials} trials failed ({100 * self.rate:.0f}%; "
            f"Wilson CI {100 * self.low:.0f}–{100 * self.high:.0f}%)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "variant": self.variant,
            "point": [list(p) for p in self.point],
            "failed": self.failed,
            "trials": self.trials,
            "rate": self.rate,
            "ci_low": self.low,
            "ci_high": self.high,
            "sentence": self.sentence,
        }


def wilson(failed: int, trials: int, confidence: float) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (good coverage at small n and at 0 or n failures)."""
    if trials == 0:
        return 0.0, 1.0
    # scipy.stats.binomtest(…).proportion_ci(method="wilson")'s formulas (Newcombe 1998), its z from the standard
    # library (tests/test_stats_tlight.py compares): importing scipy.stats for them was half of `show`'s CPU

    z = NormalDist().inv_cdf(0.5 + 0.5 * (confidence / 100.0))
    p, n = failed / trials, trials
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z**2)
    return (0.0 if failed == 0 else center - delta), (1.0 if failed == n else center + delta)


def failure_rates(cells: Iterable[Any], confidence: float) -> tuple[FailureRate, ...]:
    """Every cell of each workload in which some measured trial failed (the cells without failures too: they
    show where the errors are not)."""
    cells = list(cells)
    counts = []
    for c in cells:
        measured = [t for t in c.trials if not t.warmup]
        counts.append((c, sum(t.status != "ok" for t in measured), len(measured)))
    failing = {c.workload for c, failed, _ in counts if failed}
    return tuple(
        FailureRate(c.workload, c.variant, c.point, failed, n, *wilson(failed, n, confidence))
        for c, failed, n in counts
        if c.workload in failing
    )


def errors_start(rates: Sequence[FailureRate]) -> list[str]:
    """Per workload, variant and swept parameter: the smallest sweep value at which trials failed."""
    series: dict[tuple[str, str, str], list[FailureRate]] = {}
    for r in rates:
        if len(r.point) == 1:
            series.setdefault((r.workload, r.variant, r.point[0][0]), []).append(r)
    out = []
    for (workload, variant, param), members in series.items():
        members = sorted(members, key=lambda r: _order(r.point[0][1]))
        first = next((r for r in members if r.failed), None)
        if first is None:
            continue
        below = [r for r in members if _order(r.point[0][1]) < _order(first.point[0][1])]
        clean = f" (none in {sum(r.trials for r in below)} trials below it)" if below else ""
        out.append(f"{workload}/{variant}: errors start at {param} = {first.point[0][1]}{clean}")
    return out


def _order(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, int | float) else (1, str(value))


SPREAD_METHOD = (
    f"Brown–Forsythe (Levene, median-centred); CV ratio CI: percentile bootstrap, {RESAMPLES} resamples"
)


def spread_sentence(v: SpreadVerdict, names: tuple[str, str]) -> str:
    """A spread verdict (stats/spread.py) in words: which side's spread is smaller, with the figures."""
    base, name = names
    confidence = v.confidence_pct
    if v.significant:
        word = "smaller" if v.cv_other_pct < v.cv_baseline_pct else "larger"
        head = f"spread: {name}'s is {word} than {base}'s"
    else:
        head = f"spread: no difference in spread proven at {confidence:g}%"
    lo, hi = v.ci_low, v.ci_high
    interval = (
        f"{confidence:g}% bootstrap CI {lo:.2f}–{hi:.2f}"
        if math.isfinite(lo) and math.isfinite(hi)
        else "no bootstrap CI: too many resamples have zero spread"
    )
    return (
        f"{head} (CV {v.cv_other_pct:.3g}% vs {v.cv_baseline_pct:.3g}%; CV ratio {v.cv_ratio:.2f}, {interval}; "
        f"Brown–Forsythe p = {v.brown_forsythe_p:.2g})"
    )


def spread_lines(report: Any) -> list[str]:
    """The spread verdicts a plan asked for ([run] spread = true), one line each."""
    return [
        f"{s['group']} {s['metric']}: {s['variant']} vs {s['baseline']}: {s['sentence']}"
        for s in report.spreads
    ]


def lines(report: Any) -> list[str]:
    """What every report says about failures: one line per cell of a failing workload, then where errors
    start."""
    rates = report.failures
    return [r.sentence for r in rates] + errors_start(rates)


# Lines that open an error message; where one is found, the excerpt starts there (a tool's banner or its progress
# lines before the error say nothing about what went wrong).
_ERRORISH = re.compile(
    r"error|fatal|fail|cannot|can't|unable|denied|not found|no such|refused|invalid|usage", re.IGNORECASE
)
ERROR_LINES = 3  # lines of a failed trial's output shown in show and every report
ERROR_COLUMNS = 160  # each cut at this width: a JSON blob on one line must not fill the screen


@dataclass(frozen=True)
class FailedCell:
    """A cell with no successful measured trial: nothing of it was measured. Its first failed trial's error and
    the first error lines of that trial's output (stderr, else stdout), so that the cause shows in `show` and
    every report, not only in `--json`."""

    key: str
    failed: int  # failed or timed-out trials (warm-ups included: they are failures too)
    status: str
    stop_reason: str | None
    seq: int  # the first failed trial's number
    error: str
    lines: tuple[str, ...]

    @property
    def sentence(self) -> str:
        stopped = f"; {self.status}: {self.stop_reason}" if self.stop_reason else ""
        return (
            f"{self.key}: no successful trial ({self.failed} failed{stopped}); trial {self.seq}: {self.error}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "failed": self.failed,
            "status": self.status,
            "stop_reason": self.stop_reason,
            "trial_seq": self.seq,
            "error": self.error,
            "error_lines": list(self.lines),
        }


def error_lines(trial: TrialRecord, limit: int = ERROR_LINES) -> tuple[str, ...]:
    """The first lines of a failed trial's output that say what went wrong: from the first line that reads like
    an error (else from the first line) of stderr, or of stdout when stderr is empty."""
    for text in (trial.stderr_tail, trial.stdout_tail):
        found = [line.rstrip() for line in (text or "").splitlines() if line.strip()]
        if found:
            start = next((i for i, line in enumerate(found) if _ERRORISH.search(line)), 0)
            return tuple(_cut(line) for line in found[start : start + limit])
    return ()


def _cut(line: str) -> str:
    return line if len(line) <= ERROR_COLUMNS else line[: ERROR_COLUMNS - 1] + "…"


def failed_cells(cells: Iterable[Any]) -> tuple[FailedCell, ...]:
    """The cells that ran and have no successful measured trial (a cell not reached yet is not failed)."""
    out = []
    for c in cells:
        bad = [t for t in c.trials if t.status != "ok" and not t.profiled]
        if c.n_ok or not (bad or c.status == "abandoned"):
            continue
        first = min(bad, key=lambda t: t.seq) if bad else None
        error = str((first.error if first else None) or c.stop_reason or "failed")
        seq = first.seq if first else 0
        lines = error_lines(first) if first else ()
        out.append(FailedCell(c.key, len(bad), c.status, c.stop_reason, seq, error, lines))
    return tuple(out)


def run_failure(report: Any) -> str | None:
    """Why a finished run counts as failed (the CLI exits non-zero), or None. Every cell without a successful
    trial fails the run — except with `failures = "measure"`, where a cell that always failed is the failure
    rate's result (seed 004's "3000 connections"), and only a run in which nothing succeeded is failed."""
    failed = failed_cells(report.cells)
    if not failed:
        return None
    ran = [c for c in report.cells if c.trials or c.status != "active"]
    every = len(failed) == len(ran)
    measure = ((report.run.options or {}).get("policy") or {}).get("failures") == "measure"
    if measure and not every:
        return None
    if every:
        return f"every trial failed: no cell of run {report.run.id[:8]} has a successful trial"
    names = ", ".join(f.key for f in failed)
    return (
        f"{len(failed)} of {len(ran)} cells have no successful trial ({names}): their comparisons are missing"
    )


def failed_lines(report: Any) -> list[str]:
    """The run's failed cells, each with its first error lines indented below it (show and every report)."""
    out = []
    for f in failed_cells(report.cells):
        out.append(f.sentence)
        out += [f"    {line}" for line in f.lines]
    return out


# -- profiles asked for and not delivered ----------------------------------------------------------------------
@dataclass(frozen=True)
class MissingProfile:
    """A cell whose profiled trials brought back no profile of a profiler `--profile` asked for: each failed,
    or ran and left only the profiler's error. Its first such trial's message (a failed trial's error, else the
    profiler's), so the cause shows where the run ends — a run whose 40 profiled trials all failed ended "done",
    exit 0, with nothing but a fail column of 20s."""

    key: str
    profilers: tuple[str, ...]  # cpu, locks, syscalls
    trials: int  # the cell's profiled trials
    failed: int  # of them, those that failed
    seq: int
    error: str
    lines: tuple[str, ...] = ()  # a failed trial's first error lines (error_lines)

    @property
    def sentence(self) -> str:
        failed = f", {self.failed} failed" if self.failed else ""
        return (
            f"{self.key}: no {'/'.join(self.profilers)} profile from {self.trials} profiled "
            f"trial{'s' if self.trials != 1 else ''}{failed}; trial {self.seq}: {_cut(self.error)}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "profilers": list(self.profilers),
            "profiled_trials": self.trials,
            "failed": self.failed,
            "trial_seq": self.seq,
            "error": self.error,
            "error_lines": list(self.lines),
        }


Left = dict[str, list[tuple[int, str, str]]]  # cell → (trial number, profiler, message) of each error left


def _profile_yield(report: Any, asked: list[str]) -> tuple[dict[str, set[str]], Left]:
    """Per cell: the profilers that delivered (in a trial that succeeded), and the errors they left."""
    seq = {t.id: t.seq for c in report.cells for t in c.trials if t.profiled}
    ok = {t.id for c in report.cells for t in c.trials if t.profiled and t.status == "ok"}
    got: dict[str, set[str]] = {}
    errors: Left = {}
    for name in asked:
        for a in report.source.iter_artifacts(f"profile.{name}"):
            if a["trial_id"] not in seq:
                continue
            cell = a["cell_key"] or ""
            if a["name"] == "error":
                text = str(a["text"] if a["text"] is not None else a["data"]).strip() or "profiler error"
                errors.setdefault(cell, []).append((seq[a["trial_id"]], name, f"profiler {name}: {text}"))
            elif a["trial_id"] in ok:  # perf's samples of a trial that failed are a profile of the failure
                got.setdefault(cell, set()).add(name)
    return got, errors


def missing_profiles(report: Any) -> tuple[MissingProfile, ...]:
    """Each cell with profiled trials missing a profile `--profile` (or --explain) asked for: none came back
    at all, or a profiler left only errors there."""
    hooks = (report.run.options or {}).get("hooks") or ()
    asked = [h.removeprefix("profile.") for h in hooks if str(h).startswith("profile.")]
    if not asked:
        return ()
    got, errors = _profile_yield(report, asked)
    out = []
    for c in report.cells:
        profiled = [t for t in c.trials if t.profiled]
        if not profiled:
            continue
        mine = errors.get(c.key, [])
        have = got.get(c.key, set())
        lost = asked if not have else [n for n in asked if n not in have and any(n == e[1] for e in mine)]
        if not lost:
            continue
        failed = [t for t in profiled if t.status != "ok"]
        first = min([*((t.seq, str(t.error or t.status)) for t in failed), *((e[0], e[2]) for e in mine)])
        lines = next((error_lines(t) for t in failed if t.seq == first[0]), ())
        out.append(MissingProfile(c.key, tuple(lost), len(profiled), len(failed), *first, lines))
    return tuple(out)


def profile_failure(report: Any) -> str | None:
    """Why a finished run did not deliver the profiles it was asked for (the CLI exits ENVIRONMENT), or None."""
    missing = missing_profiles(report)
    if not missing:
        return None
    profiled = sum(1 for c in report.cells if any(t.profiled for t in c.trials))
    first = min(missing, key=lambda m: m.seq)
    said = "; ".join([_cut(first.error), *first.lines[:1]])
    return (
        f"profiles missing: {len(missing)} of {profiled} profiled cells brought back no "
        f"{'/'.join(sorted({p for m in missing for p in m.profilers}))} profile; first, trial {first.seq} "
        f"({first.key}): {said}"
    )
