"""The system monitor as a trial hook: one background thread (one per run) samples the system at a fixed rate,
and each trial claims the samples of its clock window (issue 34 item 15).

Two ways a trial gets its series, by how long its cell's trials last:

- A trial of a cell whose last trial lasted `EXACT_MIN_S` or more (and every cell's first): a snapshot at its
  start (before the process exists) and at its end, with the sampler's samples between them as the rows: its
  series is its own, edge to edge. Two snapshots (~0.3 ms of CPU) are under 1% of such a trial.
- A shorter trial takes no snapshot: its window is claimed from the sampler's intervals. The part of an interval
  [a, b] that the cell's trials covered, c seconds of it, gets the fraction c / (b − a) of the interval's counter
  and CPU-tick deltas: the interval's CPU shares and rates, over the wall time the trials lasted. Its trials'
  claims in each closed interval go as one series (a row an interval) with a later trial of the cell; what is
  still open when the run ends, with the cell's last measured trial (`end_of_run`). Such a series says
  `claimed_trials` and `sampler_period_s`: its shares are those of the periods around the trials — its
  neighbours' (another cell's trials, fairmark's own bookkeeping) share them — which is all a /proc/stat split
  of a trial of a few milliseconds can say anyway: it counts CPU time in 10 ms ticks. The two snapshots cost
  more than the whole of a trial of `true` (bench/monitor_overhead.py).

Warm-up trials claim nothing (no report reads their series).
"""

from __future__ import annotations

import bisect
import platform
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

from fairmark.errors import UsageError
from fairmark.run.hooks import Artifact, HookContext, TrialHook
from fairmark.run.monitors.base import Snapshot, build_series

# A trial this long or longer takes its own start and end snapshots (its cell's next trial does): 0.3 ms of CPU
# is 0.6% of it; shorter ones claim the sampler's intervals.
EXACT_MIN_S = 0.05
Window = tuple[float, float]  # a trial's clock window (monotonic seconds)


class Reader(Protocol):
    def snapshot(self) -> Snapshot: ...


def reader_for(system: str | None = None) -> Reader | None:
    system = system or platform.system()
    if system == "Linux":
        from fairmark.run.monitors.linux import LinuxReader

        return LinuxReader()
    if system == "FreeBSD":
        from fairmark.run.monitors.freebsd import FreeBSDReader

        return FreeBSDReader()
    return None


def _part(a: Snapshot, b: Snapshot, share: float, prev: Snapshot, claimed_s: float) -> Snapshot:
    """The snapshot after `prev` that adds `share` of the deltas of the interval a → b, `claimed_s` later."""
    cpu = {}
    for name, states in b.cpu.items():
        was, base = a.cpu.get(name, {}), prev.cpu.get(name, {})
        cpu[name] = {k: base.get(k, 0.0) + share * max(v - was.get(k, 0.0), 0.0) for k, v in states.items()}
    counters = {
        k: prev.counters.get(k, 0.0) + share * max(v - a.counters[k], 0.0)
        for k, v in b.counters.items()
        if k in a.counters
    }
    return Snapshot(t_s=prev.t_s + claimed_s, cpu=cpu, counters=counters, gauges=b.gauges)


def claimed_snapshots(samples: Sequence[Snapshot], claims: Sequence[tuple[int, float]]) -> list[Snapshot]:
    """Cumulative snapshots of the claimed parts of intervals: `claims` are (i, seconds) — that much of the
    interval samples[i] → samples[i + 1] — in order. Their deltas are the intervals' prorated ones; their clock
    advances by the seconds claimed: each row's shares and rates are its interval's, the totals the claims'."""
    first = samples[claims[0][0]]
    zero = Snapshot(
        t_s=0.0,
        cpu={name: dict.fromkeys(states, 0.0) for name, states in first.cpu.items()},
        counters=dict.fromkeys(first.counters, 0.0),
        gauges=first.gauges,
    )
    out = [zero]
    for i, seconds in claims:
        a, b = samples[i], samples[i + 1]
        span = b.t_s - a.t_s
        out.append(_part(a, b, min(seconds / span, 1.0) if span > 0 else 0.0, out[-1], seconds))
    return out


def split_claims(
    times: Sequence[float], windows: Sequence[Window]
) -> tuple[list[tuple[int, float]], list[Window]]:
    """The windows' seconds in each closed interval times[i] → times[i + 1] (sorted by i), and what lies after the
    last sample (still open). A part before the first sample is not claimable (no sample before it) and dropped."""
    per: dict[int, float] = {}
    still: list[Window] = []
    last = times[-1] if times else float("-inf")
    for t0, t1 in windows:
        if t1 > last:
            still.append((max(t0, last), t1))
        lo, hi = max(t0, times[0]) if times else t0, min(t1, last)
        i = max(bisect.bisect_right(times, lo) - 1, 0)
        while i < len(times) - 1 and times[i] < hi:
            overlap = min(hi, times[i + 1]) - max(lo, times[i])
            if overlap > 0:
                per[i] = per.get(i, 0.0) + overlap
            i += 1
    return sorted(per.items()), still


