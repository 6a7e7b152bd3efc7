"""Writes src/fairmark/stats/changepoint_nulls.npz: the AR(1) null tables of `fairmark history`'s change-point
test for every tabulated segment length up to SHIPPED_UP_TO (stats/changepoints.py), one member "n<length>" a
length (a history decompresses only the lengths it tests). They are deterministic
(seeded by length); tests/test_continual_changepoints.py recomputes a few and compares. Run it again after a
change to the statistic, PHI_GRID, SIMULATIONS, TAIL or DRIFT_ALLOWANCE (SHORT_TAIL, the tail up to SHORT runs):

    .venv/bin/python scripts/changepoint_tables.py
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from fairmark.stats import changepoints as cp  # noqa: E402


def main() -> int:
    t = time.process_time()
    lengths = cp.tabulated_lengths()
    tables = [cp.simulate_null(n) for n in lengths]
    out = ROOT / "src" / "fairmark" / "stats" / cp.SHIPPED_FILE
    np.savez_compressed(out, **{f"n{n}": table for n, table in zip(lengths, tables, strict=True)})
    print(
        f"{len(lengths)} lengths ({lengths[0]}…{lengths[-1]}), {out.stat().st_size} bytes, "
        f"{time.process_time() - t:.0f} s CPU, peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
