"""`fairmark bisect`: which commit made it slower, answered only with proven verdicts.

The good end G and the bad end B are checked out and built once each. First G is measured against B (the
plan's workloads, both sides interleaved as two variants of one run, each finding its checkout in
`$FAIRMARK_CHECKOUT`): without a regression proven beyond the threshold there is nothing to bisect. Otherwise
the most-regressed cell is the target and `git bisect` (--no-checkout) proposes commits. Each candidate C is
built in its own checkout and measured interleaved with *both* ends in one run (three variants: good, candidate,
bad). C is *bad* when proven slower than G, *good* when proven faster than B — so no estimate of the regression's
size decides (a first G→B run on a loaded machine can be off by half), only proofs; when both are proven (the
regression is spread over several commits, or one proof is a false positive) the nearer end decides, and says
so. Neither proven: another run of the plan, its rounds pooled with the earlier ones (pairs stay within a run,
so the pairing holds), up to `attempts` runs; then `skip`. Every run is stored, tagged with the commit. A step of
one run shows the interval `fairmark show` gives that run (verdict.pairs.pooled_runs judges as within_run does).
The repository is left as found (bisect reset, worktrees gone, HEAD unchanged) — also when SIGTERM or SIGHUP
ends the bisect (run.guard.signals: a CI cancel; the build's process group is killed, the run stored as
interrupted, exit 128 + the signal), and what a bisect killed outright left is undone by the next one
(bisect.git.Repo.claim). The environment's warnings of each step's run (a loaded machine, a governor) are
printed as the bisect goes, once each.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tomllib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fairmark.assemble import RunRequest, execute_run
from fairmark.bisect.git import Repo, UsageError
from fairmark.errors import PlanError, Terminated
from fairmark.plan.load import LoadedPlan, parse_plan
from fairmark.run.guard.signals import unwinding
from fairmark.run.launch.launcher import kill_group
from fairmark.run.loop.options import Progress
from fairmark.run.trials.secrets import Scrubber
from fairmark.store.schema import BISECT_RESULT
from fairmark.verdict import rule
from fairmark.verdict.compare import Comparison
from fairmark.verdict.pairs import pooled_runs
from fairmark.verdict.record import Verdict
from fairmark.verdict.run import RunVerdicts

GOOD, CANDIDATE, BAD = "good", "candidate", "bad"  # the variants of a step's run (the ends' check: good, bad)
# What a step judges: the candidate against G ("group metric") and against B ("group metric vs bad").
SIDES = ((GOOD, CANDIDATE, ""), (BAD, CANDIDATE, " vs bad"))
ENDS = ((GOOD, BAD, ""),)  # what the ends' check judges: B against G ("group metric")
BUILD_TAIL_LINES, BUILD_TAIL_CHARS = 20, 2000  # the end of a failed build's output that is kept and shown


class BuildFailed(UsageError):
    """The good end does not build: nothing can be compared (a candidate that does not build is skipped)."""


@dataclass(frozen=True)
class BisectOptions:
    good: str
    bad: str
    plan_path: str
    build: str
    repo: str = "."
    threshold_pct: float = 3.0  # the smallest regression between G and B worth a bisect
    attempts: int = 3  # runs of the plan per step at most, pooled, before `skip`
    quick: bool = False
    accept_risk: bool = False
    tags: dict[str, str] = field(default_factory=dict)
    build_timeout_s: float = 3600.0
    command_line: str = ""
    monitors: bool = True  # the trial hooks every run has (`run --no-monitors` turns them off)
    monitor_interval: float = 1.0
    allow_concurrent: bool = False  # also for the hosts' own locks (the bisect holds this machine's)
    profile: tuple[str, ...] = ()  # --profile: every run's profiled trials (report/explain: where it went)
    explain: bool = False  # --explain: CPU-profiled trials only in a run whose difference is significant

    def request(self, loaded: LoadedPlan, tags: dict[str, str], **extra: Any) -> RunRequest:
        """The RunRequest of one of the job's runs. The command holds this machine's lock across all of them
        (cli/_builds.run_locked), so no run takes it."""
        return RunRequest(
            loaded,
            quick=self.quick,
            accept_risk=self.accept_risk,
            tags={**self.tags, **tags},
            command_line=self.command_line,
            monitors=self.monitors,
            monitor_interval=self.monitor_interval,
            profile=self.profile,
            explain=self.explain,
            allow_concurrent=self.allow_concurrent,
            hold_lock=False,
            **extra,
        )


@dataclass(frozen=True)
class Step:
    commit: str
    subject: str
    answer: str  # "good" | "bad" | "skip" | "regression" (the G→B check) | "none" (no proven regression)
    runs: tuple[str, ...]
    comparison: Comparison | None  # the pooled verdict of the target cell against G
    note: str = ""
    build_output: str = ""  # a failed build's last lines (whole lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "subject": self.subject,
            "answer": self.answer,
            "runs": list(self.runs),
            "comparison": self.comparison.to_dict() if self.comparison else None,
            "note": self.note,
            "build_output": self.build_output,
        }


@dataclass(frozen=True)
class BisectResult:
    good: str
    bad: str
    target: str  # "group metric" of the cell bisected ("" when there was no regression)
    regression: Comparison | None  # G→B verdict of the target
    first_bad: str | None
    candidates: tuple[str, ...]  # when skips leave several: the first bad commit is one of these
    steps: tuple[Step, ...]
    cleanup_problems: tuple[str, ...] = ()

    @property
    def proven(self) -> bool:
        return self.regression is not None

    def step_of(self, sha: str | None) -> Step | None:
        return next((s for s in self.steps if s.commit == sha), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "good": self.good,
            "bad": self.bad,
            "target": self.target,
            "regression": self.regression.to_dict() if self.regression else None,
            "first_bad": self.first_bad,
            "candidates": list(self.candidates),
            "steps": [s.to_dict() for s in self.steps],
            "cleanup_problems": list(self.cleanup_problems),
        }


def bisect_plan_text(path: str) -> str:
    """The plan's text; a plan for bisect has no variants of its own (the two sides are the commits)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PlanError(f"cannot read the plan: {exc.strerror}", path=path) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"not valid TOML: {exc}", path=path) from None
    if "variant" in data:
        raise PlanError(
            "a bisect plan has no [[variant]]: its two sides are the good commit and each candidate, and a "
            "workload finds its side's checkout in $FAIRMARK_CHECKOUT",
            path=path,
            key="variant",
        )
    parse_plan(text, path)  # every other error now, before anything is built
    return text


