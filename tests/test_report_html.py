"""The HTML report: self-contained, renders in headless Chromium without console errors, and never runs
markup planted in command lines, variant names, host names or tool output."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fairmark.report.load import load_report
from test_report_fixture import HOSTILE, open_store, synthetic_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    from fairmark.report.html import write_html

    tmp = tmp_path_factory.mktemp("report")
    store = open_store(tmp / "s.db")
    run_id = synthetic_run(store, profiles=True, hostile=True, accept_risk=True, trials=6)
    html = tmp / "report.html"
    write_html([load_report(store, run_id)], html)
    return html


def _chromium(html: Path, tmp: Path) -> tuple[str, str, Path]:
    shot = tmp / "shot.png"
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        f"--user-data-dir={tmp / 'profile'}",
        "--enable-logging=stderr",
        "--window-size=1200,2400",
        f"--screenshot={shot}",
        "--dump-dom",
        html.as_uri(),
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=90, check=False)
    return proc.stdout, proc.stderr, shot


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_renders_in_chromium_without_errors_and_never_runs_planted_markup(hostile_report, tmp_path):
    dom, log, shot = _chromium(hostile_report, tmp_path)
    assert "<h1>fairmark report</h1>" in dom
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    assert "PWNED" not in re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert "data-pwned" not in dom
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))
    assert pixels.std() > 0.05  # not a blank page


def test_planted_markup_is_text(hostile_report):
    html = hostile_report.read_text()
    assert '<script>document.title="PWNED"' not in html and "onerror=" not in html.replace(
        "onerror=&#34;", ""
    )
    escaped = "&lt;script&gt;document.title=&#34;PWNED&#34;&lt;/script&gt;"
    assert html.count(escaped) >= 5  # host, command line, plan, tool output, lock name, finding evidence
    assert "<script" not in html.lower()  # the report itself needs no JavaScript


def test_self_contained(hostile_report):
    html = hostile_report.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "url(http" not in html
    assert "@media print" in html


def test_sections_present(hostile_report):
    from fairmark.report.plots import flame_renderer

    html = hostile_report.read_text()
    for needle in (
        "RUN WITH --accept-risk",
        "Verdicts",
        "slower than A",
        "ministat",
        "CPU flame graph",
        "Lock contention",
        "System calls",
        "duration histogram",
        "Doctor findings",
        "How to reproduce",
        "Environment",
        'class="differ"',
        "insensitive to kernel debug options",
        "caveat: this cell spends",
        "What the variants change",
        "<code>sysctl.kern.foo</code>",
    ):
        assert needle in html, needle
    assert html.count("<svg") >= 6  # strip plots + monitor plots, inline
    if flame_renderer():  # inferno installed (cargo install inferno): flame graphs as images, and a diff
        assert html.count("data:image/svg+xml;base64,") >= 3 and "Differential flame graph" in html
    else:
        assert "no flame graph renderer: `cargo install inferno`" in html


def test_environment_diff_and_flatten():
    from fairmark.report.html import environment_view, flatten

    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": "x" * 300})["a.c"] == "[1, 2]"
    assert flatten({"d": "x" * 300})["d"].endswith("…")

    class Run:
        def __init__(self, i, before, after):
            self.id, self.env_before, self.env_after = i, before, after

    class R:
        def __init__(self, run):
            self.run = run

    view = environment_view([R(Run("r1", {"k": 1, "same": 2}, {"k": 3, "same": 2}))])
    assert view["columns"] == ["r1 before", "r1 after"]
    assert [r["key"] for r in view["differ"]] == ["k"] and [r["key"] for r in view["same"]] == ["same"]


def test_scaling_and_two_runs(tmp_path):
    from fairmark.report.html import render_html

    store = open_store(tmp_path / "s.db")
    first = synthetic_run(store, workloads=1, trials=4, seed=1)
    second = synthetic_run(
        store, workloads=1, trials=4, seed=2, monitors=False, sweep=(1, 2, 4, 8), fail_at=8
    )
    html, pngs = render_html(
        [load_report(store, first), load_report(store, second)], png_dir=tmp_path / "png"
    )
    assert html.count('<section id="run-') == 2
    assert HOSTILE not in html
    assert "Scaling" in html and "w0 vs threads" in html
    # threads 2 and 4 take the same time (1/min(threads, 2)): no peak is proven, none is named; threads 8 failed
    assert "(peak)" not in html and "threads = 2 not proven worse" in html
    # 2 and 4 take the same time: it rises, then levels off (issue 34 item 6), its best mean at the last point
    assert (
        "best mean at threads = 4, its last measured point (threads = 8: under 2 successful trials)" in html
    )
    assert "A: every trial failed at threads = 8 (failure point)" in html
    assert len(pngs) >= 4 and all(p.stat().st_size > 1000 for p in pngs)


def test_every_table_has_a_caption_and_every_header_a_scope(hostile_report, tmp_path):
    """Screen readers (the published dashboard embeds these pages, issue 26 item 1): a table announces what it
    holds, and each header cell whether it heads a column or a row."""
    from fairmark.report.html import render_html

    store = open_store(tmp_path / "s.db")
    swept = load_report(store, synthetic_run(store, profiles=True, trials=4, sweep=(1, 2, 4), fail_at=4))
    text, _ = render_html([swept])
    for html in (hostile_report.read_text(), text):
        tables = re.findall(r"<table\b.*?</table>", html, re.S)
        assert len(tables) >= 8
        for t in tables:
            assert re.match(r"<table\b[^>]*>\s*<caption>[^<]", t), t[:200]
            assert re.findall(r"<th(?![^>]*\bscope=\"(?:col|row)\")[^>]*>", t) == [], t[:200]
