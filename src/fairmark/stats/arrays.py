"""The array types of the statistics: every sample is a float64 array once it enters a computation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    Floats: TypeAlias = npt.NDArray[np.float64]
    Indices: TypeAlias = npt.NDArray[np.intp]  # positions in a sample (np.flatnonzero's)
else:  # the same classes at run time without importing numpy.typing (2 ms of every command that uses numpy)
    Floats = Indices = np.ndarray
Values: TypeAlias = Sequence[float] | Floats  # what a statistic takes: a list of values or an array of them
