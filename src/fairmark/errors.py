"""Errors raised by the library. The CLI maps them to exit codes in exactly one place (cli/main.py)."""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    OK = 0
    GATE_TRIPPED = 1  # e.g. --fail-on-regression found a regression
    USAGE = 2  # bad command line, bad plan, bad input file
    ENVIRONMENT = (
        3  # the environment was refused (doctor error, host lock, missing root/tool, a profile lost)
    )
    RUN_FAILED = 4  # the run ended, but a cell (or every cell) has no successful trial: nothing to compare


class FairmarkError(Exception):
    """Base class; `exit_status` decides the process exit code."""

    exit_status = ExitStatus.USAGE

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(FairmarkError):
    exit_status = ExitStatus.USAGE


class PlanError(FairmarkError):
    """A plan that cannot be run. Carries file, line and key so the user can fix it without guessing."""

    exit_status = ExitStatus.USAGE

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        key: str | None = None,
        hint: str | None = None,
    ):
        where = path or "<plan>"
        if line:
            where += f":{line}"
        prefix = f"{where}: " + (f"{key}: " if key else "")
        super().__init__(prefix + message, hint=hint)
        self.path, self.line, self.key, self.detail = path, line, key, message


class InputError(FairmarkError):
    """Bad data file (compare), bad bundle (import), unknown run id."""

    exit_status = ExitStatus.USAGE


class EnvironmentRefused(FairmarkError):
    """The host is not fit to benchmark on (doctor error without --accept-risk, host lock, not root …)."""

    exit_status = ExitStatus.ENVIRONMENT


class GateTripped(FairmarkError):
    exit_status = ExitStatus.GATE_TRIPPED


class RunFailed(FairmarkError):
    """A run that finished with a cell whose every trial failed (or timed out): it is stored, shown, and its
    failing command's first error lines printed, but it measured nothing there, so it must not pass as done."""

    exit_status = ExitStatus.RUN_FAILED


class ProfileMissing(FairmarkError):
    """A run whose profiled trials brought back no profile of a profiler asked for (each failed, or the
    profiler failed in it): what a profiler that cannot work is refused for before a run (ENVIRONMENT), found
    while it ran. Its measured trials and verdicts are stored and shown as for any run."""

    exit_status = ExitStatus.ENVIRONMENT


class StoreError(FairmarkError):
    exit_status = ExitStatus.USAGE


class StoreFailed(FairmarkError):
    """The store cannot be written or read (full file system, read-only, corrupted file, server gone): the
    environment refuses, so exit 3; the trials committed before are kept."""

    exit_status = ExitStatus.ENVIRONMENT


class Terminated(BaseException):
    """SIGTERM/SIGHUP turned into an unwind like Ctrl-C's, so that every `finally` puts the system back. A
    BaseException (like KeyboardInterrupt), so that no `except Exception` on the way swallows it; the CLI
    exits with `exit_status`, 128 + the signal's number, as a shell reports a process the signal ended."""

    def __init__(self, signum: int):
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum
        self.exit_status = 128 + signum
