"""`fairmark run` of a plan with boot variants (issue 14): blocks of boots A B B A …, each block one boot.

For each block: switch the machine's next boot to the block's variant, reboot, wait (bounded by the variant's
`boot.timeout_s`), verify the boot that came back (run.machine.boots.verify: a new boot id, the kernel command line or
kern.bootfile, the `expect` keys of a fresh environment snapshot, and none of the words that mark the OTHER
variants' kexec command lines), store that snapshot and the check, then run every workload's cells of that
variant: a warm-up (at least one trial per cell: the first trial of a boot meets cold caches) and
`trials_per_boot` measured trials. The verdict then takes the boot as its unit (stats.levels, through the
report's read model: every trial carries its boot id).

Where the machine is (a `run.machine.host.Host`: its boot id, commands, reboot and snapshot):
* remote (`host = …`): the controller drives the host over SSH (remote.hosts.RemoteHost) and never runs on it;
* local (no host): fairmark reboots the machine it runs on (run.machine.host.LocalHost). Before the reboot it installs
  the one-shot boot hook (run.variants.boothook: journaled, so a finished, failed or killed run never leaves it
  behind) that runs `fairmark resume RUN` in the next boot; the resumed run verifies the boot it finds itself in.

The blocks' trials are the runner's: a boot run asks it for a workload's stage, one trial and a cell's stop
through its public steps (`TrialLoop`).

Records (artifacts of the run, append-only; the newest per block counts): kind "boot" — {block, variant, k,
host, phase: "rebooting" | "verified" | "wrong", previous_boot_id, boot_id, check, switch, seconds}; kind
"env.boot" — the snapshot of each verified or refused boot. Resume (after the controller's crash, or in the
next boot in local mode) skips finished blocks, continues a block in its verified boot when the machine is
still in it, verifies a boot a pending reboot led to, and otherwise switches and reboots again.

A wrong boot is recorded with its evidence and ends the run (failed, exit 3): no trial runs in it. A machine
that does not come back ends it as interrupted (exit 3) with what was waited for; `fairmark resume` continues.
"""

from __future__ import annotations

import math
import sys
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from fairmark.errors import EnvironmentRefused, PlanError
from fairmark.plan.model import Boot, Plan, RunPolicy
from fairmark.run.loop import profiled
from fairmark.run.loop.stoprule import boot_decision
from fairmark.run.machine.boots import (
    BootCheck,
    HostDidNotReturn,
    WrongBoot,
    boot_order,
    describe,
    parse_bootfile,
    switch_commands,
    verify,
)
from fairmark.run.machine.host import snapshot_json
from fairmark.store.db import now

if TYPE_CHECKING:
    from fairmark.plan.load import LoadedPlan
    from fairmark.plan.schedule import Order
    from fairmark.run.loop.options import Progress, RunOptions
    from fairmark.run.machine.host import Host, Hosts
    from fairmark.run.trials.prepare import CellState, WorkloadRuntime
    from fairmark.run.trials.trial import Contexts, TrialHook
    from fairmark.store.db import Store

__all__ = ["BootRun", "HostDidNotReturn", "TrialLoop"]


class TrialLoop(Protocol):
    """What a boot run shares with the runner (run.loop.runner.Runner): the run, its machines, and the runner's
    trial loop as public steps — a workload's stage, one trial of a cell in a round, a cell's stop, the watch
    between rounds."""

    loaded: LoadedPlan
    plan: Plan
    policy: RunPolicy
    store: Store
    run_id: str
    progress: Progress
    hosts: Hosts
    options: RunOptions

    def stage(self, rt: WorkloadRuntime) -> AbstractContextManager[Contexts]: ...
    def trial(self, rt: WorkloadRuntime, contexts: Contexts, cs: CellState, r: int) -> None: ...
    def profiled_trial(
        self, rt: WorkloadRuntime, contexts: Contexts, cs: CellState, r: int, profiler: TrialHook
    ) -> None: ...
    def stop(self, cs: CellState, status: str, reason: str) -> None: ...
    def between_rounds(self) -> None: ...


def has_boot_variants(plan: Plan) -> bool:
    return any(v.boot is not None for v in plan.variant)


