"""Issue 34, round two: the digits of a change and its interval, rounded once; screens that read
wrong on a busy machine. Each test failed on the code before its fix."""

from __future__ import annotations

import math
import random

import pytest

from fairmark.stats.digits import last_digit_exponent
from fairmark.verdict.compare import EXACT_PCT, change_text, percent_texts


@pytest.mark.parametrize(
    ("ratio", "low", "high", "texts"),
    [
        # the near bound needed four decimals to show its sign; the estimate and the other bound took them too
        (0.9880, 0.9764, 0.99996, ("-1.2%", "-2.4%", "-0.0040%")),  # was "-1.200% (-2.360% to -0.0040%)"
        (0.988, 0.9764, 0.9997, ("-1.2%", "-2.4%", "-0.030%")),  # was "-1.20% (-2.36% to -0.030%)"
        # a bound that rounds up into the next decade keeps two digits ("0.010", not "0.0100")
        (0.997, 0.993, 1.0001, ("-0.30%", "-0.70%", "+0.010%")),  # was "+0.0100%"
        (0.003, 0.001, 0.02, ("-99.7%", "-99.9%", "-98.0%")),  # was "-99.90%": 0.0999… left, one digit: 0.1
        (1.0512, 1.03, 1.07, ("+5.1%", "+3.0%", "+7.0%")),  # already right: unchanged
    ],
)
def test_item1_each_text_is_rounded_once(
    ratio: float, low: float, high: float, texts: tuple[str, str, str]
) -> None:
    assert percent_texts(ratio, low, high, True) == texts
    assert percent_texts(ratio, low, high, False) == texts  # significance changes no digit


@pytest.mark.parametrize(
    ("ratio", "low", "high", "estimate"),
    [
        (0.003, 0.0001, 5.0, "-99.7%"),  # was "-100%": two digits of the change, none of what is left
        (0.0004, 0.0001, 5.0, "-99.96%"),  # was "-100%"
        (1.0003, 0.5, 2.0, "+0.030%"),  # a small change under a wide interval: never "0%"
        (0.9997, 0.5, 2.0, "-0.030%"),
    ],
)
def test_item2_an_estimate_never_rounds_onto_minus_100_or_0(
    ratio: float, low: float, high: float, estimate: str
) -> None:
    texts = percent_texts(ratio, low, high, False)
    assert texts is not None and texts[0] == estimate


def _exponent(text: str) -> int:
    """Power of ten of the last digit of a printed number ('-0.030%' → -3, '+30000%' → 0)."""
    digits = text.rstrip("%").lstrip("+-")
    return -len(digits.split(".")[1]) if "." in digits else 0


def test_one_rounding_rule_on_random_intervals() -> None:
    """Every text is its value rounded once, at the interval's last digit or two significant digits of its own
    (one of what is left above -100%), whichever is finer: never 0, never across 0, never onto -100%."""
    rng = random.Random(34)
    for _ in range(4000):
        centre = math.exp(rng.uniform(-9, 6))
        spread = math.exp(rng.uniform(-10, 4))
        low, high = centre * math.exp(-spread * rng.random()), centre * math.exp(spread * rng.random())
        texts = percent_texts(centre, low, high, rng.random() < 0.5)
        assert texts is not None
        pct = [100 * (v - 1) for v in (centre, low, high)]
        hw = (pct[2] - pct[1]) / 2
        shown = last_digit_exponent(hw)
        for value, text in zip(pct, texts, strict=True):
            printed = float(text.rstrip("%"))
            if abs(value) < EXACT_PCT or shown is None:
                continue
            assert printed != 0 and math.copysign(1, printed) == math.copysign(1, value), (value, texts)
            assert printed != -100 or value <= -100, (value, texts)
            own = math.floor(math.log10(abs(value))) - 1  # two significant digits (before rounding)
            if -100 < value < 0:
                own = min(own, math.floor(math.log10(100 + value)))  # one of what is left
            finest = min(shown, own)
            assert abs(printed - value) <= 0.5 * 10.0**finest * (1 + 1e-9), (value, hw, texts)  # one rounding
            if (
                "." in text
            ):  # no more digits than the finer rule asks (one fewer where it rounded up a decade)
                assert finest <= _exponent(text) <= finest + 1, (value, hw, texts)


# ---- item 3: the screens of a busy machine, read afresh ------------------------------------------------------


