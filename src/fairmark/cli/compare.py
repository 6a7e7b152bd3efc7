"""`fairmark compare FILE...`: ministat's input rules, table and plot, then fairmark's verdict lines."""

from __future__ import annotations

import math
import os
import re
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO, Literal

import click
import numpy as np

from fairmark.cli.common import common_options
from fairmark.console import console
from fairmark.errors import InputError, UsageError
from fairmark.report import ministat
from fairmark.report.compare_files import emit_human, json_doc, ministat_only, not_judged
from fairmark.stats import special
from fairmark.stats.arrays import Floats, Values
from fairmark.stats.describe import MAX_ABS, MAX_ABS_TEXT
from fairmark.verdict.judge import MIN_VALUES
from fairmark.verdict.pairs import judge_files

# What a number looks like in a data file: decimal, optional exponent. NaN, infinities, hex and "1_000"
# (which Python's float() would take) are refused: none of them is a measurement.
NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


@dataclass(frozen=True)
class DataFile:
    name: str
    values: Values  # as read (a tuple), or converted once to an array for the statistics


def parse_lines(
    lines: Iterable[str],
    name: str,
    *,
    column: int = 1,
    delimiters: str = " \t",
    limit: float = MAX_ABS,
    least: int = MIN_VALUES,
) -> DataFile:
    """ministat's rules: split on any delimiter character (runs count as one), a token starting with `#` ends
    the line, lines without a value in `column` are skipped; anything else in that column must be a number
    of magnitude at most `limit` (ministat's own mode takes every finite double)."""
    split = re.compile("[" + re.escape(delimiters) + "]+") if delimiters else None
    values, last = [], 0
    for last, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if split is None or split.search(line) is None:  # one token (the usual file): no splitting to do
            token = line if line and column == 1 and not line.startswith("#") else None
        else:
            token = _column_token([t for t in split.split(line) if t], column)
        if token is None:
            continue
        token = token.lstrip()  # like strtod: leading blanks are fine (with -d , a token may start with one)
        if not NUMBER.fullmatch(token):
            raise InputError(f"{name}:{last}: column {column}: {token!r} is not a number")
        value = float(token)
        if not abs(value) <= limit:  # beyond the largest double, or so large that sums of them overflow
            raise InputError(_too_large(name, last, column, token, value))
        values.append(value)
    if len(values) < least:
        raise InputError(
            f"{name}:{last}: {len(values)} value(s) in column {column}; at least {MIN_VALUES} are needed",
            hint="one value per line; `#` starts a comment; -C picks the column, -d the delimiters",
        )
    return DataFile(name, tuple(values))


def _too_large(name: str, line: int, column: int, token: str, value: float) -> str:
    why = "beyond the largest double" if math.isinf(value) else f"larger in magnitude than {MAX_ABS_TEXT}"
    return (
        f"{name}:{line}: column {column}: {token!r} is {why}; fairmark takes values up to {MAX_ABS_TEXT} "
        "(past it, sums of them overflow)"
    )


def _column_token(tokens: list[str], column: int) -> str | None:
    for i, token in enumerate(tokens, start=1):
        if token.startswith("#"):
            return None
        if i == column:
            return token
    return None


# A file of one number per line (the usual case) is checked in one pass instead of line by line in Python: only
# digits, signs, dots, e/E and blanks; no line with two tokens, no empty line; then float() must take every token.
# Anything else takes parse_lines' path. Without a blank in it (the usual file) the check is one bytes.translate
# (100 000 lines: 1 ms); with blanks, three regular expressions (60 ms).
NOT_PLAIN = (re.compile(r"[^0-9eE+\-. \t\n]"), re.compile(r"[ \t]\S"), re.compile(r"(?:\A|\n)[ \t]*\n"))
_NUMBER_BYTES = b"0123456789eE+-.\n"


def _plain(text: str) -> bool:
    if text.isascii():
        data = text.encode("ascii")
        if not data.translate(None, _NUMBER_BYTES):  # digits, signs, dots, e and newlines only
            return not data.startswith(b"\n") and b"\n\n" not in data
    return not any(pattern.search(text) for pattern in NOT_PLAIN)


