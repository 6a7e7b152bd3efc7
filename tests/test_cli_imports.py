"""`fairmark --version`, `runs` and `doctor` import only what they use (issue 9): the heavy libraries are
loaded by the commands that need them. Checked on the modules actually loaded, not on a start time."""

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
