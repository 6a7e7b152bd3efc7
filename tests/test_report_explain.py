"""The "where the difference went" section (issue 35 item 2): a stored run whose B is slower because of a planted
function, with profiled trials kept apart from the measured ones: the sentence names that function, the text
report shows it with an 80-column table, --json has every function tested; with no function to blame, it says
so and points to the syscall and lock profiles."""

from __future__ import annotations

import hashlib
import random

from fairmark.plan.metric import MetricSpec
from fairmark.report.explain import SECTION, explanations
from fairmark.report.load import load_report
from fairmark.report.section import Context
from fairmark.store.records import CellRecord, Sample, TrialRecord
from test_report_fixture import PLAN, open_store, store_now

BASE = "lz;main;compress {c}\nlz;main;read;ksys_read_[k] {r}\n"


def _stored(tmp_path, planted: bool) -> tuple[object, str]:
    store = open_store(tmp_path / "x.db")
    run_id = store.create_run(
        plan_path="plan.toml",
        plan_text=PLAN,
        plan_sha256=hashlib.sha256(PLAN.encode()).hexdigest(),
        title="explain",
        seed=1,
        host_id="h1",
        hostname="bench-host",
        status="done",
        command_line="fairmark run plan.toml --profile cpu",
        fairmark_version="0.1.0",
        accept_risk=False,
        options={"policy": {"confidence": 95.0, "baseline": "A"}},
        env_before={},
        env_after={},
        notes=[],
    )
    metrics = (MetricSpec("wall_s", "s", "lower"),)
    cells = [
        CellRecord(
            key=f"w0|{v}|()",
            workload="w0",
            variant=v,
            point=(),
            primary_metric="wall_s",
            metrics=metrics,
            status="done",
            stop_reason="max_trials",
            command=("lz",),
        )
        for v in ("A", "B")
    ]
    ids = store.ensure_cells(run_id, cells)
    rng = random.Random(3)
    for r in range(16):
        profiled = r >= 8  # the last 8 rounds: profiled trials, never in a statistic
        for cell in cells:
            slow = cell.variant == "B"
            wall = rng.gauss(1.1 if slow else 1.0, 0.01)
            trial = TrialRecord(
                run_id=run_id,
                cell_id=ids[cell.key],
                seq=2 * r + slow,
                round=r,
                warmup=profiled,
                profiled=profiled,
                status="ok",
                started_at=store_now(),
                wall_s=wall,
                # unplanted: B waits longer off-CPU, its CPU time is A's
                user_s=wall * 0.9 if planted else rng.gauss(0.9, 0.01),
                sys_s=0.1 * wall if planted else 0.1,
                argv=cell.command,
            )
            samples = [] if profiled else [Sample(trial.id, ids[cell.key], "wall_s", wall, "s", "lower")]
            arts = []
            if profiled:
                c, rd = 900 + rng.randint(-20, 20), 100 + rng.randint(-10, 10)
                extra = f"lz;main;extra_work {100 + rng.randint(-10, 10)}\n" if slow and planted else ""
                text = BASE.format(c=c, r=rd) + extra
                arts.append(
                    {
                        "cell_key": cell.key,
                        "kind": "profile.cpu",
                        "name": "folded",
                        "content_type": "text/plain",
                        "data": None,
                        "text": text,
                    }
                )
            store.add_trial(trial, samples, arts)
    return store, run_id


def test_sentence_names_the_planted_function_and_the_table_fits_80_columns(tmp_path) -> None:
    from fairmark.report.text import render_text

    store, run_id = _stored(tmp_path, planted=True)
    report = load_report(store, run_id)  # type: ignore[arg-type]
    (e,) = explanations(report)
    assert e["diff"].design == "paired"
    s = e["sentence"]
    assert s.startswith("B is +"), s
    assert "slower" in s
    first = s.split(": ", 1)[1]
    assert "ms per trial in `extra_work`" in first.split(";")[0], s
    assert "the rest within noise" in s
    text = render_text([report])
    assert "Where the difference went" in text
    table = text[text.index("function (self)") :].splitlines()[:5]
    assert "extra_work" in table[1] and table[1].startswith("*")
    assert all(len(line) <= 76 for line in table), table  # show indents it by 4
    doc = SECTION.json(report, Context(report))  # type: ignore[misc]
    (row,) = doc["explain"]
    top = row["functions"][0]
    assert (top["function"], top["mode"], top["claimed"]) == ("extra_work", "self", True)
    assert top["low_s"] > 0


def test_nothing_to_blame_says_off_cpu_and_points_to_the_other_profiles(tmp_path) -> None:
    store, run_id = _stored(tmp_path, planted=False)
    (e,) = explanations(load_report(store, run_id))  # type: ignore[arg-type]
    assert "no function's CPU time per trial differs provably" in e["sentence"]
    assert "--profile syscalls,locks" in e["sentence"]


