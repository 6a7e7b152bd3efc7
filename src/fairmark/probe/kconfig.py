"""Kernel configuration parsers: Linux `.config` text and FreeBSD config / `kern.conftxt` text."""

from __future__ import annotations

import hashlib
import re

_LINUX_SET = re.compile(r"^CONFIG_(\w+)=(.*)$")
_LINUX_UNSET = re.compile(r"^# CONFIG_(\w+) is not set")


def parse_linux_config(text: str) -> dict[str, str]:
    """Options that are set (y, m, a value), without the CONFIG_ prefix. Unset options are absent."""
    options: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        m = _LINUX_SET.match(line)
        if m:
            options[m[1]] = m[2].strip('"')
        elif (u := _LINUX_UNSET.match(line)) is not None:
            options.pop(u[1], None)
    return options


def parse_freebsd_config(text: str) -> dict[str, object]:
    """`options`/`nooptions`, `ident`, `include` lines of a kernel config (raw file or expanded kern.conftxt).

    Returns {"options": {NAME: value-or-""}, "ident": str|None, "includes": [..]}. Later `nooptions` remove an
    earlier option, as config(8) does when std.nodebug follows GENERIC."""
    options: dict[str, str] = {}
    ident, includes = None, []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split(None, 1)
        keyword, rest = words[0].lower(), (words[1] if len(words) > 1 else "")
        if keyword in ("options", "nooptions", "option", "nooption"):
            for item in re.split(r"[\s,]+", rest.strip()):
                if not item:
                    continue
                name, _, value = item.partition("=")
                if keyword.startswith("no"):
                    options.pop(name, None)
                else:
                    options[name] = value.strip('"')
        elif keyword == "ident":
            ident = rest.strip()
        elif keyword == "include":
            includes.append(rest.strip().strip('"'))
    return {"options": options, "ident": ident, "includes": includes}


def config_hash(options: dict[str, str]) -> str:
    """Order-independent digest of the set options: equal configs hash equal whatever the file layout."""
    canon = "\n".join(f"{k}={v}" for k, v in sorted(options.items()))
    return hashlib.sha256(canon.encode()).hexdigest()
