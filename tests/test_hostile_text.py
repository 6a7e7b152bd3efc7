"""What a bundle, a tool's output or a host says is shown, never acted on (issue 37, item 9): no terminal escape
sequence reaches the terminal from `show`, no CSV cell acts as a spreadsheet formula, the standalone HTML report
loads and runs nothing (its content security policy), an ssh destination is never an option to ssh, and a host's
address for clients is an IP address before it goes into another host's pg_hba.conf."""

from __future__ import annotations

import csv
import datetime as dt
import html as html_lib
import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from fairmark.errors import EnvironmentRefused, PlanError
from fairmark.plan.load import parse_plan
from fairmark.plan.metric import MetricSpec
from fairmark.plan.model import HostEntry
from fairmark.remote.connection import HostConnection, HostSpec
from fairmark.remote.hosts import RemoteHost
from fairmark.store.db import Store
from fairmark.store.records import CellRecord, Sample, TrialRecord

# retitle the window, clear the screen, move the cursor home, an OSC 8 link, and a C1 CSI
ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[H\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x9b31m"
FORMULAS = ['=HYPERLINK("http://x","y")', "+1+2", "-2+3", "@SUM(A1)"]


def hostile_run() -> str:
    """A run as a bundle from elsewhere may carry it: escapes in its title, a tag, a failed trial's error and
    output; formulas in a variant's name and a trial's error."""
    st = Store.open(os.environ["FAIRMARK_STORE"])
    started = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    run_id = st.create_run(
        plan_path="lab.toml",
        plan_text="title = 'lab'\n",
        plan_sha256="0" * 64,
        title=f"lab {ESCAPES}",
        seed=1,
        host_id="h",
        hostname="h",
        started_at=started,
        status="running",
        command_line="fairmark run lab.toml",
        fairmark_version="test",
        options={"baseline": "a", "variants": {"a": {"name": "a"}, FORMULAS[0]: {"name": FORMULAS[0]}}},
        notes=[],
        tags={"branch": f"main{ESCAPES}"},
    )
    metric = MetricSpec("t", "s", "lower")
    cells = [CellRecord(f"w/{v}", "w", v, (), "t", (metric,), status="done") for v in ("a", FORMULAS[0])]
    ids = st.ensure_cells(run_id, cells)
    for k in range(4):
        for cell in cells:
            trial = TrialRecord(run_id, ids[cell.key], 2 * k, k, False, "ok", started, wall_s=1.0)
            st.add_trial(trial, [Sample(trial.id, trial.cell_id, "t", 1.0 + k / 100, "s", "lower")])
    failed = TrialRecord(
        run_id,
        ids["w/a"],
        9,
        4,
        False,
        "failed",
        started,
        wall_s=1.0,
        exit_code=1,
        error=f"{FORMULAS[3]} exit status 1 {ESCAPES}",
        stderr_tail=f"oops {ESCAPES}\n",
    )
    st.add_trial(failed, [])
    st.update_run(run_id, status="done", ended_at=started + dt.timedelta(minutes=1))
    return run_id


def test_show_prints_no_control_character_of_stored_text(fairmark_cli) -> None:
    run_id = hostile_run()
    for args in (
        ("show", run_id),
        ("runs",),
        ("report", run_id, "--text"),
    ):
        code, out, err = fairmark_cli(*args)
        assert code in (0, 1, 4), err
        shown = out + err
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", shown), (args, repr(shown)[:2000])
    code, out, _ = fairmark_cli("show", run_id)
    assert "lab ^[]0;owned" in out and "^[[2J" in out  # shown, made visible as `cat -v` does


def test_csv_cells_cannot_act_as_formulas(fairmark_cli, tmp_path: Path) -> None:
    run_id = hostile_run()
    code, _, err = fairmark_cli("export", run_id, "--format", "csv", "--out", str(tmp_path))
    assert code == 0, err
    cells = [
        c for f in ("samples.csv", "trials.csv") for row in csv.reader((tmp_path / f).open()) for c in row
    ]
    assert f"'{FORMULAS[0]}" in cells and any(c.startswith(f"'{FORMULAS[3]}") for c in cells)
    numbers = [c for c in cells if re.fullmatch(r"-?[0-9.]+(e-?\d+)?", c)]
    assert numbers  # numbers stay numbers
    starts = [c for c in cells if c[:1] in ("=", "+", "@") or (c.startswith("-") and c not in numbers)]
    assert not starts, starts


def test_the_standalone_html_report_has_the_dashboards_content_policy(fairmark_cli, tmp_path: Path) -> None:
    run_id = hostile_run()
    code, _, err = fairmark_cli("report", run_id, "--html", str(tmp_path / "r.html"))
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    policy = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    assert [html_lib.unescape(p) for p in policy] == [
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    ]
    assert html.index("Content-Security-Policy") < html.index("<title>")  # before anything it could govern


@pytest.mark.parametrize("dest", ["-oProxyCommand=touch /tmp/x", "-F/tmp/evil", "host name", "root@box\n-v"])
def test_an_ssh_destination_is_never_an_option(dest: str) -> None:
    with pytest.raises(ValueError, match="is not an ssh destination"):
        HostEntry(ssh=dest)
    plan = f'[hosts.a]\nssh = {json.dumps(dest)}\n[[workload]]\nname = "w"\ncommand = ["true"]\n'
    with pytest.raises(PlanError, match=r"hosts\.a\.ssh: .* is not an ssh destination"):
        parse_plan(plan + '[[variant]]\nname = "v"\nhost = "a"\n', "p.toml")


def test_options_end_before_the_destination() -> None:
    """ssh reads options after the destination too, unless `--` came before it: there it keeps the remote
    command's words from being ssh's options as well."""
    conn = HostConnection(HostSpec("box", ssh="root@box", ssh_options=("-p", "2222")))
    argv = conn.ssh_argv("python3", "-c", "print(1)")
    assert argv[argv.index("--") :] == ["--", "root@box", "python3", "-c", "print(1)"]
    assert argv[argv.index("--") - 2 : argv.index("--")] == ["-p", "2222"]
    master = conn._master_argv()  # the ControlMaster's -N (no command) is an option: before `--`
    assert master[master.index("--") - 1 :] == ["-N", "--", "root@box"]


@pytest.mark.parametrize(
    ("said", "ok"),
    [
        ("10.1.2.3", "10.1.2.3"),
        ("fd00::1", "fd00::1"),
        ("10.1.2.3/0 trust\nhost all all 0.0.0.0", None),
        ("all", None),
        ("samenet", None),
        ("10.0.0.1 trust", None),
    ],
)
def test_a_hosts_address_for_clients_is_an_ip_address(said: str, ok: str | None) -> None:
    host = RemoteHost("b", HostEntry(ssh="root@b"))
    host.conn = SimpleNamespace(hello={"address": said})  # type: ignore[assignment]
    if ok:
        assert host.address() == ok
        return
    with pytest.raises(EnvironmentRefused, match=r"its agent reports .* not an IP address"):
        host.address()
