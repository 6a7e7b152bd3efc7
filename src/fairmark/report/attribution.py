"""What a cell's trials spent their time on, in one sentence, and USE-style warnings.

Seed 000's lesson: a debug kernel left lzbench unchanged because lzbench never left user space. So for
every cell fairmark says where the CPU time went — from rusage (exactly the trial's process tree) and from
the monitor series (system-wide: also the server a client talks to, iowait, steal, run queue, swap) — and
how much of the time a kernel or system change could move at most.

Pure functions over plain numbers and the monitor series' JSON (see run/monitors/base.py); no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fairmark.plan.kind_names import KERNEL_PATH_KEYS, USER_SPEED_KEYS, given_keys  # no plan model
from fairmark.store.records import TrialRecord

if TYPE_CHECKING:
    from fairmark.report.data import RunArtifacts, RunReport

USER_BOUND_PCT = 95.0  # at or above: a kernel change can move at most ~5% of the time
SYSTEM_HEAVY_PCT = 50.0
# When the trial's own processes were on a CPU less than this share of the wall time and the monitor saw
# more than twice their CPU time, the work happens elsewhere (a server started by the adapter): describe the
# system-wide split instead. A busy neighbour alone must not trigger this: a user-bound zstd on a loaded host
# is still user-bound, so the trial's own CPU use decides first.
OWN_BUSY_MIN = 0.5
OTHERS_FACTOR = 2.0
IOWAIT_FLAG_PCT = 5.0
STEAL_FLAG_PCT = 2.0
PSI_MEMORY_FLAG_PCT = 5.0
# Changes on the kernel's code path (tunables, the file system, the kernel itself): a user-bound cell spends
# little time where they act, so its "no difference" says little about them. CPU count, governor, THP, ASLR and
# malloc debugging change how fast user space itself runs (a cpuset of 2 vs 1 CPUs speeds up a 99%-user
# workload 1.7x), so no upper bound from the user share holds for them and they carry no caveat.


@dataclass(frozen=True)
class UseFlag:
    key: str  # cpu_saturation, iowait, swap, steal, memory_pressure
    message: str


@dataclass(frozen=True)
class Attribution:
    workload: str
    user_pct: float
    system_pct: float
    iowait_pct: float | None  # None: not measured (no monitor, or FreeBSD)
    source: str  # "rusage" (the trial's processes) or "system-wide" (monitor)
    cpu_busy_ratio: float | None  # CPU seconds per wall second of the trial's processes
    sentence: str
    flags: tuple[UseFlag, ...] = field(default_factory=tuple)

    @property
    def user_bound(self) -> bool:
        return self.user_pct >= USER_BOUND_PCT

    @property
    def kernel_pct(self) -> float:
        return 100.0 - self.user_pct

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "user_pct": self.user_pct,
            "system_pct": self.system_pct,
            "iowait_pct": self.iowait_pct,
            "source": self.source,
            "cpu_busy_ratio": self.cpu_busy_ratio,
            "sentence": self.sentence,
            "flags": [{"key": f.key, "message": f.message} for f in self.flags],
        }


@dataclass(frozen=True)
class CpuSeconds:
    user: float = 0.0
    system: float = 0.0
    iowait: float | None = None
    steal: float | None = None
    idle: float = 0.0
    wall: float = 0.0


def monitor_cpu_seconds(series: Iterable[Mapping[str, Any]]) -> CpuSeconds | None:
    """Sum the system-wide CPU seconds per state over the trials' monitor series."""
    total: dict[str, float] = {}
    wall, seen = 0.0, False
    for s in series:
        tot = s.get("totals") or {}
        pct, w, ncpu = tot.get("cpu_pct") or {}, tot.get("wall_s") or 0.0, s.get("ncpu") or 1
        for state, value in pct.items():
            if value is not None:
                total[state] = total.get(state, 0.0) + value / 100.0 * w * ncpu
        wall += w
        seen = seen or bool(pct)
    if not seen:
        return None
    return CpuSeconds(
        user=total.get("user", 0.0),
        system=total.get("system", 0.0),
        iowait=total.get("iowait"),
        steal=total.get("steal"),
        idle=total.get("idle", 0.0),
        wall=wall,
    )