def parse_text(
    text: str,
    name: str,
    *,
    column: int = 1,
    delimiters: str = " \t",
    limit: float = MAX_ABS,
    least: int = MIN_VALUES,
) -> DataFile:
    """A plain file's values (an array: converted by numpy in one call, as float() would, 100 000 values in
    20 ms instead of 100 ms); fewer than `least` is an error naming the file."""
    if column == 1 and set(delimiters) >= {" ", "\t"} and _plain(text):
        try:
            values = _plain_values(text)
        except ValueError:
            values = np.empty(0)
        if values.size >= max(least, 1) and bool(np.all(np.abs(values) <= limit)):
            return DataFile(name, values)
    lines = text.splitlines(keepends=True)
    return parse_lines(lines, name, column=column, delimiters=delimiters, limit=limit, least=least)


_CHUNK = 1 << 18  # characters of a file converted at a time: ~20 000 values, their strings 1 MB, not 6


def _plain_values(text: str) -> Floats:
    """The numbers of a plain file, converted by numpy as float() would (ValueError: a token is not a number), a
    chunk of lines at a time, so that the strings of 100 000 tokens never exist at once."""
    pieces, start = [], 0
    while start < len(text):
        end = text.find("\n", start + _CHUNK)
        end = len(text) if end < 0 else end + 1
        pieces.append(np.array(text[start:end].split(), dtype=np.float64))
        start = end
    return np.concatenate(pieces) if pieces else np.empty(0)


_BLOCK = 1 << 18  # bytes of a file read and converted at a time


def read_plain(path: str) -> Floats | None:
    """The values of a file of one number per line (as float() reads them), a block at a time, so that the text
    of 100 000 lines (2 MB, and 5 MB more as tokens) never exists at once; None when the file is anything else,
    cannot be read, or is standard input: then read_text and parse_text take it and name what is wrong."""
    if path == "-":
        return None
    try:
        with open(path, "rb") as fh:  # not pathlib: with urllib.parse and ipaddress, 4 ms of the start
            pieces = _plain_blocks(fh)
    except OSError:
        return None
    return np.concatenate(pieces) if pieces else None


def _plain_blocks(fh: BinaryIO) -> list[Floats] | None:
    pieces, carry = [], b""
    while True:
        block = fh.read(_BLOCK)
        data = carry + block
        cut = data.rfind(b"\n") + 1 if block else len(data)
        data, carry = data[:cut], data[cut:]
        if data:
            values = _plain_block(data)
            if values is None:
                return None
            pieces.append(values)
        if not block:
            return pieces


def _plain_block(data: bytes) -> Floats | None:
    """Whole lines of one number each (a block starts after a newline: a leading one is an empty line), converted
    by numpy's parser (as float() would, bit for bit: 300 000 tokens compared); None for anything else."""
    if data.translate(None, _NUMBER_BYTES) or data.startswith(b"\n") or b"\n\n" in data:
        return None
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter(
                "error"
            )  # numpy warns, and stops, at a token it cannot read ("1.2.3", "1e")
            values = np.fromstring(data.decode("ascii"), dtype=np.float64, sep="\n")
    except (ValueError, DeprecationWarning):
        return None
    return values if values.size == lines else None


def read_file(path: str, *, column: int, delimiters: str, limit: float = MAX_ABS) -> DataFile:
    name, text = read_text(path)
    return parse_text(text, name, column=column, delimiters=delimiters, limit=limit)


def read_text(path: str) -> tuple[str, str]:
    """(name, text) of a data file; `-` is standard input."""
    if path == "-":
        return "<stdin>", sys.stdin.read()
    try:
        with open(path, encoding="utf-8", errors="strict") as fh:
            return path, fh.read()
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a text file ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc


def _labels(names: list[str]) -> list[str]:
    """Names for the verdict sentences: file names without directories when that keeps them apart."""
    short = [os.path.basename(n.rstrip("/")) or n for n in names]  # Path(n).name
    return short if len(set(short)) == len(set(names)) else names


