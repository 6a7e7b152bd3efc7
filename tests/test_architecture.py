"""The arrows and sizes docs/architecture.md promises (issue 12), checked on the source: a report or a statistic
never reaches into the runner, the CLI, or the plan loader; only the CLI imports the CLI; only the CLI decides
an exit status; the runner holds rounds, stopping and resume only; no function is longer than 60 lines."""

from __future__ import annotations

import ast
import functools
import itertools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "fairmark"
MAX_FUNCTION_LINES = 60
MAX_RUNNER_LINES = 350
# Known, named exceptions (each to be removed, never to be added to): none left. report/pagecache.py asked the
# file-system adapters what a trial claimed to have read/written until the run stored it with each trial.
KNOWN_ARROWS: set[tuple[str, str]] = set()


@functools.cache  # parsed once per session, not once per test
def _modules() -> list[tuple[str, ast.Module]]:
    return [(p.relative_to(SRC).as_posix(), ast.parse(p.read_text())) for p in sorted(SRC.rglob("*.py"))]


def _imports(tree: ast.Module) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out += [(node.lineno, node.module)] + [
                (node.lineno, f"{node.module}.{a.name}") for a in node.names
            ]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return out


def test_arrows_follow_the_data_flow() -> None:
    wrong = []
    for rel, tree in _modules():
        for line, name in _imports(tree):
            inner = rel.startswith(("report/", "stats/"))
            known = (rel, name) in KNOWN_ARROWS
            if (
                inner
                and not known
                and name.startswith(("fairmark.run.", "fairmark.cli.", "fairmark.plan.load"))
            ):
                wrong.append(f"{rel}:{line} imports {name}")
            if not rel.startswith("cli/") and rel != "__main__.py" and name.startswith("fairmark.cli."):
                wrong.append(f"{rel}:{line} imports {name}")
    assert wrong == []


# (importer prefix, imported prefix): arrows against the data flow, each named in issue 22. The verdict module sits
# between the store and the statistics: the runner asks it for verdicts (never the reports), the statistics stay
# numbers only (never the store), and the verdicts never reach back into the runner, the reports or the CLI.
FORBIDDEN = (
    ("run/", "fairmark.report"),
    (
        "run/",
        "fairmark.remote",
    ),  # run/ owns the Host interface; remote/ implements it and assemble.py builds the hosts
    ("report/", "fairmark.remote"),
    # the run core hands a finished run's id back; its verdicts are asked by the one assembler (issue 33 item 6),
    # which sits above the run core, the hosts and the reports: none of them starts a run
    ("run/", "fairmark.verdict"),
    ("run/", "fairmark.assemble"),
    ("remote/", "fairmark.assemble"),
    ("report/", "fairmark.assemble"),
    ("verdict/", "fairmark.assemble"),
    ("stats/", "fairmark.store"),
    # numbers only: the words of a verdict are verdict/'s and of a report report/'s (issue 33 item 5)
    ("stats/", "fairmark.verdict"),
    ("stats/", "fairmark.report"),
    ("verdict/", "fairmark.report"),
    ("verdict/", "fairmark.run"),
    ("verdict/", "fairmark.cli"),
    ("verdict/", "fairmark.plan.load"),
)


def test_forbidden_arrows() -> None:
    wrong = [
        f"{rel}:{line} imports {name}"
        for rel, tree in _modules()
        for line, name in _imports(tree)
        for src, dst in FORBIDDEN
        if rel.startswith(src) and (name == dst or name.startswith(dst + "."))
    ]
    assert wrong == []


def _package(rel: str) -> str:
    """The package a source file belongs to: its top folder under fairmark/ (a top-level module is its own)."""
    return rel.split("/")[0].removesuffix(".py")


def _package_arrows() -> dict[tuple[str, str], list[str]]:
    """(importer package, imported package) → where (file:line imports name): every import counts, at the top,
    in a function or for type checking only — each is a dependency a reader has to follow."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for rel, tree in _modules():
        for line, name in _imports(tree):
            parts = name.split(".")
            if parts[0] != "fairmark" or len(parts) < 2:
                continue
            src, dst = _package(rel), parts[1]
            if src != dst and ((SRC / dst).is_dir() or (SRC / f"{dst}.py").exists()):
                arrows.setdefault((src, dst), []).append(f"{rel}:{line} imports {name}")
    return arrows


def import_circles(arrows: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """One circle per strongly connected group of packages (Tarjan), as the packages along it, first again at
    the end: run → remote → run."""
    graph: dict[str, set[str]] = {}
    for src, dst in arrows:
        graph.setdefault(src, set()).add(dst)
        graph.setdefault(dst, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_circle_in(graph, set(group)) for group in groups]


def _circle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest way from the group's first package back to itself, inside the group (breadth first)."""
    start = min(group)
    paths = [[start, w] for w in sorted(graph[start] & group)]
    while paths:
        path = paths.pop(0)
        if path[-1] == start:
            return path
        paths += [[*path, w] for w in sorted(graph[path[-1]] & group) if w not in path[1:]]
    return [start]


