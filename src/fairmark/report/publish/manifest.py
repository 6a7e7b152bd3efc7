"""What a published site was made from, so the next publish renders only what changed.

Every page is written with a digest of everything it shows (the run's row, the series' points, the bisect's
runs and outcome, the options) and of the code that drew it (every source file and template of fairmark: a new
fairmark renders everything again). A page whose digest is unchanged and whose file is still there is skipped;
a page that is no longer made (a deleted run) is removed. The manifest is written last and atomically, so a
publish killed halfway leaves a manifest that only makes the next publish do more.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from fairmark.errors import UsageError

NAME = ".fairmark-publish.json"
FORMAT = 1


def digest(*parts: Any) -> str:
    """Of plain data (numbers, text, datetimes, lists, tuples; dicts only with a stable order): its repr, which
    is a tenth of the cost of JSON for the 10 000 rows of a large site."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


@cache
def code_fingerprint() -> str:
    """The fairmark source and templates that draw the pages."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".j2") and path.is_file():
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:32]


def write_atomic(path: Path, text: str) -> None:
    """The page whole or not at all: a reader (or a web server) never sees half a file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    except OSError as exc:
        raise UsageError(f"cannot write the page {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write the page {path}: {exc.strerror}") from None
        raise


class Manifest:
    def __init__(self, out: Path):
        self.out = out
        self.old_pages: dict[str, str] = {}
        self.old_summaries: dict[str, Any] = {}
        self.pages: dict[str, str] = {}
        self.summaries: dict[str, Any] = {}
        try:
            data = json.loads((out / NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.get("format") == FORMAT:
            self.old_pages = dict(data.get("pages") or {})
            self.old_summaries = dict(data.get("summaries") or {})

    def fresh(self, rel: str, page_digest: str) -> bool:
        """The page is as it would be made now: keep it (and remember it)."""
        if self.old_pages.get(rel) == page_digest and (self.out / rel).is_file():
            self.pages[rel] = page_digest
            if rel in self.old_summaries:
                self.summaries[rel] = self.old_summaries[rel]
            return True
        return False

    def summary(self, rel: str) -> Any:
        return self.old_summaries.get(rel)

    def record(self, rel: str, page_digest: str, summary: Any = None) -> None:
        self.pages[rel] = page_digest
        if summary is not None:
            self.summaries[rel] = summary

    def published_runs(self) -> set[str] | None:
        """The runs the last publish had pages of (None: there was none) — a change point whose new level
        starts at a run not among them is new since then, whenever that run started (an imported run too)."""
        if not self.old_pages:
            return None
        return {rel[5:-5] for rel in self.old_pages if rel.startswith("runs/") and rel != "runs/index.html"}

    def stale(self) -> list[str]:
        """Pages an earlier publish wrote that this one does not make."""
        return sorted(set(self.old_pages) - set(self.pages))

    def removable(self, rel: str) -> Path | None:
        """The page `rel` of an earlier publish, if deleting it deletes a page of this site: a relative name
        of an .html file, the file regular (not a link) and, with every link on its way resolved, inside the
        site's directory. The manifest is a file in that directory, which others may have written (a copied
        or restored site, a shared web root): one naming `../../etc/passwd` or a link out must delete nothing."""
        if not rel.endswith(".html") or Path(rel).is_absolute() or ".." in Path(rel).parts:
            return None
        path = self.out / rel
        if not os.path.lexists(path):
            return path  # gone already: nothing to delete, the entry goes
        try:
            st = path.lstat()
            inside = path.resolve(strict=True).is_relative_to(self.out.resolve(strict=True))
        except (OSError, RuntimeError):  # a loop of links, a directory on the way that is not one
            return None
        return path if inside and stat.S_ISREG(st.st_mode) else None

    def save(self) -> None:
        doc = {"format": FORMAT, "pages": self.pages, "summaries": self.summaries}
        write_atomic(
            self.out / NAME, json.dumps(doc)
        )  # keys in their order: a summary's digest depends on it
