"""`fairmark compare` end to end: ministat's input rules, errors naming file and line, JSON and human output."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fairmark.cli.compare import parse_lines
from fairmark.cli.main import main
from fairmark.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "ministat"
IGUANA, CHAMELEON = str(FIXTURES / "iguana"), str(FIXTURES / "chameleon")


def run(capsys, *args: str) -> tuple[int, str, str]:
    """Exit code, stdout, stderr with whitespace runs collapsed (the console wraps long error lines)."""
    code = main(["compare", *args])
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


def test_parse_rules_like_ministat():
    text = "# header\n1 2\n3 4 # trailing\n5\n\n  6\t\t7\n#8 9\n10 # 11\n"
    assert parse_lines(io.StringIO(text), "f", column=2).values == (2.0, 4.0, 7.0)
    assert parse_lines(io.StringIO(text), "f").values == (1.0, 3.0, 5.0, 6.0, 10.0)
    csv = "a-ignored-in-col1,1.5\n2.5,,3.5\n4,  5.5\n6;7\n"  # runs of delimiters count as one
    assert parse_lines(io.StringIO(csv), "f", column=2, delimiters=",").values == (1.5, 3.5, 5.5)


@pytest.mark.parametrize("token", ["abc", "nan", "inf", "1_000", "0x10", "1.5x", "--1"])
def test_non_numeric_token_names_file_and_line(token):
    with pytest.raises(InputError) as exc:
        parse_lines(io.StringIO(f"1\n2\n{token}\n4\n"), "data.txt")
    assert exc.value.message.startswith("data.txt:3: column 1: ")
    assert repr(token) in exc.value.message


def test_too_few_values_names_file_and_line():
    with pytest.raises(InputError, match=r"^few\.txt:4: 2 value\(s\) in column 1; at least 3"):
        parse_lines(io.StringIO("1\n# two\n\n2\n"), "few.txt")


def test_error_exit_codes_and_messages(capsys, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n2\nthree\n")
    code, out, err = run(capsys, IGUANA, str(bad))
    assert code == 2 and out == "" and f"{bad}:3: column 1: 'three' is not a number" in err
    code, _, err = run(capsys, IGUANA, str(tmp_path / "missing"))
    assert code == 2 and "cannot read" in err
    code, _, err = run(capsys, *[IGUANA] * 8)
    assert code == 2 and "at most 7" in err
    code, _, err = run(capsys, "-c", "100", IGUANA, CHAMELEON)
    assert code == 2


def test_json_document(capsys):
    code, out, _ = run(capsys, "--json", "-c", "80", IGUANA, CHAMELEON)
    assert code == 0
    doc = json.loads(out)  # stdout is exactly one JSON document
    iguana, chameleon = doc["datasets"]
    assert {k: iguana[k] for k in ("n", "min", "max", "median", "mean")} == {
        "n": 7,
        "min": 50,
        "max": 750,
        "median": 200,
        "mean": 300,
    }
    assert round(chameleon["stddev"], 5) == 299.08193
    (c,) = doc["comparisons"]
    assert c["significant"] is True and c["ministat_significant"] is True and c["confidence"] == 80
    assert f"{c['difference']:g} {c['half_width']:g} {c['pooled_stddev']:g}" == "240 212.215 264.159"
    assert f"{c['percent']:g} {c['percent_half_width']:g}" == "80 70.7384"
    assert set(c["welch"]) >= {"t", "df", "p_value", "ratio", "ratio_ci_low", "ratio_ci_high"}
    assert set(c["mann_whitney"]) >= {"u", "p_value", "significant", "min_p", "exact"}
    # fairmark's verdict: Welch's t on the logarithms (the ratio of geometric means), not ministat's pooled t
    assert c["design"] == "Welch" and c["scale"] == "log"
    assert c["sentence"] == "chameleon is higher (worse) than iguana: +110% (80% CI: +9.4% to +290%)"


def test_human_output_has_ministat_part_then_verdicts(capsys):
    code, out, _ = run(capsys, "--better", "higher", "--unit", "MB/s", IGUANA, CHAMELEON)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"x {IGUANA}" and lines[1] == f"+ {CHAMELEON}"  # names as given, like ministat
    assert lines[2] == "+" + "-" * 74 + "+"
    assert "No difference proven at 95.0% confidence" in lines
    assert any(
        line.startswith("+ chameleon vs iguana: no difference proven at 95% confidence") for line in lines
    )
    assert any("Mann-Whitney U = 26" in line for line in lines)


def test_no_plot_width_and_separate_bars(capsys):
    _, out, _ = run(capsys, "-n", IGUANA, CHAMELEON)
    assert "+---" not in out and "    N           Min" in out
    _, out, _ = run(capsys, "-w", "30", "-s", IGUANA, CHAMELEON)
    bars = [line for line in out.splitlines() if "A" in line and line.startswith("|")]
    assert len(bars) == 2 and all(len(line) == 32 for line in bars)


def test_stdin_and_995_note(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("1\n2\n3\n4\n"))
    code, out, _ = run(capsys, "-c", "99.5", "-", IGUANA)
    assert code == 0 and "<stdin>" in out and "99.8% quantile" in out


def test_installed_entry_point(tmp_path):
    exe = Path(sys.executable).with_name("fairmark")
    if not exe.exists():
        pytest.skip("fairmark is not installed in this venv")
    env = {**os.environ, "NO_COLOR": "1"}
    res = subprocess.run(
        [str(exe), "compare", "--json", IGUANA, CHAMELEON],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["comparisons"][0]["significant"] is False
