#!/usr/bin/env bash
# zeroth serve over HTTP, with curl: it listens on a free loopback port, sends
# one self-contained page (nothing loaded from elsewhere) and plays a whole
# tic-tac-toe game through the JSON API; bad requests (malformed JSON,
# unknown fields and paths, wrong methods, illegal moves, bodies over the
# bound, declared or chunked) get a 4xx with a one-line JSON error and the
# server keeps serving; past --max-sessions a new game is refused with 503
# until one is closed; two players at once each finish their own game;
# SIGTERM stops it with status 0; bad flags are one-line errors.
# Skips (77) when this zeroth was built without libmicrohttpd or curl is
# missing.
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
dir=$(mktemp -d /tmp/zt_cli_serve_XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

if ! command -v curl >/dev/null; then
    echo "SKIP: curl is not installed (scripts/install-deps.sh installs it)"
    exit 77
fi
out=$("$BIN" serve tictactoe --model /nonexistent 2>&1)
if printf '%s' "$out" | grep -q "without libmicrohttpd"; then
    echo "SKIP: $out"
    exit 77
fi

# A tiny model: two training steps of a small MLP.
run="$dir/run"
if ! "$BIN" train tictactoe --run "$run" --steps 2 --set mode=deterministic \
    --set games_per_actor=8 --set search.sims=4 --set learner.batch=16 \
    --set learner.min_positions=32 --set arena.games=0 --set arena.positions=0 \
    --set net.kind=mlp --set net.mlp_hidden=16 --set net.mlp_layers=1 \
    --set backend=ref >/dev/null 2>&1; then
    fail "train: the tiny run failed"
    exit 1
fi

# start_server NAME ARGS...: starts zeroth serve in the background on a free
# port; sets URL and PID, or fails.
start_server() {
    local name=$1; shift
    "$BIN" serve "$@" >"$dir/$name.out" 2>&1 &
    PID=$!
    pids+=("$PID")
    URL=
    for _ in $(seq 1 200); do
        URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*/' "$dir/$name.out" 2>/dev/null)
        [ -n "$URL" ] && return 0
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.1
    done
    fail "$name: the server did not start: $(cat "$dir/$name.out")"
    return 1
}

# call METHOD PATH [BODY]: sets CODE and BODY (the reply, its newline kept in $dir/body).
call() {
    local method=$1 path=$2
    if [ $# -ge 3 ]; then
        CODE=$(curl -s -o "$dir/body" -w '%{http_code}' -X "$method" \
            -H 'Content-Type: application/json' --data-binary "$3" "$URL${path#/}")
    else
        CODE=$(curl -s -o "$dir/body" -w '%{http_code}' -X "$method" "$URL${path#/}")
    fi
    BODY=$(cat "$dir/body")
}

# expect CODE TEXT WHAT: the last reply had status CODE and holds TEXT; a
# 4xx/5xx reply is one line of {"error": ...}.
expect() {
    if [ "$CODE" != "$1" ] || ! printf '%s' "$BODY" | grep -qF -- "$2"; then
        fail "$3: status $CODE, body ${BODY:0:300} (wanted $1 and '$2')"
        return
    fi
    if [ "$CODE" -ge 400 ]; then
        if [ "$(wc -l <"$dir/body")" -ne 1 ] || [[ "$BODY" != '{"error": "'* ]]; then
            fail "$3: the error is not one line of JSON: $BODY"
        fi
    fi
}

alive() {
    call GET /api/info
    expect 200 '"game": "tictactoe"' "the server still serves after $1"
}

session_of() { printf '%s' "$BODY" | sed -n 's/.*"session": "\([0-9a-f]*\)".*/\1/p'; }
first_legal() { printf '%s' "$BODY" | grep -o '"legal": \[{"action": [0-9]*' | grep -o '[0-9]*$'; }

start_server main tictactoe --model "$run" --port 0 --max-sessions 2 --seed 5 \
    --set backend=ref || exit 1
grep -q "^serving tictactoe on http://127.0.0.1:" "$dir/main.out" ||
    fail "no 'serving' line: $(cat "$dir/main.out")"

# The page: HTML, self-contained.
headers=$(curl -s -D - -o "$dir/page" "$URL")
printf '%s' "$headers" | grep -qi '^content-type: text/html' || fail "the page's headers: $headers"
printf '%s' "$headers" | grep -qi "^content-security-policy: default-src 'none'" ||
    fail "the page has no content security policy: $headers"
grep -q '<svg' "$dir/page" && grep -q '/api/move' "$dir/page" || fail "the page lacks its board or API"
outside=$(grep -oE "(https?:)?//[A-Za-z0-9.-]+" "$dir/page" | grep -v '^http://www.w3.org$' | sort -u)
[ -z "$outside" ] || fail "the page refers outside itself: $outside"
grep -qiE '<(link|img|iframe)[^>]*(href|src)=|<script[^>]*src=|@import' "$dir/page" &&
    fail "the page loads a resource"
[ "$(curl -s -o /dev/null -w '%{http_code}' -I "$URL")" = 200 ] || fail "HEAD /"

call GET /api/info
expect 200 '"max_sessions": 2' "info"

# A whole game: the first legal move each turn until the end.
call POST /api/new '{"side": 0, "sims": 3}'
expect 200 '"your_turn": true' "new game"
s1=$(session_of)
[ ${#s1} -eq 16 ] || fail "session id '$s1'"
moves=0
while printf '%s' "$BODY" | grep -q '"over": false' && [ $moves -lt 9 ]; do
    a=$(first_legal)
    call POST /api/move "{\"session\": \"$s1\", \"action\": $a}"
    expect 200 '"session"' "move $a"
    moves=$((moves + 1))
done
expect 200 '"over": true' "the game ends"
printf '%s' "$BODY" | grep -qE '"result": "(win|loss|draw)"' || fail "no result: $BODY"
printf '%s' "$BODY" | grep -q '"legal": \[\]' || fail "moves offered after the end: $BODY"
humans=$(printf '%s' "$BODY" | grep -o '"by": "human"' | wc -l)
[ "$humans" -eq "$moves" ] || fail "$moves moves sent, $humans in the history"
call GET "/api/state?session=$s1"
expect 200 '"over": true' "state after the end"
call POST /api/move "{\"session\": \"$s1\", \"action\": 0}"
expect 409 "the game is over" "a move after the end"

# Bad requests, each answered, none fatal.
call POST /api/new '{"side": '
expect 400 "bad JSON" "truncated JSON"
call POST /api/new 'side=1'
expect 400 "bad JSON" "a form body"
call POST /api/new '{"colour": 1}'
expect 400 "unknown field 'colour'" "unknown field"
call POST /api/new '{"side": 3}'
expect 400 "'side' must be an integer in [0, 1]" "side out of range"
call POST /api/new '{"sims": 100000}'
expect 400 "'sims' must be an integer" "sims over --max-sims"
call POST /api/move '{"action": 1}'
expect 400 "no session given" "a move without a session"
call POST /api/move '{"session": "0000000000000000", "action": 1}'
expect 404 "unknown session" "an unknown session"
call GET /api/state
expect 400 "no session given" "state without a session"
call GET /api/new
expect 405 "takes POST" "GET of a POST path"
allow=$(curl -s -D - -o /dev/null "${URL}api/new" | tr -d '\r' | grep -i '^allow:')
[ "$allow" = "Allow: POST" ] || fail "405 without its Allow header: '$allow'"
call POST /api/state '{}'
expect 405 "takes GET" "POST of a GET path"
call GET /api/nothing
expect 404 "no such path '/api/nothing'" "an unknown path"
call GET '/../../etc/passwd'
[ "$CODE" = 404 ] || [ "$CODE" = 400 ] || fail "a path outside: $CODE"
big=$(head -c 5000 /dev/zero | tr '\0' ' ')
call POST /api/new "{$big}"
expect 413 "request body over 4096 bytes" "a body over the bound"
CODE=$(curl -s -o "$dir/body" -w '%{http_code}' -X POST -H 'Transfer-Encoding: chunked' \
    --data-binary "{$big}" "${URL}api/new")
BODY=$(cat "$dir/body")
expect 413 "request body over 4096 bytes" "a chunked body over the bound"
alive "bad requests"

# Illegal moves and undo in a fresh game.
call POST /api/new '{}'
s2=$(session_of)
call POST /api/move "{\"session\": \"$s2\", \"move\": \"4\"}"
expect 200 '"by": "agent"' "a move by its notation"
call POST /api/move "{\"session\": \"$s2\", \"move\": \"4\"}"
expect 409 "not legal here" "an occupied cell"
call POST /api/move "{\"session\": \"$s2\", \"move\": \"middle\"}"
expect 400 "tictactoe: expected a cell 0..8" "bad notation"
call POST /api/undo "{\"session\": \"$s2\"}"
expect 200 '"can_undo": false' "undo"
printf '%s' "$BODY" | grep -q '"history": \[\]' || fail "undo left a history: $BODY"
call POST /api/undo "{\"session\": \"$s2\"}"
expect 409 "nothing to undo" "undo with nothing to undo"

# The bound: two sessions are open (s1, s2); a third is refused until one closes.
call POST /api/new '{}'
expect 503 "too many games at once (2 open)" "past --max-sessions"
alive "a refusal"
call POST /api/close "{\"session\": \"$s1\"}"
expect 200 "\"closed\": \"$s1\"" "close"
call POST /api/new '{"side": 1}'
expect 200 '"by": "agent"' "a new game in the freed slot, the agent first"
s3=$(session_of)
call GET "/api/state?session=$s1"
expect 404 "unknown session" "a closed session"

# Two players at once, each playing their own game to the end.
play_out() {
    local sid=$1 log=$2 body code a
    body=$(curl -s -X POST --data-binary "{\"session\": \"$sid\", \"side\": 0}" "${URL}api/new")
    for _ in 1 2 3 4 5 6; do
        printf '%s' "$body" | grep -q '"over": true' && break
        a=$(printf '%s' "$body" | grep -o '"legal": \[{"action": [0-9]*' | grep -o '[0-9]*$')
        body=$(curl -s -X POST --data-binary "{\"session\": \"$sid\", \"action\": $a}" "${URL}api/move")
    done
    printf '%s' "$body" >"$log"
}
play_out "$s2" "$dir/p2" &
j2=$!
play_out "$s3" "$dir/p3" &
j3=$!
wait "$j2" "$j3"
for p in p2 p3; do
    grep -q '"over": true' "$dir/$p" || fail "concurrent player $p did not finish: $(cat "$dir/$p")"
done
grep -q "\"session\": \"$s2\"" "$dir/p2" && grep -q "\"session\": \"$s3\"" "$dir/p3" ||
    fail "the concurrent games got mixed up"
alive "concurrent games"

# SIGTERM: a clean stop.
kill -TERM "$PID"
wait "$PID"
rc=$?
[ "$rc" -eq 0 ] || fail "SIGTERM: exit status $rc"
grep -q "stopped by SIGTERM" "$dir/main.out" || fail "no stop line: $(cat "$dir/main.out")"

# Bad flags and a port in use: one-line errors.
expect_error "--port must be an integer in [0, 65535]" serve tictactoe --model "$run" --port 70000
expect_error "--max-sessions must be an integer in [1, 65536]" serve tictactoe --model "$run" \
    --max-sessions 0
expect_error "host 'localhost:x' is not a numeric IP address" serve tictactoe --model "$run" \
    --host localhost:x --set backend=ref
expect_error "plays 'tictactoe', not 'connect4'" serve connect4 --model "$run"
expect_error "unknown key 'colour'" serve tictactoe --model "$run" --set colour=red
start_server holder tictactoe --model "$run" --port 0 --set backend=ref || exit 1
port=${URL#http://127.0.0.1:}
port=${port%/}
expect_error "cannot listen on 127.0.0.1:$port: Address already in use" serve tictactoe \
    --model "$run" --port "$port" --set backend=ref
"$BIN" serve tictactoe >/dev/null 2>&1
[ $? -eq 2 ] || fail "serve without --model: not the usage status 2"

if [ "$fails" -ne 0 ]; then
    echo "$fails failures"
    exit 1
fi
echo "cli_serve: all checks passed"
