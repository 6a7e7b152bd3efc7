"""`thp = "always" | "madvise" | "never"`: transparent huge pages (Linux), refused where the kernel has none."""

from __future__ import annotations

from pathlib import Path

from fairmark.errors import EnvironmentRefused
from fairmark.run.variants.driver import Context, Settings
from fairmark.run.variants.tunable import FileSetting

KIND, ORDER, SCOPE = "thp", 30, "block"
THP = "/sys/kernel/mm/transparent_hugepage/enabled"


def thp_setting(value: str, path: str | None = None) -> FileSetting:
    path = path or THP
    if not Path(path).exists():
        raise EnvironmentRefused(f"thp: this kernel has no transparent huge pages ({path} does not exist)")
    choices = tuple(Path(path).read_text().replace("[", "").replace("]", "").split())
    setting = FileSetting(
        label="transparent hugepages", path=path, want=value, select="bracket", allowed=choices
    )
    setting.check()
    return setting


def check(value: object, ctx: Context) -> Settings:
    return Settings([thp_setting(str(value))])
