"""Every pair the judge sees is built here, with the design its data call for, and judged here.

* **Within a run** (`run`, `show`, `report`, `check --against variant`): each group's variants against its baseline
  cell on the declared metrics, paired by round (the cells were interleaved), the A/A twin judged first as the
  others' calibration; in a run of boot variants the boot is the unit.
* **Pooled runs of one design** (`bisect`): the same cells over several runs, each run's rounds kept apart so
  pairs never cross runs.
* **Across runs** (`check --against run:/tag:`, `compare-runs`): the run (or the boot) as the unit, since the two
  sides were not interleaved.
* **Independent samples** (`compare` of files, `history`'s runs before and after a change point).

Benjamini-Hochberg runs across everything one command judges together (verdict.judge).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from fairmark.plan.aa import AA_SUFFIX, aa_twin_name
from fairmark.stats.arrays import Values
from fairmark.store.stopreason import first_stage_of, length_regime
from fairmark.verdict.compare import Better, Comparison
from fairmark.verdict.judge import Judgement, Pair, aa_spread, judge
from fairmark.verdict.match import match_cells
from fairmark.verdict.record import Verdict
from fairmark.verdict.values import Labelled, MeasuredCell, starts_of

if TYPE_CHECKING:
    from fairmark.jsonvalue import JSONObject
    from fairmark.stats.sequential import Design

RunTag: TypeAlias = tuple[
    MeasuredCell, MeasuredCell, str
]  # a pair of a run: baseline cell, other cell, metric
CellTag: TypeAlias = tuple[MeasuredCell, str]  # a pair across runs: the cell (side A's) and the metric
ROUND_OFFSET = 1_000_000  # pooled runs: each later run's rounds are renumbered past the earlier ones'


@dataclass(frozen=True)
class RunDesign:
    """How a run's own verdicts are judged, as the run recorded it."""

    baseline: str
    confidence: float = 95.0
    # what `fairmark calibrate` measured on the run's host: (group, metric) → its data (stats.calibration)
    calibrations: Mapping[tuple[str, str], JSONObject] = field(default_factory=dict)
    by_boot: bool = False  # boot variants: each variant in boots of its own, the boot is the unit
    sequential: Design | None = None  # stop = "decision": the run's looks (stats.sequential)


def _groups(cells: Sequence[MeasuredCell]) -> dict[str, list[MeasuredCell]]:
    out: dict[str, list[MeasuredCell]] = {}
    for c in cells:
        out.setdefault(c.cell.group, []).append(c)
    return out


def _verdict(j: Judgement[object], base: MeasuredCell, other: MeasuredCell, metric: str) -> Verdict:
    b = base.cell
    return Verdict(
        group=b.group,
        workload=b.workload,
        point=b.point,
        metric=metric,
        unit=b.spec(metric).unit,
        baseline=b.variant,
        variant=other.cell.variant,
        judgement=j,
    )


def within_run(cells: Sequence[MeasuredCell], design: RunDesign) -> tuple[Verdict, ...]:
    """A run's verdicts: each group's variants against its baseline cell, judged together."""
    pairs = [p for members in _groups(cells).values() for p in _group_pairs(members, design)]
    return tuple(_verdict(j, *j.pair.tag) for j in judge(pairs, confidence=design.confidence))


def _group_pairs(members: list[MeasuredCell], design: RunDesign) -> list[Pair[RunTag]]:
    base = next((c for c in members if c.cell.variant == design.baseline), members[0])
    twin = next((c for c in members if c.cell.variant == aa_twin_name(base.cell.variant)), None)
    others = ([twin] if twin else []) + [c for c in members if c is not base and c is not twin]
    pairs: list[Pair[RunTag]] = []
    seen: set[tuple[tuple[float, ...], ...]] = set()
    for metric in base.cell.verdict_metrics:
        # An adapter may declare the same numbers twice (compress_mb_s is compress_mb_s_L1 when one level is
        # run): judge them once, so the FDR count is not inflated by copies.
        fingerprint = tuple(c.values(metric) for c in members)
        if fingerprint in seen:
            continue
        seen.add(fingerprint)
        better = base.cell.spec(metric).better
        aa = (
            aa_spread(base.values(metric), twin.values(metric), confidence=design.confidence, better=better)
            if twin
            else None
        )
        for other in others:
            pairs.append(_run_pair(base, other, metric, design, None if other is twin else aa))
    return pairs


def _run_pair(
    base: MeasuredCell, other: MeasuredCell, metric: str, design: RunDesign, aa: float | None
) -> Pair[RunTag]:
    """One pair of a run: paired by round, with the A/A twin's spread and the host's calibration."""
    spec = base.cell.spec(metric)
    a, b = base.labelled(metric), other.labelled(metric)
    twin = other.cell.variant == aa_twin_name(base.cell.variant)
    return Pair(
        a.values,
        b.values,
        better=spec.better,
        unit=spec.unit,
        constant_expected=spec.constant,
        name_baseline=base.cell.variant,
        name_other=other.cell.variant,
        aa_percent_half_width=aa,
        calibration=other.cell.variant.endswith(AA_SUFFIX),
        tag=(base, other, metric),
        rounds=(a.rounds, b.rounds),
        first_stage=_first_stage(base, other),
        length_planned=length_regime([c.cell.stop_reason for c in (base, other)]),
        host_calibration=None if twin else design.calibrations.get((base.cell.group, metric)),
        units=(a.boots, b.boots) if design.by_boot else None,
        sequential=design.sequential,
    )


