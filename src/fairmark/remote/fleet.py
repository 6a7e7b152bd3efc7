"""`fairmark run PLAN --hosts a,b,c`: the same plan on each host at once — independent runs, one controller
process per host (`fairmark run PLAN --host NAME`), all into the same store (PostgreSQL for a team)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from fairmark.console import console
from fairmark.errors import FairmarkError, UsageError


def _child_argv(plan: str, host: str, argv: list[str]) -> list[str]:
    """This command line with --hosts replaced by --host HOST."""
    out, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a == "--hosts":
            skip = True
            continue
        if a.startswith("--hosts="):
            continue
        if i == 0 and a == "run":
            continue
        out.append(a)
    return [sys.executable, "-m", "fairmark", "run", *[a for a in out if a != plan], plan, "--host", host]


def run_fleet(plan: str, hosts: list[str], argv: list[str], store_url: str | None = None) -> None:
    """`store_url` is the --store the command was given (None: the default store, or $FAIRMARK_STORE)."""
    if len(set(hosts)) != len(hosts) or not hosts:
        raise UsageError(f"--hosts {','.join(hosts)}: give each host once")
    # Create (or migrate) the store's schema once, here: several first opens at once race on CREATE TABLE.
    from fairmark.store.db import Store

    Store.open(store_url).engine.dispose()
    env = dict(os.environ)
    if store_url:
        env["FAIRMARK_STORE"] = store_url
    procs = {
        h: subprocess.Popen(
            _child_argv(plan, h, argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        for h in hosts
    }
    outputs: dict[str, bytes] = {}

    def collect(h: str) -> None:
        outputs[h] = procs[h].communicate()[0]

    threads = [threading.Thread(target=collect, args=(h,)) for h in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = []
    for h in hosts:
        code = procs[h].returncode
        if not console.json_mode:
            console.print(f"[bold]host {h}[/bold]: exit {code}")
            console.text(outputs[h].decode(errors="replace").rstrip())
        if code != 0:
            failed.append(f"{h} (exit {code})")
    if console.json_mode:
        console.emit_json(
            {
                "hosts": {
                    h: {"exit": procs[h].returncode, "output": outputs[h].decode(errors="replace")}
                    for h in hosts
                }
            }
        )
    if failed:
        raise FairmarkError(f"fleet run: {len(failed)} of {len(hosts)} host(s) failed: {', '.join(failed)}")
