"""Malformed plans exit 2 naming file, line and key, before anything runs or is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairmark.errors import PlanError
from fairmark.plan.load import load_plan, parse_plan
from fairmark.plan.schedule import cells_of, expand_sweep_values

GOOD = """
[run]
min_trials = 3

[[workload]]
name = "spin"
command = ["true"]

[[variant]]
name = "A"

[[variant]]
name = "B"
env = { X = "1", HOME = false }
"""

CASES = [
    # (plan text, expected line, expected key fragment, expected message fragment)
    (
        "[run]\nmin_trials = 3\nmax_trialz = 5\n[[workload]]\nname='a'\ncommand=['true']\n",
        3,
        "run.max_trialz",
        "unknown key",
    ),
    (
        "[[workload]]\nname='a'\ncommand=['true']\ntimeout_s = 'long'\n",
        4,
        'workload[0] "a".timeout_s',
        "valid number",
    ),
    (
        "[[workload]]\nname='a'\ncommand=['true']\n[[workload]]\nname='b'\ncommand=['definitely-not-a-program-xyz']\n",
        6,
        'workload[1] "b".command',
        "not found",
    ),
    ("[[workload]]\nname='a'\ncommand=['true'\n", 3, None, "not valid TOML"),
    ("[run]\nconfidence = 97\n[[workload]]\nname='a'\ncommand=['true']\n", 2, "run.confidence", "one of 80"),
    (
        "[[workload]]\nname='a'\ncommand=['true']\n[[workload.metrics]]\nname='x'\nregex='('\nbetter='higher'\n",
        6,
        "metrics[0]",
        "regular expression",
    ),
    ("[[workload]]\nname='a'\n", 1, "workload[0]", "exactly one of command"),
    (
        "[[workload]]\nname='a'\ncommand=['true']\n[[variant]]\nname='v'\nwrap=['no-such-wrapper-xyz']\n",
        6,
        'variant[0] "v".wrap',
        "not found",
    ),
]


@pytest.mark.parametrize(("text", "line", "key", "message"), CASES)
def test_malformed_plan_names_file_line_key(
    tmp_path: Path, text: str, line: int, key: str | None, message: str
) -> None:
    plan = tmp_path / "bad.toml"
    plan.write_text(text)
    with pytest.raises(PlanError) as err:
        load_plan(plan)
    assert err.value.path == str(plan)
    assert err.value.line == line
    if key:
        assert key in (err.value.key or "")
    assert message in str(err.value)


def test_malformed_plan_exits_2_and_writes_nothing(
    tmp_path: Path, fairmark_cli, isolated_fairmark: Path
) -> None:
    plan = tmp_path / "bad.toml"
    plan.write_text(CASES[0][0])
    code, out, err = fairmark_cli("run", str(plan), "--no-monitors")
    assert code == 2
    assert f"{plan}:3" in err and "max_trialz" in err
    assert out == ""
    assert not (isolated_fairmark / "store.db").exists()


def test_good_plan_cells_and_env_unset() -> None:
    plan = parse_plan(GOOD)
    assert [c.key for c in cells_of(plan)] == ["spin/A", "spin/B"]
    assert plan.variant[1].env == {"X": "1", "HOME": False}
    assert plan.baseline == "A"


def test_sweep_relative_to_machine() -> None:
    assert expand_sweep_values("threads", "pow2:1..4x", ncpu=2) == [1, 2, 4, 8]
    assert expand_sweep_values("threads", "1..2x", ncpu=2) == [1, 2, 3, 4]
    assert expand_sweep_values("clients", [1, 5]) == [1, 5]
    with pytest.raises(PlanError):
        expand_sweep_values("threads", "lots")


def test_quick_policy_caps_trials() -> None:
    plan = parse_plan(GOOD.replace("min_trials = 3", "min_trials = 10\nmax_trials = 40"))
    quick = plan.policy(quick=True)
    assert (quick.min_trials, quick.max_trials, quick.warmup) == (3, 6, 0)
    assert plan.policy().max_trials == 40


@pytest.mark.parametrize("command", ["pwd; true", "true&&pwd", "true|cat", "(true)"])
def test_a_shell_line_is_checked_by_the_program_it_starts(tmp_path: Path, command: str) -> None:
    """sh reads 'pwd;' as the program pwd and an operator; the check named 'pwd;' a missing executable."""
    plan = tmp_path / "p.toml"
    plan.write_text(f"[[workload]]\nname = 'w'\nshell = true\ncommand = {command!r}\n")
    assert load_plan(plan).plan.workload[0].command == command


def test_a_missing_program_before_an_operator_is_named_without_it(tmp_path: Path) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text("[[workload]]\nname = 'w'\nshell = true\ncommand = 'no-such-prog-fm; true'\n")
    with pytest.raises(PlanError, match="executable 'no-such-prog-fm' not found"):
        load_plan(plan)
