"""The sequential test's simulated levels, kept on disk between processes (issue 36).

`stats.sequential` finds each look's level on 100 000 seeded simulated paths: the same numbers in every process,
but 0.5–2.4 s of CPU to find them (the switch's scale included) — paid again by every `fairmark ab`, bisect step
and gate, where a short trial costs less than that. The levels depend only on the design's arguments, the
calibration code and the numpy/scipy that ran it, so a file named by a digest of all of these holds them:
`$XDG_CACHE_HOME/fairmark/levels/` (else ~/.cache/fairmark/levels/), beside the workloads' caches.

The file is fairmark's own, never a bundle's or a host's; still, what is read is checked (a list of as many
non-negative numbers as there are looks, under the key that named it) and anything else is computed afresh. A
cache that cannot be written (a read-only home) only costs the time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fairmark.cachedir import cache_dir

Levels = tuple[float, ...]


def cache_root() -> Path:
    return cache_dir() / "levels"


@functools.cache
def _code_digest() -> str:
    """What the levels depend on besides their arguments: the calibration's source and the libraries' versions."""
    import scipy  # its version only (24 ms); the special functions are loaded where levels are computed

    h = hashlib.sha256(Path(__file__).with_name("sequential.py").read_bytes())
    h.update(f"numpy {np.__version__} scipy {scipy.__version__}".encode())
    return h.hexdigest()


def cached(name: str, compute: Callable[..., Levels], *args: object) -> Levels:
    """compute(*args), read from the cache when a valid entry is there, else computed and written."""
    key = json.dumps([name, [list(a) if isinstance(a, tuple) else a for a in args], _code_digest()])
    path = cache_root() / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"
    found = _read(path, key)
    if found is not None:
        return found
    levels = compute(*args)
    _write(path, key, levels)
    return levels


def _read(path: Path, key: str) -> Levels | None:
    try:
        doc = json.loads(path.read_text()[:1_000_000])
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != key or not isinstance(doc.get("levels"), list):
        return None
    values = doc["levels"]
    ok = all(
        isinstance(v, int | float) and not isinstance(v, bool) and not math.isnan(v) and v >= 0
        for v in values
    )
    return tuple(float(v) for v in values) if ok and values else None


def _write(path: Path, key: str, levels: Levels) -> None:
    """Atomically (a temporary file renamed): two processes finding the same levels write the same bytes."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".levels-", delete=False) as f:
            tmp = f.name
            json.dump({"key": key, "levels": list(levels)}, f)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
