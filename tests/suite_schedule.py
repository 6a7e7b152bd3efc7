"""How `make test`'s xdist controller hands out work units (`--dist loadgroup`, tests/conftest.py): xdist's own
rule with one change.

xdist gives a worker its next unit as soon as the worker has two tests or fewer left, before they run (a worker
must know its next test before it runs the current one). A unit given to a worker that still has a test of many
minutes left waits for that test: in a suite at load ~22 (2026-11-29), test_explain_qemu (one test, ~12 min)
went to the worker that had two of test_cgroup_v2's tests still to run and started 861 s in, while the other
workers ran one long unit each. So a worker whose tests left are long (their costs, conftest's _longest_first,
sum to LONG_S or more) is given the cheapest unit waiting, not the longest: a test of a second or so waits
behind it, and the long units go to workers that are about to be free.

The controller collects nothing: the workers write each test's cost to the file COSTS_ENV names (conftest), the
same on every worker, before the controller schedules. Without the file every test costs 1: xdist's own rule."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController

COSTS_ENV = "FAIRMARK_TEST_COSTS"
LONG_S = 600.0  # the timeouts of the guests' and the longest runs' tests (600-3600 s); the rest have 60 or 1


def write_costs(costs: dict[str, float]) -> None:
    """On a worker: each test's cost by its node ID, for the controller (the same from every worker)."""
    path = os.environ.pop(COSTS_ENV, None)  # not the tests' business, nor the fairmarks they start
    if path:
        tmp = Path(f"{path}.{os.getpid()}")
        tmp.write_text(json.dumps(costs))
        tmp.replace(path)  # whole, whichever worker writes last


def _test_id(nodeid: str) -> str:
    """A node ID without the `@group` xdist adds to it (as LoadGroupScheduling._split_scope reads it)."""
    return nodeid.rsplit("@", 1)[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


class LongUnitsApart(LoadGroupScheduling):
    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        super().__init__(config, log)
        self._costs: dict[str, float] | None = None

    def _cost(self, nodeid: str) -> float:
        if self._costs is None:
            try:
                self._costs = json.loads(Path(os.environ[COSTS_ENV]).read_text())
            except (KeyError, OSError, ValueError):
                self._costs = {}
        return float(self._costs.get(_test_id(nodeid), 1.0))

    def _reschedule(self, node: WorkerController) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        left = [
            nodeid for unit in self.assigned_work[node].values() for nodeid, done in unit.items() if not done
        ]
        if len(left) > 2:  # xdist's rule: more when two or fewer are left
            return
        if sum(map(self._cost, left)) >= LONG_S:
            cheapest = next(reversed(self.workqueue))  # the queue is longest first (conftest)
            self.workqueue.move_to_end(cheapest, last=False)
        self._assign_work_unit(node)
