#!/usr/bin/env bash
# The library as a user gets it: `cmake --install` into a fresh prefix, then
# the programs of examples/ compiled against the installed header and
# libraries only (pkg-config's zeroth.pc), linked to libzeroth.so and to
# libzeroth.a, run, and their output checked.
set -u
BIN=${ZT_BIN:-build/zeroth}
BUILD=$(cd "$(dirname "$BIN")" && pwd)
SRC=${ZT_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"

if ! cmake --install "$BUILD" --prefix "$TMP/prefix" >"$TMP/install.log" 2>&1; then
    cat "$TMP/install.log"
    echo "FAIL: cmake --install"
    exit 1
fi
PREFIX=$TMP/prefix
PC=$(dirname "$(find "$PREFIX" -name zeroth.pc | head -1)")
[ -f "$PREFIX/include/zeroth/zeroth.h" ] || fail "no installed header"
[ -n "$PC" ] || fail "no installed zeroth.pc"
export PKG_CONFIG_PATH=$PC
LIBDIR=$(pkg-config --variable=libdir zeroth)
ls "$LIBDIR"/libzeroth.so.* >/dev/null 2>&1 || fail "no libzeroth.so.N in $LIBDIR"
[ -f "$LIBDIR/libzeroth.a" ] || fail "no libzeroth.a in $LIBDIR"
# the installed header is self-contained: nothing from the source tree
grep -q '#include "' "$PREFIX/include/zeroth/zeroth.h" && fail "the public header includes project headers"

# A sanitized build's library needs the sanitizer runtime in the program too.
SAN=
if nm -D "$LIBDIR/libzeroth.so" 2>/dev/null | grep -q __asan_; then
    SAN="-fsanitize=address,undefined"
fi
CFLAGS="-std=c11 -Wall -Wextra -Werror $SAN $(pkg-config --cflags zeroth)"

for ex in play_random search; do
    # shared: -lzeroth finds libzeroth.so; the rpath lets it run from the prefix
    if ! cc $CFLAGS "$SRC/examples/$ex.c" -o "$TMP/$ex" $(pkg-config --libs zeroth) \
            -Wl,-rpath,"$LIBDIR" 2>"$TMP/cc.log"; then
        cat "$TMP/cc.log"; fail "$ex does not build against the installed shared library"
    fi
    # static: the archive and its dependencies from Libs.private
    if ! cc $CFLAGS "$SRC/examples/$ex.c" -o "$TMP/$ex-static" "$LIBDIR/libzeroth.a" \
            $(pkg-config --static --libs zeroth | sed 's/-lzeroth//') 2>"$TMP/cc.log"; then
        cat "$TMP/cc.log"; fail "$ex does not build against the installed static library"
    fi
done

# play_random: every game ends one way or another
for prog in play_random play_random-static; do
    [ -x "$TMP/$prog" ] || continue
    out=$("$TMP/$prog" connect4 200 2>&1) || fail "$prog failed: $out"
    if [[ "$out" =~ played\ 200\ games\ of\ connect4:\ ([0-9]+)\ won.*,\ ([0-9]+)\ drawn,\ ([0-9]+)\ won ]]; then
        sum=$((BASH_REMATCH[1] + BASH_REMATCH[2] + BASH_REMATCH[3]))
        [ "$sum" -eq 200 ] || fail "$prog: results add up to $sum, not 200: $out"
    else
        fail "$prog: unexpected output: $out"
    fi
    out=$("$TMP/$prog" backgammon 20 2>&1) || fail "$prog backgammon failed: $out"
    [[ "$out" == "played 20 games of backgammon"* ]] || fail "$prog backgammon: $out"
    out=$("$TMP/$prog" chess 2>&1) && fail "$prog accepted an unknown game"
    [[ "$out" == *"unknown game 'chess'"* ]] || fail "$prog chess: $out"
done

# search: X to move in XX.OO.... wins at cell 2, whichever library it links
for prog in search search-static; do
    [ -x "$TMP/$prog" ] || continue
    out=$("$TMP/$prog" "XX.OO.... X" 2>&1) || fail "$prog failed: $out"
    first=$(printf '%s\n' "$out" | head -1)
    [[ "$first" == "XX.OO.... X -> 2 "* ]] || fail "$prog: first move: $first"
    [[ "$out" == *"result: X wins" ]] || fail "$prog: $out"
done

if [ "$fails" -ne 0 ]; then
    echo "cli_example: $fails failures"
    exit 1
fi
echo "cli_example: all checks passed"