def _first_stage(*cells: MeasuredCell) -> int | None:
    """The first stage the compared cells' length was planned from (their stop reason says so); None when it was
    not chosen from the data (a fixed budget, failures = "measure", boot blocks): then all rounds' spread alone
    decides, without the two-stage rule's cost in power (issue 23 item 12)."""
    stages = {first_stage_of(c.cell.stop_reason) for c in cells}
    return stages.pop() if len(stages) == 1 else None


def pooled_runs(
    runs: Sequence[Sequence[MeasuredCell]],
    sides: Sequence[tuple[str, str, str]],
    *,
    confidence: float,
    calibrations: Mapping[tuple[str, str], JSONObject] | None = None,
    sequential: Design | None = None,
) -> dict[str, Verdict]:
    """Several runs of one design judged as one: in each group, for each (baseline, other, suffix) of `sides`, the
    primary metric of `other` against `baseline` over all the runs, keyed "group metric{suffix}". Values are
    pooled with each run's rounds renumbered past the earlier runs', so that pairs never cross runs. Each pair is
    judged as within_run judges it (the first stage its cells' length was planned from, the host's calibration
    from `calibrations`), so that the verdict of one run is the interval `fairmark show` gives that run; over
    several runs the judge pairs by (run, round) and drops the first stage, which means nothing across runs."""
    pooled: dict[str, tuple[MeasuredCell, MeasuredCell, str, Labelled, Labelled]] = {}
    pairs: list[Pair[tuple[str, MeasuredCell, MeasuredCell, str]]] = []
    for i, cells in enumerate(runs):
        for group, members in _groups(cells).items():
            by_variant = {c.cell.variant: c for c in members}
            for base_name, other_name, suffix in sides:
                if base_name not in by_variant or other_name not in by_variant:
                    continue
                base, other = by_variant[base_name], by_variant[other_name]
                metric = other.cell.primary_metric
                key = f"{group} {metric}{suffix}"
                first = pooled.get(key, (base, other, metric, Labelled(), Labelled()))
                a, b = _renumbered(base.labelled(metric), i), _renumbered(other.labelled(metric), i)
                pooled[key] = (first[0], first[1], metric, first[3] + a, first[4] + b)
    for key, (base, other, metric, a, b) in pooled.items():
        spec = other.cell.spec(metric)
        pairs.append(
            Pair(
                a.values,
                b.values,
                better=spec.better,
                unit=spec.unit,
                constant_expected=spec.constant,
                name_baseline=base.cell.variant,
                name_other=other.cell.variant,
                rounds=(a.rounds, b.rounds),
                tag=(key, base, other, metric),
                first_stage=_first_stage(base, other),
                host_calibration=(calibrations or {}).get((base.cell.group, metric)),
                sequential=sequential if len(runs) == 1 else None,  # each run had its own looks
            )
        )
    return {j.pair.tag[0]: _verdict(j, *j.pair.tag[1:]) for j in judge(pairs, confidence=confidence)}


def _renumbered(values: Labelled, run_index: int) -> Labelled:
    return Labelled(
        values.values,
        tuple(r + run_index * ROUND_OFFSET for r in values.rounds),
        values.runs,
        values.boots,
        values.hosts,
    )


@dataclass(frozen=True)
class CellCheck:
    """A cell's metric checked against other runs: its verdict, or None when a side had too few values."""

    cell: MeasuredCell
    metric: str
    verdict: Verdict | None


def against_runs(
    mine: Sequence[MeasuredCell], baselines: Sequence[Sequence[MeasuredCell]], *, name: str, confidence: float
) -> tuple[list[CellCheck], list[MeasuredCell]]:
    """Each cell's primary metric against the same cell in the baseline runs, each run one unit (its mean one
    observation: the run-to-run variance is in the verdict). Also the cells no baseline run measured."""
    matched = [{id(a): b for a, b in match_cells(mine, runs)} for runs in baselines]
    starts = starts_of([*mine, *(c for runs in baselines for c in runs)])
    pairs: list[Pair[CellTag]] = []
    unmatched: list[MeasuredCell] = []
    for cell in mine:
        metric, spec = cell.cell.primary_metric, cell.cell.spec(cell.cell.primary_metric)
        base = Labelled()
        for found in (m[id(cell)] for m in matched if id(cell) in m):
            base = base + found.labelled(metric)
        if not base.values:
            unmatched.append(cell)
            continue
        own = cell.labelled(metric)
        pairs.append(
            Pair(
                base.values,
                own.values,
                better=spec.better,
                unit=spec.unit,
                constant_expected=spec.constant,
                name_baseline="baseline",
                name_other=name,
                tag=(cell, metric),
                labels={"run": (base.runs, own.runs), "boot": (base.boots, own.boots)},
                starts=starts,
            )
        )
    judged = {id(j.pair): j for j in judge(pairs, confidence=confidence)}
    checks = []
    for p in pairs:
        cell, metric = p.tag
        j = judged.get(id(p))
        checks.append(CellCheck(cell, metric, _verdict(j, cell, cell, metric) if j else None))
    return checks, unmatched


