"""Every adapter's `parse` on random mutations of its real captured outputs (issue 9): it returns values or
raises the adapter's ParseError — never another exception, never a negative or non-finite number as data."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairmark.run.workloads import registry
from fairmark.run.workloads.base import ParseError, RawOutput
from fuzzing import FUZZ, mutated

FIX = Path(__file__).parent / "fixtures" / "tools"
# adapter → its fixture folder (the tool whose output it parses)
FOLDER = {"compress": "zstd", "connections": "wrk"}


def captured(adapter: str) -> list[tuple[str, str, str]]:
    """(name, output, stderr) of each captured output of the adapter's tool."""
    folder = FIX / FOLDER.get(adapter, adapter)
    out = []
    for f in sorted(folder.glob("*")):
        if f.name.endswith(".stderr.txt") or f.suffix == ".md":
            continue
        stem = f.name.removesuffix(".stdout.txt").rsplit(".", 1)[0]
        err = folder / f"{stem}.stderr.txt"
        out.append((f.name, f.read_text(), err.read_text() if err.exists() else ""))
    return out


def raw_for(name: str, text: str, stderr: str) -> RawOutput:
    # The output goes where each adapter looks for it: stdout, or a result file (fio's JSON, stress-ng's
    # YAML); stress-ng's expected stressors are in the fixture's name (fork-pipe-switch-vm.yaml).
    stressors = name.split(".")[0].removesuffix("-root").removesuffix("-nobody").replace("-", " ")
    return RawOutput(text, stderr, 0, {"json": text, "yaml": text, "kmsg": text, "stressors": stressors})


ADAPTERS = sorted(a for a in registry() if (FIX / FOLDER.get(a, a)).is_dir())
CAPTURED = {a: captured(a) for a in ADAPTERS}


def test_every_adapter_has_captured_output_to_fuzz() -> None:
    assert set(ADAPTERS) == set(registry()), set(registry()) - set(ADAPTERS)


@pytest.mark.slow
@pytest.mark.parametrize("adapter", ADAPTERS)
@FUZZ
@given(data=st.data())
def test_parse_of_mutated_output_gives_clean_values_or_parse_error(adapter: str, data: st.DataObject) -> None:
    name, text, stderr = data.draw(st.sampled_from(CAPTURED[adapter]))
    text = data.draw(mutated(text))
    if data.draw(st.booleans()):
        stderr = data.draw(mutated(stderr or "error"))
    try:
        values = registry()[adapter]().parse(raw_for(name, text, stderr))
    except ParseError:
        return
    for metric, v in values.items():
        assert isinstance(v, float | int) and not isinstance(v, bool), (metric, v)
        assert math.isfinite(v) and v >= 0, f"{adapter}: {metric} = {v!r} accepted as data"


def test_a_fifty_digit_level_is_a_parse_error_not_a_memory_exhaustion() -> None:
    # found by the 10 000-example run (it took 24 GB and the OOM killer): range() over a garbled level
    text = "-99999999999999999999999999999999999999999999999991  3146366 (1.333) 332.51 MB/s  673.2 MB/s  f\n"
    text += "-2      3146366 (1.333) 299.20 MB/s  671.1 MB/s  f\n"
    with pytest.raises(ParseError, match="not compression levels"):
        registry()["compress"]().parse(RawOutput(text, "", 0))