def rusage_seconds(trials: Iterable[TrialRecord]) -> CpuSeconds | None:
    """Sum user/system/wall over finished, non-warm-up trials (failed ones measured something else)."""
    user = system = wall = 0.0
    n = 0
    for t in trials:
        if not t.measured or t.user_s is None:
            continue
        user += t.user_s
        system += t.sys_s or 0.0
        wall += t.wall_s or 0.0
        n += 1
    return CpuSeconds(user=user, system=system, wall=wall) if n else None


def attribute(
    workload: str,
    trials: Sequence[TrialRecord],
    series: Sequence[Mapping[str, Any]] = (),
) -> Attribution | None:
    """The attribution of one cell; None when nothing was measured (no successful trial: the host's split during
    failed trials — "79% user, 21% system" of an all-failed run — describes whatever else ran, not the workload)."""
    if not any(t.measured for t in trials):
        return None
    own = rusage_seconds(trials)
    mon = monitor_cpu_seconds(series)
    flags = use_flags(series)
    # On a saturated CPU the trial's processes look idle because they wait for a CPU, not for a server:
    # the system-wide split would then describe the neighbours, so keep the trial's own rusage.
    saturated = any(f.key == "cpu_saturation" for f in flags)
    split, source = _choose_split(own, None if saturated and own is not None else mon)
    if split is None:
        return None
    iowait = mon.iowait if mon else None
    denom = split.user + split.system + (iowait or 0.0)
    if denom <= 0:
        return None
    user_pct = 100.0 * split.user / denom
    system_pct = 100.0 * split.system / denom
    iowait_pct = None if iowait is None else 100.0 * iowait / denom
    busy = (own.user + own.system) / own.wall if own and own.wall > 0 else None
    sentence = describe(workload, user_pct, system_pct, iowait_pct, source, busy)
    return Attribution(workload, user_pct, system_pct, iowait_pct, source, busy, sentence, flags)


def _choose_split(own: CpuSeconds | None, mon: CpuSeconds | None) -> tuple[CpuSeconds | None, str]:
    if own is None:
        return mon, "system-wide"
    own_cpu = own.user + own.system
    idle_own = own.wall > 0 and own_cpu / own.wall < OWN_BUSY_MIN
    if mon is not None and idle_own and (mon.user + mon.system) > OTHERS_FACTOR * own_cpu:
        return mon, "system-wide"
    return own, "rusage"


FRACTIONS = (
    (0.10, "a tenth"),
    (0.20, "a fifth"),
    (0.25, "a quarter"),
    (1 / 3, "a third"),
    (0.50, "half"),
    (2 / 3, "two thirds"),
    (0.75, "three quarters"),
)


def fraction_words(share: float) -> str:
    """0.21 → 'a fifth': how the seed talks about it, and honest about the precision of a CPU split."""
    if share < 0.08:
        return f"{100 * share:.0f}%"
    if share > 0.85:
        return "nearly all"
    return min(FRACTIONS, key=lambda f: abs(f[0] - share))[1]


def can_move(pct: float) -> str:
    """What a kernel change can move of a time whose kernel share is `pct`, never read as zero when it is not
    ("about 0.4% of it"; before: "about 0% of it")."""
    if pct >= 1:
        return f"can move at most about {pct:.0f}% of it"
    if pct >= 0.1:
        return f"can move at most about {pct:.1f}% of it"
    if pct > 0:
        return "can move less than 0.1% of it"
    return "can move only what rusage did not record of it (0.0% kernel time recorded)"


def _whole(pct: float) -> str:
    """A share near 100% with the decimal that keeps it from reading as all of it ("99.6%", not "100%"), and
    whenever can_move gives the rest a decimal: "99% user time … about 0.6% of it" did not add up to 100."""
    if 99.95 <= pct < 100:
        return "over 99.9%"
    return f"{pct:.1f}%" if 99 < pct < 100 else f"{pct:.0f}%"


