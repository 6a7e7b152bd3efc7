"""Plans the README and docs show must run (issue 25 item 5): every TOML block of README.md and docs/ passes
`fairmark run --dry-run`, which checks what the run checks — tool parameters included (the README's plan said
`duration = 5` for iperf3, which the dry run accepted and the run refused) — and the plans the docs name exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import REPO

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _blocks() -> list[tuple[str, int, str, str]]:
    """(file, line, language, text) of every fenced block of the README and docs."""
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append((str(doc.relative_to(REPO)), line, m.group(1), m.group(2)))
    return out


TOML = [(f"{f}:{line}", body) for f, line, lang, body in _blocks() if lang == "toml"]


def test_the_docs_show_plans() -> None:
    assert len(TOML) >= 3  # README: a plan, hosts over SSH, boot variants
    # A transcript ('$ fairmark report … --text' printing the run's stored plan) shows what fairmark printed,
    # not a plan to copy; every other block with a workload table must be fenced as toml so it is checked.
    plan_like = [
        f"{f}:{line}"
        for f, line, lang, body in _blocks()
        if "[[workload]]" in body and lang != "toml" and not body.lstrip().startswith("$ ")
    ]
    assert not plan_like, f"plans fenced as something else than toml (not checked): {plan_like}"


@pytest.mark.parametrize(("where", "body"), TOML, ids=[w for w, _ in TOML])
@pytest.mark.parametrize("quick", [False, True], ids=["full", "quick"])
def test_every_toml_block_passes_the_dry_run(
    tmp_path: Path, fairmark_cli, where: str, body: str, quick: bool
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(body)
    code, out, err = fairmark_cli("run", str(plan), "--dry-run", *(["--quick"] if quick else []))
    assert code == 0, f"{where}: {err}"
    assert "cell(s)" in out


def test_the_boot_plan_in_the_readme_is_the_shipped_plans_kernels_toml() -> None:
    shipped = (REPO / "plans" / "kernels.toml").read_text()
    assert any(body == shipped for _, body in TOML)


def test_every_plan_the_docs_name_exists() -> None:
    named = {m for doc in DOCS for m in re.findall(r"\bplans/[\w.-]+\.toml\b", doc.read_text())}
    assert "plans/kernels.toml" in named
    assert [p for p in sorted(named) if not (REPO / p).is_file()] == []


BAD = """title = "x"
[quick]
params = {{ net = {{ {quick} }} }}
[[workload]]
name = "net"
tool = "iperf3"
params = {{ {params} }}
[[variant]]
name = "a"
[[variant]]
name = "b"
params = {{ net = {{ {variant} }} }}
"""


@pytest.mark.parametrize(
    ("params", "variant", "quick", "flags", "where"),
    [
        (
            "duration = 5",
            "",
            "",
            (),
            "plan.toml:7: workload[0] \"net\".params: tool 'iperf3' has no parameter(s) duration",
        ),
        (
            "",
            "paralel = 4",
            "",
            (),
            "plan.toml:12: variant[1] \"b\".params.net (cell net/b): tool 'iperf3' has no",
        ),
        (
            "",
            "",
            "duratoin_s = 1",
            ("--quick",),
            "plan.toml:3: workload[0] \"net\".params: tool 'iperf3' has no",
        ),
    ],
    ids=["workload", "variant", "quick"],
)
def test_the_dry_run_refuses_a_misspelled_tool_parameter_with_its_line(
    tmp_path: Path, fairmark_cli, params: str, variant: str, quick: str, flags: tuple[str, ...], where: str
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(BAD.format(params=params, variant=variant, quick=quick))
    code, _, err = fairmark_cli("run", str(plan), "--dry-run", *flags)
    assert code == 2 and f"{tmp_path}/{where}" in err, err