def _read_all(
    texts: list[tuple[str, str]], streamed: list[Floats | None], column: int, delimiters: str, compat: bool
) -> list[DataFile]:
    """Each file's values: read already (`streamed`, within the limit), or parsed from its text."""
    # ministat's own mode takes every finite double, as ministat does (its sums may overflow: it prints nan)
    limit = sys.float_info.max if compat else MAX_ABS
    files = []
    for (name, text), values in zip(texts, streamed, strict=True):
        if values is not None and bool(np.all(np.abs(values) <= limit)):
            files.append(DataFile(name, values))
            continue
        if values is not None:  # a value past the limit: the text again, for the error naming its line
            text = read_text(name)[1]
        files.append(parse_text(text, name, column=column, delimiters=delimiters, limit=limit, least=0))
    read = _judgeable(files)
    texts.clear()  # read: the text of 100 000 lines (2 MB a file) is not kept while the statistics run
    # one array per file, converted once (100 000 values: every later step would convert the tuple again)
    return [DataFile(f.name, np.asarray(f.values, dtype=np.float64)) for f in read]


def _judgeable(files: list[DataFile]) -> list[DataFile]:
    """The files with enough values to judge; each other one said so on stderr (the first must have them, and
    one other at least, as before: then the command fails naming the file)."""
    short = [f for f in files[1:] if len(f.values) < MIN_VALUES]
    if len(files[0].values) < MIN_VALUES or len(short) == len(files) - 1 > 0:
        bad = files[0] if len(files[0].values) < MIN_VALUES else short[0]
        raise InputError(
            f"{bad.name}: {len(bad.values)} value(s); at least {MIN_VALUES} are needed",
            hint="one value per line; `#` starts a comment; -C picks the column, -d the delimiters",
        )
    not_judged([(f.name, len(f.values)) for f in short], MIN_VALUES)
    return [f for f in files if len(f.values) >= MIN_VALUES]


def _other_tools(texts: list[tuple[str, str]], column: int, delimiters: str) -> list | None:
    """Each file as another tool's results (go test -bench, hyperfine …: fairmark.formats), or None when they
    are plain files of numbers. A file of one number per line never loads the readers (compare's start)."""
    if all(_plain(text) for _, text in texts):
        return None
    from fairmark.formats import parse_results  # LAZY_FOR_START: plain files never load the readers

    results = [parse_results(text, name) for name, text in texts]
    if all(r is None for r in results):
        return None
    if column != 1 or delimiters != " \t":  # -C 3 on Go's output pooled every benchmark into one sample
        raise UsageError(
            "-C and -d pick a column of plain files; these are another tool's results, whose benchmarks and "
            "units fairmark reads and judges one by one (leave -C and -d out)"
        )
    plain = [name for (name, _), r in zip(texts, results, strict=True) if r is None]
    if plain:
        tools = sorted({r.tool for r in results if r is not None})
        raise UsageError(
            f"{plain[0]} is a plain file of numbers but the others are {' and '.join(tools)} output; "
            "compare files of one kind"
        )
    return results


def _compare_other_tools(results: list, confidence: float) -> None:
    from dataclasses import replace

    from fairmark.report import series_compare  # LAZY_FOR_START

    labels = _labels([r.path for r in results])
    results = [replace(r, path=label) for r, label in zip(results, labels, strict=True)]
    rows = series_compare.compare_results(results, confidence=confidence)
    if console.json_mode:
        console.emit_json({"confidence": confidence, **series_compare.to_json(results, rows)})
        return
    series_compare.render(results, rows, confidence=confidence)


