"""fairmark against the installed `ministat`, live, on seeded random data sets neither has seen before: all six
confidence levels, n from 3 to 150 (df above 100 uses ministat's ∞ row), difference, half-width and pooled s to
5 significant digits and the same verdict. At 99.5 the comparison is made with --ministat-compat (by default
fairmark's 99.5 is the true 99.5 %, see stats/tdist.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fairmark.cli.main import main
from fairmark.stats import MINISTAT_LEVELS, ministat_t

pytestmark = pytest.mark.skipif(shutil.which("ministat") is None, reason="ministat is not installed")

RESULT = re.compile(r"\t(\S+) \+/- (\S+)\n\t\S+% \+/- \S+%\n\t\(Student's t, pooled s = (\S+)\)")


def ministat(*args) -> str:
    return subprocess.run(["ministat", *map(str, args)], capture_output=True, text=True, check=True).stdout


def ministat_blocks(out: str) -> list[tuple[float, float, float] | None]:
    """Per comparison: (difference, half-width, pooled s), or None for 'No difference proven'."""
    blocks = re.split(r"^(?=Difference at|No difference proven)", out, flags=re.M)[1:]
    return [
        tuple(map(float, RESULT.search(b).groups())) if b.startswith("Difference") else None for b in blocks
    ]


def write(path: Path, values: np.ndarray) -> str:
    path.write_text("".join(repr(float(v)) + "\n" for v in values))
    return str(path)


def draw(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A pair of samples of varied shape, scale, size and effect (some A/A, some clearly different)."""
    n_a, n_b = (
        (int(rng.integers(3, 12)), int(rng.integers(3, 12))) if k % 3 else tuple(rng.integers(3, 151, 2))
    )
    scale = 10.0 ** rng.integers(-3, 6)
    effect = rng.choice([0.0, 0.002, 0.02, 0.1, 0.5])
    kind = k % 4
    if kind == 0:
        a, b = rng.normal(100, 3, n_a), rng.normal(100 * (1 + effect), 3, n_b)
    elif kind == 1:
        a, b = rng.lognormal(0, 0.2, n_a) * 100, rng.lognormal(effect, 0.2, n_b) * 100
    elif kind == 2:  # integers: ties, like counts or coarse clocks
        a, b = rng.integers(90, 110, n_a).astype(float), rng.integers(90, 110, n_b) + 20 * effect
    else:
        a, b = rng.uniform(50, 150, n_a), rng.uniform(50, 150, n_b) * (1 + effect)
    return a * scale, b * scale


def fairmark_json(capsys, *args) -> dict:
    assert main(["compare", "--json", *map(str, args)]) == 0
    return json.loads(capsys.readouterr().out)


def close5(ours: float, theirs: float) -> bool:
    """Equal to 5 significant digits (theirs is printed with 6)."""
    return abs(ours - theirs) <= 1e-5 * abs(theirs) + 1e-300


@pytest.mark.slow
def test_random_pairs_match_ministat_at_all_six_levels(tmp_path, capsys):
    rng = np.random.default_rng(8675309)
    checked = significant = big_df = 0
    for k in range(36):
        a, b = draw(rng, k)
        fa, fb = write(tmp_path / f"a{k}", a), write(tmp_path / f"b{k}", b)
        big_df += len(a) + len(b) - 2 > 100
        for level in MINISTAT_LEVELS:
            theirs = ministat_blocks(ministat("-A", "-c", level, fa, fb))[0]
            compat = ["--ministat-compat"] if level == 99.5 else []
            ours = fairmark_json(capsys, "-c", level, *compat, fa, fb)["comparisons"][0]
            assert ours["ministat_significant"] == (theirs is not None), (k, level)
            if theirs is not None:
                significant += 1
                d, e, s = theirs
                assert close5(ours["difference"], d), (k, level, ours["difference"], d)
                assert close5(ours["half_width"], e), (k, level, ours["half_width"], e)
                assert close5(ours["pooled_stddev"], s), (k, level, ours["pooled_stddev"], s)
            checked += 1
    assert checked == 36 * 6 and significant > 40 and big_df >= 5


def test_several_files_each_against_the_first(tmp_path, capsys):
    rng = np.random.default_rng(4)
    files = [write(tmp_path / f"s{k}", rng.normal(10 + 0.4 * k, 0.5, 6 + 3 * k)) for k in range(7)]
    theirs = ministat_blocks(ministat("-A", "-c", 98, *files))
    ours = fairmark_json(capsys, "-c", 98, *files)["comparisons"]
    assert len(theirs) == len(ours) == 6
    for t, o in zip(theirs, ours, strict=True):
        assert o["ministat_significant"] == (t is not None)
        if t:
            keys = ("difference", "half_width", "pooled_stddev")
            assert all(close5(o[key], v) for key, v in zip(keys, t, strict=True))


