# Everything a fresh machine needs: `make run` opens the explorer, `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test test-fast lint typecheck check screenshots snapshot-update bench clean

$(STAMP): pyproject.toml requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q -c requirements/constraints.txt -e '.[measure,test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/vramscope

test: lint typecheck
	$(BIN)/pytest -q

# Unit and Pilot tests only: no snapshots, no child processes (the full suite is `make test`).
# Three workers on two cores: the Pilot tests wait for the app to idle between keys.
# tests/hip_backend is all child processes (tests/conftest.py): not even collected here,
# so torch and mlx-lm are never imported. Bytecode is cached under .pytest_cache even
# where PYTHONDONTWRITEBYTECODE is set: rewriting and compiling the test modules anew
# in every worker took 5-10 s of each run.
test-fast: $(STAMP)
	PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/.pytest_cache/pycache \
		$(BIN)/pytest -q -n 3 --ignore=tests/hip_backend \
		-m "not snapshot and not child_process and not slow and not gpu"

lint: $(STAMP)
	$(BIN)/ruff check core tui hip_backend tests scripts
	$(BIN)/ruff format --check core tui hip_backend tests scripts

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

snapshot-update: $(STAMP)
	$(BIN)/pytest -q tests/tui --snapshot-update

screenshots: $(STAMP)
	$(BIN)/python scripts/make_screenshots.py

bench: $(STAMP)
	$(BIN)/python scripts/benchmark.py
	$(BIN)/python scripts/bench_tui.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
