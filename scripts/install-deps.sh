#!/usr/bin/env bash
# Installs what Zeroth builds and links against, from Debian packages only.
# Idempotent: installs only packages that are missing. Needs root (or sudo).
# Usage: scripts/install-deps.sh [--bench] [--gnubg] [--fuzz]
set -euo pipefail

pkgs=(build-essential cmake pkg-config libinih-dev libdnnl-dev)
for arg in "$@"; do
    case "$arg" in
    # --bench: also what bench/torch_compare.py needs to make its virtual environment.
    --bench) pkgs+=(python3 python3-venv python3-pip) ;;
    # --gnubg: GNU Backgammon, the outside opponent of `zeroth eval backgammon
    # --opponent gnubg` (installed as /usr/games/gnubg).
    --gnubg) pkgs+=(gnubg) ;;
    # --fuzz: clang and its libFuzzer runtime, for `make fuzz` (tests/fuzz).
    --fuzz) pkgs+=(clang libclang-rt-dev) ;;
    *) echo "install-deps: unknown flag '$arg' (known: --bench, --gnubg, --fuzz)" >&2; exit 2 ;;
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
