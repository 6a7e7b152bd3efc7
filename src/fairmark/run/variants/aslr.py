"""`aslr = 0 | 1 | 2`: address-space layout randomization (Linux kernel.randomize_va_space)."""

from __future__ import annotations

from fairmark.run.variants.driver import Context, Settings
from fairmark.run.variants.tunable import FileSetting

KIND, ORDER, SCOPE = "aslr", 20, "block"
ASLR = "/proc/sys/kernel/randomize_va_space"


def aslr_setting(value: int, path: str | None = None) -> FileSetting:
    setting = FileSetting(label="ASLR kernel.randomize_va_space", path=path or ASLR, want=str(value))
    setting.check()
    return setting


def check(value: object, ctx: Context) -> Settings:
    return Settings([aslr_setting(int(str(value)))])