def test_one_detectable_change_has_one_text_on_every_screen() -> None:
    """The verdict line said "-50% or +80%", the busy headline "+79% to +84%" and `calibrate` "-46% or +84%" of
    one run's detectable changes: two significant digits everywhere now, and the headline spans falls as rises."""
    from types import SimpleNamespace

    from fairmark.report.busy import _cost
    from fairmark.verdict.compare import detectable_text

    assert (
        detectable_text(84.0, True) == "-46% or +84%"
    )  # was "-50% or +80%" (one digit where its lead was ≥ 355)
    assert detectable_text(11.11, True) == "-10% or +11%"  # 9.999…: "10", not "10.0"
    cells = [SimpleNamespace(group=g, primary_metric="m") for g in ("a", "b")]
    verdicts = [
        SimpleNamespace(group=g, metric="m", comparison=SimpleNamespace(mde_percent=mde, scale="log"))
        for g, mde in (("a", 79.0), ("b", 84.0))
    ]
    cost = _cost(SimpleNamespace(cells=cells, verdicts=verdicts))  # type: ignore[arg-type]
    assert "changes of -44% to -46% or +79% to +84%" in cost, cost  # was "-44% or +79% to +84%"
    huge = [SimpleNamespace(group="a", metric="m", comparison=SimpleNamespace(mde_percent=1e6, scale="log"))]
    cost = _cost(SimpleNamespace(cells=cells, verdicts=[*verdicts, *huge]))  # type: ignore[arg-type]
    assert "-44% or +79% up to more than ×1000" in cost, cost


def test_a_share_near_all_adds_up_with_the_rest() -> None:
    from fairmark.report.attribution import describe

    text = describe("alloc", 99.4, 0.6, None, "rusage")
    assert "99.4% user time" in text and "about 0.6% of it" in text, text  # was "99% user time … 0.6%"
    assert "99.9% user time" in describe("alloc", 99.9, 0.1, None, "rusage")
    assert "96% user time" in describe("alloc", 96.2, 3.8, None, "rusage")


def test_a_profiled_workload_share_is_never_zero_when_it_ran() -> None:
    from fairmark.report.profiles import cpu_line

    view = {"scope": "process tree (cgroup)", "workload_share": 17 / 4687}
    line = cpu_line({**view, "workload_samples": 17, "busy_samples": 4687})
    assert "they were 0.36% of the samples" in line, line  # was "0%"


def test_means_differ_by_a_signed_difference_with_the_verdicts_digits() -> None:
    from fairmark.report.views import difference_text
    from fairmark.verdict.compare import compare

    a = [0.30, 0.34, 0.29, 0.45, 0.38, 0.33, 0.41, 0.36]
    b = [1.9, 2.1, 1.8, 2.3, 2.0, 1.95, 2.2, 2.05]
    c = compare(a, b, unit="s")
    assert difference_text(c, "s") == "+1.68 s", c.interval  # was "1.680 s": no sign, four digits
    assert difference_text(compare(b, a, unit="s"), "s").startswith("-1.6")
    same = compare([1.333] * 6, [1.333] * 6, unit="x")
    assert difference_text(same, "x") == ""  # was "change no interval (no spread); means differ by 0 x"


def test_a_difference_and_a_mean_near_zero_keep_two_digits() -> None:
    from fairmark.verdict.compare import compare

    c = compare([-1, 1, -2, 2, 0.5, -0.4], [30, -20, 50, 10, 40, -30], unit="ms")
    assert "the baseline's mean, 0.017 ms," in c.sentence, c.sentence  # was "0 ms"
    assert "observed +13 ms ± 34 ms" in c.sentence, c.sentence


def test_history_cuts_a_times_interval_at_zero(capsys: pytest.CaptureFixture[str]) -> None:
    from fairmark.cli.history import _table

    point = {"run_id": "4454780e" * 4, "started_at": "2026-11-29T12:17:00", "tags": {}}
    s = {
        "cell": "alloc/nodebug",
        "metric": "wall_s",
        "unit": "s",
        "host": "vm",
        "better": "lower",
        "change_points": [],
        "too_short": "",
        "undetectable": None,
        "points": [
            {**point, "n": 5, "mean": 0.39, "ci_half_width": 0.07},
            {**point, "n": 5, "mean": 0.9, "ci_half_width": 1.2},
        ],
    }
    _table("alloc", s, 0.01)
    out = capsys.readouterr().out
    assert "900 [0, 2100]" in out and "± 1200" not in out, out  # a time is never below 0
    assert "390 ± 70" in out, out


