"""Progress of a run on the terminal: a rich live bar when interactive, plain lines otherwise — one per trial, at
most PLAIN_EVERY_S apart."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from fairmark.console import console
from fairmark.plan.model import RunPolicy
from fairmark.run.loop.runner import Progress as RunnerProgress
from fairmark.stats import format_value
from fairmark.stats.digits import bounds, estimate_text, format_bounded, scale_unit

# A plain (not a terminal: a log, CI) line per trial, but not more than one per PLAIN_EVERY_S: a plan of thousands
# of millisecond trials wrote thousands of lines nobody reads, and formatting them was a tenth of fairmark's own
# work per trial of `true` (bench/harness_cost.py). A trial whose line is held back is still counted (the next
# line's [number] says how many ran). The last held line of each cell is shown, in order, before the next line,
# a note, a cell's stop or the end, so the log keeps every cell's latest value; a failure is always shown. Trials
# a twentieth of a second or longer — nearly every real workload — still get a line each.
PLAIN_EVERY_S = 0.05


@dataclass(frozen=True)
class Shown:
    """How a cell's numbers are shown in its lines: one unit prefix, picked at its first value (735.5 ms → 0.9 s →
    1000 ms flipped within one cell; MB/s → 0.2 GB/s), and the bounds its values never left (a throughput is
    never below zero: "50 ± 130 MB/s" becomes "50 [0, 180] MB/s"; stats.digits.bounds)."""

    scale: float | None = None
    low: float | None = None
    high: float | None = None


def _estimate(ev: dict[str, Any], shown: Shown) -> str:
    if ev.get("mean") is None:
        return ""
    hw, unit = ev.get("ci_half_width"), ev.get("unit", "")
    return format_bounded(ev["mean"], hw, unit, low=shown.low, high=shown.high, scale=shown.scale)


def _value(ev: dict[str, Any], shown: Shown) -> str:
    """The trial's value in the cell's unit, rounded where the mean's CI puts the last digit once there is one
    (4 significant digits before), but to two significant digits at least: under a mean of "1000 [0, 5000] ms"
    a trial of 0.3 s printed "0 ms"."""
    if ev["value"] is None:
        return "?"
    hw, mean = ev.get("ci_half_width"), ev.get("mean")
    if hw is None or mean is None or not math.isfinite(hw) or not hw > 0:
        return format_value(ev["value"], None, ev["unit"], scale=shown.scale)
    divisor, unit = scale_unit(shown.scale if shown.scale is not None else max(abs(mean), hw), ev["unit"])
    text = estimate_text(ev["value"] / divisor, hw / divisor)
    return f"{text}%" if unit == "%" else text + (f" {unit}" if unit else "")


class TerminalProgress(RunnerProgress):
    def __init__(self) -> None:
        self.bar: Progress | None = None
        self.task: Any = None
        self.cells = 0
        self.policy: RunPolicy | None = None
        self.done = 0
        self.every_s = PLAIN_EVERY_S
        self._last_line = -math.inf
        self._held: dict[str, tuple[int, dict[str, Any], Shown]] = {}  # cell → its last trial held back
        self._ranges: dict[str, tuple[float, float, float]] = {}  # cell → (first value, smallest, largest)
        self._said: set[str] = set()  # the cells whose failed trial's last output lines the log has shown

    def started(self, run_id: str, cells: int, policy: RunPolicy, done: int = 0) -> None:
        self.cells, self.policy, self.done = cells, policy, done  # a resumed run counts on from its trials
        console.note(
            f"run {run_id}: {cells} cell(s), {policy.min_trials}–{policy.max_trials} trials each, "
            f"target CI ±{policy.target_ci_pct:g}% at {policy.confidence:g}%"
        )
        if console.interactive:
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console.err,  # the same console as notes and warnings, so they print above the bar
                transient=True,
            )
            self.bar.start()
            total = max(cells * (policy.min_trials + policy.warmup), done + 1)
            self.task = self.bar.add_task("starting", total=total, completed=done)

    def workload(self, name: str, phase: str) -> None:
        self._show_held()
        if phase == "setup":
            console.note(f"workload {name}: setting up")

    def trial(self, ev: dict[str, Any]) -> None:
        self.done += 1
        shown = self._shown(ev)
        if self.bar is None:
            at = time.monotonic()
            if ev["status"] == "ok" and at - self._last_line < self.every_s:
                self._held[ev["cell"]] = (self.done, ev, shown)  # formatted only if shown (`_show_held`)
                return
            self._held.pop(ev["cell"], None)
            self._show_held()
            self._last_line = at
            console.line(f"[{self.done:4d}] {_message(ev, shown)}")
            self._say_output(ev)
            return
        self.bar.update(
            self.task,
            completed=self.done,
            total=max(self.bar.tasks[0].total or 0, self.done + 1),
            description=escape(_message(ev, shown)),
        )

    def _shown(self, ev: dict[str, Any]) -> Shown:
        """The cell's unit (its first value's) and the range of its values so far."""
        value = ev.get("value") if ev["status"] == "ok" and not ev.get("profiled") else None
        if value is not None and math.isfinite(value):
            first, low, high = self._ranges.get(ev["cell"], (value, value, value))
            self._ranges[ev["cell"]] = (first, min(low, value), max(high, value))
        if ev["cell"] not in self._ranges:
            return Shown()
        first, low, high = self._ranges[ev["cell"]]
        return Shown(abs(first) or None, *bounds(ev.get("unit", ""), low, high))

    def _say_output(self, ev: dict[str, Any]) -> None:
        """A failed trial's last output lines, under its line, once per cell: "exit status 127" three times said
        nothing of the `lz4: not found` above it."""
        lines = ev.get("last_lines") or ()
        if ev["status"] != "ok" and lines and ev["cell"] not in self._said:
            self._said.add(ev["cell"])
            for line in lines:
                console.line(f"         | {line}", indent="           ")

    def _show_held(self) -> None:
        """The lines held back (PLAIN_EVERY_S), the last of each cell, in the order their trials ran."""
        for done, ev, shown in sorted(self._held.values(), key=lambda held: held[0]):
            console.line(f"[{done:4d}] {_message(ev, shown)}")
        self._held.clear()

    def cell_stopped(self, key: str, status: str, reason: str) -> None:
        line = f"{key}: {'abandoned — ' if status == 'abandoned' else 'stopped — '}{reason}"
        if self.bar is not None:
            self.bar.console.print(escape(line))
        else:
            self._show_held()
            console.note(line)

    def note(self, message: str) -> None:
        self._show_held()
        console.note(message)

    def finished(self) -> None:
        self._show_held()
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _message(ev: dict[str, Any], shown: Shown = Shown()) -> str:
    """A trial's progress line (after its [number])."""
    tag = "warm-up" if ev["warmup"] else f"trial {ev['n']}/{ev['max_trials']}"
    if ev["status"] != "ok":
        tag = f"failure {ev['failures']}/{ev['max_failures']}" + (" (warm-up)" if ev["warmup"] else "")
    if ev.get("profiled"):  # with a profiler attached: kept apart, its failures counted nowhere
        tag = "profiled trial (not counted)"
    if ev["status"] == "ok":
        est = "" if ev.get("profiled") else _estimate(ev, shown)
        msg = f"{ev['cell']}  {tag}  {_value(ev, shown)}" + (f"  (mean {est}, n={ev['n']})" if est else "")
    else:
        msg = f"{ev['cell']}  {tag}  {ev['status'].upper()}: {ev['error']}"
    return msg
