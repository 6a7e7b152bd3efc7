"""Screens that said something wrong or misleading, noticed at the last stop ("every screen right, round two"):
one test (or more) per text, each failing on the code before its fix (main at 9fe1859)."""

from __future__ import annotations

import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

OTHERTOOLS = Path(__file__).parent / "fixtures" / "othertools"


def test_format_cvs_docstring_shows_what_it_prints() -> None:
    """Its docstring promised '140%' (two significant digits) where format_cv(1.35) prints '135%'."""
    from fairmark.stats.digits import format_cv

    examples = re.findall(r"([\d.]+) → '([^']+)'", format_cv.__doc__ or "")
    assert examples, format_cv.__doc__
    for value, text in examples:
        assert format_cv(float(value)) == text, (value, text)


def _compare_text(capsys: pytest.CaptureFixture[str], *files: str) -> str:
    from fairmark.cli.main import main

    assert main(["compare", *(str(OTHERTOOLS / f) for f in files)]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_compares_legend_explains_only_the_marks_its_rows_show(capsys: pytest.CaptureFixture[str]) -> None:
    """Under hyperfine's two files (one row, proven, Welch's t) the notes explained "~" and "†" anyway."""
    text = _compare_text(capsys, "hyperfine/hf_a.json", "hyperfine/hf_b.json")
    assert "-26% (-44% to -1.6%) faster" in text, text
    assert "~" not in text and "†" not in text, text
    assert "Each change is fairmark's verdict for that benchmark (Welch's t on the logarithms), with" in text
    text = _compare_text(capsys, "pyperf/pyperf_a.json", "pyperf/pyperf_b.json")  # "~", no "†"
    assert "~: no difference proven at 95% confidence." in text and "†" not in text, text
    text = _compare_text(capsys, "benchstat/old.txt", "benchstat/new.txt")  # both
    assert "~: no difference proven" in text and "† Yuen's t on 20%-trimmed means" in text, text


def test_compares_legend_says_no_verdict_where_no_row_has_one(capsys: pytest.CaptureFixture[str]) -> None:
    """go test -count=1 against -count=6: every row "cannot be judged (n=1)", and the notes explained each
    change's verdict, its interval and q anyway, then went on "… interval. cannot be judged: …"."""
    text = _compare_text(capsys, "go/one.txt", "go/new.txt")
    assert "cannot be judged (n=1)" in text and "verdict" not in text and "q:" not in text, text
    assert text.endswith(
        "Medians ± the half-width of their 95% interval. Cannot be judged: fewer than 3 values on a side "
        "(go test -count=1?)."
    ), text


def test_a_constant_metric_is_not_called_fragile() -> None:
    """Five equal values a side were warned of as "only 5 values; fewer than 6 make a fragile verdict": with no
    spread there is nothing for a few values to misjudge. What is true is said instead: zero spread, and where
    the constants differ, whether the rank test that decides can reach α with these counts."""
    from fairmark.verdict.compare import compare

    same = compare([7.0] * 5, [7.0] * 5, name_baseline="a", name_other="b")
    assert same.sentence == "b vs a: the same value in every trial (no variation to test)", same.sentence
    assert not any("fragile" in w for w in same.warnings), same.warnings
    assert any(w.startswith("both samples have zero spread") for w in same.warnings), same.warnings
    apart = compare([7.0] * 3, [8.0] * 3, name_baseline="a", name_other="b")
    assert not any("fragile" in w for w in apart.warnings), apart.warnings
    assert (
        "a different value on each side, but Mann-Whitney U cannot reach p < 0.05 with 3 and 3 values: only "
        "more trials can prove it" in apart.warnings
    ), apart.warnings
    proven = compare([7.0] * 5, [8.0] * 5, name_baseline="a", name_other="b")  # p = 0.0079: no such warning
    assert proven.significant and not any("cannot reach" in w for w in proven.warnings), proven.warnings
    spread = compare([7.0] * 5, [7.0, 7.0, 7.0, 7.0, 8.0], name_baseline="a", name_other="b")
    assert "a has only 5 values; fewer than 6 make a fragile verdict" in spread.warnings  # a spread: kept


def _run_levels(variant: str, mean: float, seed: int) -> SimpleNamespace:
    """A compare-runs verdict of two runs a side around `mean` seconds, as verdict.levels gives it."""
    from fairmark.verdict.compare import compare
    from fairmark.verdict.levels import compare_levels

    rng = random.Random(seed)
    a, b = ([mean * (1 + 0.02 * rng.random()) for _ in range(10)] for _ in range(2))
    units = (["r1"] * 5 + ["r2"] * 5, ["r3"] * 5 + ["r4"] * 5)
    c = compare_levels(a, units[0], b, units[1], level="run", within=compare(a, b, unit="s"))
    return SimpleNamespace(group="w", workload="w", variant=variant, metric="wall_s", unit="s", comparison=c)


def test_compare_runs_says_a_value_in_its_tables_unit(capsys: pytest.CaptureFixture[str]) -> None:
    """A table in s ("fast 0.4663 ± 0.0018") was followed by "w/fast wall_s: run means — A: 467.1 ms, 466 ms":
    the same means in another unit. The run means now take their table's prefix."""
    from fairmark.report.compare_runs import show

    verdicts = [_run_levels("fast", 0.46, 5), _run_levels("slow", 1.2, 6)]
    runs = [SimpleNamespace(id=f"{i}" * 8, options={}, host_id="h", seed=1) for i in range(4)]
    env = {"unknown": [], "differences": [], "accepted": []}
    show(runs[::2], env, verdicts, None, {}, [runs[:2], runs[2:]])  # type: ignore[arg-type]
    out = " ".join(capsys.readouterr().out.split())
    assert "w — wall_s in s (lower is better)" in out, out
    fast = out.split("w/fast wall_s: run means — ")[1].split(" (2 vs 2 runs")[0]
    assert " s," in fast and "ms" not in fast, fast


def test_run_means_in_the_prefix_of_the_table_above_them() -> None:
    """`compare-runs --all-metrics`: sys_s's table in ms ("0.9 ± 2.4") and below it "run means — 900 µs;
    800 µs": the same means in two units on one screen."""
    from fairmark.report.boots import levels_lines
    from fairmark.verdict.compare import compare
    from fairmark.verdict.levels import compare_levels

    a = [0.0, 0.0, 0.0, 0.0, 0.0045]  # a process's system time in s, mostly under the clock tick
    b = [0.0, 0.0, 0.004, 0.0, 0.0]
    c = compare_levels(a, ["r1"] * 5, b, ["r2"] * 5, level="run", within=compare(a, b, unit="s"))
    alone = "; ".join(levels_lines(c, "s"))  # no table: the means' own prefix
    assert "run means — A: 900 µs; B: 800 µs;" in alone, alone
    table = "; ".join(levels_lines(c, "s", scale=0.0024))  # under a table whose largest mean is 2.4 ms
    assert "run means — A: 0.9 ms; B: 0.8 ms;" in table and "within-run sd 2.0 ms" in table, table


def test_package_data_is_read_where_the_package_is_even_a_zip(tmp_path: Path) -> None:
    """stats/levels.py and stats/power.py opened their tables by a path beside `__file__`, stats/changepoints.py
    through importlib.resources: one way now (importlib.resources), which reads them from a zipped package too."""
    import subprocess
    import sys
    import zipfile

    src = Path(__file__).parents[1] / "src"
    archive = tmp_path / "fairmark.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in sorted((src / "fairmark").rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, f.relative_to(src))
    probe = (
        f"import sys; sys.path.insert(0, {str(archive)!r})\n"
        "import fairmark.stats.changepoints as c, fairmark.stats.levels as l, fairmark.stats.power as p\n"
        f"assert l.__file__.startswith({str(archive)!r}), l.__file__\n"
        "print(len(l.small_alpha_table(95.0)), len(p._shipped()) > 0, 'n6' in c._shipped().files)\n"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[1:] == ["True", "True"] and int(res.stdout.split()[0]) > 0, res.stdout


def test_a_confidence_written_as_a_fraction_is_named_as_one(capsys: pytest.CaptureFixture[str]) -> None:
    """A plan's `confidence = 0.995` was refused as "expected one of 80, …, 99.5" (true, but not why), and
    `compare --confidence 0.95` ran at 0.95% confidence: "c3 is higher (worse): +2.707% (0.95% CI …)"."""
    from fairmark.cli.main import main
    from fairmark.errors import PlanError
    from fairmark.plan.load import parse_plan

    plan = 'title = "t"\n[run]\nconfidence = {}\n[[workload]]\nname = "w"\ncommand = ["true"]\n'
    for fraction, percent in (("0.80", "80"), ("0.98", "98"), ("0.995", "99.5")):
        with pytest.raises(PlanError) as err:
            parse_plan(plan.format(fraction), "p.toml")
        assert (
            f"p.toml:3: run.confidence: {float(fraction):g} is a fraction; the confidence is in percent: "
            in (str(err.value))
            and f"{percent} (one of 80, 90, 95, 98, 99, 99.5)" in str(err.value)
        ), err.value
    with pytest.raises(PlanError, match=r"run.confidence: expected one of 80, 90, 95, 98, 99, 99.5$"):
        parse_plan(plan.format("97"), "p.toml")
    assert parse_plan(plan.format("99.5"), "p.toml").run.confidence == 99.5
    files = [str(OTHERTOOLS / "go" / f) for f in ("old.txt", "new.txt")]
    assert main(["compare", "--confidence", "0.95", *files]) == 2
    assert "--confidence 0.95 is a fraction; the confidence is in percent: 95" in capsys.readouterr().err


def test_the_advice_says_a_standard_error_without_exponent_notation() -> None:
    """compare-runs --vs (tests/golden/compare-runs-vs.80.txt): "the next repetitions buy most as more trials
    per boot (standard error 1.1e+02% now, 70% with twice the boots, …)"."""
    import math

    import numpy as np

    from fairmark.stats.levels import Advice, levels
    from fairmark.verdict.levels import advice_sentence

    a, b = np.array([1.0, 1.1, 1.2, 1.3]), np.array([1.0, 1.2, 1.1, 1.4])
    lv = levels(a, ["a1", "a1", "a2", "a2"], b, ["b1", "b1", "b2", "b2"])
    adv = Advice("boot", math.log(2.1), math.log(1.7), math.log(1.004), scale="log")
    text = advice_sentence(lv, adv, 1.0, ("A", "B"))
    assert "(standard error 110% now, 70% with twice the boots, 0.40% with twice the trials per boot)" in text
    raw = advice_sentence(lv, Advice("boot", 1.234, 0.5, 0.004), 1.0, ("A", "B"))  # raw scale: of the mean
    assert "(standard error 120% now, 50% with twice the boots, 0.40% with twice the trials per boot)" in raw


def test_the_runs_summary_agrees_in_number(capsys: pytest.CaptureFixture[str]) -> None:
    """`show` of the quick plan ended "4 comparison(s), 1 significant at 95%; 1 survive Benjamini-Hochberg"."""
    from fairmark.report.sections.summary import SECTION

    def verdicts(proven: int) -> list[SimpleNamespace]:
        return [SimpleNamespace(significant=i < proven, fdr_significant=i < proven) for i in range(4)]

    for proven, word in ((1, "1 survives"), (2, "2 survive"), (0, "0 survive")):
        SECTION.terminal(SimpleNamespace(verdicts=verdicts(proven), confidence=95.0), None)  # type: ignore[misc,arg-type]
        out = " ".join(capsys.readouterr().out.split())
        assert f"; {word} Benjamini-Hochberg (FDR 5%) across the run" in out, out


def test_every_option_says_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    """`fairmark run --help` listed "--monitor-interval S  [default: 1.0]" and nothing else (S what?), as
    `export --help` did --format and `runs --help` --limit."""
    import click

    from fairmark.cli.main import _register, cli, main

    assert main(["run", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--monitor-interval S Seconds between two samples of the monitors during a trial." in help_text
    _register()
    bare = [
        f"{name} {opt.opts[0]}"
        for name, command in cli.commands.items()
        for opt in command.params
        if isinstance(opt, click.Option) and not opt.hidden and not opt.help
    ]
    assert not bare, bare


def test_a_change_without_a_bounded_interval_has_two_digits() -> None:
    """`compare-runs --all-metrics` of two quick runs, sys_s (mostly 0 s: the ratio's interval unbounded): "Within
    the run (a lower bound on the uncertainty, not a verdict): -8.767% (no interval)" — four digits of a change
    nothing bounds. A constant metric's exact change keeps its four."""
    from fairmark.verdict.compare import compare
    from fairmark.verdict.levels import compare_levels

    a, b = [0.0, 0.0, 0.0, 0.0, 0.0045], [0.0, 0.0, 0.004, 0.0, 0.0]  # one run a side
    c = compare_levels(a, ["r1"] * 5, b, ["r2"] * 5, level="run", within=compare(a, b, unit="s"))
    assert c.sentence.endswith("not a verdict): -11% (no interval)"), c.sentence  # was -11.11%
    exact = [7.0] * 5, [8.0] * 5
    c = compare_levels(exact[0], ["r1"] * 5, exact[1], ["r2"] * 5, level="run", within=compare(*exact))
    assert c.sentence.endswith("not a verdict): +14.29% (no interval)"), c.sentence


def test_a_difference_in_the_unit_takes_the_prefix_its_size_calls_for() -> None:
    """A verdict on the raw scale (a side with zeros: system time under the clock tick) said "+0.00047 s ± 0.0004
    s", its detectable change "±0.0006 s (the baseline's mean, 0.00027 s, …)", a constant's "+0.002 s": the
    tables and the other lines say µs and ms."""
    from fairmark.verdict.compare import compare

    z1, z2 = [0, 0.0004, 0, 0.0008, 0.0004, 0], [0.0004, 0.0008, 0.0012, 0.0008, 0.0004, 0.0008]
    c = compare(z1, z2, unit="s", name_baseline="a", name_other="b")
    assert c.sentence.startswith("b is slower than a: +470 µs ± 400 µs (95% CI)"), c.sentence
    same = compare(z1, [0, 0.0004, 0.0004, 0.0008, 0, 0], unit="s", name_baseline="a", name_other="b")
    assert (
        "observed 0 µs ± 400 µs (95% CI); this run would detect a change of ±600 µs (the baseline's mean, "
        in (same.sentence)
        and "270 µs, is too near 0 for a percentage)" in same.sentence
    ), same.sentence
    const = compare([0.0] * 3, [0.002] * 3, unit="s", name_baseline="a", name_other="b")
    assert "were each constant (b: +2 ms vs a)" in const.sentence, const.sentence