def test_calibrate_says_one_trial_count_once_and_a_constant_metric_as_such() -> None:
    from fairmark.cli.calibrate import _line
    from fairmark.stats.calibration import summarize

    comp = {"significant": False, "mde_percent": 27.0, "scale": "log", "n_baseline": 5, "n_other": 5}
    row = {"group": "zstd", "metric": "compress_mb_s", "data": summarize([comp] * 3, confidence=95)}
    assert "at 5 trials per side" in _line(row), _line(row)  # was "5–5"
    const = {"significant": False, "mde_percent": None, "constant": True, "n_baseline": 5, "n_other": 5}
    row = {"group": "zstd", "metric": "ratio", "data": summarize([const] * 3, confidence=95)}
    assert _line(row) == "zstd ratio: the same value in every trial (nothing to calibrate)"  # was "0 of 3 …"


def test_spreads_round_up_a_decade_to_two_digits() -> None:
    from fairmark.stats.digits import format_cv, format_spread

    assert format_spread(9.99, "%") == "10%" and format_spread(0.0999, "ms") == "100 µs"
    assert format_cv(0.0999) == "10%" and format_cv(0.0994) == "9.9%"


def test_report_text_says_the_busy_machine_once_before_the_verdicts() -> None:
    """`show` said "busy machine: … Cost: …" once before the tables; `report --text` said nothing of it and kept
    "CPU saturated" under every cell."""
    import datetime
    from types import SimpleNamespace

    from fairmark.report.attribution import UseFlag
    from fairmark.report.sections import header
    from fairmark.report.writer import Writer

    run = SimpleNamespace(
        id="r1", title="t", status="done", hostname="vm", started_at=datetime.datetime(2026, 11, 29)
    )
    run.options = {}
    report = SimpleNamespace(
        run=run,
        confidence=95.0,
        baseline="a",
        risk_note=None,
        rerun_note=None,
        profiled_note=None,
        rss_note=None,
        findings=[{"finding_id": "load", "evidence": "load average 9.6 on 2 CPUs"}],
        cells=[],
        verdicts=[],
        groups=dict,
    )
    flag = UseFlag("cpu_saturation", "CPU saturated: run queue averaged 10.9")
    ctx = SimpleNamespace(attributions={"w/a": SimpleNamespace(flags=(flag,))})
    w = Writer(markdown=False)
    header._text(w, report, ctx)  # type: ignore[arg-type]
    text = "\n".join(w.lines)
    assert "busy machine: load average 9.6 on 2 CPUs" in text, text


def test_a_trials_progress_value_is_never_rounded_to_zero() -> None:
    """Under a mean of "1000 [0, 5000] ms" (a quick run at load 16) a trial of 0.3 s printed "0 ms"."""
    from fairmark.cli._progress import Shown, _message

    ev = {
        "cell": "alloc/nodebug",
        "warmup": False,
        "n": 3,
        "max_trials": 5,
        "status": "ok",
        "value": 0.3,
        "unit": "s",
        "mean": 1.0,
        "ci_half_width": 2.4,
    }
    line = _message(ev, Shown(0.65, 0.0, None))
    assert "trial 3/5  300 ms  (mean 1000 [0, 3400] ms, n=3)" in line, line  # was "0 ms"


def test_run_json_stderr_headline_points_to_no_verdicts_below() -> None:
    """`run --json` says the headline on stderr, where no verdict follows it: they are in the JSON document."""
    from types import SimpleNamespace

    from fairmark.report.busy import busy_headline

    cells = [SimpleNamespace(group="a", primary_metric="m")]
    verdicts = [
        SimpleNamespace(group="a", metric="m", comparison=SimpleNamespace(mde_percent=20.0, scale="log"))
    ]
    run = SimpleNamespace(
        findings=[{"finding_id": "load", "evidence": "load 9"}], cells=cells, verdicts=verdicts
    )
    assert "the verdicts below detect only" in (busy_headline(run, {}) or "")  # type: ignore[arg-type]
    line = busy_headline(run, {}, tables=False)  # type: ignore[arg-type]
    assert line is not None and "this run's verdicts detect only changes of -17% or +20%" in line, line


def test_history_of_too_few_runs_for_any_split_says_so() -> None:
    """ "5 runs are too few … (the smallest p-value 5 runs can reach is 1; …)": no split of 5 runs is tested."""
    from fairmark.report.history import HistoryOptions, too_short

    opts = HistoryOptions("alloc", alpha=0.01)
    five = too_short(5, opts)
    assert five is not None and "a split needs 3 runs on each side" in five and "is 1;" not in five, five
    eight = too_short(8, opts)
    assert eight is not None and "the smallest p-value 8 runs can reach is 0.029" in eight, eight


