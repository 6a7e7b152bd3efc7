"""The CPU a decision stop's first looks take in a fresh process (issue 36): its levels are found once a design and
process by simulation (stats.sequential.t_levels, and the switch's switch_scale), so a short run pays them whole —
unless an earlier process left them in the cache (stats.levelcache). By default the cache is a new empty
directory (the first run of a design); `--warm` uses the user's, as the second and later runs do.

Run: .venv/bin/python bench/decision_cpu.py [--warm]  (PYTHONPATH=OTHER/src for another tree, to compare)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np

WARM = "--warm" in sys.argv
if not WARM:
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="decision-cpu-")

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
    f" ({'the cache as found' if WARM else 'an empty cache'})"
)
