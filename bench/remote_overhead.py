"""The agent's per-trial overhead against a local trial (issue 13), measured in one run on this machine.

One test host (a network namespace with its own sshd, tests/nethosts.py; needs root) and the controller run
the same trial alternately, N times each: locally through `fairmark.run.executor.execute_spec`, and on the host
through `RemoteExecutor` (SSH ControlMaster + the shipped stdlib-only agent). Printed, each as a median with
the ratio remote/local:
  1. the wall time fairmark *measures* for the trial (taken on the host by the agent: network latency must not
     enter it), for `true` and for `sleep 0.05`;
  2. the end-to-end time of one executor call as the runner sees it (the round trip, JSON, output transfer):
     the harness cost per trial a remote host adds;
  3. fairmark itself, run inside the host's namespace, on a plan whose variant "local" runs there and whose
     variant "agent" runs on the same host through SSH and the agent, interleaved: the verdict's ratio
     agent/local with its 95% CI (the same work measured both ways in one run).

Run: .venv/bin/python bench/remote_overhead.py   (the README's Performance section quotes its output)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import nethosts
from fairmark.remote.connection import HostConnection, HostSpec
from fairmark.remote.executor import RemoteExecutor
from fairmark.run.executor import execute_spec
from fairmark.run.spec import TrialSpec

N = 200


def measure(run, argv: list[str], out: str) -> tuple[float, float]:
    t0 = time.monotonic()
    res = run(TrialSpec(tuple(argv), out, name="t", timeout_s=30))
    assert res.status == "ok", res.error
    return res.wall_s, time.monotonic() - t0


def main() -> None:
    why = nethosts.available()
    if why:
        print(f"skipped: {why}")
        return
    with nethosts.NetHosts(["b1"]) as net, tempfile.TemporaryDirectory() as out:
        spec = HostSpec("b1", ssh="b1", ssh_options=("-F", str(net.ssh_config)))
        with HostConnection(spec) as conn:
            remote = RemoteExecutor(conn)
            for argv in (["true"], ["sleep", "0.05"]):
                got: dict[str, list[tuple[float, float]]] = {"local": [], "remote": []}
                for i in range(N):  # alternate, so drift on this shared VM hits both sides alike
                    for side in ("local", "remote") if i % 2 == 0 else ("remote", "local"):
                        got[side].append(measure(execute_spec if side == "local" else remote, argv, out))
                report(" ".join(argv), got)
        one_run(net, Path(out))


PLAN = """title = "the agent's overhead: the same trial local and through the agent, one host"
[run]
warmup = 1
min_trials = 30
max_trials = 60
target_ci_pct = 0.5
[[workload]]
name = "spin"
command = ["/usr/bin/python3", "-c", "sum(range(300000))"]  # absolute: PATH differs (pyenv shims here)
[[workload]]
name = "true"
command = ["true"]
[[variant]]
name = "local"
[[variant]]
name = "agent"
host = "b1"
"""


def one_run(net: nethosts.NetHosts, out: Path) -> None:
    plan = out / "plan.toml"
    plan.write_text(PLAN + net.hosts_toml())
    env = {"FAIRMARK_STORE": f"sqlite:///{out / 'store.db'}", "FAIRMARK_LOCK_PATH": str(out / "lock"),
           "FAIRMARK_STATE_DIR": str(out / "state")}  # fmt: skip
    argv = ["ip", "netns", "exec", net.hosts["b1"].netns, "env", *(f"{k}={v}" for k, v in env.items()),
            sys.executable, "-m", "fairmark", "run", str(plan), "--json", "--accept-risk", "--no-monitors"]  # fmt: skip
    res = subprocess.run(argv, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        print(f"fairmark run failed ({res.returncode}): {res.stderr.strip()[-500:]}")
        return
    doc = json.loads(res.stdout)
    print("fairmark run inside the host, variant agent (via SSH) vs local, interleaved:")
    for v in doc["verdicts"]:
        w = v.get("welch") or v
        print(f"  {v['group']}: ratio {w.get('ratio', float('nan')):.4f} "
              f"[{w.get('ratio_ci_low', float('nan')):.4f}, {w.get('ratio_ci_high', float('nan')):.4f}] — "
              f"{v['sentence']}")  # fmt: skip


def report(name: str, got: dict[str, list[tuple[float, float]]]) -> None:
    med = {s: (statistics.median(v[0] for v in got[s]), statistics.median(v[1] for v in got[s])) for s in got}
    (lw, lc), (rw, rc) = med["local"], med["remote"]
    print(f"{name}: {N} trials each, alternating")
    print(f"  measured wall_s     local {lw * 1e3:.3f} ms  remote {rw * 1e3:.3f} ms  ratio {rw / lw:.3f}  "
          f"difference {(rw - lw) * 1e3:+.3f} ms")  # fmt: skip
    print(f"  executor call       local {lc * 1e3:.3f} ms  remote {rc * 1e3:.3f} ms  ratio {rc / lc:.2f}  "
          f"overhead {(rc - lc) * 1e3:+.3f} ms per trial")  # fmt: skip


if __name__ == "__main__":
    main()