def describe(
    workload: str,
    user_pct: float,
    system_pct: float,
    iowait_pct: float | None,
    source: str,
    busy: float | None = None,
) -> str:
    where = " (system-wide: the work runs outside the trial's processes, e.g. in a server)" * (
        source == "system-wide"
    )
    if user_pct >= USER_BOUND_PCT:
        return (
            f"{workload}: {_whole(user_pct)} user time{where} — insensitive to kernel debug options "
            f"(seed 000's lzbench case): a kernel change {can_move(100 - user_pct)}"
        )
    parts = f"{user_pct:.0f}% user, {system_pct:.0f}% system"
    if iowait_pct is not None and iowait_pct >= 0.5:
        parts += f", {iowait_pct:.0f}% iowait"
    kernel = (100.0 - user_pct) / 100.0
    if system_pct >= SYSTEM_HEAVY_PCT:
        tail = "kernel-bound: a kernel change (debug options, locking, mitigations) shows up here in full"
    else:
        tail = f"a kernel change can move at most about {fraction_words(kernel)} of this time"
    waiting = ""
    if busy is not None and busy < 0.3 and source == "rusage":
        waiting = f"; its processes were on a CPU only {100 * busy:.0f}% of the wall time (waiting)"
    return f"{workload}: {parts}{where} — {tail}{waiting}"


def use_flags(series: Sequence[Mapping[str, Any]]) -> tuple[UseFlag, ...]:
    """USE-method warnings from the monitor series: saturation, and what makes numbers meaningless."""
    if not series:
        return ()
    flags = []
    ncpu = max(s.get("ncpu") or 1 for s in series)
    runq = [x for s in series for x in (s.get("gauges") or {}).get("runq", []) if x is not None]
    if runq and sum(runq) / len(runq) > ncpu:
        flags.append(
            UseFlag(
                "cpu_saturation",
                f"CPU saturated: run queue averaged {sum(runq) / len(runq):.1f} (peak {max(runq):.0f}) "
                f"on {ncpu} CPUs — tasks waited for a CPU",
            )
        )
    mon = monitor_cpu_seconds(series)
    if mon is not None:
        flags += _share_flags(mon)
    flags += _swap_and_pressure(series)
    return tuple(flags)


def _share_flags(mon: CpuSeconds) -> list[UseFlag]:
    total = mon.user + mon.system + mon.idle + (mon.iowait or 0.0) + (mon.steal or 0.0)
    if total <= 0:
        return []
    out = []
    if mon.iowait is not None and 100 * mon.iowait / total >= IOWAIT_FLAG_PCT:
        out.append(
            UseFlag(
                "iowait", f"I/O wait {100 * mon.iowait / total:.0f}% of CPU time — the disk is in the result"
            )
        )
    if mon.steal is not None and 100 * mon.steal / total >= STEAL_FLAG_PCT:
        out.append(
            UseFlag(
                "steal",
                f"steal {100 * mon.steal / total:.1f}% — the hypervisor took CPU from this VM: noise "
                "that no variant caused",
            )
        )
    return out


def _swap_and_pressure(series: Sequence[Mapping[str, Any]]) -> list[UseFlag]:
    out = []
    pages_in = sum((s.get("totals") or {}).get("counters", {}).get("swap_in_pages", 0) for s in series)
    pages_out = sum((s.get("totals") or {}).get("counters", {}).get("swap_out_pages", 0) for s in series)
    if pages_in or pages_out:
        out.append(
            UseFlag(
                "swap",
                f"swapping: {pages_in:.0f} pages in, {pages_out:.0f} out — memory is short; "
                "the result measures the swap device",
            )
        )
    psi = [
        x
        for s in series
        for x in (s.get("rates_per_s") or {}).get("psi_memory_some_pct", [])
        if x is not None
    ]
    if psi and max(psi) >= PSI_MEMORY_FLAG_PCT:
        out.append(
            UseFlag("memory_pressure", f"memory pressure: tasks stalled on memory up to {max(psi):.0f}%")
        )
    return out


