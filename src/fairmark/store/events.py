"""Kernel events in a trial's stored stderr: the line format the kernel-log watch (run/monitors/kernel_log.py)
writes and reports read back (report/stability.py). The store keeps the trial's stderr tail, so this format
is stored data: both sides share it from here instead of the report importing the watch."""

from __future__ import annotations

import json
from collections.abc import Mapping

MARK = "fairmark-kernel-event"


def event_line(event: Mapping[str, object]) -> str:
    return f"{MARK} {json.dumps(dict(event))}"


def events_in(stderr: str) -> list[dict[str, object]]:
    """The events a watch reported in a trial's stderr (one `event_line` each)."""
    return [json.loads(line[len(MARK) :]) for line in stderr.splitlines() if line.startswith(MARK + " ")]
