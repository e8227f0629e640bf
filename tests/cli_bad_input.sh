#!/usr/bin/env bash
# cli_bad_input.sh — `spillway info -m FILE` on files that are not models.
#
#   bash tests/cli_bad_input.sh path/to/spillway
#
# Each case must exit non-zero but below 128 (no crash by signal), print
# exactly one line on stderr ("spillway: error: ...") and nothing on stdout.
# The bad files are written into a temporary folder removed on exit.
set -u

bin=${1:?usage: cli_bad_input.sh SPILLWAY_BINARY}
if [ ! -x "$bin" ]; then
    echo "cli_bad_input: no executable at $bin (build the spillway target first)"
    exit 1
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/sw_cli_bad.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

printf 'GGML\003\000\000\000' >"$dir/wrong_magic.gguf"
printf 'GGUF\003\000\000\000\001\000' >"$dir/truncated_header.gguf"
printf 'GGUF\001\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' \
    >"$dir/version1.gguf"
printf 'GGUF\000\000\000\003' >"$dir/big_endian.gguf"
# A header claiming 2^64-1 metadata entries.
printf 'GGUF\003\000\000\000\000\000\000\000\000\000\000\000\377\377\377\377\377\377\377\377' \
    >"$dir/absurd_count.gguf"
: >"$dir/empty.gguf"
mkdir "$dir/a_directory"

failures=0
check() {
    local name=$1 path=$2 rc out err lines
    "$bin" info -m "$path" >"$dir/stdout" 2>"$dir/stderr"
    rc=$?
    out=$(cat "$dir/stdout")
    err=$(cat "$dir/stderr")
    lines=$(wc -l <"$dir/stderr")
    local why=""
    if [ "$rc" -eq 0 ]; then why="exit status 0"
    elif [ "$rc" -ge 128 ]; then why="killed by a signal (exit $rc)"
    elif [ "$lines" -ne 1 ]; then why="$lines lines on stderr"
    elif [ -n "$out" ]; then why="output on stdout"
    elif [[ "$err" != "spillway: error: "* ]]; then why="stderr lacks 'spillway: error: '"
    fi
    if [ -n "$why" ]; then
        echo "FAIL $name: $why"
        sed 's/^/  stderr: /' "$dir/stderr" | head -5
        sed 's/^/  stdout: /' "$dir/stdout" | head -5
        failures=$((failures + 1))
    else
        echo "ok   $name (exit $rc): $err"
    fi
}

check wrong_magic "$dir/wrong_magic.gguf"
check truncated_header "$dir/truncated_header.gguf"
check version1 "$dir/version1.gguf"
check big_endian "$dir/big_endian.gguf"
check absurd_count "$dir/absurd_count.gguf"
check empty_file "$dir/empty.gguf"
check directory "$dir/a_directory"
check missing_path "$dir/does_not_exist.gguf"
check dev_null /dev/null

if [ "$failures" -ne 0 ]; then
    echo "cli_bad_input: $failures case(s) failed"
    exit 1
fi
echo "cli_bad_input: all cases passed"