def test_no_import_circle_between_packages() -> None:
    """Packages depend on each other one way only (issue 22: run/ ↔ remote/ was a 9-file circle, report/ ↔
    remote/ another): any circle is named with the imports that close it."""
    arrows = _package_arrows()
    named = [
        " → ".join(circle) + ": " + "; ".join(arrows[(a, b)][0] for a, b in itertools.pairwise(circle))
        for circle in import_circles(arrows)
    ]
    assert not named, "import circles between packages:\n" + "\n".join(named)


def test_a_circle_is_found_and_named() -> None:
    arrows = {("run", "remote"): ["run/x.py:1"], ("remote", "run"): ["remote/y.py:2"], ("cli", "run"): ["c"]}
    assert import_circles(arrows) == [["remote", "run", "remote"]]
    arrows |= {("report", "stats"): ["r"], ("stats", "store"): ["s"], ("store", "report"): ["t"]}
    assert sorted(import_circles(arrows)) == [
        ["remote", "run", "remote"],
        ["report", "stats", "store", "report"],
    ]
    assert import_circles({("a", "b"): ["x"], ("b", "c"): ["y"]}) == []


def test_the_boot_run_and_the_hosts_use_each_others_public_steps() -> None:
    """run/loop/bootrun.py shares the runner's trial loop and drives a host through their public interfaces (issue 22:
    it called the runner's `_stop`/`_trial` and the hosts' `_lock`/`_reapply`): in the run core and the hosts'
    modules, a name with a leading underscore is only ever reached through `self`."""
    files = (
        "run/loop/bootrun.py",
        "run/loop/runner.py",
        "run/trials/trial.py",
        "run/loop/stage.py",
        "run/loop/gate.py",
        "run/machine/host.py",
    )
    found = [
        f"{rel}:{node.lineno} {ast.unparse(node)}"
        for rel, tree in _modules()
        if rel in files or rel in ("remote/hosts.py", "remote/tooling.py")
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls", "os"))  # os._exit
    ]
    assert found == []


def test_pairs_are_built_and_judged_in_one_module() -> None:
    """Every pair of samples the judge sees is built in verdict/pairs.py, with the design its data call for
    (issue 22: they were built in six places): no other module constructs a `Pair` or calls `judge`."""
    found = [
        f"{rel}:{node.lineno} {node.func.id}(…)"
        for rel, tree in _modules()
        if rel not in ("verdict/pairs.py", "verdict/judge.py")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("Pair", "judge")
    ]
    assert found == []


def test_only_the_cli_decides_the_exit_status() -> None:
    found = [
        f"{rel}:{node.lineno}"
        for rel, tree in _modules()
        if not rel.startswith("cli/")
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id == "SystemExit"
    ]
    assert found == []


