"""What `fairmark compare FILE...` shows (cli/compare.py reads the files and judges them): ministat's table and
plot on stdout, byte for byte ministat's with --ministat-compat; fairmark's verdict lines after it (or on stderr);
the --json document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from fairmark.console import console
from fairmark.report import ministat
from fairmark.report.samples import sample_warnings
from fairmark.stats import describe
from fairmark.stats.arrays import Values
from fairmark.stats.describe import MAX_ABS, MAX_ABS_TEXT


class DataSet(Protocol):
    """A file's values as cli/compare.py read them (its DataFile)."""

    @property
    def name(self) -> str: ...
    @property
    def values(self) -> Values: ...


def json_doc(
    data: Sequence[DataSet], judged: Sequence[Any], *, confidence: float, ministat_compat: bool
) -> dict:
    """`compare --json`: each data set described, each comparison with its q-value."""
    return {
        "confidence": confidence,
        "ministat_compat": ministat_compat,
        "datasets": [_dataset_json(d, confidence) for d in data],
        "comparisons": [{**j.comparison.to_dict(), "q_value": j.q_value} for j in judged],
    }


def _dataset_json(df: DataSet, confidence: float) -> dict:
    s = describe(df.values, confidence)
    return {"name": df.name, **s.to_dict(), "warnings": sample_warnings(df.values)}


def emit_human(files, judged, *, width, plot, test, separate, compat, confidence, relative=None) -> None:
    """ministat's part on stdout; fairmark's verdicts after it, or on stderr with --ministat-compat (stdout is
    then byte for byte what ministat prints)."""
    comparisons = [j.comparison for j in judged]
    datasets = [(f.name, f.values) for f in files]
    lines = ministat.render(
        datasets,
        comparisons,
        width=width,
        plot=plot,
        relative=test if relative is None else relative,
        separate_bars=separate,
        ministat_compat=compat,
        confidence=confidence,
    )
    out = console.out_file  # verbatim: ministat's tabs and long plot lines must survive (rich would expand)
    out.write("\n".join(lines) + "\n")
    out.flush()
    if not test:
        return
    if compat:
        out = console.err_file
    extra = [(f, sample_warnings(f.values)) for f in files]
    said = []  # fairmark's own lines: prose, wrapped to a terminal's width like every other view's
    if comparisons or any(w for _, w in extra):
        said.append(
            ("" if compat else "\n") + "fairmark (each set vs the first; its own verdict, Welch's t on the "
            "logarithms where every value is positive — Yuen's trimmed t where outliers or the rank test call for "
            "it —, with a Mann-Whitney U cross-check):"
        )
    for k, c in enumerate(comparisons, start=1):
        said.append(f"{ministat.SYMBOLS[k + 1]} " + "\n".join(ministat.verdict_lines(c)))
    if len(comparisons) > 1:
        qs = ", ".join(f"{ministat.SYMBOLS[k + 2]} {j.q_value:.2g}" for k, j in enumerate(judged))
        said.append(
            f"  {len(comparisons)} comparisons: Benjamini-Hochberg q-values (false discovery rate) {qs}"
        )
    said += [f"  {f.name}: {text}" for f, warnings in extra for text in warnings]
    for text in said:
        out.write(console.wrap(text) + "\n")
    out.flush()


def ministat_only(data, width, *, plot, test, separate, confidence) -> None:
    """--ministat-compat with values past 1e300: ministat's bytes on stdout; fairmark says on stderr why it
    gives no verdict of its own (its sums would overflow, as ministat's do)."""
    emit_human(
        data,
        [],
        width=width,
        plot=plot,
        test=False,
        separate=separate,
        compat=True,
        confidence=confidence,
        relative=test,
    )
    big = next(d for d in data if np.max(np.abs(d.values)) > MAX_ABS)
    console.err_file.write(
        console.wrap(
            f"fairmark: no verdict of its own: {big.name} holds values larger in magnitude than "
            f"{MAX_ABS_TEXT}, past which sums overflow (ministat's table above is its own arithmetic)"
        )
        + "\n"
    )


def not_judged(files: Sequence[tuple[str, int]], least: int) -> None:
    """The files left out for too few values (name, count), one line each on stderr: the others are judged."""
    for name, count in files:
        console.err.print(
            console.wrap(f"{name}: {count} value(s): cannot be judged (at least {least} are needed)"),
            highlight=False,
        )
