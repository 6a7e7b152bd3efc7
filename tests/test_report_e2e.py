"""End to end as a user would: `fairmark run` with monitors (the default), then `fairmark report`."""

from __future__ import annotations

import json

import pytest

from fairmark.cli.main import main
from helpers import PYTHON_TOML

PLAN = """
title = "report e2e"
[run]
warmup = 0
min_trials = 3
max_trials = 3

[[workload]]
name = "spin"
command = [PYTHON, "-c", "sum(range(300000))"]
""".replace("PYTHON", PYTHON_TOML)


@pytest.mark.slow
def test_run_with_monitors_then_html_and_text_report(tmp_path, capsys):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    store = str(tmp_path / "s.db")
    argv = ["run", str(plan), "--store", store, "--monitor-interval", "0.2"]
    rc = main([*argv, "--accept-risk", "--allow-concurrent", "--json"])
    assert rc == 0, capsys.readouterr().err
    capsys.readouterr()
    html = tmp_path / "r.html"
    assert main(["report", "last", "--store", store, "--html", str(html), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    page = html.read_text()
    assert out["html_bytes"] > 0
    assert "CPU % by state" in page  # the monitor series of every cell, drawn
    assert "spin: " in page and "user" in page  # attribution sentence
    assert "profilers were attached" not in page
    assert main(["report", "last", "--store", store, "--markdown"]) == 0
    assert "monitor (default, means): CPU user" in capsys.readouterr().out