def is_kernel_path_change(
    variant: Mapping[str, Any], tuning: Mapping[str, Mapping[str, Any]] | None = None
) -> bool:
    """Does this variant change only what runs on the kernel's path (sysctls, mounts, the kernel), so that a
    user-bound cell's kernel share bounds what it can move? Any change that acts on user-space speed (CPUs,
    governor, THP, ASLR, malloc debugging) rules the bound out, also inside a [tuning.NAME] set. Which kind is
    which: the table of variant kinds (plan/kinds.py)."""
    keys = given_keys(variant, tuning)
    return bool(keys & set(KERNEL_PATH_KEYS)) and not (keys & set(USER_SPEED_KEYS))


def verdict_caveat(attribution: Attribution | None, kernel_path_change: bool) -> str | None:
    """The caveat a verdict carries when it compares a kernel-path change on a user-bound cell."""
    if attribution is None or not kernel_path_change or not attribution.user_bound:
        return None
    return (
        f"caveat: this cell spends {_whole(attribution.user_pct)} of its CPU time in user space, so a change on "
        f"the kernel's path {can_move(attribution.kernel_pct)} — "
        "'no difference' here says little about the change in general"
    )


def attribution_view(series: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a monitor series (run/monitors/base.py) that `attribute` reads: the CPU count, the CPU split
    and wall time, swapping, the run queue and memory pressure."""
    totals = series.get("totals") or {}
    counters = totals.get("counters") or {}
    return {
        "ncpu": series.get("ncpu"),
        "totals": {
            "cpu_pct": totals.get("cpu_pct"),
            "wall_s": totals.get("wall_s"),
            "counters": {k: counters[k] for k in ("swap_in_pages", "swap_out_pages") if k in counters},
        },
        "gauges": {"runq": (series.get("gauges") or {}).get("runq", [])},
        "rates_per_s": {
            "psi_memory_some_pct": (series.get("rates_per_s") or {}).get("psi_memory_some_pct", [])
        },
    }


def attribute_cells(report: RunReport, arts: RunArtifacts | MonitorSeries) -> dict[str, Attribution | None]:
    """The attribution of every cell of a run, from its trials and its monitor series."""
    return {c.key: attribute(c.workload, c.trials, arts.data(c.key, "monitor/system")) for c in report.cells}


def variant_definitions(report: RunReport) -> dict[str, dict[str, Any]]:
    """Each variant's definition as the run stored it (never parsed again from the plan text)."""
    return report.run.variant_definitions


def verdict_caveats(
    report: RunReport, attributions: Mapping[str, Attribution | None]
) -> dict[tuple[str, str, str], str]:
    """(group, variant, metric) → the caveat of a verdict that compares a kernel-path change on a user-bound
    cell."""
    defs = variant_definitions(report)
    tuning = report.run.tuning_sets
    cells = {(c.group, c.variant): c.key for c in report.cells}
    out = {}
    for v in report.verdicts:
        caveat = verdict_caveat(
            attributions.get(cells.get((v.group, v.variant), "")),
            is_kernel_path_change(defs.get(v.variant, {}), tuning),
        )
        note = (v.wrap_cost or {}).get("note")  # the variant's own wrapper, measured here
        wrap = note if isinstance(note, str) else None
        text = "\n".join(t for t in (caveat, wrap) if t)
        if text:
            out[(v.group, v.variant, v.metric)] = text
    return out


# (label, unit, where in the series, divisor) for the per-cell monitor table
SUMMARY_RATES = (
    ("context switches", "/s", "ctxt", 1.0),
    ("interrupts", "/s", "intr", 1.0),
    ("forks", "/s", "forks", 1.0),
    ("minor faults", "/s", "faults_minor", 1.0),
    ("major faults", "/s", "faults_major", 1.0),
    ("disk read", "MB/s", "disk_read_bytes", 1e6),
    ("disk write", "MB/s", "disk_write_bytes", 1e6),
    ("disk ops", "/s", "disk_ops", 1.0),
    ("net rx", "MB/s", "net_rx_bytes", 1e6),
    ("net tx", "MB/s", "net_tx_bytes", 1e6),
    ("swap in+out", "pages/s", "swap_pages", 1.0),
)


def monitor_summary(series: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per cell: whole-run mean (counter totals ÷ wall time) and the peak interval of each monitored rate."""
    if not series:
        return []
    wall = sum((s.get("totals") or {}).get("wall_s") or 0.0 for s in series)
    counters = [(s.get("totals") or {}).get("counters") or {} for s in series]
    rates = [s.get("rates_per_s") or {} for s in series]
    peaks = [(s.get("totals") or {}).get("rate_peak") or {} for s in series]
    rows = _cpu_rows(series)
    for name, unit, key, div in SUMMARY_RATES:
        parts = _COMBOS.get(key, (key,))
        if wall <= 0 or not any(parts[0] in r for r in rates):
            continue
        total = sum(c.get(p) or 0.0 for c in counters for p in parts)
        if len(parts) == 1:  # the series carries its own peak; a sum of two rates needs the columns
            peak = max(pk.get(key) or 0.0 for pk in peaks)
        else:
            peak = max(_peak(r, parts) for r in rates)
        rows.append({"name": name, "unit": unit, "mean": total / wall / div, "peak": peak / div})
    for gauge, name in (("runq", "run queue"), ("mem_free_kib", "free memory (MiB)")):
        vals = [x for s in series for x in (s.get("gauges") or {}).get(gauge, []) if x is not None]
        if vals:
            div = 1024.0 if gauge.endswith("kib") else 1.0
            rows.append(
                {"name": name, "unit": "", "mean": sum(vals) / len(vals) / div, "peak": max(vals) / div}
            )
    return rows


_COMBOS = {"disk_ops": ("disk_reads", "disk_writes"), "swap_pages": ("swap_in_pages", "swap_out_pages")}


def _peak(rates: Mapping[str, Any], parts: Sequence[str]) -> float:
    cols = [rates.get(p) or [] for p in parts]
    sums = [sum(x or 0.0 for x in vals) for vals in zip(*cols, strict=False)]
    return max(sums, default=0.0)


def _cpu_rows(series: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    mon = monitor_cpu_seconds(series)
    if mon is None:
        return []
    parts = {"user": mon.user, "system": mon.system, "iowait": mon.iowait, "steal": mon.steal}
    total = mon.user + mon.system + mon.idle + (mon.iowait or 0.0) + (mon.steal or 0.0)
    rows = []
    for state, secs in parts.items():
        if secs is None or total <= 0:
            continue
        peak = max(
            (x for s in series for x in (s.get("cpu_pct") or {}).get(state, []) if x is not None), default=0
        )
        rows.append({"name": f"CPU {state}", "unit": "%", "mean": 100 * secs / total, "peak": peak})
    return rows


class MonitorSeries:
    """The measured trials' monitor series of a run by cell, each cut to what the attribution line reads
    (`attribution_view`) as it is read: the terminal report of a 1200-trial run of `true` held every
    series whole (RunArtifacts) and peaked at 111 MB, 20 MB of it these series (bench/start_memory.py)."""

    def __init__(self, report: RunReport):
        measured = {t.id for c in report.cells for t in c.trials if not t.warmup or t.profiled}
        self.by_cell: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for a in report.source.iter_artifacts("monitor"):
            if a["name"] == "system" and a["trial_id"] in measured and isinstance(a["data"], dict):
                self.by_cell[a["cell_key"] or ""].append(attribution_view(a["data"]))

    def data(self, cell_key: str, kind_name: str) -> list[Any]:
        """As RunArtifacts.data, for "monitor/system" (the only kind it reads)."""
        assert kind_name == "monitor/system", kind_name
        return list(self.by_cell.get(cell_key, []))
