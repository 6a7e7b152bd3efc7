"""The decision stop's simulated levels are found once and kept on disk (stats.levelcache): a later process reads
the same numbers instead of simulating 100 000 paths again, and a file that is not what fairmark wrote is ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairmark.stats import levelcache, sequential

LOOKS = (2, 3, 4)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    sequential.t_levels.cache_clear()
    sequential.switch_scale.cache_clear()
    yield tmp_path / "fairmark" / "levels"
    sequential.t_levels.cache_clear()
    sequential.switch_scale.cache_clear()


def _no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> tuple[float, ...]:
        raise AssertionError("simulated again")

    monkeypatch.setattr(sequential, "_simulated_t_levels", refuse)
    monkeypatch.setattr(sequential, "_simulated_switch_scale", refuse)


def test_a_later_process_reads_the_same_levels(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    levels = sequential.t_levels(LOOKS, 0.05)
    scale = sequential.switch_scale(LOOKS, 0.05)
    assert len(list(cache.glob("*.json"))) == 3  # the paired and the Welch levels, the switch's scale
    sequential.t_levels.cache_clear()  # as a new process: nothing in memory
    sequential.switch_scale.cache_clear()
    _no_simulation(monkeypatch)
    assert sequential.t_levels(LOOKS, 0.05) == levels  # bit for bit: floats round-trip through JSON
    assert sequential.switch_scale(LOOKS, 0.05) == scale
    with pytest.raises(AssertionError, match="simulated again"):
        sequential.t_levels(LOOKS, 0.10)  # another design is another entry


@pytest.mark.parametrize(
    "doc",
    [
        "not json",
        json.dumps({"key": "another design", "levels": [0.01, 0.02, 0.03]}),
        None,  # the right key, a negative level
        json.dumps([1, 2, 3]),
    ],
)
def test_a_file_fairmark_did_not_write_is_ignored(cache: Path, doc: str | None) -> None:
    levels = sequential.t_levels(LOOKS, 0.05)
    (path,) = [p for p in cache.glob("*.json") if "t_levels" in p.read_text()]
    if doc is None:
        entry = json.loads(path.read_text())
        doc = json.dumps({"key": entry["key"], "levels": [-1.0, 0.5, 0.5]})
    path.write_text(doc)
    sequential.t_levels.cache_clear()
    assert sequential.t_levels(LOOKS, 0.05) == levels  # simulated afresh, and written again
    assert json.loads(path.read_text())["levels"] == list(levels)


def test_a_cache_that_cannot_be_written_costs_only_the_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the cache's directory would be
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    sequential.t_levels.cache_clear()
    try:
        assert levelcache.cache_root().parent.parent == blocked
        assert len(sequential.t_levels(LOOKS, 0.05)) == len(LOOKS)
        assert list(tmp_path.iterdir()) == [blocked]  # no temporary file left behind
    finally:
        sequential.t_levels.cache_clear()
