PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYPROJECT_SUM := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# One stamp a step, named by pyproject.toml's checksum: `make demo` installs the
# package and its runtime dependencies only; `make test` then adds the test
# extra to the same .venv (a later `make demo` keeps it: nothing is uninstalled).
STAMP := $(VENV)/.installed-$(PYPROJECT_SUM)
TEST_STAMP := $(VENV)/.installed-test-$(PYPROJECT_SUM)

.PHONY: demo test lint e2e runtimes install install-test clean fuzz bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	@rm -f $(filter-out $(TEST_STAMP),$(wildcard $(VENV)/.installed-*))
	@touch $@

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@rm -f $(wildcard $(VENV)/.installed-test-*)
	@touch $@

# An editable install compiles nothing, and PYTHONDONTWRITEBYTECODE keeps it so:
# without bytecode every start-up compiles the package again, which a
# non-editable pip install would not. compileall redoes only changed files.
install: $(STAMP)
	@$(BIN)/python -m compileall -q apx_doctor

install-test: install $(TEST_STAMP)

demo: install
	@echo '$$ apx-doctor check examples/dashboard.jsonl'
	@$(BIN)/apx-doctor check examples/dashboard.jsonl; echo "(exit $$?)"
	@echo
	@echo '$$ apx-doctor fix examples/dashboard.jsonl   # dry run: shows the repair, writes nothing'
	@$(BIN)/apx-doctor fix examples/dashboard.jsonl; echo "(exit $$?)"
	@echo
	@echo '$$ apx-doctor fix --output - examples/dashboard.jsonl'
	@$(BIN)/apx-doctor fix --output - examples/dashboard.jsonl; echo "(exit $$?)"

test: install-test
	$(BIN)/python -m pytest -q

# ruff (lint, then the formatter's check) and mypy --strict on apx_doctor, as pyproject.toml configures them.
lint: install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The real runtimes (tests/runtimes/package.json, pinned by its lock file),
# interrupted and resumed against stand-in APIs inside a loopback-only network
# namespace (tests/e2e). npm ci installs exactly the lock file; every package
# ships what it runs (a native binary or a JavaScript bundle) inside the package.
RUNTIMES := tests/runtimes
RUNTIMES_STAMP := $(RUNTIMES)/node_modules/.installed-$(shell cat $(RUNTIMES)/package-lock.json | cksum | cut -d' ' -f1)

$(RUNTIMES_STAMP): $(RUNTIMES)/package.json $(RUNTIMES)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "make e2e: npm is not installed; the runtimes under test come from the npm registry (install Node.js 18+ with npm)" >&2; exit 1; }
	cd $(RUNTIMES) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

runtimes: $(RUNTIMES_STAMP)

e2e: install-test runtimes
	$(BIN)/python -m pytest -q tests/e2e

# Coverage-guided fuzzing of the line reader, the streaming pass and the engine
# (atheris; a hypothesis-driven loop where atheris does not install). Bounded:
# FUZZ_SECONDS (60 by default). Prints inputs tried and crashes; exit 1 on a crash.
FUZZ_SECONDS ?= 60
fuzz: install-test
	-@$(BIN)/python -m pip install --quiet 'atheris>=2.3' || echo "atheris did not install: using the hypothesis loop"
	$(BIN)/python fuzz/run.py --seconds $(FUZZ_SECONDS)

# Every row of the performance table (issue 5) on generated data (bench/data/).
# BENCH_SCALE=0.05 for a quick run; full size takes about 7 minutes on 2 cores, one of them to generate the data.
bench: install-test
	-@$(BIN)/python -m pip install --quiet -e '.[bench]' || echo "deepagents did not install: the library row has no peer"
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
