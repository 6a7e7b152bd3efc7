"""Every terminal view, rendered at 80 and at 120 columns, against a golden file (issue 25 item 8).

Each view runs the real command in-process (or, where it needs a live system — a run's progress, a bisect, a
calibration, a publish, the tools installed here — the command's own rendering fed fixed data) on the fixed store
of tests/screens_store.py: no date, id, host or machine speed reaches the output. A golden file holds the
command lines, exit codes, stdout and stderr of one view at one width; at 80 columns no line may be longer.

After an intended change of what a view prints, regenerate them all and review the diff:

    FAIRMARK_GOLDEN=update .venv/bin/pytest tests/test_screens.py
    git diff tests/golden/
"""

from __future__ import annotations

import contextlib
import difflib
import io
import math
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import screens_store as fx
from helpers import REPO

GOLDEN = Path(__file__).parent / "golden"
WIDTHS = (80, 120)
UPDATE = os.environ.get("FAIRMARK_GOLDEN") == "update"
SYSROOTS = REPO / "tests" / "fixtures" / "sysroots"
R = [run_id[:8] for run_id in fx.RUN_IDS]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store and the files some views read, under short relative names (the views are run from here, so
    no temporary path reaches the output): two ministat files and a plan with a mistake."""
    d = tmp_path_factory.mktemp("screens")
    fx.build(d / "store.db")
    (d / "a.txt").write_text("".join(f"{0.1354 + 0.0011 * math.sin(i)}\n" for i in range(12)))
    (d / "b.txt").write_text("".join(f"{0.1418 + 0.0013 * math.cos(i)}\n" for i in range(12)))
    (d / "bad.toml").write_text('title = "t"\n[[workload]]\nname = "w"\ncommand = ["true"]\nrepeat = 3\n')
    return d


STORE = "sqlite:///store.db"


def _normalise(text: str) -> str:
    """Trailing blanks (rich pads table rows) go: a golden diff shows what changed, not padding."""
    return "\n".join(line.rstrip() for line in text.splitlines())


def _cli(args: list[str]) -> tuple[int, str, str]:
    from fairmark.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "--store", STORE])
    return code, out.getvalue(), err.getvalue()


def _call(render: Callable[[], None]) -> tuple[int, str, str]:
    from fairmark.console import console

    console.configure()  # as a command without --json: an earlier test's `--json` in this process must not linger
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        render()
    return 0, out.getvalue(), err.getvalue()


def _section(title: str, result: tuple[int, str, str]) -> str:
    code, out, err = result
    parts = [f"$ {title}", f"exit {code}"]
    if out.strip():
        parts += ["--- stdout", out.rstrip("\n")]
    if err.strip():
        parts += ["--- stderr", err.rstrip("\n")]
    return "\n".join(parts)


# -- the views that need a live system: their own rendering, fed fixed data -----------------------------------
def _progress_and_final() -> None:
    """`fairmark run`: the per-trial lines (not a terminal), the cells stopping, then the final report."""
    from fairmark.cli._progress import TerminalProgress
    from fairmark.cli.run import _finish
    from fairmark.plan.model import RunPolicy
    from fairmark.store.db import Store

    policy = RunPolicy(min_trials=6, max_trials=8, target_ci_pct=2.0)
    p = TerminalProgress()
    p.every_s = (
        0.0  # every trial's line: these events come microseconds apart (the limit: test_progress_lines)
    )
    p.started(fx.RUN_IDS[-1], 10, policy)
    p.workload("alloc", "setup")
    values = {"alloc/nodebug": [0.06332, 0.06249, 0.06401], "alloc/malloc-debug": [0.27955, 0.28112, 0.27803]}
    for n in range(3):
        for cell, series in values.items():
            p.trial(_event(cell, series[: n + 1], "s"))
    p.trial(_event("oltp[threads=4]/malloc-debug", [], "transactions/s", error=fx.FAILED_ERROR))
    p.trial(_event("crypto/nodebug", [5.2841e9, 5.1107e9], "B/s"))
    p.trial(_event("alloc/nodebug", [0.06332, 0.06249, 0.06401, 0.06108], "s") | {"profiled": True})
    p.cell_stopped("alloc/nodebug", "done", "max_trials (8) reached; precision reached after 6")
    p.cell_stopped("oltp[threads=4]/malloc-debug", "abandoned", "5 failed trials (max_failures 5)")
    p.finished()
    _finish(Store.open(STORE), fx.RUN_IDS[-1], None, None)


def _event(cell: str, values: list[float], unit: str, error: str | None = None) -> dict:
    from fairmark.stats import describe

    s = describe(values).to_dict() if len(values) >= 2 else {}
    return {
        "cell": cell,
        "warmup": False,
        "status": "failed" if error else "ok",
        "error": error,
        "unit": unit,
        "value": values[-1] if values else None,
        "n": len(values),
        "max_trials": 8,
        "failures": 1,
        "max_failures": 5,
        "mean": s.get("mean"),
        "ci_half_width": s.get("ci_half_width"),
    }


def _bisect() -> None:
    from fairmark.bisect.search import BisectResult, Step
    from fairmark.cli.bisect import _show

    def comparison(**fields: Any) -> Any:  # the fields of a Comparison the bisect's output reads
        return SimpleNamespace(**({"ratio": math.nan} | fields))

    good, bad = fx.COMMITS[4], fx.COMMITS[9]
    slower = "nodebug is slower than baseline: +12.1% (95% CI: +10.3% to +13.9%) (3 vs 3 runs as the unit)"
    regression = comparison(percent=12.1, ratio_ci_low=1.103, ratio_ci_high=1.139, sentence=slower)
    steps = (
        Step(bad, "Merge branch 'allocator-stats'", "regression", (fx.RUN_IDS[8], fx.RUN_IDS[9]), regression),
        Step(
            fx.COMMITS[7],
            "alloc: count every free() in a global atomic for the new statistics page",
            "bad",
            (fx.RUN_IDS[7],),
            comparison(percent=11.8, ratio_ci_low=1.097, ratio_ci_high=1.14, sentence=slower),
        ),
        Step(
            fx.COMMITS[6],
            "docs: describe the statistics page",
            "skip",
            (fx.RUN_IDS[6],),
            comparison(percent=6.0, ratio_ci_low=0.95, ratio_ci_high=1.17, sentence="not proven"),
            "not proven after 3 run(s): skipped",
        ),
        Step(fx.COMMITS[5], "alloc: add the statistics page", "bad", (fx.RUN_IDS[5],), regression),
    )
    _show(BisectResult(good, bad, "alloc wall_s", regression, fx.COMMITS[5], (), steps))


def _calibrate() -> None:
    from fairmark.cli.calibrate import show
    from fairmark.stats.calibration import clopper_pearson

    def row(group: str, metric: str, fp: int, mde: float) -> dict:
        data = {
            "runs": 20,
            "false_positives": fp,
            "false_positive_rate": fp / 20,
            "false_positive_ci": clopper_pearson(fp, 20),  # it was one made-up (1.2%, 30%) for 1 and 3 of 20
            "alpha": 0.05,
            "mde_percent": mde,
            "trials_per_side": (6, 8),
        }
        return {"group": group, "metric": metric, "runs": 20, "false_positives": fp, "data": data}

    rows = [
        row("alloc", "wall_s", 1, 1.37),
        row("crypto", "bytes_s", 0, 4.2),
        row("oltp[threads=4]", "transactions_s", 3, 2.86),
        row("zstd", "ratio", 0, 0.0),
    ]
    show(rows, (fx.HOST_ID, fx.HOST))


def _publish() -> None:
    from fairmark.cli.publish import summary
    from fairmark.report.publish.site import Outcome

    written = Counter({"run": 10, "series": 26, "index": 1, "bisect": 1})
    summary(Path("site"), Outcome(written, Counter({"run": 0}), ["runs/0badc0de.html"], 4.27))


def _doctor() -> None:
    """`fairmark doctor --sysroot DIR` on a captured tree (the probe reads only the tree)."""
    from fairmark.cli.doctor import _show
    from fairmark.probe.doctor import diagnose
    from fairmark.probe.snapshot import take_snapshot

    snap = take_snapshot(str(SYSROOTS / "linux-fedora-debug-smt"))
    findings = diagnose(snap)
    counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warn", "info")}
    _show(findings, snap, "tests/fixtures/sysroots/linux-fedora-debug-smt", counts)


def _env() -> None:
    """`fairmark env`: the snapshot the fixture runs store (this host's would differ from any other's)."""
    from fairmark.cli.env import _print_snapshot

    _print_snapshot(fx.env(0))


def _tools(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """`fairmark tools` as on a host where everything but lzbench (not packaged) is installed."""
    import fairmark.cli.tools as tools

    real = tools._describe

    def describe(name: str) -> dict:
        return real(name) | {"missing": ["lzbench"] if name == "lzbench" else [], "refused": None}

    monkeypatch.setattr(tools, "_describe", describe)
    return lambda: None


# -- the views --------------------------------------------------------------------------------------------------
def _views() -> dict[str, list[tuple[str, list[str] | str]]]:
    """view → the commands shown in its golden file (a string names a rendering fed fixed data)."""
    return {
        "run": [("fairmark run plans/malloc-debug.toml", "progress")],
        "runs": [("fairmark runs --limit 4", ["runs", "--limit", "4"])],
        "show": [("fairmark show last", ["show", "last"])],
        "compare": [
            (
                "fairmark compare a.txt b.txt --unit s",
                ["compare", "a.txt", "b.txt", "--unit", "s"],
            )
        ],
        "compare-runs": [(f"fairmark compare-runs {R[4]} {R[5]}", ["compare-runs", R[4], R[5]])],
        "compare-runs-vs": [
            (
                f"fairmark compare-runs {R[3]} {R[4]} --vs {R[5]} {R[6]}",
                ["compare-runs", R[3], R[4], "--vs", R[5], R[6]],
            )
        ],
        "history": [
            ("fairmark history alloc:wall_s", ["history", "alloc:wall_s"]),
            ("fairmark history alloc:max_rss_kib", ["history", "alloc:max_rss_kib"]),
        ],
        "check": [
            (
                "fairmark check last --against tag:branch=main",
                ["check", "last", "--against", "tag:branch=main"],
            )
        ],
        "bisect": [("fairmark bisect --good G --bad B --plan P --build make", "bisect")],
        "doctor": [("fairmark doctor --sysroot tests/fixtures/sysroots/linux-fedora-debug-smt", "doctor")],
        "env": [("fairmark env", "env")],
        "env-diff": [(f"fairmark env --diff {R[8]} {R[9]}", ["env", "--diff", R[8], R[9]])],
        "tools": [("fairmark tools", ["tools"]), ("fairmark tools openssl", ["tools", "openssl"])],
        "calibrate": [("fairmark calibrate plans/malloc-debug.toml --runs 20", "calibrate")],
        "report-text": [("fairmark report last --text", ["report", "last", "--text"])],
        "report-markdown": [("fairmark report last --markdown", ["report", "last", "--markdown"])],
        "publish": [("fairmark publish --out site", "publish")],
        "errors": [
            ("fairmark show nosuchrun", ["show", "nosuchrun"]),
            (f"fairmark compare-runs {R[8]} {R[9]}", ["compare-runs", R[8], R[9]]),
            ("fairmark run bad.toml", ["run", "bad.toml"]),
            ("fairmark history nosuchworkload", ["history", "nosuchworkload"]),
            ("fairmark compare-runs a1f3", ["compare-runs", "a1f3"]),
            ("fairmark show --bogus", ["show", "--bogus"]),
        ],
    }


RENDERINGS = {"bisect": _bisect, "calibrate": _calibrate, "publish": _publish, "doctor": _doctor, "env": _env}
VIEWS = list(_views())


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("view", VIEWS)
def test_view_matches_its_golden_file(view, width, workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.delenv("NO_COLOR", raising=False)
    _tools(monkeypatch)
    sections = []
    for title, how in _views()[view]:
        if how == "progress":
            result = _call(_progress_and_final)
        elif isinstance(how, str):
            result = _call(RENDERINGS[how])
        else:
            result = _cli(how)
        sections.append(_section(title, result))
    text = _normalise("\n\n".join(sections)) + "\n"
    if width == 80:
        long = [line for line in _prose(text, view) if len(line) > 80]
        assert not long, f"{view}: {len(long)} line(s) over 80 columns:\n" + "\n".join(long)
    _compare(GOLDEN / f"{view}.{width}.txt", text)


def _prose(text: str, view: str) -> list[str]:
    """The lines held to the width: all of them, except Markdown's headings and fenced blocks (a heading cannot
    wrap; a fence keeps a quoted plan exact and scrolls where it is read)."""
    if view != "report-markdown":
        return text.splitlines()
    out, fenced = [], False
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        if not fenced and not line.startswith("#") and not line.startswith("```"):
            out.append(line)
    return out


def _compare(path: Path, text: str) -> None:
    if UPDATE or not path.exists():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        if not UPDATE:
            pytest.fail(f"{path.name} did not exist: written; review it and commit it")
        return
    expected = path.read_text()
    if text != expected:
        diff = "".join(
            difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(path), "now")
        )
        pytest.fail(
            f"{path.name} differs (if intended: FAIRMARK_GOLDEN=update .venv/bin/pytest tests/test_screens.py)\n"
            + diff,
            pytrace=False,
        )
