"""Secrets never leave the host: environment values and free text are scrubbed before anything is stored.

A name is secret when it contains one of SECRET_WORDS anywhere, in any case (`DB_PASSWORD`, `github_token`,
`XAUTHORITY`). A value is secret when it looks like a credential whatever its name: a URL with a password, a
private-key block, a well-known token prefix, a JWT, or a long random-looking string. Over-redacting costs a
little information; under-redacting leaks a password into a shared results database, so we err this way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

REDACTED = "<redacted>"
SECRET_WORDS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "KEY",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
)
# PWD is a password in MYSQL_PWD or DB_PWD, but the working directory in PWD and OLDPWD
_NAME_RE = re.compile("|".join(SECRET_WORDS) + r"|(?<!^)(?<!^OLD)PWD", re.IGNORECASE)
# A scheme is at most 32 characters (every registered one is far shorter): unbounded, the regex scanned to the end
# of a long token from each of its letters looking for "://" — quadratic, over a second for an 8 KiB tail of one
# token (a progress bar, base64) and hours for a failed trial's raw output.
_URL_PASSWORD_RE = re.compile(
    r"(?P<head>[a-z][a-z0-9+.-]{0,31}://[^/\s:@]*:)(?P<pw>[^@\s/]+)(?P<tail>@)", re.I
)
_KNOWN_TOKEN_RE = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,})"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r"|(?<=\bBearer )[A-Za-z0-9._~+/=-]{8,}|(?<=\bBasic )[A-Za-z0-9+/]{8,}={0,2}",  # HTTP Authorization
    re.S,
)
# `name=value` / `name: value` inside free text (command lines, config dumps) where the name is secret.
_ASSIGN_RE = re.compile(
    r"(?<![\w.-])(?P<name>[\w.-]*(?:" + "|".join(SECRET_WORDS) + r")[\w.-]*)(?P<sep>\s*[=:]\s*)"
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;\"']+)",  # unquoted: up to a quote (a TOML list's item ends there)
    re.IGNORECASE,
)
# `--password VALUE`, `--db-pass VALUE`: a flag that names a secret, then its value as the next word (between
# them a space, or a TOML/JSON list's `", "`); `--password=VALUE` is _ASSIGN_RE's. A value starting with `-` is
# the next flag (mysql's bare `--password` prompts).
_SECRET_FLAG = r"--?(?:[a-z0-9]+[-_])*(?:password|passwd|pass|pw|secret|token|api[-_]?key|auth)"
_SECRET_FLAG_RE = re.compile(_SECRET_FLAG, re.IGNORECASE)
_FLAG_VALUE_RE = re.compile(
    r"(?P<flag>(?<![\w-])" + _SECRET_FLAG + ")"
    r"(?P<sep>(?:\s|[\"'],?\s*[\"']?)+)(?P<value>(?!-|<redacted>)[^\s\"',]+)",
    re.IGNORECASE,
)
# mysql's clients take their password glued to -p (`-pVALUE`); elsewhere -p is a port or a count, so only in a
# text or command line naming one of them.
_MYSQL_RE = re.compile(r"\b(?:mysql\w*|mariadb\w*)\b", re.IGNORECASE)
_GLUED_P_RE = re.compile(r"(?<![\w-])-p(?P<value>(?!<redacted>)[^\s\"',]+)")
# curl's `-u user:password` / `--user user:password` (also glued: -uuser:pw)
_CURL_RE = re.compile(r"\bcurl\b", re.IGNORECASE)
_CURL_USER_RE = re.compile(
    r"(?P<flag>(?<![\w-])(?:-u|--user)(?:[\s=]|[\"'],?\s*[\"'])*)(?P<user>[^\s\"',:]*):(?P<value>[^\s\"',]+)"
)
# A key as a URL's user part, without a password (a Sentry-style DSN: https://KEY@host/1): long, with digits —
# a user name is rarely 20 characters of letters and digits.
_URL_KEY_RE = re.compile(
    r"(?P<head>[a-z][a-z0-9+.-]{0,31}://)(?P<key>(?=[^@/\s:]*\d)[A-Za-z0-9_~.+=-]{20,})(?=@)", re.I
)
_SWITCH_VALUES = {"yes", "no", "true", "false", "on", "off"}
_RANDOMISH_RE = re.compile(r"^[A-Za-z0-9_+=.~-]{24,}$")  # ~ appears in Azure client secrets
_WORD_RE = re.compile(r"[^\s\"',;:@/=]+")
_DOTTED_WORDS_RE = re.compile(r"[a-z]{2}[._-][a-z]{2}")


def is_secret_name(name: str) -> bool:
    return bool(_NAME_RE.search(name))


def looks_like_key(value: str) -> bool:
    """A long token mixing upper case, lower case and digits, with no path or word structure."""
    v = value.strip()
    if _URL_PASSWORD_RE.search(v) or _KNOWN_TOKEN_RE.search(v):
        return True
    if not _RANDOMISH_RE.match(v) or re.fullmatch(r"[0-9a-fA-F.-]+", v):
        return False  # hex digests (commit ids, config hashes) are not credentials
    classes = sum(bool(re.search(p, v)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    # dotted/hyphenated words are names ({2}: the same finding as {2,}, without the quadratic backtracking)
    return classes == 3 and not _DOTTED_WORDS_RE.search(v)


def redact_env(mapping: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in mapping.items():
        value = str(value)
        if is_secret_name(name) or looks_like_key(value):
            out[name] = REDACTED
        else:
            out[name] = redact_text(value)
    return out


def redact_text(text: str) -> str:
    if not text:
        return text
    text = _URL_PASSWORD_RE.sub(lambda m: m["head"] + REDACTED + m["tail"], text)
    text = _KNOWN_TOKEN_RE.sub(REDACTED, text)

    def _assign(m: re.Match[str]) -> str:
        # A switch (StrictHostKeyChecking=no, auth=off) is no secret, and a plan must stay runnable.
        keep = m["value"] == REDACTED or m["value"].strip("\"'").lower() in _SWITCH_VALUES
        return m[0] if keep else m["name"] + m["sep"] + REDACTED

    text = _ASSIGN_RE.sub(_assign, text)
    text = _redact_flags(text)
    return _WORD_RE.sub(lambda m: REDACTED if looks_like_key(m[0]) else m[0], text)


def _redact_flags(text: str) -> str:
    """The secrets command-line flags carry: `--password VALUE`, mysql's `-pVALUE`, curl's `-u user:pw`, a key as
    a URL's user part."""
    text = _URL_KEY_RE.sub(lambda m: m["head"] + REDACTED, text)
    text = _FLAG_VALUE_RE.sub(lambda m: m["flag"] + m["sep"] + REDACTED, text)
    if _MYSQL_RE.search(text):
        text = _GLUED_P_RE.sub("-p" + REDACTED, text)
    if _CURL_RE.search(text):
        text = _CURL_USER_RE.sub(lambda m: f"{m['flag']}{m['user']}:{REDACTED}", text)
    return text


