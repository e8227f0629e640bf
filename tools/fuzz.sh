#!/usr/bin/env bash
# fuzz.sh — fuzz the GGUF reader with libFuzzer + ASan + UBSan for a bounded time.
#
#   tools/fuzz.sh                      # 60 s
#   SW_FUZZ_SECONDS=600 tools/fuzz.sh  # longer
#   tools/fuzz.sh -jobs=4 -workers=4   # extra arguments go to libFuzzer
#
# Builds build-fuzz/ with clang (SPILLWAY_FUZZ=ON, SPILLWAY_SANITIZE=ON),
# copies the seed corpus (tests/fuzz/corpus) into fuzz-out/corpus so new
# inputs never land in the repository, and runs fuzz_gguf. Exits non-zero on
# any crash, leak, sanitizer report, timeout or out-of-memory; the failing
# input is left in fuzz-out/ (crash-*, leak-*, ...). Reproduce one with
#   build-fuzz/tests/fuzz_gguf fuzz-out/crash-...
# and add it to tests/fuzz/corpus once fixed, so CTest replays it.
# Needs clang and its libFuzzer runtime (Debian: clang + libclang-rt-14-dev
# or the libclang-rt-dev matching the clang version).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${SW_FUZZ_BUILD:-$root/build-fuzz}
out=${SW_FUZZ_OUT:-$root/fuzz-out}
seconds=${SW_FUZZ_SECONDS:-60}
cc=${CC:-clang}

if ! command -v "$cc" >/dev/null; then
    echo "fuzz.sh: $cc not found; install clang (and its libFuzzer runtime)" >&2
    exit 2
fi

CC=$cc cmake -S "$root" -B "$build" -DSPILLWAY_FUZZ=ON -DSPILLWAY_SANITIZE=ON \
    -DSPILLWAY_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_gguf -j"$(nproc 2>/dev/null || echo 2)"

mkdir -p "$out/corpus"
cp -n "$root"/tests/fuzz/corpus/* "$out/corpus/" 2>/dev/null || true

echo "fuzz.sh: fuzzing for ${seconds}s; crashes go to $out/"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rc=0
"$build/tests/fuzz_gguf" "$out/corpus" \
    -dict="$root/tests/fuzz/gguf.dict" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
    -artifact_prefix="$out/" -print_final_stats=1 "$@" || rc=$?

if [ "$rc" -ne 0 ]; then
    echo "fuzz.sh: FAILED (exit $rc); inputs that broke the reader:" >&2
    ls -1 "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* 2>/dev/null >&2 || true
    exit "$rc"
fi
echo "fuzz.sh: no crash in ${seconds}s"
