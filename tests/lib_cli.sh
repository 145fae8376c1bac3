# Helpers the cli_*.sh tests source (not a test itself: the glob is
# cli_*.sh). The sourcing script sets BIN, the zeroth under test, and
# fails=0; it ends by exiting non-zero when fails is not 0.

# fail MESSAGE...: one failure, said on stdout.
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

# expect_error WANT ARGS...: `zeroth ARGS...` (stdin empty, at most 60 s)
# must exit non-zero with exactly one line on stderr that holds WANT, a
# fixed string, in any case. Its stdout is not judged.
expect_error() {
    local want=$1 err rc lines
    shift
    err=$(timeout 60 "$BIN" "$@" 2>&1 >/dev/null </dev/null); rc=$?
    lines=$(printf '%s' "$err" | grep -c '')
    if [ "$rc" -eq 0 ] || [ "$lines" -ne 1 ] || ! printf '%s' "$err" | grep -qiF -- "$want"; then
        fail "zeroth ${*:1:6} ... -> rc=$rc, stderr ($lines lines): ${err:0:300} (wanted '${want:0:100}')"
    fi
}
