"""TOML → Plan. Every error names the file, the line and the key, before anything runs or is written."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from fairmark.errors import PlanError
from fairmark.plan.kinds import host_refusals
from fairmark.plan.model import EnvValue, Plan
from fairmark.plan.schedule import cells_of, expand_sweep_values
from fairmark.plan.shellwords import shell_programs

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
# A key's place in the TOML document: table and key names, and an element's index in an array of tables.
KeyPath: TypeAlias = tuple[str | int, ...]
# A TOML document as tomllib gives it (tables, arrays and scalars, dates among them).
TomlTable: TypeAlias = dict[str, object]

_KEY = re.compile(
    r"""^\s*((?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+)(?:\s*\.\s*(?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+))*)\s*="""
)


@dataclass(frozen=True)
class LoadedPlan:
    plan: Plan
    path: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def _split_key(dotted: str) -> list[str]:
    parts = re.findall(r""""([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+)""", dotted)
    return [a or b or c for a, b, c in parts]


class Locator:
    """Maps a key path such as ("workload", 1, "timeout_s") to its line in the TOML text.

    tomllib keeps no positions, so this follows table headers and `key =` lines; a nested value inside an
    inline table maps to the line of its enclosing key (the longest known prefix)."""

    def __init__(self, text: str):
        self.lines: dict[KeyPath, int] = {}
        counters: dict[KeyPath, int] = {}
        table: KeyPath = ()
        for no, line in enumerate(text.splitlines(), start=1):
            header = _HEADER.match(line)
            if header:
                keys = _split_key(header.group(2))
                table = self._table_path(keys, header.group(1) == "[[", counters)
                self.lines.setdefault(table, no)
                continue
            key = _KEY.match(line)
            if key:
                self.lines.setdefault(table + tuple(_split_key(key.group(1))), no)

    def _table_path(self, keys: list[str], is_array: bool, counters: dict[KeyPath, int]) -> KeyPath:
        path: KeyPath = ()
        for i, k in enumerate(keys):
            path = (*path, k)
            last = i == len(keys) - 1
            if last and is_array:
                counters[path] = counters.get(path, -1) + 1
                path = (*path, counters[path])
            elif path in counters:  # a sub-table of the current element of an array of tables
                path = (*path, counters[path])
        return path

    def line(self, loc: KeyPath) -> int:
        for end in range(len(loc), 0, -1):
            if loc[:end] in self.lines:
                return self.lines[loc[:end]]
        return 1  # a key missing at the top, or a rule over the whole plan: the error is about the file


def _dotted(loc: KeyPath, data: TomlTable) -> str:
    """("workload", 1, "timeout_s") → 'workload[1] "net".timeout_s' — index and name, to find it either way."""
    out = ""
    node: object = data  # where the path has got to in the document
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else {}
            if isinstance(node, dict) and isinstance(node.get("name"), str):
                out += f' "{node["name"]}"'
        else:
            out += ("." if out else "") + str(part)
            node = node.get(part, {}) if isinstance(node, dict) else {}
    return out


def _pydantic_message(err: ErrorDetails) -> str:
    kind, msg = err["type"], err["msg"]
    if kind == "extra_forbidden":
        return "unknown key (check the spelling; see docs/plan.md for the keys a plan takes)"
    if kind == "missing":
        return "required key is missing"
    got = err.get("input")
    if kind.endswith("_type") or kind in ("union_tag_invalid", "literal_error"):
        return f"{msg}; got {type(got).__name__} {got!r}"
    return msg.removeprefix("Value error, ")


def parse_plan(text: str, path: str = "<plan>") -> Plan:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"at line (\d+)", str(exc))
        line = int(m.group(1)) if m else (len(text.splitlines()) if "end of document" in str(exc) else None)
        raise PlanError(f"not valid TOML: {exc}", path=path, line=line) from None
    except ValueError as exc:
        # tomllib lets int()'s limit escape: a decimal integer of more digits than Python converts (4300 by
        # default) is a ValueError without a position (found by the 10 000-example fuzz run)
        m = re.search(f"[0-9_]{{{sys.get_int_max_str_digits() + 1},}}", text)
        line = text.count("\n", 0, m.start()) + 1 if m else None
        raise PlanError(f"not valid TOML: {exc}", path=path, line=line) from None
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        err = _most_specific(exc.errors())
        loc = tuple(p for p in err["loc"] if not _is_union_branch(p))
        raise PlanError(
            _pydantic_message(err), path=path, line=Locator(text).line(loc), key=_dotted(loc, data) or "plan"
        ) from None
    _check_cells(plan, text, path, data)
    check_hosts(plan, text, path)
    return plan