def step_plan(text: str, path: str, sides: dict[str, Path]) -> LoadedPlan:
    """The plan with one variant per side (good first: the baseline), each with its checkout."""
    variants = "".join(
        f'\n[[variant]]\nname = "{name}"\ndescription = "checkout at {d}"\nenv = {{ FAIRMARK_CHECKOUT = {_toml_str(d)} }}\n'
        for name, d in sides.items()
    )
    derived = text.rstrip("\n") + "\n\n# added by fairmark bisect: the sides of this step" + variants
    return LoadedPlan(plan=parse_plan(derived, path), path=path, text=derived)


def _toml_str(p: Path) -> str:
    # TOML's basic strings take JSON's escapes (json.dumps never writes '\/')
    return json.dumps(str(p))


class Bisect:
    def __init__(
        self,
        opts: BisectOptions,
        store: Any,
        *,
        progress: Callable[[], Progress] = Progress,
        note: Callable[[str], None] = lambda s: None,
        warn: Callable[[str], None] = lambda s: None,
    ):
        self.opts, self.store, self.progress, self.note, self.warn = opts, store, progress, note, warn
        self.text = bisect_plan_text(opts.plan_path)
        self.repo = Repo(opts.repo)
        self.id = str(uuid.uuid4())  # every step's run is tagged bisect.id=ID
        self.good_dir: Path | None = None
        self.bad_dir: Path | None = None
        self.steps: list[Step] = []
        self._target = ""  # "group metric" of the cell bisected, once G→B proved its regression
        self._good = ""
        self._last_verdicts: dict[str, Verdict] = {}
        self._warned: set[str] = set()  # the environment findings and the runs' warnings already printed

    def run(self) -> BisectResult:
        """The whole bisect; SIGTERM/SIGHUP unwind it (run.guard.signals), the repository put back either way."""
        with unwinding():
            return self._run()

    def _run(self) -> BisectResult:
        repo = self.repo
        good, bad = repo.rev(self.opts.good), repo.rev(self.opts.bad)
        if good == bad or not repo.is_ancestor(good, bad):
            raise UsageError(
                f"--good {self.opts.good} must be an ancestor of --bad {self.opts.bad} (and not it)"
            )
        before = repo.head_state()
        for line in repo.claim():
            self.warn(line)
        try:
            result = self._search(good, bad)
        except (Terminated, KeyboardInterrupt) as exc:
            self.warn(_cancelled(exc, self._restore(before)))
            raise
        except BaseException:
            self._restore(before)
            raise
        problems = self._restore(before)
        result = BisectResult(**{**vars(result), "cleanup_problems": tuple(problems)})
        self._store_result(result)
        return result

    def _restore(self, before: tuple[str, str]) -> list[str]:
        """The repository as it was (no bisect, no checkout of ours, HEAD where it was): what could not be put back."""
        problems = self.repo.close()
        if self.repo.head_state() != before:
            problems.append(f"HEAD was {before}, is now {self.repo.head_state()}")
        return problems

    def _store_result(self, result: BisectResult) -> None:
        """The outcome beside the runs it was judged from (an artifact of the bisect's first run): a report can
        show the steps, their answers and the first bad commit from the store alone. Build output quoted in a
        step's note is scrubbed of secrets, as every stored output is."""
        first = next((run for step in result.steps for run in step.runs), None)
        if first is None:
            return
        scrub = Scrubber()
        data = result.to_dict()
        data["steps"] = [
            step | {"note": scrub(step["note"]), "build_output": scrub(step["build_output"])}
            for step in data["steps"]
        ]
        self.store.add_artifact(
            first,
            kind=BISECT_RESULT,
            name="result",
            content_type="application/json",
            data={"id": self.id, "threshold_pct": self.opts.threshold_pct, "plan_path": self.opts.plan_path}
            | data,
        )

    def _search(self, good: str, bad: str) -> BisectResult:
        self.good_dir, self.bad_dir = self._built(good, "good"), self._built(bad, "bad")
        target, regression = self._check_ends(good, bad)
        if regression is None:
            return BisectResult(good, bad, "", None, None, (), tuple(self.steps))
        self.note(
            f"bisecting {target}: {regression.sentence}; a commit is bad when proven slower than the good end, "
            "good when proven faster than the bad end (both measured with it, interleaved)"
        )
        answer = self.repo.bisect_start(bad, good)
        while not answer.done:
            cand = self.repo.bisect_head()
            left = f"; {answer.left}" if answer.left else ""
            self.note(f"step {len(self.steps)}: measuring {cand[:12]} {self.repo.subject(cand)}{left}")
            step = self._step(cand, len(self.steps))
            answer = self.repo.answer(step.answer, cand)
        return BisectResult(
            good, bad, target, regression, answer.first_bad, answer.candidates, tuple(self.steps)
        )

    def _built(self, sha: str, end: str) -> Path:
        path = self.repo.checkout(sha, end)
        failed, tail = self._build(path)
        if failed:
            raise BuildFailed(f"--build failed at the {end} commit {sha[:12]} ({failed})" + _quoted(tail))
        self.note(f"{end} end {sha[:12]} built in {path}")
        return path

    def _build(self, where: Path) -> tuple[str, str]:
        """Run --build in a checkout: (what failed, "" when it built; the last whole lines of its output). The
        build has a process group of its own, killed whole on a timeout, Ctrl-C or SIGTERM: a `make -j` must not
        outlive the bisect."""
        env = os.environ | {"FAIRMARK_CHECKOUT": str(where)}
        proc = subprocess.Popen(
            self.opts.build,
            shell=True,
            cwd=where,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # interleaved as the build printed them
            text=True,
            errors="replace",
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=self.opts.build_timeout_s)
        except BaseException as exc:
            kill_group(proc.pid, 5.0)
            out, _ = proc.communicate()
            if not isinstance(exc, subprocess.TimeoutExpired):
                raise
            return f"timed out after {self.opts.build_timeout_s:g} s", build_tail(out)
        return (f"exit {proc.returncode}" if proc.returncode else ""), build_tail(out)

    # -- measuring ------------------------------------------------------------------------------------------
    def _measure(self, sha: str, step_no: int, decide: Callable[[dict[str, Verdict]], str | None]) -> Step:
        """Build `sha` in its own checkout (the bad end's is reused) and run the plan against the ends until
        `decide` answers from the pooled verdicts, at most `attempts` runs; the checkout is removed afterwards."""
        subject = self.repo.subject(sha)
        ends_check = step_no == 0
        path = self.bad_dir if ends_check else self.repo.checkout(sha, f"c-{sha[:12]}")
        assert path is not None
        try:
            failed, tail = ("", "") if ends_check else self._build(path)
            if failed:
                return self._record(Step(sha, subject, "skip", (), None, f"build failed ({failed})", tail))
            judged: list[RunVerdicts] = []
            for attempt in range(1, self.opts.attempts + 1):
                judged.append(self._run_once(sha, path, step_no, attempt))
                self._warn_environment(judged[-1].run.id)
                verdicts = self._last_verdicts = pooled_verdicts(judged, ENDS if ends_check else SIDES)
                answer = decide(verdicts)
                if answer:
                    break
            runs = tuple(r.run.id for r in judged)
            vb = verdicts.get(f"{self._target} vs bad")
            notes = [f"against the bad end: {vb.sentence}"] if vb else []
            notes += [] if answer else [f"not proven after {len(runs)} run(s): skipped"]
            return self._record(
                Step(sha, subject, answer or "skip", runs, self._shown(verdicts), "; ".join(notes))
            )
        finally:
            if not ends_check:
                self.repo.drop_checkout(path)

    def _record(self, step: Step) -> Step:
        self.steps.append(step)
        c = step.comparison
        said = (f" — {c.sentence}" if c else "") + (f" ({step.note})" if step.note else "")
        self.note(f"{step.commit[:12]} {step.subject}: {step.answer}{said}" + _quoted(step.build_output))
        return step

    def _warn_environment(self, run_id: str) -> None:
        """The warnings `fairmark show` gives the run's environment (before the run and between its rounds),
        each printed the first time a step's run has it: a bisect shows no run's report."""
        for f in self.store.findings(run_id):
            if f.get("severity") == "info" or f.get("finding_id") in self._warned:
                continue
            self._warned.add(f.get("finding_id"))
            evidence = f" ({f['evidence']})" if f.get("evidence") else ""
            self.warn(f"run {run_id[:8]}: {f.get('title') or f.get('finding_id')}{evidence}")

    def _shown(self, verdicts: dict[str, Verdict]) -> Comparison | None:
        if self._target:
            v = verdicts.get(self._target)
        else:
            v = max(verdicts.values(), key=lambda v: rule.worse_pct(v.comparison), default=None)
        return v.comparison if v else None

    def _run_once(self, sha: str, path: Path, step_no: int, attempt: int) -> RunVerdicts:
        assert self.good_dir is not None and self.bad_dir is not None
        # the ends' check measures the bad end as itself, "bad"; a step, its candidate between the two ends
        sides = {GOOD: self.good_dir, BAD: path} if step_no == 0 else {GOOD: self.good_dir, CANDIDATE: path}
        if step_no:
            sides[BAD] = self.bad_dir
        loaded = step_plan(self.text, self.opts.plan_path, sides)
        # a step asks "is the candidate slower than good, or faster than bad": stopped when that is decided
        loaded = replace(loaded, plan=loaded.plan.with_decision_stop())
        tags = {
            "commit": sha,
            "bisect.good": self._good,
            "bisect.step": str(step_no),
            "bisect.attempt": str(attempt),
            "bisect.id": self.id,
        }
        decide = ((), False) if step_no == 0 else (((GOOD, CANDIDATE), (BAD, CANDIDATE)), True)
        request = self.opts.request(loaded, tags, decide=decide)
        return execute_run(request, self.store, progress=self.progress(), warn=self._warn_once).verdicts

    def _warn_once(self, line: str) -> None:
        """A run's warning (a monitor that cannot work here, a concurrent run) the first time a step's run has it."""
        if line not in self._warned:
            self._warned.add(line)
            self.warn(line)

    def _check_ends(self, good: str, bad: str) -> tuple[str, Comparison | None]:
        """G against B: the most-regressed cell proven worse beyond the threshold (verdict.rule: the rule of `run
        --fail-on-regression` and `check`) becomes the target."""
        threshold = self.opts.threshold_pct

        def decide(verdicts: dict[str, Verdict]) -> str | None:
            if any(rule.regression_proven(v, threshold) for v in verdicts.values()):
                return "regression"
            return "none" if verdicts and all(rule.cleared(v, threshold) for v in verdicts.values()) else None

        self._target = ""
        self._good = good
        step = self._measure(bad, 0, decide)
        if step.answer != "regression":
            self.steps[-1] = replace(step, answer="none")
            return "", None
        verdicts = self._last_verdicts
        proven = [k for k, v in verdicts.items() if rule.regression_proven(v, threshold)]
        self._target = max(proven, key=lambda k: rule.worse_pct(verdicts[k].comparison))
        self.steps[-1] = replace(step, comparison=verdicts[self._target].comparison)
        return self._target, verdicts[self._target].comparison

    def _step(self, sha: str, step_no: int) -> Step:
        def decide(verdicts: dict[str, Verdict]) -> str | None:
            vg, vb = verdicts.get(self._target), verdicts.get(f"{self._target} vs bad")
            slower, faster = bool(vg and rule.proven_worse(vg)), bool(vb and rule.proven_better(vb))
            if slower and faster:  # between the ends: the nearer one decides
                assert vg is not None and vb is not None
                return "bad" if abs(vg.comparison.percent) > abs(vb.comparison.percent) else "good"
            return "bad" if slower else "good" if faster else None

        return self._measure(sha, step_no, decide)


