"""`fairmark run BUNDLE.json`: the run an exported bundle holds, run again here — its plan text, seed, scale
(--quick, --calibrate) and variant definitions — and recorded as a re-run of it (id, commit, host, bundle). The
bundle's own run comes into the store with it (as `fairmark import` would), so that `fairmark compare-runs
ORIGINAL RERUN` holds the two side by side: what seed 003 asks of a result someone else must reproduce.

Everything in the bundle is checked before anything is written: a bundle without a plan text, or a damaged or
unsupported one, is refused naming the file and the key (exit 2). How this machine differs from the one the
bundle's run was made on (kernel, CPU, tool versions …) is listed as warnings before the first trial."""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairmark.cli._progress import TerminalProgress
from fairmark.cli.bundle import import_bundle, load_bundle, store_has
from fairmark.cli.common import open_store
from fairmark.console import console
from fairmark.errors import InputError, UsageError
from fairmark.plan.load import LoadedPlan, check_commands, parse_plan
from fairmark.plan.model import Plan, RunPolicy
from fairmark.probe.diff import diff_snapshots

RUN_KEY = "tables.runs[0]"
MAX_SHOWN = 20  # differences listed one per line before the rest is counted
SSH_ARG_FLAGS = {f"-{c}" for c in "BbcDEeFIiJLlmOoPpQRSWw"}  # ssh(1)'s options that take an argument
MAX_VALUE = 60  # characters of a recorded value in a line (a kernel command line can be long)


def is_bundle(path: str) -> bool:
    """A `.json` file, or a file whose text starts with '{' (a TOML plan never does)."""
    if path.lower().endswith(".json"):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False  # the plan loader says what is wrong with it
    return head.lstrip()[:1] == b"{"


@dataclass(frozen=True)
class Rerun:
    bundle: str  # the file, as given
    doc: dict[str, Any]  # the bundle, checked as `fairmark import` checks it
    loaded: LoadedPlan  # the bundle's plan text, placed on the hosts of this re-run
    seed: int
    quick: bool
    calibrate: bool
    record: dict[str, Any]  # stored with the new run as options.rerun_of
    warnings: tuple[str, ...]  # what in the bundle does not fit together (said before the run)

    @property
    def run(self) -> dict[str, Any]:
        return self.doc["tables"]["runs"][0]


def _field(run: dict[str, Any], key: str, kind: type, bundle: str, what: str) -> Any:
    value = run.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        got = "nothing" if value is None else f"{type(value).__name__} {str(value)[:40]!r}"
        raise InputError(f"{bundle}: {RUN_KEY}.{key}: expected {what}, got {got}")
    return value


def load_rerun(
    bundle: str,
    *,
    host: str | None,
    map_hosts: dict[str, tuple[str, list[str]]],
    check_executables: bool = True,
) -> Rerun:
    """The bundle's run, ready to run again; InputError/PlanError/UsageError (exit 2) before anything runs."""
    doc = load_bundle(Path(bundle))
    run = doc["tables"]["runs"][0]
    text = run.get("plan_text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(
            f"{bundle}: {RUN_KEY}.plan_text: the bundle carries no plan text, so its run cannot be re-run",
            hint=f"`fairmark import {bundle}` still reads its results",
        )
    seed = _field(run, "seed", int, bundle, "the run's seed (an integer)")
    options = {} if run.get("options") is None else run["options"]
    if not isinstance(options, dict):
        raise InputError(f"{bundle}: {RUN_KEY}.options: expected an object, got {type(options).__name__}")
    where = (
        f"{bundle}: {RUN_KEY}.plan_text"  # a plan error names the bundle, the key and the line in that text
    )
    plan = parse_plan(text, where)
    calibrate = bool(options.get("calibrate"))
    warnings = _variant_differences(plan, options, calibrate)
    plan, placed = _place(plan, options, bundle, host=host, map_hosts=map_hosts)
    if check_executables and not plan.remote:
        check_commands(plan, text, where)
    sha = hashlib.sha256(text.encode()).hexdigest()
    if sha != run.get("plan_sha256"):
        warnings.append(
            f"the plan text's sha256 {sha[:12]} is not the {str(run.get('plan_sha256'))[:12]} the bundle records "
            "(a secret redacted when it was stored, or the text edited since): compare-runs will say so"
        )
    path = _field(run, "plan_path", str, bundle, "the plan's file name")
    loaded = LoadedPlan(plan=plan, path=path, text=text)
    quick = bool(options.get("quick"))
    record = _record(doc, bundle, seed)
    return Rerun(bundle, doc, loaded, seed, quick, calibrate, record, tuple(warnings + placed))


