"""A trial as `--json` and the reports' read model show it (report.data.trial_dict)."""

from __future__ import annotations

import datetime as dt

from fairmark.report.data import TRIAL_FIELDS, trial_dict
from fairmark.store.records import TrialRecord


def test_a_trial_shows_its_id_start_measurement_argv_samples_and_tails_in_that_order() -> None:
    t = TrialRecord(
        "run",
        3,
        7,
        2,
        False,
        "failed",
        dt.datetime(2026, 1, 2, 3, 4, 5, 6),
        wall_s=0.5,
        user_s=0.25,
        sys_s=0.0,
        max_rss_kib=1040,
        max_rss_method="launcher",
        exit_code=1,
        error="exit 1",
        stdout_tail="out",
        stderr_tail="err",
        argv=("sh", "-c", "exit 1"),
        host="h",
        boot_id="b",
        profiled=True,
        id="t1",
    )
    samples = {"wall_s": 0.5, "x": 2.0}
    d = trial_dict(t, samples)
    keys = ("id", "started_at", *TRIAL_FIELDS, "profiled", "argv", "samples", "stdout_tail", "stderr_tail")
    assert tuple(d) == keys  # every measurement field the CSV export writes, in its order
    assert d == {
        **{k: getattr(t, k) for k in TRIAL_FIELDS},
        "id": "t1",
        "started_at": "2026-01-02T03:04:05.000006",
        "profiled": True,
        "argv": ["sh", "-c", "exit 1"],
        "samples": samples,
        "stdout_tail": "out",
        "stderr_tail": "err",
    }
    assert d["samples"] is not samples  # a copy: the report's own mapping is not handed out
    assert trial_dict(TrialRecord("r", 1, 1, 0, False, "ok", dt.datetime(2026, 1, 1)), {})["argv"] is None