def pooled_verdicts(
    judged: list[RunVerdicts], sides: tuple[tuple[str, str, str], ...] = SIDES
) -> dict[str, Verdict]:
    """Each cell group's primary metric over all the step's runs — the candidate against G ("group metric") and
    against B ("group metric vs bad"), or in the ends' check B against G — values pooled, pairs never crossing
    runs; judged together (Benjamini-Hochberg), each pair as the run's own verdicts judge it."""
    design = judged[0].design if judged else None
    return pooled_runs(
        [j.cells for j in judged],
        sides,
        confidence=design.confidence if design else 95.0,
        calibrations=getattr(design, "calibrations", None),
        sequential=getattr(design, "sequential", None),
    )


def build_tail(output: str) -> str:
    """The end of a build's output, in whole lines (the last BUILD_TAIL_LINES, fewer when they are longer than
    BUILD_TAIL_CHARS): the error a compiler prints last, never a line cut mid-word."""
    lines = output.strip().splitlines()[-BUILD_TAIL_LINES:]
    while len(lines) > 1 and sum(len(line) + 1 for line in lines) > BUILD_TAIL_CHARS:
        lines.pop(0)
    return "\n".join(lines)


def _quoted(tail: str) -> str:
    return ":\n" + "\n".join(f"    {line}" for line in tail.splitlines()) if tail else ""


def _cancelled(exc: BaseException, problems: list[str]) -> str:
    """What a cancelled bisect says before it exits 128 + N (a CI cancel's SIGTERM) or 130: silence read as a
    crash, or as a repository left mid-bisect."""
    how = f"signal {signal.Signals(exc.signum).name}" if isinstance(exc, Terminated) else "Ctrl-C"
    if problems:
        return f"bisect cancelled ({how}); the repository is NOT as it was: " + "; ".join(problems)
    return f"bisect cancelled ({how}); the repository is restored (no bisect in progress, HEAD as it was, our checkouts removed)"
