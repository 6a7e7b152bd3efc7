"""Render time and size of a large HTML report: 50 workloads × 2 variants × 30 trials, monitors on.

Goal (issue 5): < 10 s and < 5 MB. Prints the figures and PASS/FAIL; builds the run in a temporary store
with the same synthetic writer the tests use.

    .venv/bin/python bench/report_render.py [--workloads 50] [--trials 30]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fairmark.report.html import write_html
from fairmark.report.load import load_report
from fairmark.report.text import render_text
from test_report_fixture import open_store, synthetic_run

GOAL_S, GOAL_MB = 10.0, 5.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", type=int, default=50)
    ap.add_argument("--trials", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "bench.db")
        t0 = time.perf_counter()
        run_id = synthetic_run(store, workloads=args.workloads, trials=args.trials, monitors=True)
        t1 = time.perf_counter()
        report = load_report(store, run_id)
        t2 = time.perf_counter()
        out = Path(tmp) / "report.html"
        write_html([report], out)
        t3 = time.perf_counter()
        text = render_text([report])
        t4 = time.perf_counter()
        size_mb = out.stat().st_size / 1e6
    total = t3 - t1
    print(
        f"store written in {t1 - t0:.1f} s ({args.workloads} workloads × 2 variants × {args.trials} trials)"
    )
    print(
        f"load_report {t2 - t1:.2f} s, HTML {t3 - t2:.2f} s, text {t4 - t3:.2f} s ({len(text) / 1e3:.0f} kB)"
    )
    print(f"HTML report: {total:.2f} s from store to file (goal < {GOAL_S:g} s, ratio {total / GOAL_S:.2f})")
    print(f"HTML size: {size_mb:.2f} MB (goal < {GOAL_MB:g} MB, ratio {size_mb / GOAL_MB:.2f})")
    ok = total < GOAL_S and size_mb < GOAL_MB
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
