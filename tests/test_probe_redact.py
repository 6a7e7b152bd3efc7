"""Secrets never reach a snapshot: by name, by value shape, and anywhere else in the snapshot."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairmark.probe import redact
from fairmark.probe.redact import REDACTED, looks_like_key, redact_env, redact_text
from fairmark.probe.snapshot import take_snapshot


@pytest.mark.parametrize(
    "name",
    [
        "FAIRMARK_TEST_TOKEN",
        "DB_PASSWORD",
        "db_passwd",
        "MY_PASS",
        "AWS_SECRET_ACCESS_KEY",
        "apikey",
        "X_CREDENTIALS",
        "GH_AUTH",
        "cookie_jar",
        "SessionId",
        "github_token",
    ],
)
def test_secret_names_are_redacted_in_any_case_and_position(name: str) -> None:
    assert redact_env({name: "harmless-looking"})[name] == REDACTED


def test_ordinary_variables_are_kept() -> None:
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "GIT_COMMIT": "9b05f4a" * 5, "HOME": "/root"}
    assert redact_env(env) == env


@pytest.mark.parametrize(
    "value",
    [
        "postgresql://bench:s3cr3tpw@127.0.0.1:5432/db",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "AKIAIOSFODNN7EXAMPLE",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "Zx8kQ2mN7vB4tR9wL3pY6cH1",
    ],
)
def test_key_looking_values_are_redacted_whatever_the_name(value: str) -> None:
    assert looks_like_key(value)
    assert redact_env({"SOME_SETTING": value})["SOME_SETTING"] != value


def test_redact_text_keeps_structure_and_hides_only_the_secret() -> None:
    text = "console=ttyS0 password=hunter2 url=https://u:pw123@example.org/x --auth-required quiet"
    out = redact_text(text)
    assert "hunter2" not in out and "pw123" not in out
    assert "console=ttyS0" in out and "--auth-required" in out and "quiet" in out
    assert "https://u:<redacted>@example.org/x" in out


def test_a_plan_stays_valid_toml_after_redaction() -> None:
    # A stored plan is parsed again by `fairmark resume`: a redacted value must not swallow the closing quote.
    import tomllib

    plan = 'ssh_options = ["-o", "StrictHostKeyChecking=no", "-p", "22"]\nenv = { X = "token=abc123def" }\n'
    out = tomllib.loads(redact_text(plan))
    assert out["ssh_options"][1] == "StrictHostKeyChecking=no"  # a switch, no secret: resume can use it
    assert out["ssh_options"][2:] == ["-p", "22"]
    assert "abc123def" not in str(out)


def test_mitigation_words_are_not_mistaken_for_secrets() -> None:
    text = "Mitigation: Speculative Store Bypass disabled via prctl"
    assert redact_text(text) == text


def test_planted_secrets_appear_nowhere_in_a_live_snapshot(tmp_path) -> None:
    token, pw = "planted-7c1e9d2b-token", "planted-db-pw-5512"
    env = {
        "PATH": "/usr/bin",
        "FAIRMARK_TEST_TOKEN": token,
        "DB_PASSWORD": pw,
        "OTHER": f"prefix-{pw}-suffix",
    }
    snap = take_snapshot("/", env=env, workdir=str(tmp_path))
    text = json.dumps(snap)
    assert token not in text and pw not in text
    assert snap["env"]["FAIRMARK_TEST_TOKEN"] == REDACTED and snap["env"]["DB_PASSWORD"] == REDACTED
    assert snap["env"]["PATH"] == "/usr/bin"


def test_boot_parameters_with_uuids_and_paths_survive() -> None:
    text = "BOOT_IMAGE=/vmlinuz-6.8.2-300.fc40.x86_64 root=UUID=3f1c9a0e-4b2d-4c1e-9f3a-2b1c0d9e8f7a ro rhgb"
    assert redact_text(text) == text


# The regexes before their bounds (a scheme of at most 32 characters; {2} for {2,}): the same text redacted,
# without the quadratic scans of a long token.
_OLD_URL = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^/\s:@]*:)(?P<pw>[^@\s/]+)(?P<tail>@)", re.I)
_OLD_DOTTED = re.compile(r"[a-z]{2,}[._-][a-z]{2,}")


def _with_old_regexes(fn: Callable[[str], object], text: str) -> object:
    bounded = redact._URL_PASSWORD_RE, redact._DOTTED_WORDS_RE
    redact._URL_PASSWORD_RE, redact._DOTTED_WORDS_RE = _OLD_URL, _OLD_DOTTED
    try:
        return fn(text)
    finally:
        redact._URL_PASSWORD_RE, redact._DOTTED_WORDS_RE = bounded


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ9+.-:/@ x", max_size=120), st.integers(min_value=1, max_value=60))
def test_bounded_regexes_redact_what_the_unbounded_ones_did(text: str, scheme_len: int) -> None:
    long_scheme = "s" * scheme_len + "://user:pw@host " + text  # schemes shorter and longer than the bound
    for t in (text, long_scheme, long_scheme.replace("s", "aB3")):
        assert redact_text(t) == _with_old_regexes(redact_text, t)
        assert looks_like_key(t) == _with_old_regexes(looks_like_key, t)
    assert "pw@" not in redact_text(long_scheme)


def test_a_long_token_is_scrubbed_whole() -> None:
    """A tail of one 8 KiB token (a progress bar, base64) and a URL with a password after it: both handled (it
    took over a second, quadratic in the token's length, before the bounds)."""
    token = "aB3" * 2731
    text = f"{token} https://u:secret@example.org/x"
    out = redact_text(text)
    assert "secret" not in out and out.endswith("https://u:" + REDACTED + "@example.org/x")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mysql --password hunter2 -e 'select 1'", "mysql --password <redacted> -e 'select 1'"),
        ('command = ["mysql", "--password", "hunter2"]', 'command = ["mysql", "--password", "<redacted>"]'),
        ("sysbench --pgsql-password hunter2 run", "sysbench --pgsql-password <redacted> run"),
        ("mysqlslap -uroot -phunter2 -h db", "mysqlslap -uroot -p<redacted> -h db"),
        ("curl -u bench:hunter2 http://x", "curl -u bench:<redacted> http://x"),
        (
            "https://a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6@o1.ingest.example/1",
            "https://<redacted>@o1.ingest.example/1",
        ),
        # what is no secret stays: a port, a bare prompting flag, a file of passwords, a user name in a URL
        ("ssh -p 2222 host; make -j4 -p", "ssh -p 2222 host; make -j4 -p"),
        ("mysql --password --host db", "mysql --password --host db"),
        ("pgbench --password-file /etc/pw --bypass x", "pgbench --password-file /etc/pw --bypass x"),
        ("postgres://postgres@localhost/db", "postgres://postgres@localhost/db"),
        ("docker run -u 1000:1000 img", "docker run -u 1000:1000 img"),
    ],
)
def test_flags_that_carry_secrets(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_argv_secrets_are_hidden_by_their_flag_and_program() -> None:
    found: set[str] = set()
    argv = ["/usr/bin/mysql", "--password", "a,b'c9", "-pglued1", "-p", "db"]
    assert redact.redact_argv(argv, found=found) == [
        "/usr/bin/mysql",
        "--password",
        REDACTED,
        "-p" + REDACTED,
        "-p",
        "db",
    ]
    assert redact.redact_argv(["curl", "--user", "u:pw1"], found=found) == ["curl", "--user", "u:" + REDACTED]
    assert redact.redact_argv(["ssh", "-p2222", "host"]) == ["ssh", "-p2222", "host"]
    assert found == {"a,b'c9", "glued1", "pw1"}


def test_json_hides_values_under_secret_names_and_secrets_in_text() -> None:
    doc = {
        "env": {"PGPASSWORD": "x1", "URL": "postgres://u:pw@h/d", "N": 3},
        "tags": {"token": "t", "branch": "main"},
    }
    assert redact.redact_json(doc) == {
        "env": {"PGPASSWORD": REDACTED, "URL": f"postgres://u:{REDACTED}@h/d", "N": 3},
        "tags": {"token": REDACTED, "branch": "main"},
    }
