"""Writes src/fairmark/stats/mde_factors.npy: the MDE factor (stats/power.py `_factor`) of the default level
(95%) and power (80%) for every df key up to SHIPPED_UP_TO, so a verdict's MDE loads no scipy. They are what
`_factor` computes with scipy; tests/test_stats_tlight.py recomputes some and compares. Run it again after a change
to `_factor`, _BINS or the keys:

    .venv/bin/python scripts/mde_table.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from fairmark.stats import power  # noqa: E402


def main() -> int:
    t = time.process_time()
    keys = power.shipped_keys()
    factors = [power._factor(k, power.SHIPPED_LEVEL, power.POWER) for k in keys]
    out = ROOT / "src" / "fairmark" / "stats" / power.SHIPPED_FILE
    np.save(out, np.array([keys, factors], dtype=np.float64))
    print(
        f"{len(keys)} keys ({keys[0]}…{keys[-1]}), {out.stat().st_size} bytes, {time.process_time() - t:.0f} s CPU"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