def test_t_table_is_ministats_for_every_df_it_can_show(tmp_path):
    """Recover t = e/s from ministat's half-width on constructed data for df 4…110 and every column (its
    smallest data sets have 3 values, so df 1–3 never show). This is where the 99.5-column typos were found."""
    for df in [*range(4, 111), 150]:
        n_a = 3 if df < 10 else df // 2
        n_b = df + 2 - n_a
        a, b = np.arange(n_a, dtype=float), np.arange(n_b) * 1.5 + 1e4
        fa, fb = write(tmp_path / "a", a), write(tmp_path / "b", b)
        pooled = np.sqrt(((n_a - 1) * a.var(ddof=1) + (n_b - 1) * b.var(ddof=1)) / df)
        se = pooled * np.sqrt(1 / n_a + 1 / n_b)
        for level in MINISTAT_LEVELS:
            (_, e, _), *_ = ministat_blocks(ministat("-A", "-c", level, fa, fb))
            assert round(e / se, 3) == ministat_t(level, df), (df, level)


def test_compat_view_is_byte_identical_to_live_ministat(tmp_path, capsys, monkeypatch):
    """`fairmark compare --ministat-compat` prints what the installed ministat prints, byte for byte (table,
    plot, Student's t blocks), on seeded data sets neither has seen: varied n, scale, ties and options."""
    monkeypatch.chdir(tmp_path)  # both print the file names as given
    rng = np.random.default_rng(20261123)
    options = (
        [],
        ["-s"],
        ["-c", "90"],
        ["-A"],
        ["-w", "50"],
        ["-c", "99.5"],
        ["-s", "-w", "100", "-c", "80"],
    )
    compared = 0
    for k in range(8):
        files = []
        for j in range(int(rng.integers(2, 4))):
            a, _ = draw(rng, k + j)
            files.append(write(tmp_path / f"d{k}_{j}", a if k % 3 else np.round(a, 1)))
        names = [Path(f).name for f in files]
        for opts in options:
            theirs = ministat(*opts, *names)
            assert main(["compare", "--ministat-compat", *opts, *names]) == 0
            ours = capsys.readouterr().out.split("\nfairmark (", 1)[0]
            assert ours == theirs, (k, opts)
            compared += 1
    assert compared == 8 * len(options)


def _edge_set(rng: np.random.Generator, k: int) -> np.ndarray:
    """The cases ministat's own arithmetic decides: constants (its Σy² formula can give -nan or 0), a zero
    mean (inf% and nan% in its percent line), many-digit decimals (the last digit of Avg depends on summing in
    input order), large and tiny magnitudes, negative values."""
    n = int(rng.integers(3, 9))
    kind = k % 6
    if kind == 0:
        return np.full(n, rng.choice([0.1, 0.3, 7.0, 1e-7, 123.456, 0.0]))
    if kind == 1:
        half = rng.normal(0, 1, n // 2)
        return np.concatenate([half, -half, [0.0]] if n % 2 else [half, -half])
    if kind == 2:
        return rng.normal(0.1, 1e-3, n) * 10.0 ** rng.integers(-4, 8)
    if kind == 3:
        return rng.normal(-50, 20, n)
    if kind == 4:
        return np.round(rng.normal(1e8, 1.0, n))
    return rng.integers(0, 3, n).astype(float)


@pytest.mark.slow
def test_compat_is_byte_identical_on_500_random_pairs(tmp_path, capsys, monkeypatch):
    """Issue 23 item 9: `--ministat-compat` prints on stdout exactly what the installed ministat prints, for
    ≥ 500 seeded random pairs, a third of them the edge cases (constants, zero means, many-digit decimals)."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(23)
    options = ([], ["-A"], ["-s", "-w", "60"], ["-c", "80"], ["-c", "99"], ["-n"], ["-c", "99.5", "-A"])
    compared = 0
    for k in range(510):
        if k % 3 == 0:
            a, b = _edge_set(rng, k // 3), _edge_set(rng, k // 3 + int(rng.integers(0, 6)))
        else:
            a, b = draw(rng, k)
        write(tmp_path / "a", a)
        write(tmp_path / "b", b)
        opts = options[k % len(options)]
        theirs = ministat(*opts, "a", "b")
        assert main(["compare", "--ministat-compat", *opts, "a", "b"]) == 0
        ours = capsys.readouterr().out
        assert ours == theirs, (k, opts, list(a), list(b))
        compared += 1
    assert compared >= 500
