# Thin wrapper over CMake: `make run` and `make test` work on a fresh Debian 12.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build run test sanitize clean format torch-compare

all: build

deps:
	bash scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# The main job. Until training exists this is a short demonstration of the
# game engines; the training issue turns it into `zeroth train tictactoe`.
run: build
	$(BUILD)/zeroth bench games --seconds 0.5
	$(BUILD)/zeroth solve connect4 --positions tests/data/connect4/Test_L3_R1 --limit 20

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer.
sanitize: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZT_SANITIZE=ON -DZT_WERROR=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

# Zeroth's networks against PyTorch on the same weights (bench/torch_compare.py).
# PyTorch comes from PyPI into a virtual environment (a few GB with its
# CUDA wheels); nothing else depends on it.
VENV ?= bench/.venv
torch-compare: build
	bash scripts/install-deps.sh --bench
	test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/python -c "import torch, safetensors, numpy" 2>/dev/null || \
		$(VENV)/bin/pip install -q torch numpy safetensors
	$(VENV)/bin/python bench/torch_compare.py --zeroth $(BUILD)/zeroth $(TORCH_ARGS)

format:
	clang-format -i src/*/*.c src/*/*.h tests/*.c bench/*.c

clean:
	rm -rf $(BUILD) build-asan
