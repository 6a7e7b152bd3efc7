"""Test doubles of what a run does outside fairmark (issue 33 item 8): `MockExecutor` stands where the local
executor (run/executor.execute_spec) starts a process — `Runner(..., executor=MockExecutor(...))` or
`assemble.execute_run(..., executor=...)` —, so a test of the scheduling, stopping and failure rules is
deterministic and needs no process; plan, runner, store and statistics stay the real ones. A test of what a
process does (its peak RSS, the launcher, the launch server, a tool's output) runs real processes instead."""

from __future__ import annotations

import random
from pathlib import Path

from fairmark.plan.load import LoadedPlan, parse_plan
from fairmark.run.launch.executor import ExecResult
from fairmark.run.loop.runner import Runner, RunOptions
from fairmark.run.spec import TrialSpec
from fairmark.store.db import Store


class MockExecutor:
    """A trial's execution without a process (hyperfine's MockExecutor): wall time drawn from N(mean, sd) per
    variant (the variant's FAKE_VARIANT in its environment; "A" without one), seeded; `fail`/`timeout`: the
    variants whose trials fail or time out. `calls`: the variant of every trial, in the order they ran."""

    def __init__(
        self,
        means: dict[str, float],
        sd: float,
        seed: int = 1,
        fail: set[str] = frozenset(),
        timeout: set[str] = frozenset(),
    ):
        self.means, self.sd, self.rng = means, sd, random.Random(seed)
        self.fail, self.timeout = fail, timeout
        self.calls: list[str] = []

    def __call__(self, spec: TrialSpec) -> ExecResult:
        argv, env, out_dir, name = spec.argv, spec.env or {}, spec.out_dir, spec.name
        variant = env.get("FAKE_VARIANT", "A")
        self.calls.append(variant)
        out = Path(out_dir)
        (out / f"{name}.stdout").write_text("result: 1\n")
        (out / f"{name}.stderr").write_text("")
        status, code, err = "ok", 0, None
        if variant in self.fail:
            status, code, err = "failed", 1, "exit status 1"
        elif variant in self.timeout:
            status, code, err = "timeout", None, "timed out after 1 s; process group killed"
        wall = max(1e-6, self.rng.gauss(self.means.get(variant, 1.0), self.sd))
        return ExecResult(
            tuple(argv),
            status,
            code,
            None,
            wall,
            wall * 0.9,
            wall * 0.05,
            1000,
            str(out / f"{name}.stdout"),
            str(out / f"{name}.stderr"),
            err,
            max_rss_method="launcher",
        )


def plan_text(
    variants: list[str],
    *,
    min_trials: int = 5,
    max_trials: int = 12,
    target: float = 1.0,
    warmup: int = 1,
    max_failures: int = 3,
) -> str:
    text = (
        f"[run]\nwarmup = {warmup}\nmin_trials = {min_trials}\nmax_trials = {max_trials}\n"
        f"target_ci_pct = {target}\nmax_failures = {max_failures}\nseed = 42\n"
        "[[workload]]\nname = 'w'\ncommand = ['true']\n"
    )
    for v in variants:
        text += f"[[variant]]\nname = '{v}'\nenv = {{ FAKE_VARIANT = '{v}' }}\n"
    return text


def run_fake(tmp_path: Path, text: str, fake: MockExecutor, seed: int | None = None) -> tuple[Store, str]:
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    loaded = LoadedPlan(parse_plan(text), "plan.toml", text)
    run_id = Runner(loaded, store, RunOptions(probe=False, seed=seed), executor=fake).start()
    return store, run_id
