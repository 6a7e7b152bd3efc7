"""Where fairmark keeps what it can rebuild: the workloads' downloads and builds, the decision stop's levels.

One rule for all of them, the XDG base directory one: `$XDG_CACHE_HOME/fairmark`, else `~/.cache/fairmark`.
(The trial launcher writes the same rule with os.path: its text is shipped alone to hosts without fairmark.)"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fairmark"