def test_runner_and_functions_stay_small() -> None:
    assert len((SRC / "run" / "loop" / "runner.py").read_text().splitlines()) <= MAX_RUNNER_LINES
    long = [
        f"{rel}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for rel, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


def test_no_line_is_kept_from_the_formatter() -> None:
    """Functions stay short as ruff lays them out (issue 22 item 5): no formatter escape packing lines past it."""
    root = SRC.parents[1]
    found = [
        f"{p.relative_to(root)}:{n}"
        for d in ("src", "tests", "bench", "scripts")
        for p in sorted((root / d).rglob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if "fmt: " + "skip" in line or "fmt: " + "off" in line
    ]
    assert found == []


# The core path, type-checked strictly (pyproject.toml's [tool.mypy] override, `make typecheck`): its types say
# what the values are, so no `Any` is written there (issue 22 item 4).
TYPED_CORE = ("plan/", "store/", "stats/", "verdict/", "jsonvalue.py", "errors.py")


def test_no_any_on_the_core_path() -> None:
    found = [
        f"{rel}:{node.lineno}"
        for rel, tree in _modules()
        if rel.startswith(TYPED_CORE)
        for node in ast.walk(tree)
        if (isinstance(node, ast.Name) and node.id == "Any")
        or (isinstance(node, ast.Attribute) and node.attr == "Any")
        or (isinstance(node, ast.alias) and node.name == "Any")
        or (isinstance(node, ast.Constant) and isinstance(node.value, str) and _names_any(node.value))
    ]
    assert found == []


def _names_any(annotation: str) -> bool:
    """A string annotation (a forward reference) that spells Any."""
    import re

    return bool(
        re.fullmatch(r"(Any|[\w.]+\[[\w\[\], .|]*\bAny\b[\w\[\], .|]*\])( \| [\w.\[\], ]+)*", annotation)
    )


def test_the_core_path_is_type_checked_strictly() -> None:
    """Every package of the core path is in mypy's strict override, and none is in the list of modules whose
    errors are still ignored."""
    import tomllib

    config = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = next(o for o in config["overrides"] if o.get("disallow_untyped_defs"))
    ignored = {m for o in config["overrides"] if o.get("ignore_errors") for m in o["module"]}
    for part in TYPED_CORE:
        name = "fairmark." + part.removesuffix("/").removesuffix(".py")
        assert name in strict["module"] and (part.endswith(".py") or name + ".*" in strict["module"])
    assert not {m for m in ignored if m.startswith(tuple("fairmark." + p.rstrip("/") for p in TYPED_CORE))}


def test_no_module_has_its_type_errors_ignored() -> None:
    """No `ignore_errors` anywhere in mypy's configuration (issue 33 item 2: 22 modules of run/ and remote/ hid
    68 errors behind it), and no `# type: ignore` without the error code it silences."""
    import re
    import tomllib

    config = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())["tool"]["mypy"]
    assert not config.get("ignore_errors")
    assert not [o["module"] for o in config.get("overrides", []) if o.get("ignore_errors")]
    bare = [
        f"{p.relative_to(SRC)}:{i}"
        for p in sorted(SRC.rglob("*.py"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"#\s*type:\s*ignore(?!\[)", line)
    ]
    assert bare == []


def test_one_place_assembles_a_run() -> None:
    """A plan becomes a run in fairmark/assemble.py alone (issue 33 item 6: cli/run.py, cli/calibrate.py and
    bisect/search.py each built their own Runner, and bisect dropped the hooks and --allow-concurrent): no other
    module constructs a `Runner` or `RunOptions`, takes the `HostLock`, or builds a run's hosts; the verdicts come
    back in its result, not through an attribute of the runner."""
    names = ("Runner", "RunOptions", "HostLock", "hosts_for")
    own = {("run/loop/runner.py", "RunOptions")}  # the runner's default when it is given none (tests)
    calls = [
        (rel, node.lineno, node.func.id if isinstance(node.func, ast.Name) else node.func.attr)
        for rel, tree in _modules()
        if rel not in ("assemble.py", "run/guard/lock.py", "remote/hosts.py")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
    ]
    found = [
        f"{rel}:{line} {name}(…)" for rel, line, name in calls if name in names and (rel, name) not in own
    ]
    assert found == []
    runner = next(tree for rel, tree in _modules() if rel == "run/loop/runner.py")
    assigned = {
        ast.unparse(t) for node in ast.walk(runner) if isinstance(node, ast.Assign) for t in node.targets
    }
    assert "self.verdicts" not in assigned


def test_the_text_reports_never_load_the_html_renderer() -> None:
    """report/text.py and report/terminal.py share their views with the HTML report through report/views.py,
    never by importing report/html.py (which pulls in matplotlib and jinja2, issue 33 item 5)."""
    import subprocess
    import sys

    found = [
        f"{rel}:{line} imports {name}"
        for rel, tree in _modules()
        if rel in ("report/text.py", "report/terminal.py", "report/views.py")
        for line, name in _imports(tree)
        if name.startswith(("fairmark.report.html", "fairmark.report.plots"))
    ]
    assert found == []
    code = "import sys, fairmark.report.text, fairmark.report.terminal; print(sorted(m for m in sys.modules if m in ('matplotlib', 'jinja2', 'fairmark.report.html')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_compare_commands_render_in_report() -> None:
    """`compare` and `compare-runs` decide what is compared in cli/ and show it from report/ (issue 33 item 5:
    both rendered inside cli/): their cli modules print nothing themselves but a --json document report/
    built."""
    shown = ("print", "print_table", "table", "text", "note", "warn", "write")
    found = [
        f"{rel}:{node.lineno} {ast.unparse(node.func)}(…)"
        for rel, tree in _modules()
        if rel in ("cli/compare.py", "cli/compare_runs.py")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in shown
    ]
    assert found == []


def test_no_c_source_in_a_python_string() -> None:
    """The C programs fairmark builds (the trial launcher and the launch server) are .c files with one shared
    header in the package (src/fairmark/run/launch/c/), which `make lint` compiles with -Wall -Wextra -Werror — never
    text in a Python string no compiler warning sees (issue 33 item 4)."""
    import re

    c_like = re.compile(
        r"^\s*(#\s*include\s*[<\"][\w./]+[>\"]|#\s*(ifdef|ifndef|define|endif)\b|int main\s*\()", re.MULTILINE
    )
    found = [
        f"{rel}:{node.lineno}"
        for rel, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and c_like.search(node.value)
    ]
    assert found == []
    c_dir = SRC / "run" / "launch" / "c"
    assert sorted(p.name for p in c_dir.iterdir()) == ["fairmark_launch.h", "launch_server.c", "launcher.c"]
    for program in ("launcher.c", "launch_server.c"):
        text = (c_dir / program).read_text()
        assert '#include "fairmark_launch.h"' in text and c_like.search(text)  # what the check looks for


def test_a_run_view_holds_no_store() -> None:
    """report/data.RunReport is a frozen view of one run: it holds the run's records, verdicts and an
    ArtifactSource (its artifacts, read by the sections that show them), never a live Store a renderer could
    query (issue 33 item 5). report/load.py makes it from the store; the view's module, the section interface,
    the sections and the renderers import no Store and no loader, and nothing under report/ reaches a report's
    store."""
    import dataclasses

    from fairmark.report.data import RunReport
    from fairmark.report.sections import SECTIONS

    fields = {f.name: str(f.type) for f in dataclasses.fields(RunReport)}
    assert not [name for name, kind in fields.items() if name == "store" or "Store" in kind.split("[")[0]]
    sections = {
        f"{part.__module__.removeprefix('fairmark.').replace('.', '/')}.py"
        for s in SECTIONS
        for part in (s.terminal, s.text, s.json, s.html)
        if part
    }
    readers = {"report/data.py", "report/section.py", "report/sections/__init__.py", *RENDERERS, *sections}
    found = [
        f"{rel}:{line} imports {name}"
        for rel, tree in _modules()
        if rel in readers
        for line, name in _imports(tree)
        if name in ("fairmark.store.db.Store", "fairmark.report.load")
        or name.startswith("fairmark.report.load.")
    ]
    assert found == []
    assert {"report/sections/groups.py", "report/hosts.py"} <= sections  # what the check reads
    found = [
        f"{rel}:{node.lineno} {ast.unparse(node)}"
        for rel, tree in _modules()
        if rel.startswith("report/")
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "store"
        and isinstance(node.value, ast.Name)
        and node.value.id in ("report", "r", "rep")
    ]
    assert found == []


RENDERERS = {  # the renderer's module, and the function that walks the run's sections
    "report/terminal.py": "render",
    "report/text.py": "_run",
    "report/jsondoc.py": "run_json",
    "report/html.py": "run_view",
}


def _walks_sections(tree: ast.Module, function: str) -> bool:
    """The function walks SECTIONS: a for loop or a comprehension over it."""
    return any(
        isinstance(node, ast.For | ast.comprehension) and ast.unparse(node.iter) == "SECTIONS"
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and f.name == function
        for node in ast.walk(f)
    )


def test_every_renderer_iterates_the_one_section_list() -> None:
    """A run's report has one list of sections in one order (report/sections.SECTIONS, issue 33 item 5): the
    terminal, the text and Markdown, the --json and the HTML renderers each walk it and call each section's own
    part — no renderer has a part of its own (a table of parts by name, a section's name in its code), every
    part is written in the module of its section, and each HTML section is its own template. A new section is
    its module, its template and its entry in the list."""
    import inspect

    from fairmark.report import html
    from fairmark.report.sections import NAMES, SECTIONS

    modules = dict(_modules())
    assert [rel for rel, function in RENDERERS.items() if not _walks_sections(modules[rel], function)] == []
    assert "{% for name in sections %}" in (SRC / "report/templates/report.html.j2").read_text()
    named = [
        f"{rel}:{node.lineno} {node.value!r}"
        for rel in RENDERERS
        for node in ast.walk(modules[rel])
        if isinstance(node, ast.Constant) and node.value in NAMES
    ]
    assert named == [], "a renderer names a section (its part belongs in the section's module)"
    tables = [
        f"{rel}: {t.id}"
        for rel, tree in _modules()
        if rel.startswith("report/")
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name) and t.id.endswith("PARTS")
    ]
    assert tables == [], "a table of parts by name beside the one list"
    for section in SECTIONS:
        home = {
            inspect.getmodule(part).__name__
            for part in (section.terminal, section.text, section.json, section.html)
            if part
        }
        assert len(home) <= 1, (section.name, home)  # its parts in one module, its own
        assert not home & {f"fairmark.{rel[:-3].replace('/', '.')}" for rel in RENDERERS}, section.name
    templates = {p.name.removesuffix(".html.j2") for p in (SRC / "report/templates/sections").iterdir()}
    assert templates == {s.name for s in SECTIONS if s.html} and html.html_sections() == templates
    assert len(set(NAMES)) == len(NAMES)
    assert any(s.terminal or s.text or s.json for s in SECTIONS)  # a section in its own module (stability)


def test_every_variant_kind_is_one_driver_used_by_both_sides() -> None:
    """A variant kind is one driver, run/variants/<kind>.py, in the registry keyed by the kinds table (issue 33
    item 1): the controller (system.py) and the agent on a host (its one `change` operation) both make, and
    undo, every kind through it — neither keeps a table or an operation of its own per kind — and the modules
    shipped to an agent are derived from the registry, never listed by hand. The trial's placement is written
    once (run/launch/placer.py), for the local executor and the agent alike."""
    from fairmark.plan.kinds import REMOTE_KEYS, VARIANT_KINDS
    from fairmark.remote.connection import shipped_modules
    from fairmark.run.variants import driver

    for kind in VARIANT_KINDS:
        assert driver.load(kind).__file__ == str(SRC / "run" / "variants" / f"{kind}.py"), kind
    agent = dict(_modules())["remote/agent.py"]
    ops = {n.name for n in ast.walk(agent) if isinstance(n, ast.FunctionDef) and n.name.startswith("op_")}
    assert not {f"op_{k}" for k in VARIANT_KINDS} & ops, ops  # one generic operation, no op per kind
    assert {f"fairmark.run.variants.{k}" for k in REMOTE_KEYS} | {"fairmark.run.launch.placer"} <= set(
        shipped_modules()
    )
    connection = (SRC / "remote" / "connection.py").read_text()
    assert "run/variants/" not in connection  # no module of a kind named by hand
    for rel, tree in _modules():
        calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        if "os.sched_setaffinity" in calls and rel not in (
            "run/launch/placer.py",
            "run/launch/thread_cgroup.py",
        ):
            raise AssertionError(f"{rel} places a trial itself: run/launch/placer.py does")


def test_both_hosts_implement_the_host_interface() -> None:
    """LocalHost and RemoteHost implement run/host.Host (issue 33 item 2): mypy checks it where each module
    returns one as a Host (`_is_a_host`, which must stay), and here every method of the protocol is there with
    the protocol's parameters, every property a class attribute, a property or set by the constructor."""
    import inspect

    from fairmark.remote import hosts as remote_hosts
    from fairmark.run.machine import host as run_host

    protocol = run_host.Host
    members = {n: v for n, v in vars(protocol).items() if not n.startswith("_")}
    assert {"activate", "prepare", "execute", "snapshot", "close"} <= set(members)
    for module, cls in ((run_host, run_host.LocalHost), (remote_hosts, remote_hosts.RemoteHost)):
        assert inspect.signature(module._is_a_host).return_annotation in ("Host", protocol)
        init = inspect.getsource(cls.__init__)
        for name, member in members.items():
            if isinstance(member, property):
                assert hasattr(cls, name) or f"self.{name}" in init, (cls.__name__, name)
                continue
            got = getattr(cls, name, None)
            assert callable(got), (cls.__name__, name)
            want = list(inspect.signature(member).parameters)
            assert list(inspect.signature(got).parameters) == want, (cls.__name__, name)


def _report_module(name: str) -> str | None:
    """The module of report/ an import names ("fairmark.report.sections.groups"), or None."""
    parts = name.split(".")
    for n in range(len(parts), 2, -1):
        rel = "/".join(parts[1:n])
        if parts[1] == "report" and ((SRC / f"{rel}.py").exists() or (SRC / rel / "__init__.py").exists()):
            return rel
    return None


def test_no_import_circle_inside_report() -> None:
    """report/'s modules depend on each other one way (issue 33 item 5: data → sections → data was a circle):
    the read model (data.py) imports no section and no renderer, the sections import the read model, the
    renderers import the sections. Every import counts, at the top, in a function or for type checking only."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for rel, tree in _modules():
        if not rel.startswith("report/"):
            continue
        here = rel.removesuffix(".py").removesuffix("/__init__")
        for line, name in _imports(tree):
            there = _report_module(name)
            if there and there != here:
                arrows.setdefault((here, there), []).append(f"{rel}:{line} imports {name}")
    assert ("report/section", "report/data") in arrows  # what the check reads: modules, not packages
    named = [
        " → ".join(circle) + ": " + "; ".join(arrows[(a, b)][0] for a, b in itertools.pairwise(circle))
        for circle in import_circles(arrows)
    ]
    assert not named, "import circles inside report/:\n" + "\n".join(named)


# What stats/ calls its designs, tests and the parts of a test: labels a verdict carries as data (JSON values that
# code compares and a table shows as they are), not sentences. Any other string of three words or more in stats/
# is English.
STATS_LABELS = frozenset(
    {
        "paired by round",
        "Wilcoxon signed rank",
        "runs as the unit",
        "boots as the unit",
        "hosts as the unit",
        "the nested model",
        "its single unit's own trial spread",
        "the first stage's spread and all rounds' spread",
    }
)


def _english(tree: ast.Module) -> list[tuple[int, str]]:
    """Where a module builds or holds a sentence: an f-string with two words in its literal text, a `.format` or
    `%` applied to a string, or a string constant of three words or more that is not one of STATS_LABELS.
    Errors (inside a `raise`) say what went wrong in words wherever they are raised, and docstrings are for
    readers of the code."""
    import re

    two_words = re.compile(r"[A-Za-z]{2,} [A-Za-z]{2,}")
    word = re.compile(
        r"[A-Za-z][A-Za-z'’-]+"
    )  # a word of a sentence: a blank on either side, punctuation aside
    raised = {id(m) for n in ast.walk(tree) if isinstance(n, ast.Raise) for m in ast.walk(n)}
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    fstrings = [n for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) and id(n) not in raised]
    parts = {id(v) for n in fstrings for v in n.values}
    found = [
        (n.lineno, ast.unparse(n))
        for n in fstrings
        if two_words.search("".join(v.value for v in n.values if isinstance(v, ast.Constant)))
    ]
    for n in ast.walk(tree):
        if id(n) in raised:
            continue
        text = n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) else ""
        words = [t for t in text.split() if word.fullmatch(t.strip(".,;:()[]'\"!?"))]
        if id(n) not in docs | parts and len(words) >= 3 and text not in STATS_LABELS:
            found.append((n.lineno, repr(text)))
        formats = isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "format"
        percent = isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and isinstance(n.left, ast.Constant)
        if (formats or percent) and isinstance(n.left if percent else n.func.value, ast.Constant):  # type: ignore[attr-defined]
            found.append((n.lineno, ast.unparse(n)))
    return found


def test_stats_writes_no_english() -> None:
    """stats/ computes numbers and returns them in frozen records: no sentence is built or held there (issue 33
    item 5: stats/compare.py wrote English into a many-field Comparison). The words of a verdict are verdict/'s
    (verdict/compare.py, verdict/levels.py), of a report report/'s."""
    prose = {
        rel: [f"{line}: {text[:80]}" for line, text in _english(tree)]
        for rel, tree in _modules()
        if rel.startswith("stats/")
    }
    found = {rel: lines for rel, lines in prose.items() if lines}
    assert not found, f"English in stats/: {found}"


def test_english_is_found_where_it_is_built() -> None:
    tree = ast.parse(
        'def f(x):\n    """A docstring of many words."""\n    if x:\n        raise ValueError(f"bad value {x}")\n'
        '    y = "paired by round"\n    z = "{} is slower than {}".format(x, y)\n    w = "%s of it" % x\n'
        '    v = "a sentence of words"\n    return f"the sentence {x}"'
    )
    found = sorted(line for line, _ in _english(tree))
    assert found == [6, 6, 7, 8, 9]


# run/'s modules at its top: the two interfaces every folder of run/ shares (issue 33 item 3: 24 flat modules mixed
# the loop, the trial, process launching, hosts and pre-run measurements). A new module goes into the folder
# that says what it holds.
RUN_FLAT = {"__init__.py", "spec.py", "hooks.py"}


def _run_arrows(depth: int) -> dict[tuple[str, str], list[str]]:
    """(importer, imported) inside run/, each named by its first `depth` path parts (2: run/'s folders and flat
    modules; more: modules); every import counts, at the top, in a function or for type checking only."""

    def node(rel: str) -> str:
        return "/".join(rel.removesuffix(".py").removesuffix("/__init__").split("/")[:depth])

    arrows: dict[tuple[str, str], list[str]] = {}
    for rel, tree in _modules():
        if not rel.startswith("run/"):
            continue
        for line, name in _imports(tree):
            parts = name.split(".")
            there = next(
                (
                    "/".join(parts[1:n])
                    for n in range(len(parts), 2, -1)
                    if parts[:2] == ["fairmark", "run"]
                    and (
                        (SRC / f"{'/'.join(parts[1:n])}.py").exists()
                        or (SRC / "/".join(parts[1:n]) / "__init__.py").exists()
                    )
                ),
                None,
            )
            if there and node(there) not in (node(rel), "run"):
                arrows.setdefault((node(rel), node(there)), []).append(f"{rel}:{line} imports {name}")
    return arrows


def test_run_is_folders_that_depend_one_way() -> None:
    """run/ is folders that say what they hold — launch/ (a trial's process: the launcher, the placer, the
    executor), guard/ (lock, scratch, signals), machine/ (hosts, boots), trials/ (one trial and its prepared
    cells), prerun/ (measured before the first trial), loop/ (the rounds), and variants/, workloads/,
    monitors/, profiles/ — beside at most the RUN_FLAT modules, and no two of them import each other round a
    circle (issue 33 item 3: host ↔ trial ↔ prepare was one; the hosts and the trial now share the executor's
    type from spec.py). Inside a folder, no module circle either, but for the drivers' undo registry (run/
    variants/driver.py finds a kind's undo in its driver's module)."""
    flat = {p.name for p in (SRC / "run").glob("*.py")}
    assert flat <= RUN_FLAT, f"flat modules in run/: {sorted(flat - RUN_FLAT)}: put them in a folder"
    assert {"run/loop", "run/trials", "run/machine", "run/launch"} <= {a for a, _ in _run_arrows(2)}
    for depth in (2, 9):
        arrows = _run_arrows(depth)
        if depth > 2:
            arrows = {k: v for k, v in arrows.items() if not k[0].startswith("run/variants/")}
        named = [
            " → ".join(circle) + ": " + "; ".join(arrows[(a, b)][0] for a, b in itertools.pairwise(circle))
            for circle in import_circles(arrows)
        ]
        assert not named, "import circles inside run/:\n" + "\n".join(named)
    modules = _run_arrows(9)
    assert ("run/trials/trial", "run/machine/host") in modules  # what the check reads
    assert ("run/machine/host", "run/trials/trial") not in modules


# Function-level imports of fairmark's own modules (issue 33 item 7: 223 of them hid the wiring). One stays inside
# a function only for a heavy library the module it imports loads at its top and its importer does not, in an
# agent's shipped module, or to break one of these circles (a list that only shrinks: each is to be broken by
# moving what both sides share to a lower module).
HEAVY_LIBRARIES = {
    "scipy",
    "numpy",
    "sqlalchemy",
    "pydantic",
    "matplotlib",
    "jinja2",
    "psycopg",
    "rich",
    "psutil",
}
KNOWN_LAZY_CIRCLES = {
    ("probe/diff.py", "fairmark.probe.doctor"),
    ("probe/doctor.py", "fairmark.probe.freebsd"),
    ("probe/doctor.py", "fairmark.probe._io"),
    ("probe/doctor.py", "fairmark.probe.linux"),
    ("run/monitors/sampler.py", "fairmark.run.monitors.linux"),
    ("run/monitors/sampler.py", "fairmark.run.monitors.freebsd"),
    ("run/profiles/__init__.py", "fairmark.run.profiles.cpu"),
    ("run/profiles/__init__.py", "fairmark.run.profiles.locks"),
    ("run/profiles/__init__.py", "fairmark.run.profiles.syscalls"),
    ("run/profiles/__init__.py", "fairmark.run.profiles.freebsd"),
    ("stats/tdist.py", "fairmark.stats.tlight"),
}
# kept inside a function for a start a test measures: `compare` of plain files loads no reader of other tools'
# output (tests/test_compare_formats.py::test_plain_files_load_no_reader; issue 31's ≤ 0.3 s)
LAZY_FOR_START = {
    # a journal is looked for by the commands that change things; compare does not
    ("cli/main.py", "fairmark.run.variants.journal"),
    ("cli/compare.py", "fairmark.formats"),
    # `fairmark agent` loads the agent alone (no click, no CLI: tests/test_cli_imports.py), any other the CLI
    ("cli/_entry.py", "fairmark.remote.agent"),
    ("cli/_entry.py", "fairmark.cli.main"),
    # two samples without levels above their values (compare of files) need neither (verdict/judge.py's _level)
    ("verdict/judge.py", "fairmark.stats.levels"),
    ("verdict/judge.py", "fairmark.verdict.levels"),
    ("cli/compare.py", "fairmark.report.series_compare"),
    # `history` by time runs no git (nor subprocess, the host lock, socket)
    ("cli/history.py", "fairmark.bisect.git"),
    # the decision stop's and boots' looks (stats.sequential, stats.levelcache, 3 record classes): `show` and
    # `history` of a run stopped otherwise do not load them (tests/test_cli_imports.py; issue 34 item 15)
    ("verdict/run.py", "fairmark.stats.sequential"),
    ("verdict/compare.py", "fairmark.stats.sequential"),
    ("stats/compare.py", "fairmark.stats.sequential"),
}


def _module_of(rel: str) -> str:
    return "fairmark." + rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _fairmark_module(name: str) -> str | None:
    """The fairmark module an imported name is (`fairmark.run.spec.TrialSpec` → `fairmark.run.spec`)."""
    parts = name.split(".")
    for n in range(len(parts), 1, -1):
        rel = "/".join(parts[1:n])
        if parts[0] == "fairmark" and ((SRC / f"{rel}.py").exists() or (SRC / rel / "__init__.py").exists()):
            return ".".join(parts[:n])
    return None


def _import_nodes(
    tree: ast.Module,
) -> tuple[list[ast.Import | ast.ImportFrom], list[ast.Import | ast.ImportFrom]]:
    """A module's imports run when it is imported (not in a function, not for type checking only), and those
    inside a function."""
    top: list[ast.Import | ast.ImportFrom] = []
    inside: list[ast.Import | ast.ImportFrom] = []

    def walk(node: ast.AST, in_function: bool, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                (inside if in_function else top if not typing_only else []).append(child)
            walk(
                child,
                in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda),
                typing_only or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)),
            )

    walk(tree, False, False)
    return top, inside