def _short(value: Any, limit: int = MAX_VALUE) -> str:
    text = "—" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _record(doc: dict[str, Any], bundle: str, seed: int) -> dict[str, Any]:
    """What the new run keeps of the bundle's run: enough to name it (show, reports) without the bundle."""
    run = doc["tables"]["runs"][0]
    tags = {
        r["key"]: r["value"]
        for r in doc["tables"].get("run_tags", [])
        if isinstance(r.get("key"), str) and isinstance(r.get("value"), str)
    }
    return {
        "run_id": run["id"],
        "bundle": _short(bundle, 300),
        "hostname": _short(run.get("hostname") or "", 200),
        "host_id": _short(run.get("host_id") or "", 64),
        "commit": _short(tags["commit"], 64) if "commit" in tags else None,
        "tags": {_short(k, 128): _short(v, 200) for k, v in sorted(tags.items())[:50]},
        "fairmark_version": _short(run.get("fairmark_version") or "", 32),
        "started_at": _short(run.get("started_at") or "", 40),
        "seed": seed,
        "plan_sha256": _short(run.get("plan_sha256") or "", 64),
    }


def _variant_differences(plan: Plan, options: dict[str, Any], calibrate: bool) -> list[str]:
    """The variant definitions the bundle's run resolved vs those its plan text gives here (a newer fairmark
    may read a field differently). Where a variant ran (`host`) is this re-run's choice, not compared."""
    recorded = options.get("variants")
    if not isinstance(recorded, dict):
        return []  # a run stored before variant definitions were: the plan text is all there is
    here = {v.name: v.model_dump(mode="json") for v in (plan.with_aa_twin() if calibrate else plan).variant}
    out = []
    for name in sorted(set(recorded) | set(here)):
        a, b = recorded.get(name), here.get(name)
        if not isinstance(a, dict) or b is None:
            side = "the plan text" if b is not None else "the bundle's variant definitions"
            out.append(f"variant {_short(name)!r} is only in {side}")
            continue
        for key in sorted((set(a) | set(b)) - {"host"}):
            if a.get(key) != b.get(key):
                out.append(
                    f"variant {name!r} {key}: the bundle's run had {_short(a.get(key))}, its plan text gives "
                    f"{_short(b.get(key))} here"
                )
    return out


def _place(
    plan: Plan,
    options: dict[str, Any],
    bundle: str,
    *,
    host: str | None,
    map_hosts: dict[str, tuple[str, list[str]]],
) -> tuple[Plan, list[str]]:
    """Where the re-run's variants run. The plan's [hosts] are the bundle author's machines: they are used only
    when named here (--map-host NAME=DEST, or --host DEST for every variant); boot variants reboot the machine
    they run on, so they need a host named here too."""
    unknown = sorted(set(map_hosts) - set(plan.hosts))
    if unknown:
        have = ", ".join(sorted(plan.hosts)) or "none"
        raise UsageError(
            f"--map-host {unknown[0]}: the bundle's plan has no [hosts.{unknown[0]}] (it has: {have})"
        )
    if map_hosts:  # the author's ssh options and address went with their machine
        hosts = {
            n: h.model_copy(update={"ssh": map_hosts[n][0], "ssh_options": map_hosts[n][1], "address": None})
            if n in map_hosts
            else h
            for n, h in plan.hosts.items()
        }
        plan = plan.model_copy(update={"hosts": hosts})
    if host:
        return plan.with_host(host), []
    used = sorted(
        {v.host for v in plan.variant if v.host}
        | {v.client_host for v in plan.variant if v.client_host}
        | {w.client_host for w in plan.workload if w.client_host}
    )
    missing = [n for n in used if n not in map_hosts]
    if missing:
        listing = ", ".join(f"{n} (ssh {plan.hosts[n].ssh})" for n in missing)
        raise UsageError(
            f"{bundle}: the bundle's plan runs on hosts of the machine it was made on: {listing}",
            hint="name the machines to use here: --map-host NAME=DEST for each (DEST an ssh destination; the "
            "same one to use that very host), or --host DEST to run every variant on one host",
        )
    boots = [v.name for v in plan.variant if v.boot]
    if boots and not used:
        raise UsageError(
            f"{bundle}: the bundle's plan has boot variants ({', '.join(boots)}): they reboot the machine they "
            "run on, with the kernel command lines of the machine the bundle was made on",
            hint="name a machine you may reboot: --host DEST (check what it would do first: --dry-run)",
        )
    ran_on = [str(h) for h in (options.get("hosts") or {})]
    if ran_on and not plan.remote:
        return plan, [
            f"the bundle's run ran on host {', '.join(_short(h) for h in ran_on)}; this re-run runs on this "
            "machine (--host DEST runs it on a host)"
        ]
    return plan, []


