#!/usr/bin/env bash
# Installs what Zeroth builds and links against, from Debian packages only.
# Idempotent: installs only packages that are missing. Needs root (or sudo).
# Usage: scripts/install-deps.sh [--bench] [--gnubg] [--browser] [--fuzz]
set -euo pipefail

# libmicrohttpd-dev: the HTTP server of `zeroth serve` (the build leaves the
# command out without it); curl: the test of its API (tests/cli_serve.sh);
# openmpi-bin, libopenmpi-dev: `mpirun -np N zeroth train` (src/dist/);
# python3-venv: the virtual environment of the Python package's tests
# (scripts/python-venv.sh fills it from PyPI); gnubg: GNU Backgammon, the
# outside opponent of backgammon (`--opponent gnubg:P`, arena.opponents =
# gnubg:P; installed as /usr/games/gnubg), whose tests run wherever it is.
pkgs=(build-essential cmake pkg-config libinih-dev libdnnl-dev libmicrohttpd-dev curl openmpi-bin
      libopenmpi-dev python3 python3-venv gnubg)
for arg in "$@"; do
    case "$arg" in
    # --browser: headless Chromium and Python 3 for the test that plays
    # `zeroth serve` in a browser (tests/cli_serve_browser.sh; `make test`
    # asks for them).
    --browser) pkgs+=(chromium python3) ;;
    # --bench: also what bench/torch_compare.py needs to make its virtual environment.
    --bench) pkgs+=(python3 python3-venv python3-pip) ;;
    # --gnubg: accepted for older instructions; gnubg is installed by default now.
    --gnubg) ;;
    # --fuzz: clang and its libFuzzer runtime, for `make fuzz` (tests/fuzz).
    --fuzz) pkgs+=(clang libclang-rt-dev) ;;
    *) echo "install-deps: unknown flag '$arg' (known: --bench, --gnubg, --browser, --fuzz)" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