def _named(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [f"{node.module}.{a.name}" for a in node.names] + [node.module or ""]
    return [a.name for a in node.names]


def _heavy_on_import() -> dict[str, set[str]]:
    """Each fairmark module → the heavy libraries importing it loads (its top-level imports, followed)."""
    edges: dict[str, set[str]] = {}
    heavy: dict[str, set[str]] = {}
    for rel, tree in _modules():
        module = _module_of(rel)
        parts = module.split(".")
        edges[module] = {".".join(parts[:n]) for n in range(2, len(parts))}  # its packages first
        heavy[module] = set()
        for node in _import_nodes(tree)[0]:
            for name in _named(node):
                own = _fairmark_module(name)
                if own and own != module:
                    edges[module].add(own)
                elif name.split(".")[0] in HEAVY_LIBRARIES:
                    heavy[module].add(name.split(".")[0])
    loaded: dict[str, set[str]] = {}
    for module in edges:
        seen, todo = set(), [module]
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo += edges.get(m, ())
        loaded[module] = set().union(*(heavy.get(m, set()) for m in seen))
    return loaded


def test_own_modules_are_imported_at_the_top() -> None:
    """An import of fairmark's own module inside a function is there for a reason the code shows (issue 33
    item 7): the module it imports loads a heavy library (HEAVY_LIBRARIES) its importer does not load, the
    importer is shipped to a host's agent (where fairmark may not be installed), or it is a KNOWN_LAZY_CIRCLES
    circle. ruff's PLC0415 (pyproject.toml) refuses any import inside a function outside the files listed there;
    this checks the reason of each one of fairmark's modules in those files."""
    from fairmark.remote.connection import shipped_modules

    shipped = {m for m, rel in shipped_modules().items() if rel} | {
        "fairmark.remote.agent",
        "fairmark.run.launch.launcher",
    }
    loads = _heavy_on_import()
    found, circles = [], set()
    for rel, tree in _modules():
        module = _module_of(rel)
        if module in shipped:
            continue
        for node in _import_nodes(tree)[1]:
            targets = {t for name in _named(node) if (t := _fairmark_module(name)) and t != module}
            for target in targets - {_fairmark_module(n) for n in _named(node)[-1:]} or targets:
                if loads[target] - loads[module]:
                    continue
                if (rel, target) in KNOWN_LAZY_CIRCLES:
                    circles.add((rel, target))
                    continue
                if (rel, target) in LAZY_FOR_START:
                    continue
                found.append(f"{rel}:{node.lineno} imports {target} inside a function: import it at the top")
    assert found == [], "\n".join(found)
    assert circles == KNOWN_LAZY_CIRCLES, (
        f"circles broken: take {sorted(KNOWN_LAZY_CIRCLES - circles)} off the list"
    )
