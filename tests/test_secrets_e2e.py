"""Secrets never leave the machine (issue 9): 20 planted secret shapes — cloud keys, GitHub/GitLab tokens,
private key blocks, passwords in URLs, `--password=` in argv, PGPASSWORD … — put in the environment, in a
plan's command and in the tool's output appear nowhere in the store file, the exports, the reports or the
terminal output of a real `fairmark run`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RSA_BODY = "MIIEowIBAAKCAQEA1x8kQ2mN7vB4tR9wL3pY6cH1Zq0sD5fG8hJ2kL4mN6pQ8rS0tU2vW4xY6zA8bC0dE"
SSH_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQ"
# name → (where it is planted, the secret text that must not appear, the line that carries it)
SECRETS = {
    "aws_key_id": ("env", "AKIAQ3EGUJ7XKZ4M2LPA", "AWS_ACCESS_KEY_ID=AKIAQ3EGUJ7XKZ4M2LPA"),
    "aws_secret": (
        "env",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9PLANTED1",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9PLANTED1",
    ),
    "gcp_api_key": (
        "output",
        "AIzaSyD3xQ9planted7Kk2mN4vB8tR1wL6pY0cH5",
        "key: AIzaSyD3xQ9planted7Kk2mN4vB8tR1wL6pY0cH5",
    ),
    "azure_conn": (
        "output",
        "q8W3e5R7t9Y1u3I5o7P9a1S3d5F7g9H1j3K5l7Z9x1C3v5B7n9M1q3W5e7R9t1Y3u5I7o9P1a3S5d7F9g1H3j5K7l9Zz==",
        "DefaultEndpointsProtocol=https;AccountName=bench;AccountKey=q8W3e5R7t9Y1u3I5o7P9a1S3d5F7g9H1j3K5l7Z9x1C3v5B7n9M1q3W5e7R9t1Y3u5I7o9P1a3S5d7F9g1H3j5K7l9Zz==;EndpointSuffix=core.windows.net",
    ),
    "azure_client_secret": (
        "output",
        "Xy8Q~planted3kL9mN2vB5tR8wL1pY4cH7zQ0sD",
        "client secret Xy8Q~planted3kL9mN2vB5tR8wL1pY4cH7zQ0sD",
    ),
    "github_classic": (
        "command",
        "ghp_R3planted9tokenQ2mN7vB4tR9wL3pY6cH1z",
        "ghp_R3planted9tokenQ2mN7vB4tR9wL3pY6cH1z",
    ),
    "github_fine": (
        "env",
        "github_pat_11ABCDEFG0planted_Q2mN7vB4tR9wL3pY6cH1zX8k",
        "GH_FINE=github_pat_11ABCDEFG0planted_Q2mN7vB4tR9wL3pY6cH1zX8k",
    ),
    "github_app": (
        "output",
        "ghs_Z9planted2appTokenQ2mN7vB4tR9wL3pY6c",
        "installation ghs_Z9planted2appTokenQ2mN7vB4tR9wL3pY6c",
    ),
    "gitlab": ("output", "glpat-planted9Q2mN7vB4tR9w", "glpat-planted9Q2mN7vB4tR9w"),
    "slack": (
        "env",
        "xoxb-123456789012-planted-Q2mN7vB4tR9w",
        "SLACK_HOOK_VALUE=xoxb-123456789012-planted-Q2mN7vB4tR9w",
    ),
    "openai": (
        "output",
        "sk-proj-planted3Q2mN7vB4tR9wL3pY6cH1zX8k",
        "using sk-proj-planted3Q2mN7vB4tR9wL3pY6cH1zX8k",
    ),
    "rsa_pem": (
        "output",
        RSA_BODY,
        f"-----BEGIN RSA PRIVATE KEY-----\\n{RSA_BODY}\\n-----END RSA PRIVATE KEY-----",
    ),
    "openssh_pem": (
        "output",
        SSH_BODY,
        f"-----BEGIN OPENSSH PRIVATE KEY-----\\n{SSH_BODY}\\n-----END OPENSSH PRIVATE KEY-----",
    ),
    "pg_url": ("env", "pgPlantedPw77", "DATABASE_URL=postgresql://bench:pgPlantedPw77@127.0.0.1:5432/bench"),
    "https_url": ("command", "httpPlantedPw88", "https://deploy:httpPlantedPw88@127.0.0.1/repo.git"),
    "argv_password": ("command", "argvPlantedPw99", "--password=argvPlantedPw99"),
    "pgpassword": ("env", "pgpassPlanted42", "PGPASSWORD=pgpassPlanted42"),
    "jwt": (
        "output",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlcGxhbnRlZDEyMw",
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlcGxhbnRlZDEyMw",
    ),
    "bearer": ("output", "bearerPlantedTok3n5", "Authorization: Bearer bearerPlantedTok3n5"),
    "mysql_pwd": ("env", "mysqlPlanted61", "MYSQL_PWD=mysqlPlanted61"),
}


def test_twenty_secret_shapes_are_planted() -> None:
    assert len(SECRETS) == 20
    assert {where for where, _, _ in SECRETS.values()} == {"env", "command", "output"}


@pytest.mark.slow
def test_planted_secrets_appear_nowhere(
    tmp_path: Path, fairmark_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = dict(os.environ)
    for where, _, line in SECRETS.values():
        if where == "env":
            name, _, value = line.partition("=")
            env[name] = value
    outputs = [line for where, _, line in SECRETS.values() if where == "output"]
    in_command = [line for where, _, line in SECRETS.values() if where == "command"]
    env_lines = [f'echo "${{{line.partition("=")[0]}}}"' for w, _, line in SECRETS.values() if w == "env"]
    script = tmp_path / "tool.sh"
    # the tool prints every secret (its arguments, its environment, its own output) and one number
    script.write_text(
        "#!/bin/sh\n"
        + "".join(f"printf '%b\\n' '{o}'\n" for o in outputs)
        + "".join(f"{e}\n" for e in env_lines)
        + 'echo "args: $*"\n'
        + 'echo "args: $*" >&2\n'
        + 'case "$*" in *--fail*) exit 1;; esac\n'
        + "echo 'result 42'\n"
    )
    script.chmod(0o755)
    plan = tmp_path / "plan.toml"
    argv = ", ".join(f'"{a}"' for a in [str(script), *in_command])
    plan.write_text(
        "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n"
        f"[[workload]]\nname = 'leaky'\ncommand = [{argv}]\n"
        "[[workload.metrics]]\nname = 'result'\nregex = 'result (\\d+)'\nbetter = 'higher'\n"
        f"[[workload]]\nname = 'failing'\ncommand = [{argv}, '--fail']\nsetup = 'true'\n"
    )
    env |= {
        "FAIRMARK_STORE": str(tmp_path / "store.db"),
        "FAIRMARK_LOCK_PATH": str(tmp_path / "lock"),
        "FAIRMARK_STATE_DIR": str(tmp_path / "state"),
        "NO_COLOR": "1",
    }
    out = tmp_path / "out"
    terminal = []

    res = subprocess.run(  # the run in a process of its own, as a user starts it
        [sys.executable, "-m", "fairmark", "run", str(plan), "--accept-risk"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode in (0, 1, 4), res.stderr[-3000:]  # 4: the plan's failing workload
    terminal.append(res.stdout + res.stderr)
    for name, value in env.items():  # the commands that read the store: in this process, with the same env
        if os.environ.get(name) != value:
            monkeypatch.setenv(name, value)

    def fm(*args: str) -> None:
        code, out, err = fairmark_cli(*args)
        assert code in (0, 1, 4), err[-3000:]
        terminal.append(out + err)

    fm("show", "last")
    fm("runs")
    fm("env")
    for fmt in ("json", "csv", "ministat"):
        fm("export", "last", "--format", fmt, "--out", str(out))
    fm("report", "last", "--html", str(out / "r.html"))
    fm("report", "last", "--text")
    fm("report", "last", "--markdown")
    fm("show", "last", "--json")

    places = {"terminal output": "\n".join(terminal)}
    for f in [*tmp_path.glob("store.db*"), *out.rglob("*")]:
        if f.is_file():
            places[str(f.relative_to(tmp_path))] = f.read_bytes().decode("utf-8", errors="replace")
    assert any("result" in text for text in places.values())  # the run did store what the tool printed
    leaks = [
        f"{name} ({where}) in {place}"
        for name, (where, secret, _) in SECRETS.items()
        for place, text in places.items()
        if secret in text
    ]
    assert not leaks, "\n".join(leaks)


# issue 37 (item 8): secrets the run kept raw outside its plan text — name → (the secret, where it is planted)
STORED_SECRETS = {
    "variant env URL": ("varEnvPlanted71", 'DATABASE_URL = "postgresql://bench:varEnvPlanted71@127.0.0.1/x"'),
    "variant env by name": ("namedEnvPlanted5", 'API_TOKEN = "namedEnvPlanted5"'),
    "--password VALUE": ("flagPlanted81", "mysql --password flagPlanted81"),
    "-pVALUE": ("gluedPlanted82", "mysql -pgluedPlanted82"),
    "curl -u": ("curlPlanted83", "curl -u bench:curlPlanted83"),
    "DSN key": ("a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6", "https://a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6@127.0.0.1/1"),
    "--tag by name": ("tagPlanted84", "--tag token=tagPlanted84"),
    "--tag URL": ("tagUrlPlanted85", "--tag db=postgres://u:tagUrlPlanted85@127.0.0.1/x"),
}


@pytest.mark.slow
def test_a_runs_options_commands_and_tags_keep_no_secret(
    tmp_path: Path, fairmark_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Variants whose env carries a password (in a URL, and under a secret name), a mysql client given its
    password as `--password VALUE` and `-pVALUE`, curl's `-u user:pw`, a DSN whose user part is a key, and
    `--tag` values: none in the store, a bundle, the HTML report, `show --json`, the dashboard or the terminal.
    The tools print their arguments and environment (`args: $*`), as a failing tool's usage message does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("mysql", "curl"):
        tool = bin_dir / name
        tool.write_text(
            '#!/bin/sh\necho "args: $*"\necho "env: $DATABASE_URL $API_TOKEN"\necho "result 42"\n'
        )
        tool.chmod(0o755)
    plan = tmp_path / "plan.toml"
    dsn = STORED_SECRETS["DSN key"][1]
    plan.write_text(
        "[run]\nwarmup = 0\nmin_trials = 3\nmax_trials = 3\n"
        f"[[variant]]\nname = 'a'\nenv = {{ {STORED_SECRETS['variant env URL'][1]} }}\n"
        f"[[variant]]\nname = 'b'\nenv = {{ {STORED_SECRETS['variant env by name'][1]} }}\n"
        f"[[workload]]\nname = 'db'\ncommand = ['{bin_dir}/mysql', '--password', 'flagPlanted81', "
        "'-pgluedPlanted82', '-e', 'select 1']\n"
        "[[workload.metrics]]\nname = 'result'\nregex = 'result (\\d+)'\nbetter = 'higher'\n"
        f"[[workload]]\nname = 'http'\ncommand = ['{bin_dir}/curl', '-u', 'bench:curlPlanted83', '{dsn}']\n"
        "[[workload.metrics]]\nname = 'result'\nregex = 'result (\\d+)'\nbetter = 'higher'\n"
    )
    env = dict(os.environ) | {"FAIRMARK_STORE": str(tmp_path / "store.db"), "NO_COLOR": "1"}
    tags = [w for flag in ("--tag by name", "--tag URL") for w in STORED_SECRETS[flag][1].split()]
    res = subprocess.run(
        [sys.executable, "-m", "fairmark", "run", str(plan), "--accept-risk", "--no-monitors", *tags],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode in (0, 1), res.stderr[-3000:]
    terminal = [res.stdout + res.stderr]
    monkeypatch.setenv("FAIRMARK_STORE", env["FAIRMARK_STORE"])
    out = tmp_path / "out"
    for args in (
        ("show", "last"),
        ("show", "last", "--json"),
        ("runs", "--tag", "token=<redacted>"),
        ("export", "last", "--format", "json", "--out", str(out)),
        ("export", "last", "--format", "csv", "--out", str(out)),
        ("report", "last", "--html", str(out / "r.html")),
        ("publish", "--out", str(out / "site")),
    ):
        code, stdout, err = fairmark_cli(*args)
        assert code in (0, 1), err[-3000:]
        terminal.append(stdout + err)
    assert "result" in terminal[1]
    places = {"terminal output": "\n".join(terminal)}
    for f in [*tmp_path.glob("store.db*"), *out.rglob("*")]:
        if f.is_file():
            places[str(f.relative_to(tmp_path))] = f.read_bytes().decode("utf-8", errors="replace")
    assert any("site/runs/" in p for p in places)  # the dashboard drew the run's page
    leaks = [
        f"{name} in {place}"
        for name, (secret, _) in STORED_SECRETS.items()
        for place, text in places.items()
        if secret in text
    ]
    assert not leaks, "\n".join(leaks)
