"""The one place that writes to the terminal.

Human output goes to stdout; with ``--json`` stdout carries exactly one JSON document and everything human
(progress, notes, warnings) goes to stderr. Colour follows rich's rules: off when ``NO_COLOR`` is set or the
stream is not a terminal, so pipes and CI logs get plain lines.

Every line fits the terminal's width (``COLUMNS``, else the terminal's, else 80 for a pipe): prose is wrapped
at word boundaries with a hanging indent (a path or a URL is never broken), tables are compact (a rule under
the header, no boxes) and fit themselves; preformatted blocks (plots, the 80-column text report) go out as
they are.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import operator
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fairmark import plaintable, prose
from fairmark.plaintable import PlainTable

if TYPE_CHECKING:
    from rich.console import Console as RichConsole
    from rich.table import Table

    from fairmark.plaintable import PlainTable


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    return str(obj)


def _to_devnull(stream: Any) -> None:
    """The reader of `stream` went away (`fairmark check … | head -1`): what is left to write goes to /dev/null,
    so that neither this write nor the interpreter's last flush fails again, and the command ends with the exit
    status it decided (a passing gate must not read as a tripped one under `pipefail`)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):  # a stream without a descriptor (tests)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


# Every character a terminal acts on instead of showing (C0 but newline and tab, DEL, C1), in caret notation as
# `cat -v` shows them: stored text — a tool's output, a bundle's title, a host's answer — must not move the cursor,
# retitle the window or clear the screen of whoever runs `show`.
_CONTROL = {c: f"^{chr(c + 64)}" for c in range(0x20) if c not in (0x09, 0x0A)} | {0x7F: "^?"}
_CONTROL |= {c: "\ufffd" for c in range(0x80, 0xA0)}
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with the control characters a terminal would act on made visible (newline and tab kept)."""
    return text.translate(_CONTROL) if _CONTROL_RE.search(text) else text


# rich.markup.escape's own pattern: a run of backslashes before what rich would read as a tag
_ESCAPE_RE = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def _escape_tag(match: re.Match[str]) -> str:
    backslashes, tag = match.groups()
    return f"{backslashes}{backslashes}\\{tag}"


def escape(text: str) -> str:
    """rich's markup escaped, as rich.markup.escape does it (its two rules, here so that `show` and `compare` of
    plain files do not load rich; tests/test_plaintable.py compares both)."""
    if "[" in text:
        text = _ESCAPE_RE.sub(_escape_tag, text)
    if text.endswith("\\") and not text.endswith("\\\\"):
        return text + "\\"
    return text


@functools.cache
def _rich_class() -> type[RichConsole]:
    from rich.console import Console as RichConsole
    from rich.segment import Segment

    class _Rich(RichConsole):
        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            # the one place all text meets the terminal: rich's own control segments (a status line's cursor
            # moves) and the styles it renders pass, the text never carries a control character
            return super()._render_buffer(
                Segment(printable(text), style, control) if not control else Segment(text, style, control)
                for text, style, control in buffer
            )

        def on_broken_pipe(self) -> None:
            # rich's own handler exits with status 1; fairmark goes on, silently, to its own status
            self.quiet = True
            _to_devnull(self.file)

    return _Rich


_KEYS = {True: "true", False: "false", None: "null"}


def _key(key: Any) -> str:
    """A dict key as json writes it (str, int, float, bool, None; anything else is json's TypeError)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return _KEYS[key]
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return json.dumps(float(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def plain(obj: Any) -> Any:
    """`obj` as JSON data: JSON has no NaN/Infinity, so an undefined statistic is null, never a made-up number;
    tuples and sets are lists, records their `to_dict()`, dates their ISO text. One walk, no intermediate text:
    the run's JSON document holds every trial, and a text copy of it cost 10 MB at 1200 trials (bench/
    start_memory.py)."""
    if isinstance(obj, str) or obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {_key(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    return plain(_json_default(obj))


_ENCODE_STR = json.encoder.encode_basestring_ascii  # json.dumps' own (C) escaping of a string
_FLUSH_PIECES = 4096


def _float_text(x: float) -> str:
    # x - x is 0.0 for a finite float, NaN for an infinite or NaN one (JSON has none of them: null, as plain())
    return float.__repr__(x) if x - x == 0 else "null"


# The text of a scalar of exactly these types, as json.dumps(plain(x)) writes it (a subclass — an IntEnum, a numpy
# float — takes `value`'s general path).
_SCALAR_TEXT: dict[type, Callable[[Any], str]] = {
    str: _ENCODE_STR,
    float: _float_text,
    int: int.__repr__,
    bool: {True: "true", False: "false"}.__getitem__,
    type(None): lambda _: "null",
}
# The same texts by functions written in C, called by `map` without a Python step per value; a float's only once
# the floats are known to be finite (a NaN's repr is "nan": JSON's null).
_C_TEXT: dict[type, Callable[[Any], str]] = {
    **_SCALAR_TEXT,
    float: float.__repr__,
    type(None): "null".format,  # "null", whatever it is given
}
_BY_VALUE = "".format  # the text of an object's member that `value` writes (a container, another type): none
_FLOAT_TEXTS = 20_000  # the most float texts a writer remembers (~2 MB)


class _FloatTexts(dict[float, str]):
    """float → its text, remembered: a run's document holds each of its values several times (a metric's values,
    then each trial's samples and its own wall_s, user_s, sys_s), and float.__repr__ is its costliest
    conversion. A value seen before is found by the dict's own (C) lookup; only a new one comes here. Never a
    zero: 0.0 and -0.0 are equal keys with different texts. Finite floats only (the callers check)."""

    def __missing__(self, x: float) -> str:
        text = float.__repr__(x)
        if x and len(self) < _FLOAT_TEXTS:
            self[x] = text
        return text


_SHAPES = 1024  # the most object shapes a writer remembers (a run's document has a few dozen)


@dataclass(frozen=True)
class _Shape:
    """What the objects of one shape — the same keys, the same type of each member, at one nesting — are
    written with: each member's line start and key (after "{" or ","), its text function, where the floats are
    (known finite before the C functions write them) and the members `value` writes."""

    prefixes: tuple[str, ...]
    texts: tuple[Callable[[Any], str], ...]
    floats: Callable[[list[Any]], tuple[float, ...]] | None  # the float members' values
    by_value: tuple[tuple[int, type], ...]  # (position, type)

    @classmethod
    def of(
        cls, keys: tuple[str, ...], kinds: tuple[type, ...], inner: str, float_text: Callable[[float], str]
    ) -> _Shape:
        texts = tuple(float_text if k is float else _C_TEXT.get(k, _BY_VALUE) for k in kinds)
        floats = [i for i, k in enumerate(kinds) if k is float]
        return cls(
            prefixes=tuple(f"{',' if i else '{'}{inner}{_ENCODE_STR(k)}: " for i, k in enumerate(keys)),
            texts=texts,
            floats=operator.itemgetter(*floats, floats[0]) if floats else None,  # (a tuple even for one)
            by_value=tuple((i, kinds[i]) for i, t in enumerate(texts) if t is _BY_VALUE),
        )


class _IndentedWriter:
    """`obj` written as json.dumps(plain(obj), indent=2, allow_nan=False) writes it, in one walk and without a
    text copy of the whole document: plain()'s conversions are made on the way (`_SCALAR_TEXT`, `_json_default`),
    and the pieces go to `write` in batches. json's own indented encoder is its pure-Python one (the C encoder
    has no indent), a generator per container and a yield per piece: ~120 pieces a trial in a run's document.

    Here an object's members are written by its shape (`_Shape`, worked out once): its scalars' texts by C
    functions mapped over its values, joined with their keys at once — a trial is ~25 scalars, and a Python
    step per member was most of the writer's time; an array of scalars of one type is joined at once too."""

    def __init__(self, write: Any):
        self.write = write
        self.pieces: list[str] = []
        self.shapes: dict[tuple[object, ...], _Shape] = {}
        self.float_text = _FloatTexts().__getitem__  # (a finite float's)

    def value(self, obj: Any, indent: str) -> None:
        """`obj` at the nesting whose line start is `indent` ("\n" plus two spaces a level)."""
        out = self.pieces
        text = _SCALAR_TEXT.get(type(obj))
        if text is not None:
            out.append(text(obj))
        elif isinstance(obj, dict):
            self._object(obj, indent)
        elif isinstance(obj, list | tuple):
            self._array(obj, indent)
        elif isinstance(obj, str):
            out.append(_ENCODE_STR(obj))
        elif isinstance(obj, int):  # (bool has no subclass: True and False are in _SCALAR_TEXT)
            out.append(int.__repr__(obj))
        elif isinstance(obj, float):  # (a numpy float warns at inf - inf)
            out.append(float.__repr__(obj) if math.isfinite(obj) else "null")
        else:
            self.value(_json_default(obj), indent)
        if len(out) >= _FLUSH_PIECES:
            self.flush()

    def _object(self, obj: dict[Any, Any], indent: str) -> None:
        if not obj:
            self.pieces.append("{}")
            return
        values = list(obj.values())
        key = (indent, *obj, *map(type, values))  # (one tuple: its length tells keys from types)
        shape = self.shapes.get(key)
        if shape is None:
            try:
                "".join(obj)  # every key a str (the common case)
            except TypeError:  # (as plain: keys that meet as text merge)
                self._object({_key(k): v for k, v in obj.items()}, indent)
                return
            shape = _Shape.of(tuple(obj), tuple(map(type, values)), indent + "  ", self.float_text)
            if len(self.shapes) < _SHAPES:
                self.shapes[key] = shape
        if shape.floats is not None and not math.isfinite(sum(shape.floats(values))):
            self._members(obj, indent)  # a NaN or an infinity among them (a finite sum: all are finite)
            return
        out = self.pieces
        parts = list(map(operator.add, shape.prefixes, map(operator.call, shape.texts, values)))
        start, inner = 0, indent + "  "
        for i, kind in shape.by_value:
            out.append("".join(parts[start : i + 1]))
            if kind is dict:
                self._object(values[i], inner)
            elif kind is list:
                self._array(values[i], inner)
            else:
                self.value(values[i], inner)
            start = i + 1
        out.append("".join(parts[start:]) + indent + "}")

    def _members(self, obj: dict[str, Any], indent: str) -> None:
        """A (non-empty) object a member at a time."""
        out, inner, sep = self.pieces, indent + "  ", "{"
        for key, item in obj.items():
            out.append(f"{sep}{inner}{_ENCODE_STR(key)}: ")
            self.value(item, inner)
            sep = ","
        out.append(indent + "}")

    def _array(self, obj: list[Any] | tuple[Any, ...], indent: str) -> None:
        if not obj:
            self.pieces.append("[]")
            return
        out, inner = self.pieces, indent + "  "
        kinds = set(map(type, obj))
        kind = kinds.pop() if len(kinds) == 1 else None
        text = _C_TEXT.get(kind) if kind is not float else self.float_text  # type: ignore[arg-type]
        if kind is float and not math.isfinite(sum(obj)):  # (a finite sum: all are finite)
            text = None
        if text is not None:  # scalars of one type: one piece
            out.append(f"[{inner}{(',' + inner).join(map(text, obj))}{indent}]")
            return
        sep, member = "[", self._object if kind is dict else self.value
        for item in obj:
            out.append(sep + inner)
            member(item, inner)
            sep = ","
            if len(out) >= _FLUSH_PIECES:
                self.flush()
        out.append(indent + "]")

    def flush(self) -> None:
        self.write("".join(self.pieces))
        self.pieces.clear()


def dumps(obj: Any, *, indent: int | None = 2) -> str:
    return json.dumps(plain(obj), indent=indent, allow_nan=False)


class Console:
    def __init__(self) -> None:
        self.json_mode = False
        self.quiet = False
        self._streams: tuple[object, object, bool, str | None] | None = None
        self._out: RichConsole | None = None
        self._err: RichConsole | None = None
        self._line_width = 0

    def _current(self) -> None:
        """(Re)bind to the current sys.stdout/sys.stderr and NO_COLOR: tests and embedding code swap streams,
        and a console left bound to a closed stream must never be written to."""
        key = (sys.stdout, sys.stderr, bool(os.environ.get("NO_COLOR")), os.environ.get("COLUMNS"))
        if key != self._streams:
            no_color = key[2]
            # soft_wrap: rich never breaks a line itself (it would break paths and plots); prose is wrapped
            # here, at word boundaries, and tables fit themselves to the width.
            rich_console = _rich_class()
            self._out = rich_console(file=sys.stdout, no_color=no_color, highlight=False, soft_wrap=True)
            self._err = rich_console(
                file=sys.stderr, no_color=no_color, highlight=False, stderr=True, soft_wrap=True
            )
            self._streams = key
            self._line_width = self._wrap_width(self._err)

    @property
    def out(self) -> RichConsole:
        self._current()
        assert self._out is not None
        return self._out

    @property
    def err(self) -> RichConsole:
        self._current()
        assert self._err is not None
        return self._err

    def configure(self, *, json_mode: bool = False, quiet: bool = False) -> None:
        self.json_mode, self.quiet = json_mode, quiet

    @property
    def human(self) -> RichConsole:
        """Where human-readable output goes: stdout normally, stderr in --json mode."""
        return self.err if self.json_mode else self.out

    @property
    def interactive(self) -> bool:
        return self.err.is_terminal and not os.environ.get("NO_COLOR") and not os.environ.get("CI")

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if self.json_mode and not kwargs.pop("force", False):
            return
        if not objects and not kwargs and _plain_wrap_width(sys.stdout) is not None:
            self._write(sys.stdout, "\n")  # a blank line, without loading rich
            return
        self._markup(sys.stdout, objects, kwargs)

    def _markup(self, stream: Any, objects: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """rich's print of `objects` to `stream` (stdout or stderr); a line of markup to a pipe or a file is
        written as rich writes it (plaintable.plain_markup) without loading rich — `show` prints ~20 of them."""
        if len(objects) == 1 and isinstance(objects[0], str) and kwargs.keys() <= {"highlight"}:
            text = plaintable.plain_markup(objects[0]) if _plain_wrap_width(stream) is not None else None
            if text is not None:
                self._write(stream, text + "\n")
                return
        (self.out if stream is sys.stdout else self.err).print(*objects, **kwargs)

    @property
    def width(self) -> int:
        """Columns of the human output: COLUMNS, the terminal's width, or 80 when it is not a terminal."""
        plain = _plain_width(sys.stderr if self.json_mode else sys.stdout)
        return plain if plain is not None else self.human.width

    @staticmethod
    def _wrap_width(stream: RichConsole) -> int:
        """Where prose is wrapped: at the terminal's width, or at COLUMNS when it is set; a pipe or a file
        without COLUMNS gets whole lines, 0 (a CI log stays greppable; tables still fit 80 columns)."""
        return stream.width if os.environ.get("COLUMNS") or stream.is_terminal else 0

    def _human_wrap_width(self) -> int:
        """_wrap_width of the human stream, without loading rich when the answer does not need it."""
        plain = _plain_wrap_width(sys.stderr if self.json_mode else sys.stdout)
        return plain if plain is not None else self._wrap_width(self.human)

    @property
    def out_file(self) -> Any:
        """stdout, for text written as it is (a plot's tabs and long lines), without loading rich."""
        return sys.stdout

    @property
    def err_file(self) -> Any:
        return sys.stderr

    def wrap(self, text: str, *, first: int = 0, indent: str | None = None, width: int | None = None) -> str:
        """`text` wrapped at word boundaries to the width (0: not wrapped); each line's continuation is indented
        two spaces past its own indent (or `indent`). `first`: columns already taken on the first line."""
        width = self._human_wrap_width() if width is None else width
        if not width:
            return text
        out = []
        for line in text.split("\n"):
            lead = line[: len(line) - len(line.lstrip(" "))]
            wrapped = prose.wrap(
                line.strip(" "),
                width,
                initial_indent=" " * first + lead,
                subsequent_indent=(lead + "  ") if indent is None else indent,
                break_long_words=False,
                break_on_hyphens=False,
            ) or [""]
            wrapped[0] = wrapped[0][first:]
            out += wrapped
            first = 0
        return "\n".join(out)

    def text(self, line: str) -> None:
        """A plain line (no markup interpretation), wrapped to the width; suppressed in --json mode."""
        if self.json_mode:
            return
        plain = _plain_wrap_width(sys.stdout)
        if plain is not None and _plain_text(line):  # what rich would write, without loading it
            self._write(sys.stdout, self.wrap(line, width=plain) + "\n")
        else:
            self._markup(sys.stdout, (escape(self.wrap(line)),), {"highlight": False})

    def block(self, lines: str | list[str]) -> None:
        """Preformatted lines (a plot, the 80-column text report), printed as they are; suppressed in
        --json mode."""
        if not self.json_mode:
            text = lines if isinstance(lines, str) else "\n".join(lines)
            self._markup(sys.stdout, (escape(text),), {"highlight": False})

    @staticmethod
    def table(
        *columns: str, wrap: tuple[str, ...] = (), right: tuple[str, ...] = (), **options: Any
    ) -> PlainTable:
        """A compact table: a rule under the header, no boxes, one space either side of each column; its title,
        if any, printed above it by `print_table` (wrapped like prose, not squeezed into the columns). Only the
        columns named in `wrap` may wrap (prose); the others keep each value on one line."""
        return PlainTable(columns, wrap, right, options)

    @staticmethod
    def natural_width(columns: list[str], rows: list[list[str]]) -> int:
        """Columns a compact table needs to show every value on one line (two spaces between columns)."""
        widths = [max(len(col), *(len(row[i]) for row in rows)) for i, col in enumerate(columns)]
        return sum(widths) + 2 * (len(widths) - 1)

    def print_table(self, table: PlainTable, title: str | None = None, *, stderr: bool = False) -> None:
        """A table under its title (plain text, wrapped); the title in bold on a terminal."""
        if self.json_mode and not stderr:
            return
        stream = sys.stderr if stderr else sys.stdout
        plain = _plain_wrap_width(stream)
        # a pipe or a file: rich's layout, when this knows it, written without rich (plaintable.py)
        lines = None if plain is None else table.lines(plain or 80)
        if lines is not None and (not title or _plain_text(title)):
            head = [self.wrap(title)] if title else []
            self._write(stream, "\n".join([*head, *lines, ""]))
            return
        target = self.err if stderr else self.out
        if title:
            target.print(f"[bold]{escape(self.wrap(title))}[/bold]", highlight=False)
        rich_table = table.as_rich()
        fit(rich_table, target.width)
        target.print(rich_table)

    def line(self, text: str, indent: str = "       ") -> None:
        """A plain line on stderr, written without rich's rendering: the per-trial log of a plan of thousands
        of millisecond trials must cost microseconds per line, not a fifth of a millisecond. Wrapped (under
        `indent`) only when longer than a terminal's width."""
        err = self.err
        width = self._line_width
        if width and len(text) > width:
            text = self.wrap(text, indent=indent, width=width)
        self._write(err.file, text + "\n")

    def _err_wrap_width(self) -> int:
        """_wrap_width of stderr, without loading rich when it is a pipe or a file."""
        plain = _plain_wrap_width(sys.stderr)
        return plain if plain is not None else self._wrap_width(self.err)

    def _prefixed(self, prefix: str, style: str, message: str, indent: str = "  ") -> None:
        wrapped = self.wrap(message, first=len(prefix) + 1, indent=indent, width=self._err_wrap_width())
        self._markup(sys.stderr, (f"[{style}]{prefix}[/] {escape(wrapped)}",), {"highlight": False})

    def note(self, message: str) -> None:
        if not self.quiet:
            self._prefixed("fairmark:", "dim", message)

    def warn(self, message: str) -> None:
        self._prefixed("fairmark: warning:", "yellow", message)

    def error(self, message: str, hint: str | None = None) -> None:
        self._prefixed("fairmark: error:", "bold red", message)
        if hint:
            hint = self.wrap(hint, first=8, indent="        ", width=self._err_wrap_width())
            self._markup(sys.stderr, (f"  [dim]hint:[/dim] {escape(hint)}",), {})

    def emit_json(self, obj: Any) -> None:
        # Written as it is encoded (no text copy of a document that holds every trial), in batches: json.dump
        # writes each of its small pieces (~120 a trial) to the stream, a third of the time it takes.
        try:
            writer = _IndentedWriter(sys.stdout.write)
            writer.value(obj, "\n")
            writer.flush()
        except BrokenPipeError:
            _to_devnull(sys.stdout)
            return
        self._write(sys.stdout, "\n")

    @staticmethod
    def _write(stream: Any, text: str) -> None:
        try:
            stream.write(text)
            stream.flush()
        except BrokenPipeError:
            _to_devnull(stream)

    @contextlib.contextmanager
    def status(self, message: str) -> Iterator[None]:
        if self.interactive:
            with self.human.status(escape(message)):
                yield
        else:
            self.note(message)
            yield


_RICH_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")


def _plain_wrap_width(stream: Any) -> int | None:
    """Console._wrap_width where it is plain (not a terminal, no variable that changes rich's mind, COLUMNS unset
    or a number): 0, or COLUMNS; None where rich's own answer is needed (a terminal's size)."""
    if any(name in os.environ for name in _RICH_ENV):
        return None
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    columns = os.environ.get("COLUMNS")
    if not columns:
        return 0
    return int(columns) if columns.isdigit() and int(columns) else None  # rich prints nothing at COLUMNS=0


def _plain_width(stream: Any) -> int | None:
    """rich's width of a console on `stream` where _plain_wrap_width knows it plain, as rich's Console.size finds
    it: COLUMNS, else the size of the first of stdin, stdout and stderr that is a terminal (`show | less`), else 80;
    None where rich is asked (a terminal)."""
    if _plain_wrap_width(stream) is None:
        return None
    columns = os.environ.get("COLUMNS")
    if columns:
        return int(columns)
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns or 80
        except (AttributeError, ValueError, OSError):  # not a terminal
            continue
    return 80


def _plain_text(text: str) -> bool:
    """`text` printed by rich (escaped) is `text` itself: no backslash (escape's own), no emoji code, no control
    character; its brackets are escaped and come back as they were."""
    return plaintable.plain(text.replace("[", "").replace("\n", ""))


def fit(table: Table, width: int) -> None:
    """Give a compact table's columns widths that fit `width`: the one-line columns their widest value, the
    columns that may wrap what is left (in proportion to their widest value). Rich alone would drop whole
    columns, and with them numbers, when a table is too wide; when even the one-line columns do not fit, every
    column may fold."""
    from rich.text import Text

    cols = table.columns
    natural = [
        max(
            Text.from_markup(str(c.header)).cell_len, *(Text.from_markup(str(x)).cell_len for x in c.cells), 1
        )
        for c in cols
    ]
    room = width - 2 * (len(cols) - 1)
    if sum(natural) <= room:
        return
    flexible = [i for i, c in enumerate(cols) if not c.no_wrap]
    fixed = sum(n for i, n in enumerate(natural) if i not in flexible)
    left = room - fixed
    if not flexible or left < 8 * len(flexible):
        for c in cols:
            c.no_wrap, c.overflow = False, "fold"
        return
    widths = {i: min(8, natural[i]) for i in flexible}
    spare = left - sum(widths.values())
    while (
        spare > 0
    ):  # a column at a time, to the narrowest not yet at its widest value: short ones stay whole
        short = [k for k in flexible if widths[k] < natural[k]]
        if not short:
            break
        widths[min(short, key=lambda k: widths[k])] += 1
        spare -= 1
    for i in flexible:
        cols[i].width, cols[i].overflow = widths[i], "fold"
        cols[i]._cells = [_kept_whole(cell, widths[i]) for cell in cols[i]._cells]


def _kept_whole(cell: Any, width: int) -> Any:
    """A plain cell of a column that wraps, its lines made by prose.wrap where rich's own wrapping (at every
    space) would split a value from its unit ("0 =" above "the six default sizes"). Markup, and a word wider
    than the column (rich folds it its own way), are left to rich."""
    if not isinstance(cell, str) or "[" in cell or "\n" in cell or not prose.joins(cell):
        return cell
    lines = prose.wrap(cell, width, break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines) if all(len(line) <= width for line in lines) else cell


console = Console()