@dataclass(frozen=True)
class Side:
    """One side of `compare-runs`: its runs' cells, in order (the first run's cells name the side's cells)."""

    runs: Sequence[Sequence[MeasuredCell]]
    name: str  # how the verdict names the side (its first run's short id)

    def values(self, cells: Sequence[MeasuredCell]) -> dict[int, dict[str, Labelled]]:
        """id of each of `cells` (the side's first run's) → metric → its measured values over all the side's
        runs, each labelled with its host (the run's machine), boot (unknown for a run made before boots were
        recorded) and run."""
        out: dict[int, dict[str, Labelled]] = {id(c): {} for c in cells}
        for k, run in enumerate(self.runs):
            same = [(c, c) for c in cells] if k == 0 else match_cells(cells, run)
            for mine, theirs in same:
                pooled = out[id(mine)]
                for metric, lv in theirs.metrics.items():
                    if lv.values:
                        pooled[metric] = pooled.get(metric, Labelled()) + lv
        return out


def across_runs(
    pairs: Sequence[tuple[MeasuredCell, MeasuredCell]],
    sides: tuple[Side, Side],
    metrics: Sequence[str],
    *,
    all_metrics: bool,
    confidence: float,
) -> list[Verdict]:
    """`compare-runs`: each matched cell's metrics, side A the baseline, each value labelled with its host, boot
    and run: two runs are never interleaved, so stats.levels takes at least the run as the verdict's unit (the
    highest level at which the sides differ); judged together."""
    values_a = sides[0].values([a for a, _ in pairs])
    values_b = sides[1].values([b for _, b in pairs])
    starts = starts_of(c for side in sides for run in side.runs for c in run)
    todo: list[Pair[CellTag]] = []
    for ca, cb in pairs:
        va, vb = values_a[id(ca)], values_b[id(cb)]
        names = sorted(set(va) & set(vb)) if all_metrics else sorted(metrics) or [ca.cell.primary_metric]
        for name in names:
            spec = ca.cell.spec(name)
            a, b = va.get(name, Labelled()), vb.get(name, Labelled())
            pair = Pair(
                a.values,
                b.values,
                better=spec.better,
                unit=spec.unit,
                constant_expected=spec.constant,
                name_baseline=sides[0].name,
                name_other=sides[1].name,
                tag=(ca, name),
                labels={level: (a.level(level), b.level(level)) for level in ("host", "boot", "run")},
                starts=starts,
            )
            todo.append(pair)
    judged = judge(todo, confidence=confidence)
    return [_verdict(j, j.pair.tag[0], j.pair.tag[0], j.pair.tag[1]) for j in judged]


def judge_shifts(
    segments: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    better: Better,
    unit: str,
    confidence: float,
) -> list[Comparison | None]:
    """`history`: the points (runs) before each change point against those after it, runs as the unit; None
    where a side has too few."""
    pairs = [
        Pair(before, after, better=better, unit=unit, name_baseline="before", name_other="after", tag=k)
        for k, (before, after) in enumerate(segments)
    ]
    judged = {j.pair.tag: j.comparison for j in judge(pairs, confidence=confidence)}
    return [judged.get(k) for k in range(len(segments))]


def judge_files(
    datasets: Sequence[Values],
    names: Sequence[str],
    *,
    better: Better,
    unit: str,
    confidence: float,
    ministat_compat: bool,
) -> list[Judgement]:
    """`compare`: every data set against the first, as ministat compares them (independent samples)."""
    pairs = [
        Pair(datasets[0], d, better=better, unit=unit, name_baseline=names[0], name_other=name)
        for d, name in zip(datasets[1:], names[1:], strict=True)
    ]
    return judge(pairs, confidence=confidence, ministat_compat=ministat_compat)


@dataclass(frozen=True)
class SeriesPair:
    """One benchmark and unit of another tool's results (`compare` of go test, hyperfine … files): the
    baseline file's values and another file's, each its own sample. `tag` is the caller's."""

    baseline: Values
    other: Values
    better: Better
    unit: str
    names: tuple[str, str]
    tag: tuple[int, int]


def judge_series(pairs: Sequence[SeriesPair], *, confidence: float) -> list[Judgement[tuple[int, int]]]:
    """`compare` of other tools' files: each benchmark and unit of each file against the same one of the first,
    as independent samples, never pooled across benchmarks; the false discovery rate controlled across all of
    them. A pair with fewer than 3 values on a side is left out (the caller says it cannot be judged)."""
    return judge(
        [
            Pair(
                p.baseline,
                p.other,
                better=p.better,
                unit=p.unit,
                name_baseline=p.names[0],
                name_other=p.names[1],
                tag=p.tag,
            )
            for p in pairs
        ],
        confidence=confidence,
    )
