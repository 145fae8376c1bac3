#!/usr/bin/env bash
# zeroth serve in a real browser: headless Chromium (Debian's `chromium`)
# plays through the page by mouse clicks, driven over its DevTools pipe by
# tests/serve_browser.py (Python's standard library only) — a whole game of
# tic-tac-toe (with Undo and New game as the second player), of Connect
# Four and of Sim, and twelve checker moves of backgammon — checking that
# the page shows the server's final position, that the SVG board draws its
# pieces, and that each screenshot (left in $ZT_SCREENSHOT_DIR, default
# ./serve_browser) shows the players' colours. Everything stays on
# 127.0.0.1. Skips (77) only when chromium or python3 is not installed
# (scripts/install-deps.sh --browser installs chromium) or zeroth was built
# without libmicrohttpd.
set -u
BIN=${ZT_BIN:-build/zeroth}
SRC=${ZT_SOURCE_DIR:-.}
OUT=${ZT_SCREENSHOT_DIR:-$PWD/serve_browser}
dir=$(mktemp -d /tmp/zt_cli_serve_browser_XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

chromium=$(command -v chromium || command -v chromium-browser)
if [ -z "$chromium" ]; then
    echo "SKIP: chromium is not installed (scripts/install-deps.sh --browser installs it)"
    exit 77
fi
if ! command -v python3 >/dev/null; then
    echo "SKIP: python3 is not installed"
    exit 77
fi
out=$("$BIN" serve tictactoe --model /nonexistent 2>&1)
if printf '%s' "$out" | grep -q "without libmicrohttpd"; then
    echo "SKIP: $out"
    exit 77
fi

# Tiny models, one training step each: the agent only has to move.
mlp=(--set net.kind=mlp --set net.mlp_hidden=16 --set net.mlp_layers=1)
conv=(--set net.channels=4 --set net.blocks=1)
args=()
for game in tictactoe connect4 sim backgammon; do
    case $game in tictactoe | backgammon) net=("${mlp[@]}") ;; *) net=("${conv[@]}") ;; esac
    if ! "$BIN" train "$game" --run "$dir/$game" --steps 1 --set mode=deterministic \
        --set games_per_actor=2 --set search.sims=4 --set selfplay.root_cache=false \
        --set learner.batch=16 --set learner.min_positions=16 --set arena.games=0 \
        --set arena.positions=0 "${net[@]}" --set backend=ref >"$dir/$game.train" 2>&1; then
        echo "FAIL: training the tiny $game model: $(tail -n 3 "$dir/$game.train")"
        exit 1
    fi
    "$BIN" serve "$game" --model "$dir/$game" --port 0 --seed 1 --sims 3 --set backend=ref \
        >"$dir/$game.out" 2>&1 &
    pids+=($!)
    url=
    for _ in $(seq 1 200); do
        url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/' "$dir/$game.out" 2>/dev/null)
        [ -n "$url" ] && break
        sleep 0.1
    done
    if [ -z "$url" ]; then
        echo "FAIL: $game: the server did not start: $(cat "$dir/$game.out")"
        exit 1
    fi
    limit=
    [ "$game" = backgammon ] && limit=@12
    args+=("$game=$url$limit")
done

python3 "$SRC/tests/serve_browser.py" --chromium "$chromium" --out "$OUT" --seed 1 "${args[@]}"
rc=$?
[ $rc -eq 0 ] && echo "cli_serve_browser: all checks passed (screenshots in $OUT)"
exit $rc