def test_checks_table_rounds_its_change_as_the_sentence_below_it() -> None:
    """`check`'s table said "0% [-30%, +50%]" above its sentence's "-33% to +50%" for a change of -0.023%."""
    from fairmark.report.check_output import change_text

    assert change_text(-0.023, 0.67, 1.5) == "-0.023% [-33%, +50%]"
    assert change_text(-84.0, 0.006, 4.3) == "-84% [-99.4%, +330%]"  # never "-100%"
    assert change_text(6.0, 0.95, 1.17) == "+6.0% [-5.0%, +17%]"


def test_the_aa_warning_never_prints_exponent_notation() -> None:
    """An A/A twin on a loaded machine shows ±280%: the warning read "(+1.5e+02%) is within the ±2.8e+02%"."""
    from types import SimpleNamespace

    from fairmark.verdict.compare import _calibration_warning

    test = SimpleNamespace(ratio=2.5, significant=True)
    (line,) = _calibration_warning(test, 280.0)  # type: ignore[arg-type]
    assert line.startswith("the change (+150%) is within the ±280% an A/A run"), line


def test_a_change_without_an_interval_is_never_in_exponent_notation() -> None:
    from types import SimpleNamespace

    from fairmark.verdict.levels import _within_text

    c = SimpleNamespace(
        ratio=13.345,
        ratio_ci_low=float("nan"),
        ratio_ci_high=float("nan"),
        change_percent=1234.5,
        design="Welch",
        confidence=95.0,
        constant=False,
    )
    text = _within_text(c)  # type: ignore[arg-type]
    # no bounded interval: two significant digits (tests/test_screens_round2.py), never "+1.2e+03%"
    assert "e+" not in text and text == "+1200% (no interval)", text
    # a side whose every trial measured 0 (user_s of a quick plan's nodebug cell): no ratio, and no crash —
    # compare-runs --all-metrics stopped with "could not convert string to float: 'n/a'"
    for pct in (math.inf, math.nan):
        c.change_percent, c.ratio = pct, pct
        assert _within_text(c) == "no percentage (a mean of 0)"  # type: ignore[arg-type]
    assert change_text(math.nan, None) == change_text(math.inf, 2.0) == "n/a"


