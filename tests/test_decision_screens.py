"""Issue 36 item 3: what a run stopped when decided says — "decided after N rounds: B is slower than A: +X%
(95% CI, sequential: …)", "equivalent within ±2% after N rounds (…)", "undecided after N rounds (…)" — and that
`run`'s final screen, `show` and `report --text` print the very sentence the verdict holds. An early decision
says how many rounds decided it instead of warning of few trials; a precision run of 5 trials still warns."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from doubles import MockExecutor, plan_text, run_fake
from fairmark.report.load import load_report

CLI = Callable[..., tuple[int, str, str]]


def decision_plan(variants: list[str]) -> str:
    return plan_text(variants, min_trials=5, max_trials=20).replace("[run]\n", "[run]\nstop = 'decision'\n")


def flat(text: str) -> str:
    """Screen text with its wrapping undone (words joined by single spaces)."""
    return " ".join(text.split())


def wall_verdict(store, run_id):  # the primary metric's verdict of B against A
    (v,) = [v for v in load_report(store, run_id).verdicts if v.metric == "wall_s"]
    return v


OUTCOMES = {
    "different": (
        {"A": 1.0, "B": 1.1},
        0.02,
        r"decided after \d+ rounds: B is slower than A: \+\d+(\.\d)?% \(95% CI, sequential: "
        r"\+\d+(\.\d)?% to \+\d+(\.\d)?%\)",
    ),
    "equivalent": (
        {"A": 1.0, "B": 1.0},
        0.004,
        r"equivalent within ±2% after \d+ rounds \(two one-sided tests at 5%, sequential 90% interval "
        r"[−+-]\d\.\d+% to [−+-]\d\.\d+%\): B vs A: ",
    ),
    "undecided": (
        {"A": 1.0, "B": 1.0},
        0.1,
        r"undecided after 20 rounds \(neither a difference nor equivalence",
    ),
}


@pytest.mark.parametrize("outcome", list(OUTCOMES))
def test_show_and_report_print_the_verdicts_sentence(
    tmp_path: Path, fairmark_cli: CLI, monkeypatch: pytest.MonkeyPatch, outcome: str
) -> None:
    means, sd, pattern = OUTCOMES[outcome]
    store, run_id = run_fake(tmp_path, decision_plan(["A", "B"]), MockExecutor(means, sd=sd))
    v = wall_verdict(store, run_id)
    assert re.match(pattern, v.sentence), v.sentence
    assert v.comparison.sequential["decision"] == outcome
    monkeypatch.setenv("FAIRMARK_STORE", f"sqlite:///{tmp_path / 's.db'}")
    for argv in (("show", run_id), ("report", run_id, "--text")):
        code, out, err = fairmark_cli(*argv)
        assert code == 0, err
        assert flat(v.sentence) in flat(out), (argv, out)
    code, out, _ = fairmark_cli("show", run_id, "--json")
    shown = [c for c in json.loads(out)["verdicts"] if c["metric"] == "wall_s"]
    assert shown and shown[0]["sentence"] == v.sentence


def test_an_early_decision_says_so_and_a_precision_run_still_warns(
    tmp_path: Path, fairmark_cli: CLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, run_id = run_fake(
        tmp_path / "decided", decision_plan(["A", "B"]), MockExecutor({"A": 1.0, "B": 1.5}, sd=0.01)
    )
    report = load_report(store, run_id)
    assert {c.n_ok for c in report.cells} == {5}, "decided at the first look"
    v = wall_verdict(store, run_id)
    assert v.sentence.startswith("decided after 5 rounds: B is slower than A")
    assert not [w for c in report.cells for w in c.warnings if "measured trials" in w]
    assert not [w for w in v.comparison.warnings if "has only" in w]
    monkeypatch.setenv("FAIRMARK_STORE", f"sqlite:///{tmp_path / 'decided' / 's.db'}")
    _, out, _ = fairmark_cli("show", run_id)
    assert "decided after 5 rounds" in flat(out) and "measured trials" not in out

    plain = plan_text(["A", "B"], min_trials=5, max_trials=20, target=50.0)  # the precision stop at 5
    store, run_id = run_fake(tmp_path / "precise", plain, MockExecutor({"A": 1.0, "B": 1.5}, sd=0.01))
    report = load_report(store, run_id)
    assert {c.n_ok for c in report.cells} == {5}
    assert all(any("only 5 measured trials" in w for w in c.warnings) for c in report.cells)


def test_run_prints_the_sentence_show_prints(tmp_path: Path, fairmark_cli: CLI) -> None:
    """A real run (sleep 10 ms against 100 ms) under the decision stop: its final screen and `show` agree."""
    plan = tmp_path / "plan.toml"
    plan.write_text(
        "[run]\nstop = 'decision'\nwarmup = 1\nmin_trials = 5\nmax_trials = 12\n"
        "[[workload]]\nname = 'nap'\nshell = true\ncommand = 'sleep \"$NAP\"'\n"
        "[[variant]]\nname = 'A'\nenv = { NAP = '0.01' }\n[[variant]]\nname = 'B'\nenv = { NAP = '0.1' }\n"
    )
    code, ran, err = fairmark_cli("run", str(plan), "--accept-risk", "--allow-concurrent", "--no-monitors")
    assert code == 0, err
    code, shown, err = fairmark_cli("show", "last")
    assert code == 0, err
    code, doc, err = fairmark_cli("show", "last", "--json")
    (sentence,) = [v["sentence"] for v in json.loads(doc)["verdicts"] if v["metric"] == "wall_s"]
    # at the load of a shared CI box the 10 ms side can take 80: decided is likely, not certain
    assert re.match(r"(decided|undecided|equivalent within ±2%) after \d+ rounds", sentence), sentence
    assert flat(sentence) in flat(ran) and flat(sentence) in flat(shown)
