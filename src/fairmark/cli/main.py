"""`fairmark` entry point. The only place where errors become exit codes.

Commands live one per module in this package; each module exposes `commands` (a list of click commands),
found automatically, so adding a command is adding a file.
"""

from __future__ import annotations

import importlib
import pkgutil
import traceback

import click

import fairmark.cli as pkg
from fairmark import __version__
from fairmark.cli._entry import entry as entry  # an older install's console script names it here
from fairmark.cli.common import state
from fairmark.console import console
from fairmark.errors import ExitStatus, FairmarkError, Terminated

INTERNAL_ERROR = 70  # EX_SOFTWARE: a bug in fairmark, not in the plan or the host


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs, so `fairmark --version`, `runs` or `doctor`
    do not pay for scipy, pydantic or matplotlib. A command is looked for in the module of its own name
    (`compare-runs` → compare_runs.py) first, then in every module, so a new file needs no table entry."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        _register()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            _register(HOMES.get(cmd_name, cmd_name.replace("-", "_")))
        if cmd_name not in self.commands:
            _register()
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, prog_name="fairmark")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Honest A/B benchmarks of operating systems.

    Runs real workloads on variants A and B, interleaved and repeated until the answer is precise enough,
    writes the environment down, and gives a verdict with a confidence interval."""
    # restore does it itself and reports it; doctor changes nothing and shows a pending journal as an error;
    # the agent keeps its own journal on its host, and its stdout is the protocol; compare reads files (ministat's
    # job: it neither changes nor measures the system, and starts without the variant code's imports)
    if ctx.invoked_subcommand not in ("restore", "doctor", "agent", "compare"):
        _recover()


def _recover() -> None:
    """A journal left by a killed fairmark means the system is still changed: put it back before anything."""
    # LAZY_FOR_START: `compare` (which looks for no journal) does not load it, nor socket, json and selectors
    from fairmark.run.variants.journal import default_state_dir, journal_paths

    if not journal_paths(default_state_dir()):  # the usual case; the variant code (pydantic) is not loaded
        return
    from fairmark.run.variants.system import recover_pending

    for line in recover_pending():
        console.warn(line)


_loaded: set[str] = set()
# Commands that live in a module of another name. Without this, `show` imported every command's module (the
# bundle's, the report's, the verdicts'): 0.4 s of its CPU. tests/test_cli_imports.py checks the table.
HOMES = {"show": "runs", "resume": "run", "export": "bundle", "import": "bundle"}


def _register(only: str | None = None) -> None:
    """Add the commands of one module of this package (`only`), or of all of them."""
    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if mod.name in ("main", "common") or mod.name.startswith("_") or mod.name in _loaded:
            continue
        if only is not None and mod.name != only:
            continue
        _loaded.add(mod.name)
        module = importlib.import_module(f"fairmark.cli.{mod.name}")
        for command in getattr(module, "commands", []):
            cli.add_command(command)


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, prog_name="fairmark", standalone_mode=False)
        return ExitStatus.OK
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return ExitStatus.USAGE
    except click.exceptions.Abort:
        console.error("aborted")
        return 130
    except Terminated as exc:  # SIGTERM/SIGHUP: unwound like Ctrl-C (the system put back), now exit quietly
        return exc.exit_status
    except KeyboardInterrupt:
        console.error(
            "interrupted (Ctrl-C); finished trials are in the store — `fairmark resume RUN` continues"
        )
        return 130
    except FairmarkError as exc:
        if state["traceback"]:
            traceback.print_exc()
        console.error(exc.message, exc.hint)
        return int(exc.exit_status)
    except Exception as exc:
        if state["traceback"]:
            traceback.print_exc()
        console.error(f"internal error: {type(exc).__name__}: {exc} (rerun with --traceback and report it)")
        return INTERNAL_ERROR