def check_hosts(plan: Plan, text: str = "", path: str = "<plan>") -> None:
    """A variant on a host may use only the kinds an agent applies there (plan/kinds.py: the table of kinds);
    called again on a plan whose variants `--host` moved to a host."""
    refused = host_refusals(plan)
    if not refused:
        return
    r = refused[0]
    loc: KeyPath = ("tuning", r.tuning, r.kind) if r.tuning else ("variant", r.index, r.kind)
    data: TomlTable = tomllib.loads(text) if text else {}
    raise PlanError(
        r.message,
        path=path,
        line=Locator(text).line(loc) if text else None,
        key=_dotted(loc, data),
        hint=r.hint,
    )


def _check_cells(plan: Plan, text: str, path: str, data: TomlTable) -> None:
    """Sweeps expand here, at load time, so an unreadable or absurd one ("1..99999999999") is an error with
    its line, not a memory exhaustion once the run has started."""
    for i, w in enumerate(plan.workload):
        for key, values in w.sweep.items():
            try:
                expand_sweep_values(key, values)
            except PlanError as exc:
                loc = ("workload", i, "sweep", key)
                raise PlanError(
                    exc.detail, path=path, line=Locator(text).line(loc), key=_dotted(loc, data)
                ) from None
    try:
        cells_of(plan)
    except PlanError as exc:
        raise PlanError(exc.detail, path=path, line=Locator(text).line(("workload",)), key="sweep") from None


def _is_union_branch(part: str | int) -> bool:
    # pydantic inserts the union member's type name into loc ("list[str]", "str", "literal[False]")
    return isinstance(part, str) and (
        "[" in part or part in ("str", "int", "float", "bool", "function-after", "list")
    )


def _most_specific(errors: list[ErrorDetails]) -> ErrorDetails:
    # Report the error that goes deepest; for unions, pydantic lists one error per branch.
    return max(errors, key=lambda e: len([p for p in e["loc"] if not _is_union_branch(p)]))