class SystemMonitor(TrialHook):
    name = "monitor.system"

    def __init__(self, interval_s: float = 1.0, reader: Reader | None = None):
        if interval_s <= 0:
            raise UsageError(f"--monitor-interval must be more than 0 seconds, got {interval_s:g}")
        self.interval_s = interval_s
        self.os_name = platform.system().lower()
        self.reader = reader or reader_for()
        if self.reader is None:
            self.unavailable = (
                f"no system monitor for {platform.system()} (Linux /proc and FreeBSD sysctl only)"
            )
        self._wake = threading.Condition()  # guards _samples and _closed; notified only to close
        self._samples: list[Snapshot] = []  # the sampler's, oldest first, from the last before _keep_from
        self._keep_from = float("inf")  # the oldest moment a claim or the open trial still needs
        self._closed = False
        self._thread: threading.Thread | None = None
        self._open: tuple[float, Snapshot | None] | None = None  # the running trial: its start, its snapshot
        self.exact_min_s = EXACT_MIN_S  # (a bench sets 0 or inf to compare the two ways on the same trials)
        self._exact: dict[str, bool] = {}  # cell → its next trial takes its own snapshots
        self._claims: dict[str, list[Window]] = {}  # cell → its measured short trials' windows not yet given
        self.errors: list[str] = []

    def _snapshot(self) -> Snapshot:
        if self.reader is None:  # an unavailable hook is never started (run/hooks.py)
            raise RuntimeError(self.unavailable)
        return self.reader.snapshot()

    def start(self, ctx: HookContext) -> None:
        edge = self._snapshot() if self._exact.get(ctx.cell_key, True) else None
        t0 = edge.t_s if edge is not None else time.monotonic()
        self._keep_from = min(self._keep_from, t0)
        self._open = (t0, edge)
        if self._thread is None:  # one sampler for the whole run
            # its first sample is the run's first trial's start (the first trial of a cell takes its own): a
            # thread slow to start on a busy machine leaves no later window before the sampler's first sample
            with self._wake:
                self._samples.append(edge or self._snapshot())
            self._thread = threading.Thread(target=self._serve, name="fairmark-monitor", daemon=True)
            self._thread.start()

    def _serve(self) -> None:
        """Sample every interval, on the sampler's own clock (never woken by a trial: a hand-over between
        threads at each trial's start and end cost more than the trial of a short command)."""
        due = time.monotonic() + self.interval_s  # start() took the first
        while True:
            with self._wake:
                if self._closed:
                    return
                wait = due - time.monotonic()
                if wait > 0:
                    self._wake.wait(wait)
                    continue
            try:
                snap: Snapshot | None = self._snapshot()
            except Exception as exc:  # a failed sample must not kill the run; the next series reports it
                self.errors.append(f"{type(exc).__name__}: {exc}")
                snap = None
            # on the sampler's own clock, but never within half an interval of the last (one taken late on a busy
            # machine), nor a burst to catch up with those missed
            now = time.monotonic()
            late = due + self.interval_s <= now
            due = now + self.interval_s if late else max(due + self.interval_s, now + self.interval_s / 2)
            if snap is not None:
                with self._wake:
                    self._samples.append(snap)
                    self._trim()

    def _trim(self) -> None:
        """Keep the samples from the last one at or before _keep_from (the lock held)."""
        samples, keep = self._samples, self._keep_from
        drop = 0
        while drop + 1 < len(samples) and samples[drop + 1].t_s <= keep:
            drop += 1
        if drop:
            del samples[:drop]

    def stop(self, ctx: HookContext, result: Any) -> list[Artifact]:
        if self._open is None:  # start() never ran for this trial (another hook failed first): nothing to say
            return []
        (t0, edge), self._open = self._open, None
        out = []
        if edge is not None:
            end = self._snapshot()
            t1 = end.t_s
            out.append(self._artifact(self._edge_series(edge, end)))
        else:
            t1 = time.monotonic()
            if not ctx.warmup:
                self._claims.setdefault(ctx.cell_key, []).append((t0, t1))
        self._exact[ctx.cell_key] = t1 - t0 >= self.exact_min_s
        if not ctx.warmup and self._claims.get(ctx.cell_key):
            out += self._claimed(ctx.cell_key)
        self._keep_from = min((w[0] for ws in self._claims.values() for w in ws), default=float("inf"))
        return out

    def _edge_series(self, first: Snapshot, last: Snapshot) -> dict[str, Any]:
        """A trial's own series: its two snapshots, and as rows the sampler's samples between them (none within
        half an interval of either: a row of a few microseconds would make a rate of a single count huge)."""
        half = self.interval_s / 2
        with self._wake:
            inside = [s for s in self._samples if first.t_s + half < s.t_s < last.t_s - half]
        return build_series([first, *inside, last], os_name=self.os_name, interval_s=self.interval_s)

    def _claimed(self, cell: str) -> list[Artifact]:
        """The cell's claims in the intervals the sampler has closed, as one series; the rest stays."""
        with self._wake:
            samples = list(self._samples)
        windows = self._claims[cell]
        times = [s.t_s for s in samples]
        claims, self._claims[cell] = split_claims(times, windows)
        if not claims:
            return []
        series = build_series(
            claimed_snapshots(samples, claims), os_name=self.os_name, interval_s=self.interval_s
        )
        series["claimed_trials"] = sum(1 for t0, _ in windows if t0 < times[-1])
        return [self._artifact(series)]

    def _artifact(self, series: dict[str, Any]) -> Artifact:
        numbers = not self.errors  # an error's text is scrubbed like any other
        if self.errors:
            series["sample_errors"] = self.errors[:10]
            self.errors = []
        return Artifact("monitor", "system", "application/json", series, numbers_only=numbers)

    def end_of_run(self) -> list[tuple[str, Artifact]]:
        """At the end of the run: each cell's claims not given yet, closed by a last snapshot."""
        if not any(self._claims.values()) or self.reader is None:
            return []
        last = self._snapshot()
        with self._wake:
            self._samples.append(last)
        return [(cell, a) for cell in list(self._claims) for a in self._claimed(cell)]

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        close = getattr(self.reader, "close", None)
        if close is not None:  # its descriptors (LinuxReader keeps /proc files open for the run)
            close()
