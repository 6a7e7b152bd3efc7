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


@pytest.fixture(scope="module")
def screens(tmp_path_factory: pytest.TempPathFactory):  # -> Store with tests/screens_store.py's runs
    import screens_store

    return screens_store.build(tmp_path_factory.mktemp("s34") / "store.db")


def test_item7_run_json_says_the_environment_warnings_on_stderr(screens, capsys: pytest.CaptureFixture[str]) -> None:
    """`run --json`: stdout is the document; a CI log keeps stderr, and the busy host is said there."""
    import screens_store

    from fairmark.cli.run import _finish
    from fairmark.console import console

    console.configure(json_mode=True)
    try:
        _finish(screens, screens_store.RUN_IDS[0], None, None)
    except Exception:  # the fixed store has a failed cell (exit 4): the output is what is looked at
        pass
    finally:
        console.configure()
    out, err = capsys.readouterr()
    assert out.lstrip().startswith("{")
    assert "warning: CPU frequency governor is not 'performance': governor: schedutil" in " ".join(err.split())


FAILING = """title = "fail"
[run]
warmup = 0
min_trials = 3
max_trials = 5
[[workload]]
name = "w"
shell = true
command = 'echo starting; echo "first of two" >&2; echo "sh: 1: /x/lz4: not found" >&2; exit 127'
"""


def test_item9_a_failed_cell_shows_its_last_error_lines_once(fairmark_cli, tmp_path: Path) -> None:
    plan = tmp_path / "fail.toml"
    plan.write_text(FAILING)
    code, _, err = fairmark_cli("run", str(plan), "--accept-risk", "--no-monitors")
    assert code == 4, err
    log = err.splitlines()
    assert sum("/x/lz4: not found" in line for line in log) == 1
    assert sum("first of two" in line for line in log) == 1
    first = next(i for i, line in enumerate(log) if "failure 1/3" in line)
    assert "first of two" in log[first + 1] and "lz4: not found" in log[first + 2]
    # the cell's abandonment comes after its last trial's line
    assert max(i for i, line in enumerate(log) if "failure 3/3" in line) < next(
        i for i, line in enumerate(log) if "abandoned —" in line
    )