@click.command("compare")
@click.argument("files", nargs=-1, metavar="FILE...")
@click.option(
    "-C", "--column", type=click.IntRange(min=1), default=1, show_default=True, help="Column to use."
)
@click.option(
    "-d", "--delimiters", default=" \t", help="Column delimiter characters (default space and tab)."
)
@click.option(
    "-c",
    "--confidence",
    type=click.FloatRange(0, 100, min_open=True, max_open=True),
    default=95.0,
    show_default=True,
    help="Confidence level in percent (ministat's: 80 90 95 98 99 99.5).",
)
@click.option(
    "--ministat-compat",
    is_flag=True,
    help="Print exactly what ministat 20150715 prints (its arithmetic, its 99.5% that is really 99.8%, its "
    "even-N median, its plot height); fairmark's verdicts go to stderr.",
)
@click.option(
    "-w",
    "--width",
    type=click.IntRange(min=3),
    default=ministat.DEFAULT_WIDTH,
    show_default=True,
    help="Width of the plot in characters.",
)
@click.option("-A", "--no-plot", is_flag=True, help="Leave out the ASCII plot (ministat's -A).")
@click.option(
    "-n",
    "--no-test",
    is_flag=True,
    help="Summary statistics only: no plot and no comparison (ministat's -n).",
)
@click.option("-s", "--separate-bars", is_flag=True, help="One mean/median/stddev bar line per data set.")
@click.option(
    "--better",
    type=click.Choice(["lower", "higher"]),
    default="lower",
    show_default=True,
    help="Which direction is an improvement (times: lower; throughput: higher).",
)
@click.option("--unit", default="", help="Unit of the values, for the verdict sentences (e.g. s, MB/s).")
@common_options
def compare(
    files: tuple[str, ...],
    column: int,
    delimiters: str,
    confidence: float,
    ministat_compat: bool,
    width: int,
    no_plot: bool,
    no_test: bool,
    separate_bars: bool,
    better: str,
    unit: str,
) -> None:
    """Compare data files with one value per line, like ministat: each file against the first
    (up to 7; `-` or no file reads standard input).

    Prints ministat's table and plot (same numbers as ministat), then fairmark's verdict: the difference in
    percent with its confidence interval, Welch's CI of the ratio and a Mann-Whitney U cross-check.

    Other tools' files are read as they are — `go test -bench` output, hyperfine --export-json, pyperf and Google
    Benchmark JSON, criterion's sample.json — and judged per benchmark and unit (benchstat's layout)."""
    if confidence < 1:  # 0.95 as scipy and R write it: "proven at 0.95% confidence" would prove anything
        raise UsageError(
            f"--confidence {confidence:g} is a fraction; the confidence is in percent: {100 * confidence:g}"
        )
    paths = list(files) or ["-"]
    # Files of one number per line are read a block at a time (the usual case: its text is never held whole)
    lean = column == 1 and set(delimiters) >= {" ", "\t"}
    streamed = [read_plain(p) if lean else None for p in paths]
    texts = [read_text(p) if v is None else (p, "") for p, v in zip(paths, streamed, strict=True)]
    results = _other_tools(texts, column, delimiters)
    if results is not None:
        return _compare_other_tools(results, confidence)
    if len(paths) > ministat.MAX_DATASETS:
        raise UsageError(f"{len(paths)} files given; at most {ministat.MAX_DATASETS} can be compared at once")

    with special.lean():  # plain numbers, ministat's job: no scipy (stats.special says why and how it agrees)
        _compare_plain(
            (texts, streamed),
            (column, delimiters),
            confidence=confidence,
            ministat_compat=ministat_compat,
            view=(width, not (no_plot or no_test), not no_test, separate_bars),
            better="higher" if better == "higher" else "lower",
            unit=unit,
        )


def _compare_plain(
    sources: tuple[list[tuple[str, str]], list[Floats | None]],
    columns: tuple[int, str],
    *,
    confidence: float,
    ministat_compat: bool,
    view: tuple[int, bool, bool, bool],
    better: Literal["lower", "higher"],
    unit: str,
) -> None:
    """Files of plain numbers: ministat's table and plot, then every file judged against the first."""
    width, plot, test, separate = view
    data = _read_all(*sources, *columns, ministat_compat and not console.json_mode)
    if ministat_compat and any(np.max(np.abs(d.values)) > MAX_ABS for d in data):
        return ministat_only(data, width, plot=plot, test=test, separate=separate, confidence=confidence)
    labels = _labels([d.name for d in data])
    judged = judge_files(
        [d.values for d in data],
        labels,
        better=better,
        unit=unit,
        confidence=confidence,
        ministat_compat=ministat_compat,
    )
    if console.json_mode:
        console.emit_json(json_doc(data, judged, confidence=confidence, ministat_compat=ministat_compat))
        return
    emit_human(
        data,
        judged,
        width=width,
        plot=plot,
        test=test,
        separate=separate,
        compat=ministat_compat,
        confidence=confidence,
    )


commands = [compare]
