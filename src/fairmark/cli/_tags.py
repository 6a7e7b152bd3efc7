"""`--tag k=v` (repeatable), shared by `run`, `runs`, `history`, `check` and `bisect`."""

from __future__ import annotations

import re
from collections.abc import Sequence

import click

_KEY = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


def parse_tags(items: Sequence[str], option: str = "--tag") -> dict[str, str]:
    """['k=v', …] → {k: v}; a malformed item is a usage error naming it."""
    tags: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _KEY.match(key.strip()):
            raise click.BadParameter(
                f"{item!r}: expected KEY=VALUE with KEY of letters, digits, '_', '.', '-'", param_hint=option
            )
        tags[key.strip()] = value
    return tags


def tag_option(help_text: str):
    return click.option("--tag", "tag_items", multiple=True, metavar="KEY=VALUE", help=help_text)


def short_tag(value: str) -> str:
    """A full git commit id shortened to 12 hex digits (unambiguous in any repository of this size); any
    other tag value as it is."""
    return value[:12] if len(value) == 40 and all(ch in "0123456789abcdef" for ch in value) else value