def test_fleet_hosts_intervals_keep_the_verdicts_digits(capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from fairmark.report.fleet import render

    host = SimpleNamespace(host="slow", ratio=0.0012, ratio_lo=0.0005, ratio_hi=0.003, odd=True, n=5, q=0.001)
    cell = SimpleNamespace(key="w/a", metric="wall_s", hosts=[host])
    view = SimpleNamespace(
        fleet="lab", runs={"slow": 1}, cells=[cell], odd=["slow"], differences={"slow": []}
    )
    render(view)  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert "slow         -99.88% (-99.95% to -99.70%)" in out, out  # was "-99.9% (-100.0% to -99.7%)"


# ---- round three (hscr3) -------------------------------------------------------------------------------------


def test_compare_runs_levels_line_gives_each_runs_own_trial_count() -> None:
    """Two runs of 15 and 5 trials printed "(1 vs 1 runs, 20 trials, 10 per run": the mean as if every run's."""
    from fairmark.report.boots import levels_lines
    from fairmark.verdict.levels import compare_levels

    rng = random.Random(3)
    a = [1.0 + 0.01 * rng.random() for _ in range(15)]
    b = [1.1 + 0.01 * rng.random() for _ in range(5)]
    c = compare_levels(a, ["r1"] * 15, b, ["r2"] * 5, level="run")
    text = " ".join(levels_lines(c, "s"))
    assert "(1 vs 1 runs, 15 and 5 trials;" in text and "per run" not in text, text
    units = ["b0"] * 8 + ["b1"] * 8
    c = compare_levels([*a, 1.0], units[:16], b * 6, [f"c{i // 5}" for i in range(30)], level="boot")
    text = " ".join(levels_lines(c, "s"))
    assert "(2 vs 6 boots, 46 trials: 8 and 5 per boot;" in text, text
    odd = [f"c{0 if i < 3 else 1 + (i - 3) // 5}" for i in range(28)]
    text = " ".join(levels_lines(compare_levels([*a, 1.0], units[:16], (b * 6)[:28], odd, level="boot"), "s"))
    assert "(2 vs 6 boots, 44 trials: 8 and 3–5 per boot;" in text, text
    even = compare_levels(a[:10], ["r1"] * 5 + ["r2"] * 5, b * 2, ["r3"] * 5 + ["r4"] * 5, level="run")
    assert "(2 vs 2 runs, 20 trials, 5 per run;" in " ".join(levels_lines(even, "s"))


def _compare_lines(capsys: pytest.CaptureFixture[str], *files: str) -> list[str]:
    from pathlib import Path

    from fairmark.cli.main import main

    here = Path(__file__).parent / "fixtures" / "othertools"
    assert main(["compare", *(str(here / f) for f in files)]) == 0
    return [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]


def test_compare_geomean_and_medians_at_their_intervals_digits(capsys: pytest.CaptureFixture[str]) -> None:
    """The geomean row printed its change with `+.2f` ("+120.30%" of rows at ±30% to ±760 000%) and every
    median with four significant digits ("7738 ± 68%"): each now at the digits its interval allows."""
    lines = _compare_lines(capsys, "go/old.txt", "go/new.txt")
    assert "Encode/format=json-2 8000 ± 68% 10000 ± 78% ~ +3.7% (-74% to +310%)" in " ".join(lines)
    assert "geomean 29000 30000 +1.6%" in lines, lines  # was "29070 33410 +1.63%"
    assert "Encode/format=gob-2 0.59 ± 39% 0.56 ± 16% ~ +0.20% (-25% to +34%)" in " ".join(
        lines
    )  # was "0.555"
    assert "geomean 2.2 2.0 -1.7%" in lines, lines  # was "2.218 1.994 -1.71%"
    lines = _compare_lines(capsys, "gbench/gb_a.json", "gbench/gb_b.json")
    assert "geomean 8059 8538 +120%" in lines, lines  # was "+120.30%" (no median interval at n=5: 4 digits)
    lines = _compare_lines(capsys, "benchstat/crc-old.txt", "benchstat/crc-new.txt")
    assert "44.4 ± 2.0% 44.4 ± 1.5% ~ -0.47%" in " ".join(lines), lines  # was "44.4 ± 2%": two digits


def test_an_equivalence_interval_rounds_both_bounds_at_its_digits() -> None:
    """The decision stop's equivalence interval printed each bound with one decimal: "+0.06% to +0.09%" read
    "+0.1% to +0.1%", and a wide one kept a digit its width does not support ("-12.3% to +15.7%")."""
    from types import SimpleNamespace

    from fairmark.verdict.compare import outcome

    design = SimpleNamespace(equivalence_pct=2.0, alpha=0.05)
    look = SimpleNamespace(decision="equivalent", n=12, eq_low=0.0006, eq_high=0.0009)
    text = outcome(look, log=False, design=design)  # type: ignore[arg-type]
    assert "sequential 90% interval +0.060% to +0.090%)" in text, text
    look = SimpleNamespace(decision="equivalent", n=12, eq_low=math.log(1 - 0.1234), eq_high=math.log(1.1567))
    text = outcome(look, log=True, design=design)  # type: ignore[arg-type]
    assert "interval -12% to +16%)" in text, text


def _monitor_trial(user: float, ctxt: float) -> dict[str, object]:
    return {
        "ncpu": 2,
        "totals": {
            "wall_s": 1.0,
            "cpu_pct": {"user": user, "system": 2.0, "idle": 98.0 - user},
            "counters": {"ctxt": ctxt},
        },
        "rates_per_s": {"ctxt": [ctxt]},
        "gauges": {"runq": [1.0, 1.5]},
    }


def test_the_monitor_digest_keeps_the_digits_its_trials_support() -> None:
    """`report --text`'s "monitor (…, means)" printed four significant digits whatever the trials' spread
    ("CPU user 47.83%" of trials from 30% to 66%), and the HTML report three of the same mean ("47.8"): both now
    print the mean at the digits of its trials' 95% interval."""
    from fairmark.report.sections.groups import monitor_rows as monitor_summary

    rows = {
        r["name"]: r
        for r in monitor_summary([_monitor_trial(u, c) for u, c in ((30.1, 1234), (65.55, 5678))])
    }
    # hand check: user 47.825, half-width t(1, 97.5%) 12.706 × sd 25.07 / √2 = 225: its last digit the tens
    assert rows["CPU user"]["mean_text"] == "50", rows["CPU user"]
    assert rows["context switches"]["mean_text"] == "3000", rows["context switches"]  # was "3456"
    assert rows["CPU system"]["mean_text"] == "2", rows["CPU system"]  # every trial 2%: no spread, no digit
    close = [_monitor_trial(u, 1000 + u) for u in (47.80, 47.84, 47.82, 47.83)]
    # 47.8225 ± 3.182 × 0.0171 / 2 = 0.027: its last digit the thousandths
    assert {r["name"]: r for r in monitor_summary(close)}["CPU user"]["mean_text"] == "47.822"
    one = {r["name"]: r for r in monitor_summary([_monitor_trial(47.8321, 1234)])}
    assert one["CPU user"]["mean_text"] == "47.83"  # one trial: no interval, four significant digits


def test_the_monitor_digest_says_a_rates_unit() -> None:
    """ "context switches 2600" in `report --text`: a rate per second without its unit (the HTML has it)."""
    from fairmark.report.sections.groups import monitor_digest

    text = monitor_digest([_monitor_trial(u, c) for u, c in ((47.7, 2600), (47.9, 2640), (47.8, 2620))])
    assert "context switches 2620/s" in text and "CPU user 47.80%" in text, text  # ± 0.25


def test_a_units_mean_has_the_digits_of_its_own_interval() -> None:
    """compare-runs' table said "28600 ± 500" of a run and its levels line "28580" of the same mean (every mean at
    half the pooled sd); a log sd of 1.3 printed "1.3e+02%"."""
    from fairmark.report.boots import levels_lines
    from fairmark.stats.describe import mean_ci
    from fairmark.stats.digits import format_pair
    from fairmark.verdict.levels import compare_levels

    a = [28400.0, 28520.0, 28300.0, 28610.0, 28450.0, 28420.0]
    b = [28100.0, 29300.0, 28000.0, 29100.0, 28700.0, 28300.0]
    c = compare_levels(a, ["r1"] * 6, b, ["r2"] * 6, level="run")
    text = " ".join(levels_lines(c, "transactions/s"))
    mine = [format_pair(*mean_ci(v)[::2])[0] for v in (a, b)]  # each run's "mean ± CI" digits
    assert f"run means — A: {mine[0]} transactions/s; B: {mine[1]} transactions/s" in text, text
    assert mine == ["28450", "28600"], mine
    wild = compare_levels([1.0, 9.0, 0.2], ["r1"] * 3, [2.0, 0.1, 8.0], ["r2"] * 3, level="run")
    text = " ".join(levels_lines(wild, "s"))
    assert "e+" not in text and "within-run sd 1" in text, text


def test_compare_tables_take_one_prefix_named_in_their_title(capsys: pytest.CaptureFixture[str]) -> None:
    """pyperf's timings printed "0.00013 ± 27%" under "s (lower is better)", Google Benchmark's bytes/s
    "42590000000": each table now takes the prefix its medians call for and names it in its title."""
    lines = _compare_lines(capsys, "pyperf/pyperf_a.json", "pyperf/pyperf_b.json")
    assert "µs (lower is better)" in lines and "timeit 130 ± 27% 91 ± 20%" in " ".join(lines), lines
    lines = _compare_lines(capsys, "gbench/gb_a.json", "gbench/gb_b.json")
    assert "G bytes/s (higher is better)" in lines and "BM_StringCopy/4096 42.59 41.94" in " ".join(lines)


def test_checks_sentence_says_why_its_table_says_no_change_proven() -> None:
    """`check`'s table said "crypto/malloc-debug -2.0% [-3.8%, -0.20%] no change proven" and its sentence below
    "3a0571d4 is lower (worse) than baseline": significant alone, not after the false discovery rate control.
    The sentence now says so first (it ended with it, after eight lines of detail)."""
    from types import SimpleNamespace

    from fairmark.report.check import UNCHANGED, _case

    c = SimpleNamespace(sentence="B is lower (worse) than A: -2.0%", significant=True, change="worse")
    c.unit, c.better, c.ratio_ci_low, c.ratio_ci_high = "B/s", "higher", 0.962, 0.998
    case = _case("crypto", "crypto/b", "bytes_s", SimpleNamespace(comparison=c, fdr_significant=False), 3.0)  # type: ignore[arg-type]
    assert case.status == UNCHANGED
    assert case.sentence.startswith(
        "no change proven after false-discovery-rate control across the check; alone: B is lower (worse)"
    ), case.sentence
    proven = _case("crypto", "crypto/b", "bytes_s", SimpleNamespace(comparison=c, fdr_significant=True), 3.0)  # type: ignore[arg-type]
    assert "false-discovery" not in proven.sentence
