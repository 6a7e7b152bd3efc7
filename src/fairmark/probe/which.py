"""Where an executable is on this host: shared by the profilers (run/) and the renderers of reports (report/),
which must not reach into the runner's package for it."""

from __future__ import annotations

import shutil
from pathlib import Path


def find_tool(name: str) -> str | None:
    """PATH first, then where `cargo install` puts binaries (inferno) when ~/.cargo/bin is not on PATH."""
    return shutil.which(name) or shutil.which(name, path=str(Path.home() / ".cargo" / "bin"))
