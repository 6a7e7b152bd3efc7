"""The 80-column text / Markdown report and the `fairmark report` command."""

from __future__ import annotations

import json

import pytest

from fairmark.cli.main import main
from fairmark.report.load import load_report
from test_report_fixture import HOSTILE, open_store, synthetic_run


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    path = tmp_path_factory.mktemp("text") / "s.db"
    store = open_store(path)
    run_id = synthetic_run(store, profiles=True, hostile=True, accept_risk=True, trials=5)
    return path, store, run_id


def test_text_fits_80_columns_and_has_the_sections(stored):
    from fairmark.report.sections.reproduce import FOLD
    from fairmark.report.text import render_text

    _, store, run_id = stored
    text = render_text([load_report(store, run_id)])
    assert max(len(line) for line in text.splitlines()) <= 80  # the quoted plan and command line too
    needles = (
        "Verdicts",
        "slower than A",
        "|__",
        "[A]",
        "How to reproduce",
        "--accept-risk",
        "syscalls of A",
        "lock contention of B",
        "Doctor findings",
        "- B: sysctl.kern.foo=1",
    )
    for needle in needles:
        assert needle in text, needle
    assert "\x1b[" not in text  # no colour codes
    # plain text shows data as it is: the plan quoted whole, a long line continued after FOLD
    assert f"# {HOSTILE}\n" in text.replace("\n" + FOLD, "")


def test_markdown_fences_preformatted_blocks(stored):
    from fairmark.report.text import render_text

    _, store, run_id = stored
    md = render_text([load_report(store, run_id)], markdown=True)
    assert md.startswith("## fairmark run ")
    assert md.count("```") % 2 == 0 and md.count("```") >= 4
    assert "### Verdicts" in md


def test_cli_report_html_text_and_json(stored, tmp_path, capsys):
    path, _, run_id = stored
    html = tmp_path / "r.html"
    rc = main(["report", run_id[:8], "--store", str(path), "--html", str(html), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["html"] == str(html) and html.stat().st_size == out["html_bytes"]
    assert out["runs"] == [run_id] and "text" not in out
    rc = main(["report", "last", "--store", str(path), "--text"])
    assert rc == 0 and "Verdicts" in capsys.readouterr().out


def test_cli_report_errors(stored, capsys):
    path, _, _ = stored
    assert main(["report", "nope", "--store", str(path)]) == 2
    assert "no run 'nope'" in capsys.readouterr().err
    assert main(["report", "last", "--store", str(path), "--png", "/tmp/x"]) == 2
    assert main(["report", "last", "--store", str(path), "--text", "--markdown"]) == 2