def test_html_flame_graph_is_coloured_only_where_proven(tmp_path) -> None:
    """Issue 35 item 4: B's flame graph in the HTML report, red only on the function whose difference is proven,
    grey on every other frame (the noise of main and compress is not coloured)."""
    import base64
    import re

    from fairmark.report import plots
    from fairmark.report.explain import GREY, palette
    from fairmark.report.html import render_html

    store, run_id = _stored(tmp_path, planted=True)
    report = load_report(store, run_id)  # type: ignore[arg-type]
    (e,) = explanations(report)
    folded = plots.merge_folded([t.folded for t in e["trials_b"]])
    colours = palette(e["diff"], folded)
    assert colours["extra_work"] == "rgb(255,0,0)"  # the largest proven difference: the deepest red
    assert colours["compress"] == colours["main"] == GREY["user"]
    assert colours["ksys_read_[k]"] == GREY["kernel"]
    if plots.flame_renderer() is None:
        return
    html, _ = render_html([report])
    assert "Where the difference went" in html
    uri = re.search(r'alt="flame graph of B coloured[^"]*" src="data:image/svg\+xml;base64,([^"]+)"', html)
    assert uri is not None
    svg = base64.b64decode(uri.group(1)).decode()
    fills = dict(re.findall(r"<title>([^<(]+?) \(.*?</title><rect [^>]*fill=\"(rgb\([^\"]+\))\"", svg))
    assert fills["extra_work"] == "rgb(255,0,0)"
    assert {fills[f] for f in ("compress", "main", "lz")} == {GREY["user"]}


def test_table_fits_80_columns_even_when_two_trials_give_an_interval_seconds_wide() -> None:
    """2 profiled trials a side give t with 1 degree of freedom: an interval of ±13 s on a 0.1 s function
    (seen on a busy CI runner) must still fit show's 80 columns, and so must ±10^6 ms."""
    from fairmark.report.explain import table
    from fairmark.stats.attribution_diff import AttributionDiff, FunctionDiff

    def f(name: str, low: float, high: float) -> FunctionDiff:
        return FunctionDiff(name, "kernel", "self", 0.046, 0.1388, 0.0928, low, high, 0.4, 0.6, False)

    funcs = (
        f("md5sum", -13.5452, 13.7308),
        f("x" * 60, -1234.5, 9876.5),
        f("tiny", -0.00004, 0.00004),
    )
    d = AttributionDiff("paired", 2, 2, 0.2, 0.3, 0.05, 3, funcs)
    lines = table(d)
    assert all(len("    " + line) <= 80 for line in lines), [line for line in lines if len(line) > 76]
    assert "-13545 to +13731" in lines[1], lines[1]
    assert "-1.2e6 to +9.9e6" in lines[2], lines[2]
    assert "-0.0 to +0.0" in lines[3], lines[3]


def test_a_cpu_difference_in_one_function_with_too_few_units_is_not_called_off_cpu() -> None:
    """Run 06e9b747 of bench/explain_qemu.py, decided after 2 + 2 boots: the CPU time per trial fell by 2.06 s,
    1.99 s of it in clear_page_erms, but with two boots a side no interval excludes 0 (FDR-adjusted Welch
    intervals of about one degree of freedom). The sentence says that, and not that the time went off-CPU."""
    from fairmark.report.explain import where
    from fairmark.stats.attribution_diff import AttributionDiff, FunctionDiff

    clear = FunctionDiff(
        "clear_page_erms", "kernel", "self", 1.9947, 0.0032, -1.9915, -29.4, 25.4, 0.4, 1.0, False
    )
    other = FunctionDiff(
        "finish_task_switch", "kernel", "self", 0.033, 0.008, -0.025, -1.1, 1.0, 0.6, 1.0, False
    )
    few = AttributionDiff("units", 2, 2, 2.1, 0.04, 0.05, 86, (clear, other))
    text = where(few)
    assert "with 2 + 2 boots (runs) as the unit" in text and "too few to prove it" in text, text
    assert "of which -1991.5 ms per trial in `clear_page_erms` (kernel)" in text, text
    assert "off-CPU" not in text
    # the same functions with the CPU time unchanged: then the time did go elsewhere
    same = AttributionDiff("units", 2, 2, 2.1, 2.08, 0.05, 86, (clear, other))
    assert "off-CPU" in where(same)


def test_a_faster_variant_is_not_minus_95_percent_faster() -> None:
    """Run 378a6da6 of bench/explain_qemu.py printed "noinit is -95% faster (-99% to -63%)": a double negative.
    A fall reads "is faster: -95% (…)"; a rise keeps "is +12% slower (…)"."""
    from types import SimpleNamespace

    from fairmark.report.explain import _head

    def v(ratio: float, low: float, high: float) -> SimpleNamespace:
        c = SimpleNamespace(
            ratio=ratio, ratio_ci_low=low, ratio_ci_high=high, significant=True, better="lower"
        )
        return SimpleNamespace(comparison=c, unit="s", variant="B", baseline="A", metric="wall_s")

    fell = _head(v(0.05, 0.01, 0.37))  # type: ignore[arg-type]
    assert fell.startswith("B is faster: -95% (-99% to -63%)"), fell
    rose = _head(v(1.12, 1.09, 1.16))  # type: ignore[arg-type]
    assert rose.startswith("B is +12.0% slower (+9.0% to +16.0%)"), rose
