"""When the adaptive CPU-profiled rounds may stop, and at what level their comparisons claim (rule 3).

The rounds come one at a time, but the stop is asked only at a few numbers of rounds, the looks: the first at
n0 = max(MIN_DECIDE, profiled_trials), then 2·n0, 4·n0, … while below the span, and the span
(max(profiled_trials, max_profiled)) always the last. Each look — the stop's test and the report's claims — has
its share of α, in proportion to the trials it compares: α_k = α · n_k / (n_1 + … + n_L) (a weighted
Bonferroni split; 0.71%, 1.4% and 2.9% at 5, 10 and 20 rounds).

Why that keeps false claims at α. Under A/A (no function differs) the report claims at the look the run stopped
at, on the same trials; so a false claim in the report lies in the union over the looks of "BH at α_k claims
something at look k". Under the global null Benjamini–Hochberg at α_k claims anything with probability ≤ α_k
(its false discovery rate is then that probability), so the union is ≤ α_1 + … + α_L = α, whatever the stopping
rule and however the looks depend on each other. Asked after every round instead, at α each, about three times α
of A/A runs ended with a false claim (docs/statistics.md, bench/profile_aa_adaptive.py). The doubling keeps L
small (3 for the plan's default 2 and 20); the split in proportion to n, rather than equal, keeps most of α for
the last look, where a small difference is found, and the first look still stops on a large one.

Which look a comparison is at is read off its trials: the first look of at least as many rounds. A round whose
trial failed makes that an earlier look, of a smaller α_k: never a level the run did not earn.

Pure functions over numbers; no I/O.
"""

from __future__ import annotations

ALPHA = 0.05  # the report's false discovery rate over the functions tested, in all looks together
# no stop before 5 profiled trials a side: with 3, the first that claimed the planted function gave an interval of
# +21.9 to +22.5 ms around a cost of 24.1 (bench/explain_validation.py, run 10 of 10 at 11404ae): two degrees of
# freedom make a lucky small spread, and a stop at the first claim picks exactly that one
MIN_DECIDE = 5


def span(profiled_trials: int, max_profiled: int) -> int:
    """The most rounds the profiled trials take."""
    return max(profiled_trials, max_profiled)


def looks(profiled_trials: int, max_profiled: int) -> tuple[int, ...]:
    """The numbers of rounds after which the stop is asked, the last the span (one look: a fixed number)."""
    last = span(profiled_trials, max_profiled)
    out, n = [], max(MIN_DECIDE, profiled_trials)
    while n < last:
        out.append(n)
        n *= 2
    return (*out, last)


def legacy_looks(profiled_trials: int, max_profiled: int) -> tuple[int, ...]:
    """The looks a run took before the schedule: after every round from MIN_DECIDE (or profiled_trials) to the
    span — so that a run recorded then is reported at a level it earned, not at one it did not."""
    last = span(profiled_trials, max_profiled)
    return (*range(max(MIN_DECIDE, profiled_trials), last), last)


def look_index(schedule: tuple[int, ...], n: int) -> int:
    """Which look (0-based) a comparison of n trials a side is at: the first of at least n rounds."""
    return next((k for k, rounds in enumerate(schedule) if rounds >= n), len(schedule) - 1)


def look_alphas(schedule: tuple[int, ...], alpha: float = ALPHA) -> tuple[float, ...]:
    """Each look's share of α, in proportion to its rounds; they sum to α."""
    total = sum(schedule)
    return tuple(alpha * rounds / total for rounds in schedule)


def look_alpha(schedule: tuple[int, ...], n: int, alpha: float = ALPHA) -> float:
    """The level of a comparison of n trials a side under `schedule`; α itself for one look or none (a fixed
    number of rounds)."""
    if len(schedule) <= 1:
        return alpha
    return look_alphas(schedule, alpha)[look_index(schedule, n)]
