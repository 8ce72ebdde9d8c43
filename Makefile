# Everything a fresh machine needs: `make run` opens the explorer, `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --disable-pip-version-check -q -c requirements/constraints.txt
# Two installs, one stamp each: `make run` installs only what the explorer, inspect, fit
# and the Hub reads need (no torch, no mlx, no test tools); `make test` (and `make
# install`) adds every extra and the test tools. Either order upgrades the same .venv.
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
EXTRAS := measure,mlx,rocm,nvidia,png,test
# `make run RUN_ARGS='inspect MODEL'` runs a command instead of the explorer.
RUN_ARGS ?=

.PHONY: install run test test-fast test-llama lint typecheck check screenshots snapshot-update bench bench-install bench-load-peaks clean

$(RUN_STAMP): pyproject.toml requirements/constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	touch $@

# The full install holds the base one too, so it stamps both.
$(DEV_STAMP): pyproject.toml requirements/constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e '.[$(EXTRAS)]'
	touch $(RUN_STAMP) $@

install: $(DEV_STAMP)

run: $(RUN_STAMP)
	$(BIN)/vramscope $(RUN_ARGS)

# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: rewriting and compiling
# the test modules anew in every worker took 5-10 s of each run. It goes beside the
# sources (__pycache__, ignored by git), not under a PYTHONPYCACHEPREFIX: a prefix hides
# the bytecode pip wrote for site-packages and the standard library too, so a fresh
# clone's first run compiled torch, transformers and Textual again in each process
# (collection alone: 23.6 s of CPU per worker, against 12.6 s without the prefix).
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/pytest

# The whole suite in one run on four workers, a test file per worker (its module
# fixtures, such as a measured sweep, are then made once). Four workers on two cores: on
# two, a fifth of the cores' time went idle while tests waited on children, Pilot pauses
# and deadlines; on three the cores were busy 1.73 of 2 on average (a fresh clone: 633 s
# of processor in 365 s), on four 1.85. The files go out in tests/conftest.py's order
# (slow and child-process files first), not xdist's (most tests first), which left the
# one-test files that take a minute last. The tmux tests run beside the others: they once
# ran alone afterwards (36 s with a core idle), blamed on load, when the cause was
# xdist's COLUMNS=80 LINES=24 reaching the app (tests/conftest.py's TERMINAL_ENV).
# Lint and mypy (25 s of processor on a fresh clone, mypy on one core) run beside the
# tests, niced: they take the time the workers leave idle instead of holding a core alone
# before them. Their output is kept and printed after the tests; make fails if they did.
test: $(DEV_STAMP)
	@checks_log=$$(mktemp); \
	echo "lint and types: beside the tests, reported after them"; \
	nice -n 10 $(MAKE) -k --no-print-directory lint typecheck >$$checks_log 2>&1 & checks=$$!; \
	$(PYTEST) -q -n 4 --dist loadfile --no-loadscope-reorder; status=$$?; \
	wait $$checks; checked=$$?; \
	echo "-- lint and types:"; cat $$checks_log; rm -f $$checks_log; \
	if [ $$checked -ne 0 ]; then echo "make test: lint or types failed (above)"; fi; \
	[ $$status -eq 0 ] && [ $$checked -eq 0 ]

# Unit and Pilot tests only: no snapshots, no child processes (the full suite is `make test`).
# Three workers on two cores: the Pilot tests wait for the app to idle between keys.
# tests/hip_backend is all child processes (tests/conftest.py): not even collected here,
# so torch and mlx-lm are never imported. Bytecode: see PYTEST above.
test-fast: $(DEV_STAMP)
	$(PYTEST) -q -n 3 --ignore=tests/hip_backend \
		-m "not snapshot and not child_process and not slow and not gpu"

# Opt-in: build llama.cpp's llama-fit-params (the version llama-cpp-python 0.3.36 vendors)
# into $$XDG_CACHE_HOME/vramscope-dev/, outside the tree (~450 CPU-seconds the first time),
# compare a live run with the committed golden tables, then run the tests that need the
# build (marked llama_cpp, deselected unless VRAMSCOPE_LLAMA_FIT_PARAMS names the tool:
# the load's and `vramscope run -- llama-completion`'s),
# and gguf's own llama.cpp loading tests. `scripts/llama_golden.py` without --check
# rewrites the tables.
test-llama: $(DEV_STAMP)
	$(BIN)/python scripts/build_llama_cpp.py
	$(BIN)/python scripts/llama_golden.py --check
	export VRAMSCOPE_LLAMA_FIT_PARAMS="$$($(BIN)/python scripts/build_llama_cpp.py --print-path)"; \
		$(PYTEST) -q -n 0 -p no:randomly -m llama_cpp tests/core/load tests/hip_backend/test_run_llama_cpp.py && \
		$(PYTEST) -q -n 0 -p no:randomly tests/core/gguf/test_gguf_models_llama_cpp.py

lint: $(DEV_STAMP)
	$(BIN)/ruff check core tui hip_backend tests scripts
	$(BIN)/ruff format --check core tui hip_backend tests scripts

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# `make test` runs lint and the type checks too (beside the tests).
check: test

snapshot-update: $(DEV_STAMP)
	$(BIN)/pytest -q tests/tui --snapshot-update

screenshots: $(DEV_STAMP)
	$(BIN)/python scripts/make_screenshots.py

bench: $(DEV_STAMP)
	$(BIN)/python scripts/benchmark.py
	$(BIN)/python scripts/bench_tui.py

# From a fresh clone of HEAD (and of REF=<commit>, for a before/after): `make run`'s
# install to the first screen, and the size of .venv.
bench-install:
	$(PYTHON) scripts/bench_install.py $(if $(REF),--ref $(REF))

# vramscope's mlx-lm load against real MLX peaks of small models of 11 families, live
# (the mlx engine's child for each; ~7 min on 2 shared cores); not part of `make test`.
# Fails when a peak is not covered or the median overshoot is over 15%.
bench-load-peaks: $(DEV_STAMP)
	$(BIN)/python scripts/bench_load_peaks.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
