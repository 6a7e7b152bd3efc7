"""`fairmark history`: a +10% step at run 12 of 22 is found there with its size ± CI, and a noise-only history
of 20 runs has no change point at the default level; each change point names the runs and tag values it falls
between. Those histories are written with the store's API (helpers.api_runs: what the runner stores, seeded,
made in no time): the change-point test then answers for the data, not for this shared machine's load over 31
real runs (issue 24). Two processes with different host names write real runs to one PostgreSQL store at once,
and history keeps each host's series apart."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import api_runs, nap_workload

# a program that times its own sleep (helpers.NAP_C): what it measures does not depend on the machine's load
NAP_S = 0.1


def nap_plan(tmp: Path, factor: float) -> Path:
    path = tmp / f"nap-{factor:g}.toml"
    path.write_text(
        "title = 'nap'\n[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\ntarget_ci_pct = 0.0001\n"
        + nap_workload()
        + f"[[variant]]\nname = 'A'\nenv = {{ NAP_S = '{NAP_S * factor:.4f}' }}\n"
    )
    return path


def history(fairmark_cli, *args: str) -> list[dict]:
    code, out, err = fairmark_cli("history", "nap:elapsed_s", "--json", *args)
    assert code == 0, err
    return json.loads(out)["series"]


def test_step_at_run_12_and_a_noise_only_history(fairmark_cli, tmp_path: Path) -> None:
    api_runs(
        [0.1] * 11 + [0.11] * 11, {"step": "1"}, seed=1
    )  # idx 0-21: the 12th run (idx 11) on are 10% slower
    api_runs([0.1] * 20, {"noise": "1"}, start_h=100, seed=2)
    (step,) = history(fairmark_cli, "--tag", "step=1", "--by-tag", "idx")
    assert [p["tags"]["idx"] for p in step["points"]] == [str(i) for i in range(22)]
    (cp,) = step["change_points"]
    assert cp["index"] == 11, cp  # between the 11th and the 12th run
    assert cp["p_value"] <= 0.01 and cp["change"] == "worse"
    assert 5 < cp["percent"] < 15 and cp["ratio_ci"][0] > 1.0, cp
    # it names the runs it falls between, with their tag values
    assert cp["between"][0].endswith("(idx=10)") and cp["between"][1].endswith("(idx=11)"), cp["between"]
    assert cp["run_id"] == step["points"][cp["index"]]["run_id"]

    (noise,) = history(fairmark_cli, "--tag", "noise=1", "--by-tag", "idx")
    assert len(noise["points"]) == 20
    assert noise["change_points"] == []

    # the terminal table and the plots say the same
    code, out, _ = fairmark_cli(
        "history",
        "nap",
        "--tag",
        "step=1",
        "--by-tag",
        "idx",
        "--html",
        str(tmp_path / "h.html"),
        "--png",
        str(tmp_path / "h.png"),
    )
    assert code == 0 and "change point before point" in out
    assert "(idx=" in (tmp_path / "h.html").read_text() and (tmp_path / "h.png").stat().st_size > 1000
    # a level the null tables cannot test at is refused, not tested at theirs (0.05) under its name
    code, out, err = fairmark_cli("history", "nap", "--tag", "step=1", "--alpha", "0.1")
    assert code == 2 and "change points are tested at levels up to 0.05" in out + err, (out, err)


@pytest.fixture
def postgres() -> Iterator[str]:
    from fairmark.run.workloads.servers import PG_BIN, PostgresServer

    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL server binaries not installed ({PG_BIN}); `make setup` installs them")
    base = Path(tempfile.mkdtemp(prefix="fairmark-pghist-"))  # outside pytest's 0700 basetemp
    server = PostgresServer(base / "pg", fsync=False)
    try:
        server.start()
        server.psql("CREATE DATABASE fm")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{server.port}/fm"
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare (UTS namespace)"
)
@pytest.mark.slow
def test_two_hosts_write_one_postgresql_store_at_once(fairmark_cli, tmp_path: Path, postgres: str) -> None:
    """Each process runs in a UTS namespace of its own with its own host name: two machines, one store."""
    plan = nap_plan(tmp_path, 1.0)
    runs = 3
    procs = []
    for host in ("builder-a", "builder-b"):
        env = os.environ | {
            "FAIRMARK_STORE": postgres,
            "FAIRMARK_LOCK_PATH": str(tmp_path / f"{host}.lock"),
            "FAIRMARK_STATE_DIR": str(tmp_path / f"{host}-state"),
            "NO_COLOR": "1",
        }
        loop = " && ".join(
            f"{sys.executable} -m fairmark run {plan} --no-monitors --accept-risk --allow-concurrent --tag "
            f"branch=main --tag n={i}"
            for i in range(runs)
        )
        procs.append(
            subprocess.Popen(
                ["unshare", "--uts", "sh", "-c", f"hostname {host} && {loop}"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]

    series = history(fairmark_cli, "--store", postgres, "--tag", "branch=main")
    assert sorted(s["host"] for s in series) == ["builder-a", "builder-b"]
    assert all(len(s["points"]) == runs for s in series)
    (only_a,) = history(fairmark_cli, "--store", postgres, "--host", "builder-a")
    assert only_a["host"] == "builder-a" and len(only_a["points"]) == runs
    ids = {p["run_id"] for s in series for p in s["points"]}
    assert len(ids) == 2 * runs  # no run counted twice, none lost


def test_ten_runs_with_a_16pct_step_show_it_and_eight_are_too_few(fairmark_cli) -> None:
    """Issue 26 item 6: a clean +16% step in 10 runs is a change point at the default α 0.01 (the exact
    permutation p, 2/C(10,5) = 0.0079); 8 runs cannot show any change at 0.01, and history says so."""
    api_runs([0.1] * 5 + [0.116] * 5, {"series": "ten"})
    api_runs([0.1] * 4 + [0.116] * 4, {"series": "eight"})
    (ten,) = history(fairmark_cli, "--tag", "series=ten")
    (cp,) = ten["change_points"]
    assert cp["index"] == 5 and cp["p_value"] < 0.01 and cp["change"] == "worse", cp
    assert 14 < cp["percent"] < 18 and ten["too_short"] is None
    (eight,) = history(fairmark_cli, "--tag", "series=eight")
    assert eight["change_points"] == []
    assert eight["too_short"].startswith("8 runs are too few to show any change point at α = 0.01")
    code, out, _ = fairmark_cli("history", "nap", "--tag", "series=eight")
    assert code == 0 and "smallest p-value 8 runs can reach is 0.029; 10 runs can" in out
    code, out, _ = fairmark_cli("history", "nap", "--tag", "series=ten")
    assert code == 0 and "change point before point 6" in out