def load_plan(path: str | Path, *, check_executables: bool = True) -> LoadedPlan:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanError("no such plan file", path=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(f"cannot read plan: {exc}", path=str(p)) from None
    plan = parse_plan(text, str(p))
    if check_executables:
        check_commands(plan, text, str(p))
    return LoadedPlan(plan=plan, path=str(p), text=text)


def _argv0(cmd: list[str] | str, shell: bool) -> str | None:
    if isinstance(cmd, list):
        return cmd[0]
    try:
        # Operators split off as sh reads them: 'pwd; make' starts the program 'pwd', not 'pwd;'.
        lexer = shlex.shlex(cmd, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return None
    # A shell line may start with assignments or builtins; only check a plain first word.
    if (
        not words
        or "=" in words[0]
        or words[0]
        in {
            "cd",
            "exec",
            "export",
            "set",
            "for",
            "if",
            "while",
            "until",
            "case",
            "{",
            "(",
            ".",
            "[",
            ":",
            "!",
        }
    ):
        return None
    return words[0]


_VAR = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")


def expand_vars(word: str, env: dict[str, str]) -> tuple[str | None, list[str]]:
    """`word` with its $VAR and ${VAR} replaced as sh would from `env`, and the variables not set there. The
    word is None when sh alone can tell: a variable fairmark sets only when the command runs ($FAIRMARK_SCRATCH,
    $FAIRMARK_WORKDIR…), a ${VAR:-…} form."""
    unset: list[str] = []

    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name not in env:
            unset.append(name)
        return env.get(name, "")

    out = _VAR.sub(value, word)
    runtime = any(n.startswith("FAIRMARK_") and n != "FAIRMARK_CHECKOUT" for n in unset)
    return (None if runtime or "$" in out else out), [] if runtime else unset


def _env(*layers: dict[str, EnvValue]) -> dict[str, str]:
    """fairmark's environment with the plan's layers (a workload's env, a variant's): what a command gets
    (run.variants.basic.apply_env, which this module cannot import); False unsets."""
    env = dict(os.environ)
    for layer in layers:
        for key, value in layer.items():
            if value is False:
                env.pop(key, None)
            else:
                env[key] = str(value)
    return env


def _missing(exe: str | None, cwd: str | None, env: dict[str, str] | None) -> str:
    """Why the program `exe` cannot be there ("" when it can). `env`: the command runs in a shell, which expands
    the variables in it — `"$FAIRMARK_CHECKOUT/lz4"`, as one plan for `run` and `bisect` names its program — from
    this environment; None: it is run as written, and a `$` in it is a character of its name."""
    if exe is None:
        return ""
    shown = exe
    if env is not None:
        expanded, unset = expand_vars(exe, env)
        if unset:
            names = ", ".join(f"${n}" for n in unset)
            return f"executable {exe!r}: {names} not set" + (
                " (`fairmark run --checkout DIR` sets $FAIRMARK_CHECKOUT, as bisect does for each side)"
                if "FAIRMARK_CHECKOUT" in unset
                else ""
            )
        if expanded is None:
            return ""
        shown, exe = (f"{exe!r} ({expanded})" if expanded != exe else repr(exe)), expanded
    else:
        shown = repr(exe)
    found = (Path(cwd or ".") / exe).exists() if "/" in exe else shutil.which(exe) is not None
    return "" if found else f"executable {shown} not found (not on PATH and not a file)"


_COMMAND_START = {";", "&&", "||", "|", "&", "(", "do", "then", "else", "elif", "!", "{", "exec", "time"}


def _checkout_missing(cmd: str, cwd: str | None, env: dict[str, str]) -> str:
    """Why a word of a shell line that names $FAIRMARK_CHECKOUT cannot work ("" when it can): the variable unset
    — a loop `for f in …; do "$FAIRMARK_CHECKOUT/lz4" …; done` names it past its first word, where every trial
    would fail with exit 127 — or, a word in a command's place, no program there."""
    try:
        lexer = shlex.shlex(cmd, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return ""
    for i, word in enumerate(words):
        if not re.search(r"\$\{?FAIRMARK_CHECKOUT\b", word):
            continue
        _, unset = expand_vars(word, env)
        if "FAIRMARK_CHECKOUT" in unset:
            return _missing(word, cwd, env)
        if i > 0 and words[i - 1] in _COMMAND_START and (why := _missing(word, cwd, env)):
            return why
    return ""


def command_programs(plan: Plan) -> list[str]:
    """The programs a plan's command workloads and variants start themselves (a shell line's every simple
    command: plan.shellwords), in first-use order: what `fairmark setup` cannot install for them."""
    out: list[str] = []
    for w in plan.workload:
        cmds = [getattr(w, k) for k in ("command", "setup", "teardown", "prime", "before_trial")]
        out += [p for c in cmds if c is not None for p in _programs(c, w.shell)]
    for v in plan.variant:
        cmds = [v.wrap or None, v.command, *v.commands.values()]
        out += [p for c in cmds if c is not None for p in _programs(c, bool(v.shell))]
    return list(dict.fromkeys(out))


def _programs(cmd: list[str] | str, shell: bool) -> list[str]:
    if isinstance(cmd, str) and shell:
        return shell_programs(cmd)
    first = _argv0(cmd, shell)
    return [first] if first else []


def _unexpanded(exe: str | None, in_shell: bool) -> str:
    if exe and "$" in exe and not in_shell:
        return (
            "; a command given as a list runs without a shell, and only a shell expands its variables: "
            "write it as a string"
        )
    return ""


def check_commands(plan: Plan, text: str, path: str) -> None:
    """Every executable a plan names must exist before the first trial starts."""
    loc, data = Locator(text), tomllib.loads(text)
    # (where, command, shell, cwd, the environments it runs in: the trial command under each variant's)
    checks: list[tuple[KeyPath, list[str] | str, bool, str | None, list[dict[str, str]]]] = []
    for i, w in enumerate(plan.workload):
        for key in ("command", "setup", "teardown", "prime", "before_trial"):
            cmd = getattr(w, key)
            under = [v.env for v in plan.variant] if key == "command" and plan.variant else [{}]
            if cmd is not None:
                envs = [_env(w.env, e) for e in under]
                checks.append((("workload", i, key), cmd, w.shell, w.cwd, envs))
    for i, v in enumerate(plan.variant):
        if v.wrap:
            checks.append((("variant", i, "wrap"), v.wrap, False, None, [_env(v.env)]))
        if v.command is not None:
            checks.append((("variant", i, "command"), v.command, bool(v.shell), None, [_env(v.env)]))
        for name, cmd in v.commands.items():
            checks.append((("variant", i, "commands", name), cmd, bool(v.shell), None, [_env(v.env)]))
    for where, cmd, shell, cwd, envs in checks:
        exe = _argv0(cmd, shell)
        in_shell = shell or isinstance(cmd, str)
        why = next(filter(None, (_missing(exe, cwd, env if in_shell else None) for env in envs)), "")
        if not why and in_shell and isinstance(cmd, str):
            why = next(filter(None, (_checkout_missing(cmd, cwd, env) for env in envs)), "")
        if why:
            raise PlanError(
                why + _unexpanded(exe, in_shell),
                path=path,
                line=loc.line(where),
                key=_dotted(where, data),
                hint="install it (fairmark setup PLAN installs the tools of tool workloads) or fix the path",
            )
