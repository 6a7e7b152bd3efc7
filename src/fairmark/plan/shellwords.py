"""The programs a shell line starts: the first word of each of its simple commands (issue 34 item 6 — `setup
--dry-run` listed only a script's first word, "cat (found)", where the script compiles with `cc`).

A reading, not a shell: here-document bodies are skipped, assignments, redirections and the shell's own
keywords and builtins are passed over, and a word sh would expand (`$FAIRMARK_SCRATCH/alloc`) is left out — it
names a file the run makes or a path only the run knows; `check_commands` judges those words."""

from __future__ import annotations

import re
import shlex

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
# words after which the next word starts a command
_SEPARATORS = frozenset(
    {";", ";;", "&", "&&", "|", "||", "(", ")", "{", "}", "!", "then", "do", "else", "elif"}
)
_KEYWORDS = frozenset({"if", "while", "until", "fi", "done", "esac", "in", "function", "time"})
_BUILTIN_NAMES = (
    ". : [ alias break cd continue echo eval exit export false getopts local printf pwd read readonly return set "
    "shift source test trap true type ulimit umask unset wait"
)
_BUILTINS = frozenset(_BUILTIN_NAMES.split())
_PREFIXES = frozenset({"exec", "command", "nohup", "builtin"})  # the next word is the program
_REDIRECT = re.compile(r"^[0-9]*(<<-?|[<>]+&?)$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _without_heredocs(text: str) -> str:
    """The line with its here-documents' bodies left out (a C program in `cat <<'END'` is no command)."""
    out: list[str] = []
    until: list[str] = []
    for line in text.splitlines():
        if until:
            if line.strip() == until[0]:
                until.pop(0)
            continue
        out.append(line)
        until += [m[2] for m in _HEREDOC.finditer(line)]
    return "\n".join(out)


def _words(text: str) -> list[str] | None:
    body = _without_heredocs(text).replace("\\\n", " ")
    body = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("#"))
    try:
        lexer = shlex.shlex(body.replace("\n", " ; "), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        return list(lexer)
    except ValueError:
        return None


def shell_programs(text: str) -> list[str]:
    """The programs the shell line `text` starts, in order, each once."""
    words = _words(text)
    if words is None:
        return []
    out: list[str] = []
    start, skip_to, redirect = True, "", False
    for w in words:
        if redirect:  # the file (or here-document delimiter) of a redirection
            redirect = False
        elif _REDIRECT.match(w):
            redirect = True
        elif skip_to:  # `for NAME in WORDS; do`, `case WORD in … esac` (its arms are not read)
            skip_to = "" if w == skip_to else skip_to
            start = not skip_to
        elif w in _SEPARATORS:
            start = True
        elif not start:
            continue
        elif w in ("for", "case"):
            skip_to, start = ("do" if w == "for" else "esac"), False
        elif w in _KEYWORDS or w in _PREFIXES or _ASSIGNMENT.match(w):
            start = True  # the command is the next word
        else:
            start = False
            if w not in _BUILTINS and "$" not in w and "`" not in w:
                out.append(w)
    return list(dict.fromkeys(out))
