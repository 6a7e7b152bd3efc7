"""stats.special's lean functions (numpy and the standard library) against scipy.special, the reference they
replace inside `fairmark compare` of plain files (issue 31 item 7), and the command's two paths — lean and scipy —
printing the same thing on the same files."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from scipy import special as sp

from fairmark.cli.main import main
from fairmark.stats import power, special, tlight


@pytest.fixture(autouse=True)
def lean_even_with_scipy_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process has scipy loaded (the reference): without this, lean() would reuse it (special.is_lean)."""
    monkeypatch.setitem(special._state, "reuse_scipy", False)


DFS = [1, 1.05, 1.5, 2, 3, 4.35, 7, 11.3, 30, 99, 101, 250, 1000, 12340, 2e5, 1e6]


def test_student_t_distribution_and_quantile_agree_with_scipy() -> None:
    worst = 0.0
    for df in DFS:
        for t in (-40.0, -12.0, -5.0, -2.5, -1.0, -0.3, 0.0, 0.7, 2.0, 9.0):
            ref = float(sp.stdtr(df, t))
            worst = max(worst, abs(tlight.t_cdf(df, t) - ref) / max(ref, 1e-300))
        for p in (1e-9, 5e-8, 1e-4, 0.025, 0.2, 0.5, 0.8, 0.975, 0.9995, 1 - 1e-8):
            ref = float(sp.stdtrit(df, p))
            got = tlight.t_ppf(df, p)
            worst = max(worst, abs(got - ref) / abs(ref) if ref else abs(got))
    assert worst < 1e-10


def test_chi2_quantiles_and_t_power_agree_with_scipy() -> None:
    p = (np.arange(96) + 0.5) / 96
    for df in DFS:
        ref = sp.chdtri(df, p)
        assert np.max(np.abs(special._gamma_upper_quantiles(df / 2, p) * 2 - ref) / ref) < 1e-10, df
        t_crit = float(sp.stdtrit(df, 0.975))
        nc = np.linspace(0.0, 40.0, 60)
        ref_power = 1 - sp.nctdtr(df, nc, t_crit) + np.nan_to_num(sp.nctdtr(df, nc, -t_crit), nan=0.0)
        lean = special._t_power(df, nc, t_crit)
        finite = np.isfinite(ref_power)  # scipy's nctdtr gives nan at df 99, δ ≈ 38 (where the power is 1)
        assert np.max(np.abs(lean[finite] - ref_power[finite])) < 1e-12, df
        assert np.all(np.abs(lean[~finite] - 1.0) < 1e-12), df


def test_the_mde_factor_is_the_same_bisection_either_way() -> None:
    """Lean: the root found once, the bisection's comparisons replayed against it; scipy: the bisection itself.
    Both end on the same bracket (the upper end differs by the last bits of t_crit at most)."""
    for confidence in (80.0, 95.0, 99.0):
        for df in (3.0, 4.35, 11.3, 57.65, 200.0, 12340.0, 200_000.0):
            general = power._factor(df, confidence, 0.8, False)
            with special.lean():
                lean = power._factor(df, confidence, 0.8, True)
            assert lean == pytest.approx(general, rel=1e-11), (df, confidence)


def _files(tmp_path: Path) -> dict[str, list[str]]:
    rng = np.random.default_rng(31)

    def write(name: str, values) -> str:
        path = tmp_path / name
        path.write_text("".join(f"{float(v)!r}\n" for v in values))
        return str(path)

    big = [write(f"big{k}", rng.normal(100 + 0.1 * k, 2, 100_000)) for k in range(2)]
    seven = [write(f"seven{k}", rng.normal(100 + k, 2, 7)) for k in range(3)]
    three = [write(f"three{k}", [10 + k, 11 + k, 12.5 + k]) for k in range(2)]
    outlier = [write("out0", [*rng.normal(50, 1, 30), 90]), write("out1", rng.normal(51, 1, 30))]
    ticks = [write(f"tick{k}", np.round(rng.normal(100 + k, 3, 200))) for k in range(2)]
    raw = [write(f"raw{k}", rng.normal(0.5 * k, 1, 40)) for k in range(2)]
    blanks = tmp_path / "blanks"
    blanks.write_text("# a comment\n 1.5 x\n2.5\t y\n\n3.5\n4.0\n")
    return {
        "100 000 lines": big,
        "7 lines, 3 files": seven,
        "3 values (df < 3: scipy's power)": three,
        "an outlier (Yuen's t)": outlier,
        "ticks (ties)": ticks,
        "values around 0 (raw scale)": raw,
        "blanks and comments": [str(blanks), seven[0]],
    }


@contextlib.contextmanager
def _general() -> Iterator[None]:
    """special.lean() made a no-op: the compare command takes scipy's functions, as every other command does."""
    original = special.lean
    special.lean = contextlib.nullcontext  # type: ignore[assignment]
    try:
        yield
    finally:
        special.lean = original  # type: ignore[assignment]


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "options", [[], ["-c", "99"], ["--ministat-compat"], ["--better", "higher", "--unit", "s"]]
)
def test_lean_and_general_paths_print_the_same(tmp_path, monkeypatch, options) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    for what, files in _files(tmp_path).items():
        lean = _run(["compare", *options, *files])
        with _general():
            general = _run(["compare", *options, *files])
        assert lean == general, what
        assert lean[0] == 0 and "fairmark (each set vs the first" in lean[1] + lean[2], what


def test_lean_and_general_json_documents_are_equal(tmp_path) -> None:
    """--json: every number, to the last bit or within 1e-9 (the lean t quantile's relative agreement)."""
    for what, files in _files(tmp_path).items():
        code, lean, _ = _run(["compare", "--json", *files])
        with _general():
            code_general, general, _ = _run(["compare", "--json", *files])
        assert code == code_general == 0
        _close(json.loads(lean), json.loads(general), what)


def _close(a: object, b: object, where: str) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-300) or (math.isnan(a) and math.isnan(b)), where
    else:
        assert a == b, where


PROBE = """
import sys
from fairmark.cli.main import main
code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"scipy", "pydantic", "rich", "sqlalchemy"})
print(code, " ".join(heavy) or "-", "numpy.ma" in sys.modules, file=sys.stderr)
"""


def test_compare_of_plain_files_loads_no_scipy_pydantic_or_rich(tmp_path) -> None:
    files = _files(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    for what in ("100 000 lines", "7 lines, 3 files", "an outlier (Yuen's t)"):
        res = subprocess.run(
            [sys.executable, "-c", PROBE, "compare", *files[what]],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert res.stderr.strip().splitlines()[-1] == "0 - False", (what, res.stderr[-2000:])
