"""Secret scrubbing for what a run stores: the plan text, the command line, its options (variants' env, hosts)
and tags, commands, tool output, errors, findings and artifacts — one Scrubber per run over all of it.

Secrets never leave the machine (product rule 6): the environment's secret values (those the environment
capture redacts) are replaced first, then whatever looks like a credential — a tool's output or a plan's command
can carry secrets the environment does not."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from fairmark.probe.redact import redact_argv, redact_env, redact_json, redact_text

REDACTED = "<redacted>"
MIN_SECRET_CHARS = 4  # shorter values ("1", "on") would scrub ordinary words out of every output


def secret_values(env: Mapping[str, str]) -> list[str]:
    """The values the environment capture would redact, longest first (a secret containing another is
    replaced whole)."""
    # The probe package is heavy: imported when a run starts, not when a command merely imports the runner.
    redacted = redact_env(dict(env))
    found = {v for k, v in env.items() if redacted.get(k) != v and len(v) >= MIN_SECRET_CHARS}
    return sorted(found, key=len, reverse=True)


# Texts up to this long are remembered with what they scrub to: a run scrubs its argv and its errors again at
# every trial (the same few strings), and four regular expressions per string cost more than a dict lookup.
MEMO_CHARS = 256
MEMO_ENTRIES = 1024


class Scrubber:
    """Callable text → text with this process's secrets removed; built once per run."""

    def __init__(self, env: Mapping[str, str] | None = None):
        self.secrets = secret_values(os.environ if env is None else env)
        self._redact = redact_text
        self._memo: dict[str, str] = {"": ""}

    def argv(self, argv: Iterable[str]) -> tuple[str, ...]:
        """A command's words: each one scrubbed, and the values its flags name as secret (`--password VALUE`,
        `curl -u user:pw`, mysql's `-pVALUE`), which no word alone shows — learnt, so that the command's own
        output (`args: $*`) is scrubbed of them too."""
        found: set[str] = set()
        words = tuple(redact_argv(argv, self, found))
        self._learn(found)
        return words

    def json(self, doc: Any) -> Any:
        """A JSON-able document (a run's options, its tags, a finding, an artifact): every string scrubbed, and
        the string under every key that names a secret (a variant's `env = { DB_PASSWORD = … }`), learnt."""
        found: set[str] = set()
        scrubbed = redact_json(doc, self, found)
        self._learn(found)
        return scrubbed

    def _learn(self, found: set[str]) -> None:
        new = {s for s in found if len(s) >= MIN_SECRET_CHARS} - set(self.secrets)
        if new:
            self.secrets = sorted({*self.secrets, *new}, key=len, reverse=True)
            self._memo = {"": ""}  # what was scrubbed before did not know them

    def __call__(self, text: str) -> str:
        found = self._memo.get(text)
        if found is not None:
            return found
        scrubbed = text
        for secret in self.secrets:
            scrubbed = scrubbed.replace(secret, REDACTED)
        scrubbed = self._redact(scrubbed)
        if len(text) <= MEMO_CHARS and len(self._memo) < MEMO_ENTRIES:
            self._memo[text] = scrubbed
        return scrubbed
