#!/usr/bin/env bash
# Makes python/.venv, a virtual environment with numpy and pytest from PyPI
# and the zeroth package installed from ./python (which builds libzeroth.so
# with the project's CMake build, incrementally in python/build/). Then
# `python/.venv/bin/pytest python/tests` runs the Python suite. Needs
# python3-venv (scripts/install-deps.sh installs it).
# Usage: scripts/python-venv.sh [--extra PKG ...]   (e.g. --extra torch tqdm)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${ZT_PYTHON_VENV:-python/.venv}
extra=()
if [ "${1:-}" = "--extra" ]; then shift; extra=("$@"); fi

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
py="$VENV/bin/python"
"$py" -c "import numpy, pytest, scikit_build_core" 2>/dev/null ||
    "$py" -m pip install -q --disable-pip-version-check numpy pytest scikit-build-core
if [ ${#extra[@]} -gt 0 ]; then
    "$py" -m pip install -q --disable-pip-version-check "${extra[@]}"
fi
# ccache, where the machine has it, makes a rebuild from a clean tree cheap.
cmake_args=()
if command -v ccache >/dev/null; then
    cmake_args+=(--config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# --no-build-isolation: the build backend is already in the venv, so the
# install needs no download; the package's one dependency (numpy) too.
"$py" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
    "${cmake_args[@]}" ./python
"$py" -c "import zeroth; print('zeroth', zeroth.__version__, 'in', '$VENV')"
