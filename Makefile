# Two commands matter: `make run` and `make test` (`make quick-test` is the edit loop's part of it). Both set up
# what is missing first and are idempotent.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
BIN   := $(VENV)/bin
STAMP := $(VENV)/.fairmark-installed
PLAN  ?= plans/quick.toml

.PHONY: setup tools-run tools-test run test quick-test lint typecheck format bench clean

setup: tools-run $(STAMP)

# python3-venv (Debian) must be there before the venv is made: tools-run comes first.
$(STAMP): pyproject.toml | tools-run
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

# Distro packages (one apt-get call, only for what is missing): what the default plan needs, and what the
# test suite needs on top (real servers, the ministat and hyperfine peers, perf, strace, headless Chromium).
tools-run:
	@bash scripts/ensure-tools.sh packages/debian-run.txt

tools-test: tools-run
	@bash scripts/ensure-tools.sh packages/debian-test.txt
	@bash scripts/ensure-inferno.sh

# The terminal report comes at the end of the run; the self-contained HTML report is written next to it.
run: setup
	$(BIN)/fairmark run $(PLAN)
	@mkdir -p out
	$(BIN)/fairmark report last --html out/report.html

# The trial launcher and the launch server (src/fairmark/run/launch/c/) as C: every warning an error, with the C
# library and without it (FAIRMARK_NOLIBC, Linux x86-64), as fairmark builds them at run time.
C_SRC   := src/fairmark/run/launch/c
C_WARN  := -Wall -Wextra -Werror -O2 -c -o /dev/null
C_NOLIBC := -ffreestanding -fno-stack-protector -fno-builtin -DFAIRMARK_NOLIBC

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	for f in $(C_SRC)/launcher.c $(C_SRC)/launch_server.c; do \
	  cc $(C_WARN) $$f && { [ "$$(uname -sm)" != "Linux x86_64" ] || cc $(C_WARN) $(C_NOLIBC) $$f; } || exit 1; \
	done

# mypy as pyproject.toml configures it: strict and without Any on the core path (plan, store, verdict, stats);
# its cache is .mypy_cache/ at the top of the checkout (a warm run re-checks only what changed).
typecheck: $(STAMP)
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

# The suite runs in TEST_WORKERS processes (pytest-xdist): most of its time is waiting — guests booting, servers
# starting, processes being killed — not computing. `--dist loadgroup` keeps each module that shares a fixture on
# one worker, and runs the tests marked `machine` (they change or watch machine-wide state) one at a time on one
# worker (tests/conftest.py); the longest units go out first, and a worker still busy with a long test is given a
# short one, not a long unit that would wait for it (tests/suite_schedule.py). 6 workers: the five units of many
# minutes (the three QEMU guests' modules, the two machine groups) each start at once on a worker of their own,
# and the sixth begins the rest; with 3, test_explain_qemu waited behind test_cgroup_v2 and the machine group
# behind both (861 s and 2400+ s into a suite at load ~22).
# TEST_WORKERS=0 runs it in this one process, as before.
# pytest exits 5 when it collected nothing; that is a failure here, like any other non-zero code.
TEST_WORKERS ?= 6
PYTEST_PARALLEL = -n $(TEST_WORKERS) --dist loadgroup

test: setup tools-test lint typecheck
	$(BIN)/pytest -q $(PYTEST_PARALLEL)

# The edit loop's suite: the unit tests and one representative of each slow family (QEMU boots, remote hosts,
# stability, store concurrency, fault kills, pbuild), by the markers pyproject.toml registers. Not the whole
# suite: `make test` is (README, .ci/run).
quick-test: setup tools-test lint typecheck
	$(BIN)/pytest -q $(PYTEST_PARALLEL) -m "not slow or representative"

bench: setup tools-test
	@for b in bench/[!_]*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .ruff_cache .pycache .mypy_cache