@dataclass(frozen=True)
class Block:
    index: int  # position in the boot order
    variant: str
    k: int  # this variant's k-th boot (0-based)


def blocks(variants: list[str], boots: int) -> list[Block]:
    out, seen = [], dict.fromkeys(variants, 0)
    for i, v in enumerate(boot_order(variants, boots)):
        out.append(Block(i, v, seen[v]))
        seen[v] += 1
    return out


def warmup_per_boot(policy: RunPolicy) -> int:
    return max(1, policy.warmup)


def boots_per_variant(policy: RunPolicy) -> int:
    """The boots each variant gets at most: `boots`, or `max_boots` when boots = "auto" (which may stop before)."""
    return policy.max_boots if policy.boots == "auto" else policy.boots


def trials_per_boot(policy: RunPolicy) -> int:
    """The run's trial budget spread over the boots (≥ min_trials per boot, so each boot has a within-boot
    variance); more boots, not more trials per boot, is what usually buys precision (the report says which)."""
    return max(policy.min_trials, math.ceil(policy.max_trials / boots_per_variant(policy)))


def block_rounds(k: int, warmup: int, per_boot: int) -> list[int]:
    """The rounds of a variant's k-th boot: its own warm-up rounds (negative), then its measured rounds."""
    return [-(k * warmup + j + 1) for j in range(warmup)] + [k * per_boot + j for j in range(per_boot)]


def profiled_rounds(policy: RunPolicy, per_boot: int, i: int, k: int) -> list[int]:
    """The rounds of the i-th profiler's trials in a variant's k-th boot: `profiled_trials` per boot, after
    every round the measured trials can take (their failures' extra rounds included); fixed, so that resume
    finds what ran."""
    n, boots = policy.profiled_trials, boots_per_variant(policy)
    first = boots * per_boot + policy.max_failures
    return [first + (i * boots + k) * n + j for j in range(n)]


def distinguishing_words(plan: Plan, variant: str) -> set[str]:
    """Kernel command-line words the OTHER variants' kexec append has and this one's has not: a boot of this
    variant must not show them (two variants differing by `mitigations=off` are told apart both ways)."""
    own = plan.variant_named(variant).boot
    mine = set((own.kexec.append or "").split()) if own and own.kexec else set()
    words: set[str] = set()
    for v in plan.variant:
        if v.name != variant and v.boot and v.boot.kexec and v.boot.kexec.append:
            words |= set(v.boot.kexec.append.split()) - mine
    return words


