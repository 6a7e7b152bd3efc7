"""The array types of the statistics: every sample is a float64 array once it enters a computation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias, TypeGuard

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    Floats: TypeAlias = npt.NDArray[np.float64]
    Indices: TypeAlias = npt.NDArray[np.intp]  # positions in a sample (np.flatnonzero's)
else:  # the same classes at run time without importing numpy.typing (2 ms of every command that uses numpy)
    Floats = Indices = np.ndarray
Values: TypeAlias = Sequence[float] | Floats  # what a statistic takes: a list of values or an array of them
Unit: TypeAlias = str | None  # a value's run, boot or host (None: not recorded; stats.levels' levels)


# here, not in stats.levels: a verdict asks it of every pair, and `show` of a run without boots loads no levels
def known(labels: Sequence[Unit] | None) -> TypeGuard[Sequence[str]]:
    """Every value's unit is recorded (and there are values)."""
    return labels is not None and len(labels) > 0 and None not in labels
