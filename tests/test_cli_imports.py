"""`fairmark --version`, `runs`, `doctor` and `history` import only what they use (issues 9, 24): the heavy libraries
are loaded by the commands that need them. Checked on the modules actually loaded, not on a start time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy", "numpy", "sqlalchemy", "pydantic", "matplotlib", "jinja2", "psycopg")

PROBE = """
import json, sys
from fairmark.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": [m for m in HEAVY if m in sys.modules]}), file=sys.stderr)
""".replace("HEAVY", repr(HEAVY))


def loaded_by(args: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    res = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, timeout=120
    )
    last = res.stderr.strip().splitlines()[-1]
    out = json.loads(last)
    return out["code"], out["loaded"]


@pytest.mark.parametrize(
    ("args", "allowed"),
    [
        (["--version"], set()),
        (["runs"], {"sqlalchemy"}),  # the store is read through SQLAlchemy
        (["doctor", "--json"], set()),
        (["history", "--help"], set()),
    ],
)
def test_light_commands_load_no_heavy_library(args, allowed, tmp_path, monkeypatch) -> None:
    import os

    env = os.environ | {
        "FAIRMARK_STORE": str(tmp_path / "s.db"),
        "FAIRMARK_STATE_DIR": str(tmp_path / "state"),
        "NO_COLOR": "1",
    }
    code, loaded = loaded_by(args, env)
    assert code in (0, 3), code  # doctor exits 3 when it finds an error on this host; still a clean run
    assert set(loaded) <= allowed, f"fairmark {' '.join(args)} imported {sorted(set(loaded) - allowed)}"


def test_history_of_a_series_without_a_change_point_loads_no_scipy(tmp_path) -> None:
    """`history` reads the store (SQLAlchemy), finds change points (numpy) and gives each run's CI from ministat's
    t table (data): scipy and the plan model are loaded only to size a change point that was found. The fixed
    store of the golden screens has none in crypto's two series at α = 0.01 (alloc's has its planted step)."""
    import os

    import screens_store

    store = tmp_path / "screens.db"
    screens_store.build(store)
    env = os.environ | {"FAIRMARK_STORE": str(store), "FAIRMARK_STATE_DIR": str(tmp_path / "state")}
    code, loaded = loaded_by(["history", "crypto", "--json"], env | {"NO_COLOR": "1"})
    assert code == 0
    assert set(loaded) <= {"numpy", "sqlalchemy"}, f"fairmark history imported {sorted(loaded)}"
    # Sizing alloc's planted step (t quantiles, p-values, the MDE from its shipped table) and a run's report with
    # its verdicts: no scipy either (issue 34 item 15: its import was a quarter of `show`'s CPU)
    for args in (["history", "alloc", "--json"], ["show", "last"], ["show", "last", "--json"]):
        code, loaded = loaded_by(args, env | {"NO_COLOR": "1"})
        assert code == 0 and "scipy" not in loaded, (args, loaded)
        if (
            args[0] == "history"
        ):  # nor the plan model (pydantic): the verdicts name the A/A twin by plan/aa.py
            assert set(loaded) <= {"numpy", "sqlalchemy"}, (args, loaded)
        else:  # nor SQLAlchemy: an SQLite store's run is read by sqlite3 (store/quickrun.py, a third of its CPU);
            # these runs stored no resolved variants (options.variants): their plan text is read by the plan model
            assert set(loaded) <= {"numpy", "pydantic"}, (args, loaded)


def test_every_command_is_found_in_its_home_module() -> None:
    """`fairmark show` imports runs.py alone: a command in a module of another name is in main.HOMES (else the
    lookup imports every command's module, 0.4 s of `show`'s CPU)."""
    import importlib
    import pkgutil

    import fairmark.cli as pkg
    from fairmark.cli.main import HOMES

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name in ("main", "common") or mod.name.startswith("_"):
            continue
        for command in getattr(importlib.import_module(f"fairmark.cli.{mod.name}"), "commands", []):
            home = HOMES.get(command.name, command.name.replace("-", "_"))
            assert home == mod.name, f"{command.name} lives in {mod.name}.py: add it to cli/main.HOMES"


def test_show_and_history_to_a_pipe_load_no_rich(tmp_path) -> None:
    """Piped (`show | less`, a CI log), `show` and `history` write what rich would write without loading rich
    (console.py, plaintable.py: its import and its rendering were a tenth of `show`'s CPU, issue 34 item 15);
    their bytes are rich's (tests/test_plaintable.py, tests/test_quickrun.py). Nor typing_extensions (the JSON
    aliases are made for the plan model and the wire only); `history` by time loads no git module nor the
    store's records; neither loads the decision stop's looks (stats.sequential) for runs that stopped otherwise, nor
    the levels above the trials (stats.levels) for runs without boots."""
    import os

    import screens_store

    store = tmp_path / "screens.db"
    screens_store.build(store)
    env = os.environ | {"FAIRMARK_STORE": str(store), "FAIRMARK_STATE_DIR": str(tmp_path / "state")}
    env["COLUMNS"] = "120"  # the screens' oltp table is 89 columns wide: rich folds it at 80
    unwanted = (
        "rich",
        "typing_extensions",
        "fairmark.bisect.git",
        "fairmark.store.records",
        "fairmark.stats.sequential",
        "fairmark.stats.levels",
    )
    probe = PROBE.replace(repr(HEAVY), repr(unwanted))
    for args in (["show", "last"], ["history", "alloc"], ["history", "crypto"]):
        res = subprocess.run(
            [sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env, timeout=120
        )
        out = json.loads(res.stderr.strip().splitlines()[-1])
        assert out["code"] == 0 and res.stdout, (args, res.stderr[-2000:])
        # these runs stored no resolved variants: their plan is read by the plan model (pydantic, typing_extensions)
        allowed = {"fairmark.store.records", "typing_extensions"} if args[0] == "show" else set()
        assert set(out["loaded"]) <= allowed, f"fairmark {' '.join(args)} imported {out['loaded']}"


# Run as `python -m fairmark` is (runpy; the console script's entry is the same cli/_entry.py); at exit, what was
# imported of click, the heavy libraries and the CLI's command modules.
AGENT_PROBE = f"""
import atexit, runpy, sys
cli = ("fairmark.cli._entry", "fairmark.cli._threads")
def loaded():
    print(sorted(m for m in sys.modules if m.split(".")[0] in {(*HEAVY, "click")!r}
                 or (m.startswith("fairmark.cli.") and m not in cli)), file=sys.stderr)
atexit.register(loaded)
sys.argv[1:] = ["agent"]
runpy.run_module("fairmark", run_name="__main__", alter_sys=True)
"""


def test_the_agent_starts_without_the_cli(tmp_path) -> None:
    """`fairmark agent` serves the protocol with the agent's own modules, as the shipped agent does: no click, no
    command module, nothing heavy — a controller starts one at every connection (every boot of a boot run), and
    in a QEMU guest under TCG each import is seconds (docs/performance.md). `fairmark agent --help` is the CLI's."""
    import os

    env = os.environ | {"FAIRMARK_STATE_DIR": str(tmp_path / "state")}
    hello = json.dumps({"v": 3, "id": 1, "op": "hello"})
    res = subprocess.run(
        [sys.executable, "-c", AGENT_PROBE],
        input=hello + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    answer = json.loads(res.stdout.splitlines()[0])
    assert answer["ok"] is True and answer["result"]["protocol"] == 3, answer
    assert res.stderr.strip().splitlines()[-1] == "[]", res.stderr
    helped = subprocess.run(
        [sys.executable, "-m", "fairmark", "agent", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert helped.returncode == 0 and "Serve fairmark's agent protocol" in helped.stdout, helped.stderr