# -- the run ----------------------------------------------------------------------------------------------
class BootRun:
    def __init__(self, runner: TrialLoop):
        self.runner = runner
        plan = runner.plan
        hosts = {v.host for v in plan.variant}
        if len(hosts) != 1:
            raise PlanError(
                "boot variants must all run on the same machine (one host, or all local): "
                f"found {sorted(str(h) for h in hosts)}",
                path=runner.loaded.path,
                key="variant.host",
            )
        host = next(iter(hosts))
        self.machine: Host = runner.hosts.remote[host] if host else runner.hosts.local
        self.policy = runner.policy
        self.blocks = blocks([v.name for v in plan.variant], boots_per_variant(self.policy))
        self.warmup, self.per_boot = warmup_per_boot(self.policy), trials_per_boot(self.policy)
        self.verified: str | None = None  # the boot id the current block's trials must run in
        # Every boot takes its own profiled trials (the boot is the unit of the verdict and of where its difference
        # went), --explain's too: a boot run knows its verdict only after its last boot, and a boot cannot be
        # entered again to profile it then.
        self.profilers = profiled.boot_profilers(runner.options)
        self.machine.guard(lambda: self.verified)

    # -- records
    def _records(self) -> dict[int, dict[str, Any]]:
        latest: dict[int, dict[str, Any]] = {}
        for a in self.runner.store.artifacts(self.runner.run_id, kind="boot"):
            data = a["data"]
            if isinstance(data, dict) and isinstance(data.get("block"), int):
                latest[int(str(data["block"]))] = data
        return latest

    def _record(self, block: Block, **data: Any) -> dict[str, Any]:
        rec = {
            "block": block.index,
            "variant": block.variant,
            "k": block.k,
            "host": self.machine.name,
            "at": now().isoformat(),
            **data,
        }
        self.runner.store.add_artifact(
            self.runner.run_id, kind="boot", name=str(block.index), content_type="application/json", data=rec
        )
        return rec

    # -- the loop
    def execute(self, runtimes: list[WorkloadRuntime], order: Order) -> None:
        self.order = order
        records = self._records()
        reason = f"{self.policy.boots} boots per variant × {self.per_boot} trials per boot (A B B A …)"
        for block in self.blocks:
            if not self._block_done(runtimes, block):
                self._enter(block, records.get(block.index))
                self._run_block(runtimes, block)
            decided = self._decided(runtimes, block)
            if decided:
                reason = decided
                break
        for rt in runtimes:
            for cs in rt.cells:
                if cs.status == "active":
                    self.runner.stop(cs, "done", reason)

    def _decided(self, runtimes: list[WorkloadRuntime], block: Block) -> str | None:
        """boots = "auto": after a block that completes an A B B A (each variant k boots, k even), the boot-level
        answer, decided (or max_boots reached) — the reason every cell stops — or None to boot on."""
        if self.policy.boots != "auto" or (block.index + 1) % (2 * len(self.runner.plan.variant)):
            return None

        return boot_decision(runtimes, self.policy, self.runner.plan.baseline, self.per_boot, block.k + 1)

    def _cells(self, rt: WorkloadRuntime, block: Block) -> list[CellState]:
        return [cs for cs in rt.cells if cs.cell.variant == block.variant and cs.status == "active"]

    def _rounds(self, k: int) -> list[int]:
        """Every round of a variant's k-th boot: warm-up, measured, then each profiler's."""
        rounds = block_rounds(k, self.warmup, self.per_boot)
        for i in range(len(self.profilers)):
            rounds += profiled_rounds(self.policy, self.per_boot, i, k)
        return rounds

    def _block_done(self, runtimes: list[WorkloadRuntime], block: Block) -> bool:
        rounds = self._rounds(block.k)
        return all(r in cs.rounds_done for rt in runtimes for cs in self._cells(rt, block) for r in rounds)

    def _enter(self, block: Block, rec: dict[str, Any] | None) -> None:
        """Be in a verified boot of the block's variant: the one already verified, the one a pending reboot
        led to, or a new one."""
        note = self.runner.progress.note
        current = str(self.machine.boot_id() or "")
        if rec and rec.get("phase") == "verified" and rec.get("boot_id") == current:
            note(
                f"boot {block.index + 1}/{len(self.blocks)} ({block.variant}): continuing in its verified boot"
            )
            self.verified = current
            return
        if rec and rec.get("phase") == "rebooting" and current and current != rec.get("previous_boot_id"):
            self._verify(block, current, rec["previous_boot_id"], rec.get("started", time.time()))
            return
        boot = self.runner.plan.variant_named(block.variant).boot
        assert boot is not None
        where = f"host {self.machine.name}" if self.machine.name else "this machine"
        note(
            f"boot {block.index + 1}/{len(self.blocks)}: switching {where} to variant {block.variant} "
            f"({describe(boot)}) and rebooting"
        )
        self._switch(block, boot)
        started = time.time()
        self._record(
            block,
            phase="rebooting",
            previous_boot_id=current,
            boot_id=None,
            switch=describe(boot),
            started=started,
        )
        new = self.machine.reboot(boot, current, resume=self._resume_argv())
        self._verify(block, new, current, started)

    def _switch(self, block: Block, boot: Boot) -> None:
        for argv in switch_commands(boot):
            res = self.machine.run(argv, timeout_s=300)
            if res.returncode != 0:
                out = (res.stderr or res.stdout or "").strip()[-600:]
                raise EnvironmentRefused(
                    f"variant {block.variant!r}: the boot switch `{' '.join(argv)}` failed (exit "
                    f"{res.returncode}){': ' + out if out else ''}",
                    hint="the machine was not rebooted; fix the variant's boot switch and `fairmark resume RUN`",
                )

    def _verify(self, block: Block, boot_id: str, previous: str, started: float) -> None:
        boot = self.runner.plan.variant_named(block.variant).boot
        assert boot is not None
        snap = self.machine.snapshot()
        check = verify(
            block.variant,
            boot,
            snap,
            boot_id=boot_id,
            previous_boot_id=previous,
            bootfile=self._bootfile(),
            absent=distinguishing_words(self.runner.plan, block.variant),
        )
        self.runner.store.add_artifact(
            self.runner.run_id,
            kind="env.boot",
            name=str(block.index),
            content_type="application/json",
            data=snapshot_json(snap),
        )
        seconds = round(time.time() - started, 1)
        self._record(
            block,
            phase="verified" if check.ok else "wrong",
            previous_boot_id=previous,
            boot_id=boot_id,
            check=check.to_dict(),
            switch=describe(boot),
            seconds=seconds,
        )
        self._refuse(check, block)
        self.runner.progress.note(
            f"boot {block.index + 1}/{len(self.blocks)} ({block.variant}) verified after {seconds:g} s: "
            + "; ".join(check.evidence)
        )
        self.verified = boot_id

    def _refuse(self, check: BootCheck, block: Block) -> None:
        if not check.ok:
            raise WrongBoot(
                f"boot {block.index + 1}/{len(self.blocks)}: the machine booted something other than variant "
                f"{block.variant!r}: " + "; ".join(e for e in check.evidence if e),
                hint="no trial ran in this boot and the run stops; the boot and its snapshot are stored with the "
                "run — check the variant's boot switch by hand",
            )

    def _run_block(self, runtimes: list[WorkloadRuntime], block: Block) -> None:
        runner = self.runner
        rounds = block_rounds(block.k, self.warmup, self.per_boot)
        for rt in runtimes:
            if not any(
                r not in cs.rounds_done for cs in self._cells(rt, block) for r in self._rounds(block.k)
            ):
                continue
            with runner.stage(rt) as contexts:
                for r in rounds:
                    for cs in self._order(rt, block, r):
                        if r not in cs.rounds_done:
                            runner.trial(rt, contexts, cs, r)
                            self._same_boot(block)
                    runner.between_rounds()
                self._profile_block(rt, contexts, block)

    def _profile_block(self, rt: WorkloadRuntime, contexts: Contexts, block: Block) -> None:
        """The block's profiled trials, after its measured ones and in the same boot: each profiler's
        `profiled_trials`, one profiler per trial, apart from every value (perf slows what it watches)."""
        for i, profiler in enumerate(self.profilers):
            for r in profiled_rounds(self.policy, self.per_boot, i, block.k):
                for cs in self._order(rt, block, r):
                    if r not in cs.rounds_done:
                        self.runner.profiled_trial(rt, contexts, cs, r, profiler)
                        self._same_boot(block)

    def _order(self, rt: WorkloadRuntime, block: Block, r: int) -> list[CellState]:
        by_cell = {cs.cell: cs for cs in self._cells(rt, block)}
        return [by_cell[c] for c in self.order.round(rt.workload.name, r, list(by_cell))]

    def _same_boot(self, block: Block) -> None:
        """A trial that ran in another boot than the verified one (the machine rebooted on its own) stops the
        run: the block's boot is no longer the verified variant."""
        seen = self.machine.boot_id()
        if seen and self.verified and seen != self.verified:
            raise WrongBoot(
                f"boot {block.index + 1}/{len(self.blocks)} ({block.variant}): the machine rebooted during the "
                f"block (boot {self.verified} → {seen}); the run stops",
                hint="`fairmark resume RUN` reboots into the variant again and finishes the block",
            )

    def _bootfile(self) -> str | None:
        """The kernel FreeBSD booted (kern.bootfile): how `nextboot -k NAME` is verified."""
        if self.machine.os != "freebsd":
            return None
        return parse_bootfile(self.machine.run(["sysctl", "kern.bootfile"], timeout_s=30).stdout)

    def _resume_argv(self) -> list[str]:
        """What continues the run in the next boot of this machine (its boot hook runs it)."""
        store = self.runner.store.url
        return [
            sys.executable,
            "-m",
            "fairmark",
            "resume",
            self.runner.run_id,
            "--accept-risk",
            "--store",
            store,
        ]
