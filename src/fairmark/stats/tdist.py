"""Student t quantiles, ministat-exact where fairmark promises ministat's numbers.

ministat (Debian 20150715) does not compute t: it looks it up in a table with rows df = 1…100 and one ∞ row
used for every df > 100. Its columns are labelled 80 90 95 98 99 99.5. Measured against the installed program:

* the table holds the two-sided quantiles rounded to 3 decimals (unrounded quantiles miss its printed digits);
* the column labelled 99.5 holds the **99.8 %** two-sided quantile (t₀.₉₉₉: 318.313 at df = 1, 3.090 at ∞),
  and six of its entries (df 7–12) are off in the third decimal (e.g. 4.782 where t₀.₉₉₉(7) = 4.785).

fairmark reproduces that table at 80/90/95/98/99 (so `fairmark compare` prints ministat's digits), ∞ row
included, and is correct at 99.5 by default: 99.5 means the 99.5 % quantile. `ministat_compat=True` reproduces
ministat's 99.5 column too. A verdict above df 100 uses the exact quantile unless `ministat_compat` (`verdict_t`):
with the ∞ row, α at df 101 is 5.28 % and the verdict could disagree with its own p-value. Any other level
(e.g. 97.5) uses the exact quantile: ministat has none.
"""

from __future__ import annotations

import functools
import math

from fairmark.errors import UsageError
from fairmark.stats.ministat_table import COLUMNS, ROWS

MINISTAT_LEVELS = COLUMNS
MINISTAT_MAX_DF = 100  # above this ministat uses its ∞ row

# Entries of ministat's "99.5" (really 99.8 %) column that are not the rounded quantile, as the program prints
# them (recovered from its half-widths on constructed data sets; tests/test_stats_ministat_live.py re-checks);
# the table (stats/ministat_table.py) holds them, and its test recomputes every other entry.
MINISTAT_998_TYPOS = {7: 4.782, 8: 4.499, 9: 4.296, 10: 4.143, 11: 4.024, 12: 3.929}


def _stdtrit(df: float, p: float) -> float:
    """The one-sided quantile t with P(T ≤ t) = p, as scipy.special.stdtrit gives it (within a relative 1e-10;
    tests/test_stats_tlight.py), from stats/tlight: a command that computes a t and nothing else of scipy's
    (`history` sizing a change point, the checks at a run's end) loads no scipy (tests/test_cli_imports.py)."""
    from fairmark.stats.tlight import t_ppf

    return t_ppf(df, p)


def exact_t(confidence: float, df: float) -> float:
    """Two-sided Student t quantile: P(|T| ≤ t) = confidence/100."""
    _check_level(confidence)
    if df <= 0 or math.isnan(df):
        return math.nan
    return _stdtrit(df, 1.0 - (1.0 - confidence / 100.0) / 2.0)


def ministat_t(column: float, df: int) -> float:
    """The value ministat's table holds for `column` (one of its six labels) and `df`."""
    return _ministat_row(column, math.inf if df > MINISTAT_MAX_DF else df)


def _ministat_row(column: float, row: float) -> float:
    if column not in MINISTAT_LEVELS:
        raise UsageError(f"ministat has no {column}% column (it has {', '.join(map(str, MINISTAT_LEVELS))})")
    if row < 1:
        return math.nan
    return ROWS[MINISTAT_MAX_DF if row == math.inf else int(row) - 1][MINISTAT_LEVELS.index(column)]


@functools.lru_cache(
    maxsize=4096
)  # asked after every trial (the progress line's CI) with the same few arguments
def t_quantile(confidence: float, df: float, *, ministat_compat: bool = False) -> float:
    """The t of ministat's lines: its table value at 80/90/95/98/99 (∞ row above df 100; at 99.5 only when
    `ministat_compat`), the exact quantile otherwise. Verdicts use `verdict_t`."""
    _check_level(confidence)
    if df < 1 or math.isnan(df):
        return math.nan
    table = confidence in MINISTAT_LEVELS and (confidence != 99.5 or ministat_compat)
    if table and float(df).is_integer():
        return ministat_t(float(confidence), int(df))
    return exact_t(confidence, df)


def verdict_t(confidence: float, df: float, *, ministat_compat: bool = False) -> float:
    """The t a verdict uses: ministat's table up to df 100 (so verdicts agree with ministat), the exact quantile
    above it unless `ministat_compat` (ministat's ∞ row there gives α = 5.28% at df 101, and a verdict that
    disagrees with its own p-value)."""
    if df > MINISTAT_MAX_DF and not ministat_compat:
        return exact_t(confidence, df)
    return t_quantile(confidence, df, ministat_compat=ministat_compat)


def _check_level(confidence: float) -> None:
    if not 0.0 < confidence < 100.0:
        raise UsageError(f"confidence must be a percentage strictly between 0 and 100, got {confidence!r}")
