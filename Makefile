# Two commands matter: `make run` and `make test`. Both set up what is missing first and are idempotent.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
BIN   := $(VENV)/bin
STAMP := $(VENV)/.fairmark-installed
PLAN  ?= plans/quick.toml

.PHONY: setup tools run test lint format bench clean

setup: $(STAMP) tools

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

# Distro packages the default plan and the test suite need (one apt-get call, only for what is missing).
tools:
	@bash scripts/ensure-tools.sh packages/debian.txt

# The terminal report comes at the end of the run; the self-contained HTML report is written next to it.
run: setup
	$(BIN)/fairmark run $(PLAN)
	@mkdir -p out
	$(BIN)/fairmark report last --html out/report.html

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

format: $(STAMP)
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

# pytest exits 5 when it collected nothing; that is a failure here, like any other non-zero code.
test: setup lint
	$(BIN)/pytest -q

bench: setup
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .ruff_cache
