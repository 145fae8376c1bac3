# Thin wrapper over CMake: `make run` and `make test` work on a fresh Debian 12.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build run test pytest python-venv python-bench sanitize fuzz clean format torch-venv torch-compare torch-muzero

all: build

deps:
	bash scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# The main job: train a tic-tac-toe agent until it plays every one of the
# 4,520 shared positions perfectly (about 10-40 s on 2 cores), then measure it.
RUN_DIR ?= runs/tictactoe-$(shell date +%Y%m%d-%H%M%S)
run: build
	$(BUILD)/zeroth train tictactoe --run $(RUN_DIR) --minutes 3 --set arena.stop_on_perfect=1
	$(BUILD)/zeroth eval tictactoe --model $(RUN_DIR) --positions tests/data/tictactoe/ttt_positions.txt
	$(BUILD)/zeroth eval tictactoe --model $(RUN_DIR) --opponent perfect --games 100
	$(BUILD)/zeroth report $(RUN_DIR)
	@echo
	@echo "Trained: $(RUN_DIR) (report: $(RUN_DIR)/report.html). Play it: $(BUILD)/zeroth play tictactoe --model $(RUN_DIR)"
	@echo "Next, Connect Four (hours on 2 cores; Ctrl-C stops with a checkpoint, --resume continues):"
	@echo "  $(BUILD)/zeroth train connect4 --run runs/connect4"
	@echo "  $(BUILD)/zeroth eval connect4 --model runs/connect4 --positions tests/data/connect4/Test_L2_R1"

# --browser: Chromium for the test that plays `zeroth serve` in a browser;
# where it cannot be installed, that test skips saying so.
BROWSER_DEPS = bash scripts/install-deps.sh --browser || \
	echo "make: chromium could not be installed: tests/cli_serve_browser.sh will skip"
test: build
	$(BROWSER_DEPS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) pytest

# The Python package (python/): a virtual environment from PyPI (numpy,
# pytest) with `pip install ./python` in it, then its test suite.
PY_VENV ?= python/.venv
python-venv: deps
	ZT_PYTHON_VENV=$(PY_VENV) bash scripts/python-venv.sh

pytest: python-venv
	$(PY_VENV)/bin/python -m pytest -q python/tests

# zeroth.Games against pgx and zeroth.Search against mctx (bench/python_*.py,
# by hand, not CI): jax, pgx and mctx from PyPI into bench/.venv-jax.
JAX_VENV ?= bench/.venv-jax
python-bench: python-venv
	test -x $(JAX_VENV)/bin/python || python3 -m venv $(JAX_VENV)
	$(JAX_VENV)/bin/python -c "import jax, pgx, mctx" 2>/dev/null || \
		$(JAX_VENV)/bin/pip install -q "jax[cpu]" pgx mctx
	python3 bench/python_games.py
	python3 bench/python_search.py

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize: deps
	$(BROWSER_DEPS)
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZT_SANITIZE=ON -DZT_WERROR=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

# Fuzzing (tests/fuzz): the libFuzzer harness of every parser, built with
# clang in $(FUZZ_BUILD), each run for SECONDS (new inputs kept in
# $(FUZZ_BUILD)/corpus, findings in $(FUZZ_BUILD)/crashes). FUZZERS picks
# some: make fuzz SECONDS=600 FUZZERS="replay traj".
FUZZ_BUILD ?= build-fuzz
SECONDS ?= 60
FUZZERS ?= $(sort $(patsubst tests/fuzz/fuzz_%.c,%,$(filter-out tests/fuzz/fuzz_corpus.c,$(wildcard tests/fuzz/fuzz_*.c))))
fuzz:
	bash scripts/install-deps.sh --fuzz
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZT_FUZZ=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers
	bash scripts/fuzz.sh $(FUZZ_BUILD) $(SECONDS) $(FUZZERS)

# Zeroth's networks against PyTorch on the same weights (bench/torch_compare.py).
# PyTorch comes from PyPI into a virtual environment (a few GB with its
# CUDA wheels); nothing else depends on it.
VENV ?= bench/.venv
torch-venv:
	bash scripts/install-deps.sh --bench
	test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/python -c "import torch, numpy" 2>/dev/null || \
		$(VENV)/bin/pip install -q torch numpy

torch-compare: build torch-venv
	$(VENV)/bin/python bench/torch_compare.py --zeroth $(BUILD)/zeroth $(TORCH_ARGS)

# MuZero's nets against PyTorch (bench/torch_muzero.py), the same environment.
torch-muzero: build torch-venv
	$(VENV)/bin/python bench/torch_muzero.py --zeroth $(BUILD)/zeroth $(TORCH_ARGS)

format:
	clang-format -i src/*/*.c src/*/*.h tests/*.c bench/*.c

clean:
	rm -rf $(BUILD) build-asan $(FUZZ_BUILD)
