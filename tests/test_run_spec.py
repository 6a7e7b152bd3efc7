"""The trial seam: TrialSpec and Measured are plain, versioned data that survive JSON unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairmark.run.launch.executor import execute_spec
from fairmark.run.spec import SPEC_VERSION, Measured, SpecVersionError, TrialSpec


def test_spec_and_measured_round_trip_through_json(tmp_path: Path) -> None:
    spec = TrialSpec(
        argv=["sh", "-c", "echo out; echo err >&2; exit 3"],
        out_dir=tmp_path,
        env={"PATH": "/usr/bin:/bin", "X": "1"},
        cwd=tmp_path,
        timeout_s=30.0,
        cpuset="0",
        files=[tmp_path / "f.json"],
    )
    again = TrialSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again == spec
    assert again.version == SPEC_VERSION
    measured = execute_spec(again)
    assert (measured.status, measured.exit_code, measured.timed_out) == ("failed", 3, False)
    assert Path(measured.stdout_path).read_text() == "out\n"
    assert Path(measured.stderr_path).read_text() == "err\n"
    wire = json.loads(json.dumps(measured.to_dict()))
    assert wire["timed_out"] is False
    assert Measured.from_dict(wire) == measured


def test_unknown_version_is_refused(tmp_path: Path) -> None:
    d = TrialSpec(argv=["true"], out_dir=str(tmp_path)).to_dict() | {"version": SPEC_VERSION + 1}
    with pytest.raises(SpecVersionError):
        TrialSpec.from_dict(d)
    with pytest.raises(SpecVersionError):
        Measured.from_dict(
            Measured.not_started(TrialSpec(["x"], str(tmp_path)), "no").to_dict() | {"version": 0}
        )


def test_a_field_of_the_wrong_type_is_refused_naming_it(tmp_path: Path) -> None:
    """from_dict reads each field with its type (issue 33 item 2: no Any on the trial seam): a value of another
    type is refused where it arrives, naming the field, never carried into the trial or its record."""
    spec = TrialSpec(argv=["true"], out_dir=str(tmp_path)).to_dict()
    for key, value, said in (
        ("argv", "true", "a list of strings"),
        ("timeout_s", "30", "a number"),
        ("place_cpus", [0, "1"], "a list of integers"),
        ("env", {"X": 1}, "a table of strings"),
        ("stdin_devnull", 1, "true or false"),
    ):
        with pytest.raises(ValueError, match=f"trial spec: {key} = .* is not {said}"):
            TrialSpec.from_dict(spec | {key: value})
    measured = Measured.not_started(TrialSpec(["x"], str(tmp_path)), "no").to_dict()
    with pytest.raises(ValueError, match="trial result: status = 'lost' is not one of ok, failed, timeout"):
        Measured.from_dict(measured | {"status": "lost"})
    with pytest.raises(ValueError, match="trial result: wall_s = True is not a number"):
        Measured.from_dict(measured | {"wall_s": True})
    assert Measured.from_dict(measured | {"wall_s": 2, "unknown_field": 1}).wall_s == 2.0  # newer fields pass


def test_a_command_that_cannot_start_is_a_failed_measurement(tmp_path: Path) -> None:
    m = execute_spec(TrialSpec(argv=["no-such-program-xyz"], out_dir=str(tmp_path)))
    assert m.status == "failed" and m.exit_code is None and "cannot start" in (m.error or "")
