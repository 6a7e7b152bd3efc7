"""Issue 34, "Every screen right, round two": what a newcomer, a CI log and a microbenchmark see. One test (or
more) per item, each failing on the code before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairmark.errors import PlanError
from fairmark.plan.load import load_plan
from fairmark.report.check import CheckResult
from fairmark.report.check_output import junit_xml


def test_item12_junit_leaves_out_an_empty_commit_property() -> None:
    r = CheckResult("run1", "h", "tag:branch=main", ("b1",), "pooled", 3.0, 95.0, ())
    assert 'name="commit"' not in junit_xml(r)
    tagged = CheckResult("run1", "h", "tag:branch=main", ("b1",), "pooled", 3.0, 95.0, (), tags={"commit": "abc"})
    assert '<property name="commit" value="abc" />' in junit_xml(tagged)


def _plan(tmp_path: Path, command: str) -> Path:
    plan = tmp_path / "plan.toml"
    metric = '{ name = "elapsed_s", regex = "elapsed ([0-9.]+)", unit = "s", better = "lower" }'
    plan.write_text(
        f'title = "t"\n[[workload]]\nname = "w"\nmetrics = [{metric}]\nshell = true\ncommand = \'\'\'{command}\'\'\'\n'
    )
    return plan


def test_item8_the_checkout_variable_is_checked_in_every_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAIRMARK_CHECKOUT", raising=False)
    loop = 'for i in 1 2; do "$FAIRMARK_CHECKOUT/programs/lz4" -1 f; done; echo elapsed 1'
    with pytest.raises(PlanError, match=r"\$FAIRMARK_CHECKOUT not set") as e:
        load_plan(str(_plan(tmp_path, loop)))
    assert e.value.line == 6 and "--checkout DIR" in str(e.value)
    checkout = tmp_path / "co"
    (checkout / "programs").mkdir(parents=True)
    monkeypatch.setenv("FAIRMARK_CHECKOUT", str(checkout))
    with pytest.raises(PlanError, match="programs/lz4.*not found"):  # set, but no program there
        load_plan(str(_plan(tmp_path, loop)))
    (checkout / "programs" / "lz4").write_text("#!/bin/sh\n")
    (checkout / "programs" / "lz4").chmod(0o755)
    load_plan(str(_plan(tmp_path, loop)))
    # an argument naming the checkout (not a program) needs the variable, not a file
    load_plan(str(_plan(tmp_path, 'cat "$FAIRMARK_CHECKOUT/values.txt"; echo elapsed 1')))