def parse_map_hosts(items: tuple[str, ...]) -> dict[str, tuple[str, list[str]]]:
    """--map-host NAME=[SSH-OPTIONS] DEST → {NAME: (DEST, SSH-OPTIONS)}: the options, e.g. `-p 2222` or
    `-F FILE`, replace the author's (their port, their config file) as DEST replaces their destination."""
    out: dict[str, tuple[str, list[str]]] = {}
    for item in items:
        name, sep, dest = item.partition("=")
        name = name.strip()
        try:
            words = shlex.split(dest)
        except ValueError as exc:
            raise UsageError(f"--map-host {item!r}: {exc}") from None
        takes_arg = len(words) > 1 and words[-2] in SSH_ARG_FLAGS  # `-p 2222` and no destination after it
        if not sep or not name or not words or words[-1].startswith("-") or takes_arg:
            raise UsageError(
                f"--map-host {item!r}: expected NAME=DEST or NAME='SSH-OPTIONS DEST' (NAME a [hosts.NAME] of "
                "the bundle's plan, DEST an ssh destination)"
            )
        if name in out:
            raise UsageError(f"--map-host {name}: given twice")
        out[name] = (words[-1], words[:-1])
    return out


# -- before the first trial: how this machine differs ---------------------------------------------------------
def environment_lines(recorded: Any, here: Any, origin: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(warnings, notes) on how this run's environment differs from the bundle's run's: each difference that can
    change a result (kernel, CPU, frequency policy, mitigations, file system, tool versions …) one warning."""
    if not isinstance(recorded, dict) or not recorded:
        return [], [
            "the bundle carries no environment snapshot: how this machine differs from its run is unknown"
        ]
    if not here:
        return [], [
            "this run records no environment snapshot: how it differs from the bundle's run is unknown"
        ]
    diffs = diff_snapshots(recorded, here)
    keys = {d["key"] for d in diffs}
    shown = [d for d in diffs if d["category"] == "validity" and _shown(d["key"], keys)]
    envs = [d["key"].removeprefix("env.") for d in diffs if d["category"] == "environment"]
    info = [d for d in diffs if d["category"] == "info"]
    name = origin.get("hostname") or "?"
    if "identity.host_id" in keys:
        head = [f"this machine is not the one the bundle's run was made on (host {_short(name)})"]
    else:
        head = []
    warnings = head + [
        f"{d['key']}: {_short(d['a'])} in the bundle's run, {_short(d['b'])} here" for d in shown[:MAX_SHOWN]
    ]
    if len(shown) > MAX_SHOWN:
        warnings.append(f"… and {len(shown) - MAX_SHOWN} more such differences (compare-runs lists them all)")
    if envs:
        more = f" and {len(envs) - 12} more" if len(envs) > 12 else ""
        warnings.append(f"environment variables differ: {', '.join(envs[:12])}{more}")
    notes = []
    if not warnings:
        notes.append(
            f"environment: no relevant difference from the bundle's run (made on host {_short(name)})"
        )
    if info:
        named = ", ".join(d["key"] for d in info[:4]) + (", …" if len(info) > 4 else "")
        notes.append(f"{len(info)} other environment difference(s), of no bearing on the result: {named}")
    return warnings, notes


def _shown(key: str, keys: set[str]) -> bool:
    """A tool's version stands for its path and raw version line; the host's identity is said once, apart."""
    if key.startswith("identity."):
        return False
    stem, _, leaf = key.rpartition(".")
    return not (leaf in ("path", "raw") and f"{stem}.version" in keys)


class RerunProgress(TerminalProgress):
    """The terminal progress, first listing the differences from the bundle's run once this run's environment
    is recorded (before its first trial)."""

    def __init__(self, rerun: Rerun, store: Any) -> None:
        super().__init__()
        self.rerun, self.store, self.run_id = rerun, store, ""

    def started(self, run_id: str, cells: int, policy: RunPolicy, done: int = 0) -> None:
        self.run_id = run_id
        here = self.store.get_run(run_id).env_before
        warnings, notes = environment_lines(self.rerun.run.get("env_before"), here, self.rerun.record)
        for line in notes:
            console.note(line)
        for line in warnings:
            console.warn(line)
        super().started(run_id, cells, policy, done)


def bring_in(rerun: Rerun, store: Any) -> bool:
    """The bundle's run into the store unless it is there (True: imported now). A fleet's parent does this once,
    before its controllers start, so that they do not race to import it."""
    original = rerun.record["run_id"]
    if store_has(store, original):
        return False
    import_bundle(store, rerun.doc, rerun.bundle)
    console.note(f"imported the bundle's run {original} into {store.url}, to compare with")
    return True


def execute_rerun(rerun: Rerun, run_one: Any) -> None:
    """Bring the bundle's run into the store, then `run_one(progress=…)`; a re-run refused before it started (a
    doctor error, the host lock) takes back the import it came with."""
    for line in rerun.warnings:
        console.warn(line)
    store = open_store()
    imported = bring_in(rerun, store)
    progress = RerunProgress(rerun, store)
    try:
        run_one(progress=progress)
    except BaseException:
        if imported and not progress.run_id:
            store.delete_run(rerun.record["run_id"])
        raise
