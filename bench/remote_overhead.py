"""The agent's per-trial overhead against a local trial (issue 13), measured in one run on this machine.

One test host (a network namespace with its own sshd, tests/nethosts.py; needs root) and the controller run
the same trial alternately, N times each: locally through `fairmark.run.launch.executor.execute_spec`, and on the host
through `RemoteExecutor` (SSH ControlMaster + the shipped stdlib-only agent). Printed, each as a median with
the ratio remote/local:
  1. the wall time fairmark *measures* for the trial (taken on the host by the agent: network latency must not
     enter it), for `true` and for `sleep 0.05`;
  2. the end-to-end time of one executor call as the runner sees it (the round trip, JSON, output transfer):
     the harness cost per trial a remote host adds;
  3. fairmark itself, run inside the host's namespace, on a plan whose variant "local" runs there and whose
     variant "agent" runs on the same host through SSH and the agent, interleaved: the verdict's ratio
     agent/local with its 95% CI (the same work measured both ways in one run);
  4. the issue's acceptance as a user would check it: one plan with a command workload and a tool workload
     (iperf3, whose adapter runs on the host inside `fairmark agent`), run by fairmark inside the host's
     namespace (local) and from the controller with `--host b1` (the agent), in the order local, agent, agent,
     local; `fairmark compare-runs` of each local run against the agent run next to it: each metric's ratio
     agent/local with its 95% CI and the difference of the means with its CI (for wall_s: the agent's
     overhead per trial, where it has one).

Run: .venv/bin/python bench/remote_overhead.py   (docs/performance.md quotes its output)
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
from fairmark.run.launch.executor import execute_spec
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
        same_plan_both_ways(net, Path(out))


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
    env = {
        "FAIRMARK_STORE": f"sqlite:///{out / 'store.db'}",
        "FAIRMARK_LOCK_PATH": str(out / "lock"),
        "FAIRMARK_STATE_DIR": str(out / "state"),
    }
    argv = [
        "ip",
        "netns",
        "exec",
        net.hosts["b1"].netns,
        "env",
        *(f"{k}={v}" for k, v in env.items()),
        sys.executable,
        "-m",
        "fairmark",
        "run",
        str(plan),
        "--json",
        "--accept-risk",
        "--no-monitors",
    ]
    res = subprocess.run(argv, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        print(f"fairmark run failed ({res.returncode}): {res.stderr.strip()[-500:]}")
        return
    doc = json.loads(res.stdout)
    print("fairmark run inside the host, variant agent (via SSH) vs local, interleaved:")
    for v in doc["verdicts"]:
        w = v.get("welch") or v
        print(
            f"  {v['group']}: ratio {w.get('ratio', float('nan')):.4f} "
            f"[{w.get('ratio_ci_low', float('nan')):.4f}, {w.get('ratio_ci_high', float('nan')):.4f}] — "
            f"{v['sentence']}"
        )


SAME_PLAN = """title = "the same plan local in the host and through the agent"
[run]
warmup = 1
min_trials = 15
max_trials = 15
[[workload]]
name = "spin"
command = ["/usr/bin/python3", "-c", "sum(range(300000))"]
[[workload]]
name = "true"
command = ["true"]
[[workload]]
name = "net"
tool = "iperf3"
params = { duration_s = 2, omit_s = 0 }
[[variant]]
name = "x"
"""


def same_plan_both_ways(net: nethosts.NetHosts, out: Path) -> None:
    plan = out / "same.toml"
    plan.write_text(SAME_PLAN + net.hosts_toml(agent=[sys.executable, "-m", "fairmark", "agent"]))
    env = {
        "FAIRMARK_STORE": f"sqlite:///{out / 'same.db'}",
        "FAIRMARK_LOCK_PATH": str(out / "lock2"),
        "FAIRMARK_STATE_DIR": str(out / "state2"),
    }
    fm = [sys.executable, "-m", "fairmark"]
    inside = ["ip", "netns", "exec", net.hosts["b1"].netns, "env", *(f"{k}={v}" for k, v in env.items())]
    outside = ["env", *(f"{k}={v}" for k, v in env.items())]
    ids = {}
    for side in ("local1", "agent1", "agent2", "local2"):  # ABBA: a drift of the machine hits both alike
        argv = [
            *(inside if side.startswith("local") else outside),
            *fm,
            "run",
            str(plan),
            "--json",
            "--accept-risk",
            "--no-monitors",
            *([] if side.startswith("local") else ["--host", "b1"]),
        ]
        res = subprocess.run(argv, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            print(f"fairmark run ({side}) failed ({res.returncode}): {res.stderr.strip()[-500:]}")
            return
        ids[side] = json.loads(res.stdout)["run"]["id"]
    print(
        "the same plan run by fairmark inside the host (local) and with --host b1 (agent), runs "
        + ", ".join(f"{k} {v[:8]}" for k, v in ids.items())
        + ":"
    )
    for a, b in (("local1", "agent1"), ("local2", "agent2")):
        cmp = subprocess.run(
            [
                *outside,
                *fm,
                "compare-runs",
                ids[a],
                ids[b],
                "--all-metrics",
                "--json",
                "--because",
                "local vs through the agent",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if cmp.returncode != 0:
            print(f"  compare-runs {a} {b} failed ({cmp.returncode}): {cmp.stderr.strip()[-500:]}")
            continue
        print(f"  fairmark compare-runs {ids[a][:8]} ({a}) {ids[b][:8]} ({b}):")
        for c in json.loads(cmp.stdout)["comparisons"]:
            if c["metric"] not in ("wall_s", "gbit_s_sent", "gbit_s_received"):
                continue
            scale, unit = (1e3, "ms") if c["metric"] == "wall_s" else (1.0, c["unit"])
            print(
                f"    {c['workload']:<5} {c['metric']:<16} ratio {c['ratio']:.4f} "
                f"[{c['ratio_ci_low']:.4f}, {c['ratio_ci_high']:.4f}]  difference "
                f"{c['difference'] * scale:+.3f} ± {c['half_width'] * scale:.3f} {unit} per trial  "
                f"(local {c['mean_baseline'] * scale:.4g}, agent {c['mean_other'] * scale:.4g} {unit})"
            )


def report(name: str, got: dict[str, list[tuple[float, float]]]) -> None:
    med = {s: (statistics.median(v[0] for v in got[s]), statistics.median(v[1] for v in got[s])) for s in got}
    (lw, lc), (rw, rc) = med["local"], med["remote"]
    print(f"{name}: {N} trials each, alternating")
    print(
        f"  measured wall_s     local {lw * 1e3:.3f} ms  remote {rw * 1e3:.3f} ms  ratio {rw / lw:.3f}  "
        f"difference {(rw - lw) * 1e3:+.3f} ms"
    )
    print(
        f"  executor call       local {lc * 1e3:.3f} ms  remote {rc * 1e3:.3f} ms  ratio {rc / lc:.2f}  "
        f"overhead {(rc - lc) * 1e3:+.3f} ms per trial"
    )


if __name__ == "__main__":
    main()
