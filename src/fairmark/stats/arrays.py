"""The array types of the statistics: every sample is a float64 array once it enters a computation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

Floats: TypeAlias = npt.NDArray[np.float64]
Indices: TypeAlias = npt.NDArray[np.intp]  # positions in a sample (np.flatnonzero's)
Values: TypeAlias = Sequence[float] | Floats  # what a statistic takes: a list of values or an array of them