def redact_argv(
    argv: Iterable[str], text: Callable[[str], str] | None = None, found: set[str] | None = None
) -> list[str]:
    """A command's words with their secrets hidden: each word as redact_text does (or `text`), and the words a
    flag names as secret (`--password VALUE`, `curl -u user:pw`, mysql's `-pVALUE`: the program decides).
    `found` collects the raw secrets, for scrubbing the command's own output of them."""
    words = [str(w) for w in argv]
    out = [(text or redact_text)(w) for w in words]
    program = words[0].rsplit("/", 1)[-1] if words else ""
    for i, word in enumerate(words[1:], 1):
        flag = words[i - 1]
        if word and not word.startswith("-") and _SECRET_FLAG_RE.fullmatch(flag):
            secret = word
        elif program.startswith("curl") and flag in ("-u", "--user") and ":" in word:
            secret = word.split(":", 1)[1]
        elif _MYSQL_RE.fullmatch(program) and _GLUED_P_RE.fullmatch(word):
            secret = word[2:]
        else:
            continue
        out[i] = (text or redact_text)(word.replace(secret, REDACTED))
        if found is not None:
            found.add(secret)
    return out


def redact_json(obj: Any, text: Callable[[str], str] | None = None, found: set[str] | None = None) -> Any:
    """A JSON-able structure with its secrets hidden: every string as redact_text does (or `text`), and the
    string value of every key that names a secret (a variant's `env`, a tag `token=…`), as redact_env does;
    `found` collects those values."""
    scrub = text or redact_text

    def walk(x: Any, key: str = "") -> Any:
        if isinstance(x, str):
            if key and x and x != REDACTED and is_secret_name(key):
                if found is not None:
                    found.add(x)
                return REDACTED
            return scrub(x)
        if isinstance(x, dict):
            return {scrub(str(k)): walk(v, str(k)) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [walk(v) for v in x]
        return x

    return walk(obj)


def secret_values(mapping: Mapping[str, str]) -> set[str]:
    """The raw values redact_env would hide; used to scrub them from every other string in a snapshot."""
    return {
        str(v)
        for k, v in mapping.items()
        if len(str(v)) >= 4 and (is_secret_name(k) or looks_like_key(str(v)))
    }


def scrub(obj: Any, secrets: Iterable[str]) -> Any:
    """Replace every occurrence of a known secret value in any string of a JSON-able structure."""
    secrets = sorted(set(secrets), key=len, reverse=True)
    if not secrets:
        return obj

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            for s in secrets:
                if s in x:
                    x = x.replace(s, REDACTED)
            return x
        if isinstance(x, dict):
            return {walk(k): walk(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [walk(v) for v in x]
        return x

    return walk(obj)
