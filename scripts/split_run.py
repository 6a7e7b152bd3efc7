"""Issue 33 item 3: run/'s flat modules moved into folders that say what they hold (`git mv`, so history
follows), and every reference rewritten — imports, `fairmark.run.X` strings (monkeypatch targets, module
lists), `run/X.py` paths in code and docs, `run.X` in comments and docstrings.

Idempotent: run it again after a rebase to move and rewrite what a rebased commit brought back in the old
spelling (`python3 scripts/split_run.py`, from the top of the checkout; then `make format`)."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "src" / "fairmark" / "run"

# folder → (what it holds, its modules). Lowest first: each folder imports only those above it in this list
# (and the flat modules, spec.py and hooks.py, the two interfaces every folder shares).
FOLDERS = {
    "launch": (
        "Starting one trial's process and measuring it: the C launcher and the launch server (`c/`), the placer "
        "(a variant's cgroup or CPUs), the local executor (`execute_spec`). The launcher and the placer are "
        "standard library only: the agent ships them to a host.",
        ["launcher", "launch_server", "thread_cgroup", "placer", "executor"],
    ),
    "guard": (
        "What a live run holds and puts back however it ends: the host lock, its scratch directories (held by "
        "flock, swept when a killed fairmark left them), SIGTERM/SIGHUP unwinding like Ctrl-C.",
        ["signals", "lock", "scratch"],
    ),
    "machine": (
        "The machines a run's trials run on: the `Host` interface (remote/ implements it), `LocalHost`, a run's "
        "`Hosts`, and boot variants (switching the next boot, verifying the one that came back).",
        ["host", "boots"],
    ),
    "trials": (
        "One trial's path and what it is made of: each workload's prepared cells, the trial's spec built once, "
        "its loop count, its metrics, the secrets scrubbed from what it stores, the trial itself.",
        ["prepare", "secrets", "build", "loops", "metrics", "trial"],
    ),
    "prerun": (
        "Measured before the first trial and stored with the run: a variant's own `wrap` around a no-op, each "
        "file-system workload's device with fio O_DIRECT.",
        ["wrapcost", "devicebase"],
    ),
    "loop": (
        "The rounds: the runner (warm-up, measured, profiled rounds; stopping; resume), the boot run, the stopping "
        "rule, the workload's stage, the probe gate, a run's options and profiled rounds.",
        ["options", "stoprule", "profiled", "stage", "gate", "bootrun", "runner"],
    ),
}
FLAT = ("spec", "hooks")  # the trial seam and the trial hook interface: every folder may import them
WHERE = {m: f for f, (_, mods) in FOLDERS.items() for m in mods}
NAMES = "|".join(sorted(WHERE, key=len, reverse=True))

DOTTED = re.compile(rf"\bfairmark\.run\.({NAMES})\b")
PATH = re.compile(rf"(?<![\w.])((?:src/)?(?:fairmark/)?run/)({NAMES})\.py\b")
C_DIR = re.compile(r"(?<![\w.])((?:src/)?(?:fairmark/)?run/)c(?![\w.])")
BARE = re.compile(rf"(?<![\w.])run\.({NAMES})\b")
FROM_RUN = re.compile(r"^(\s*)from fairmark\.run import ([\w, ]+?)(\s*#.*)?$", re.MULTILINE)
TEXT = (".py", ".md", ".toml", ".c", ".h", ".txt", ".j2", ".sh", ".cfg", ".ini")


def move() -> None:
    for folder, (doc, modules) in FOLDERS.items():
        (RUN / folder).mkdir(exist_ok=True)
        init = RUN / folder / "__init__.py"
        if not init.exists():
            init.write_text(f'"""{_wrap(doc)}"""\n')
            subprocess.run(["git", "add", str(init)], cwd=ROOT, check=True)
        for m in modules:
            if (RUN / f"{m}.py").exists():
                subprocess.run(["git", "mv", f"{m}.py", f"{folder}/{m}.py"], cwd=RUN, check=True)
    if (RUN / "c").is_dir():
        subprocess.run(["git", "mv", "c", "launch/c"], cwd=RUN, check=True)


def _wrap(text: str, width: int = 110) -> str:
    lines, line = [], ""
    for word in text.split():
        if len(line) + len(word) + 1 > width - (3 if not lines else 0):
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join([*lines, line])


def _from_run(match: re.Match[str]) -> str:
    """`from fairmark.run import a, b as c` split by the folder each name now lives in."""
    indent, names, comment = match.group(1), match.group(2), match.group(3) or ""
    groups: dict[str, list[str]] = {}
    for item in (n.strip() for n in names.split(",") if n.strip()):
        base = item.split(" as ")[0].strip()
        home = f"fairmark.run.{WHERE[base]}" if base in WHERE else "fairmark.run"
        groups.setdefault(home, []).append(item)
    lines = [f"{indent}from {home} import {', '.join(items)}" for home, items in groups.items()]
    lines[0] += comment
    return "\n".join(lines)


def _bare_in_words(text: str) -> str:
    """`run.X` rewritten in comments and docstrings only (`run.options` in code is a record's field, `run.boots`
    in a string a plan key)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    lines = text.splitlines(keepends=True)
    for tok in reversed(tokens):
        prose = tok.type == tokenize.COMMENT or tok.string.lstrip("rbuRBU").startswith(('"""', "'''"))
        if not prose or not BARE.search(tok.string):  # "run.boots" in a one-line string is a plan key
            continue
        new = BARE.sub(lambda m: f"run.{WHERE[m.group(1)]}.{m.group(1)}", tok.string)
        (sr, sc), (er, ec) = tok.start, tok.end
        if sr == er:
            lines[sr - 1] = lines[sr - 1][:sc] + new + lines[sr - 1][ec:]
        else:  # a multi-line string: replace the whole span
            head, tail = lines[sr - 1][:sc], lines[er - 1][ec:]
            lines[sr - 1 : er] = [head + new + tail]
    return "".join(lines)


def rewrite(path: Path) -> bool:
    text = path.read_text()
    new = FROM_RUN.sub(_from_run, text) if path.suffix == ".py" else text
    new = DOTTED.sub(lambda m: f"fairmark.run.{WHERE[m.group(1)]}.{m.group(1)}", new)
    new = PATH.sub(lambda m: f"{m.group(1)}{WHERE[m.group(2)]}/{m.group(2)}.py", new)
    new = C_DIR.sub(lambda m: f"{m.group(1)}launch/c", new)
    new = new.replace('"run" / "c"', '"run" / "launch" / "c"')
    new = new.replace('"run" / "launcher.py"', '"run" / "launch" / "launcher.py"')
    new = new.replace('SRC / "run" / "runner.py"', 'SRC / "run" / "loop" / "runner.py"')
    if path.suffix == ".py":
        new = _bare_in_words(new)
    elif path.suffix == ".md":
        new = BARE.sub(lambda m: f"run.{WHERE[m.group(1)]}.{m.group(1)}", new)
    if new != text:
        path.write_text(new)
        return True
    return False


def main() -> int:
    move()
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    changed = [
        p
        for name in files.stdout.splitlines()
        if (name.endswith(TEXT) or name == "Makefile")
        and not name.startswith(("scripts/split_run.py", "docs/history", "CHANGELOG"))
        and (p := ROOT / name).is_file()
        and rewrite(p)
    ]
    print(f"{len(changed)} files rewritten", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
