"""Statistics: per-cell summaries, ministat-exact A/B comparison in numbers (+ Welch ratio CI, Mann-Whitney U), adaptive
stopping by precision, sample checks (outliers, drift, two modes), false discovery rate, honest rounding."""

from fairmark.stats.checks import (
    bimodal_split,
    drift,
    modified_z,
    outlier_indices,
    serial_correlation,
)
from fairmark.stats.describe import RunningMean, Summary, describe, mean_ci, ministat_median
from fairmark.stats.digits import format_median, format_pair, format_percent, format_value
from fairmark.stats.fdr import benjamini_hochberg, bh_adjust
from fairmark.stats.stopping import MIN_TRIALS, ideal_n, precision_reached
from fairmark.stats.tdist import MINISTAT_LEVELS, exact_t, ministat_t, t_quantile

__all__ = [
    "MINISTAT_LEVELS",
    "MIN_TRIALS",
    "RunningMean",
    "Summary",
    "benjamini_hochberg",
    "bh_adjust",
    "bimodal_split",
    "describe",
    "drift",
    "exact_t",
    "format_median",
    "format_pair",
    "format_percent",
    "format_value",
    "ideal_n",
    "mean_ci",
    "ministat_median",
    "ministat_t",
    "modified_z",
    "outlier_indices",
    "precision_reached",
    "serial_correlation",
    "t_quantile",
]
