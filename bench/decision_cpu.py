"""The CPU a decision stop's first looks take in a fresh process (issue 36): its levels are found once a design and
process by simulation (stats.sequential.t_levels, and the switch's switch_scale), so a short run pays them whole.

Run: .venv/bin/python bench/decision_cpu.py   (PYTHONPATH=OTHER/src for another tree, to compare)
"""

from __future__ import annotations

import time

import numpy as np

start = time.process_time()
from fairmark.stats.sequential import Design, paired_look  # noqa: E402 - the import's own CPU is timed

imported = time.process_time()
rng = np.random.default_rng(1)
a, b = 0.3 * (1 + 0.01 * rng.standard_normal((2, 8)))
design = Design(5, 30, equivalence_pct=3.0, beyond_pct=3.0)  # `ab --fail-on 3%`'s
for n in range(5, 9):
    paired_look(a[:n], b[:n], design)
print(
    f"import {imported - start:.2f} s, looks 5 to 8 of an ab design {time.process_time() - imported:.2f} s of CPU"
)
