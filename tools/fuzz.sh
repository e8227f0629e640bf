#!/usr/bin/env bash
# fuzz.sh — fuzz the model readers with libFuzzer + ASan + UBSan for a bounded
# time: the GGUF reader, then the safetensors reader.
#
#   tools/fuzz.sh                                    # GGUF 60 s, safetensors 45 s
#   SW_FUZZ_SECONDS=600 SW_FUZZ_ST_SECONDS=600 tools/fuzz.sh   # longer
#   SW_FUZZ_SECONDS=0 tools/fuzz.sh                  # a 0 skips that reader
#   tools/fuzz.sh -jobs=4 -workers=4                 # extra arguments go to libFuzzer
#
# Builds build-fuzz/ with clang (SPILLWAY_FUZZ=ON, SPILLWAY_SANITIZE=ON),
# copies each seed corpus (tests/fuzz/corpus, tests/fuzz/corpus_safetensors)
# into fuzz-out/corpus and fuzz-out/corpus_safetensors so new inputs never
# land in the repository, and runs fuzz_gguf then fuzz_safetensors. Exits
# non-zero on any crash, leak, sanitizer report, timeout or out-of-memory in
# either; the failing input is left in fuzz-out/ (crash-*, leak-*, ... for
# GGUF; st-crash-*, st-leak-*, ... for safetensors). Reproduce one with
#   build-fuzz/tests/fuzz_gguf fuzz-out/crash-...
#   build-fuzz/tests/fuzz_safetensors fuzz-out/st-crash-...
# and add it to tests/fuzz/corpus (or corpus_safetensors) once fixed, so
# CTest replays it.
# Needs clang and its libFuzzer runtime (Debian: clang + libclang-rt-14-dev
# or the libclang-rt-dev matching the clang version).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${SW_FUZZ_BUILD:-$root/build-fuzz}
out=${SW_FUZZ_OUT:-$root/fuzz-out}
seconds=${SW_FUZZ_SECONDS:-60}
st_seconds=${SW_FUZZ_ST_SECONDS:-45}
cc=${CC:-clang}

if ! command -v "$cc" >/dev/null; then
    echo "fuzz.sh: $cc not found; install clang (and its libFuzzer runtime)" >&2
    exit 2
fi

CC=$cc cmake -S "$root" -B "$build" -DSPILLWAY_FUZZ=ON -DSPILLWAY_SANITIZE=ON \
    -DSPILLWAY_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_gguf fuzz_safetensors \
    -j"$(nproc 2>/dev/null || echo 2)"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# fuzz_one READER TARGET SEEDS CORPUS DICT PREFIX SECONDS [libFuzzer args...]
fuzz_one() {
    local reader=$1 target=$2 seeds=$3 corpus=$4 dict=$5 prefix=$6 secs=$7
    shift 7
    if [ "$secs" -eq 0 ]; then
        echo "fuzz.sh: skipping the $reader reader (0 s)"
        return 0
    fi
    mkdir -p "$corpus"
    cp -n "$seeds"/* "$corpus/" 2>/dev/null || true
    echo "fuzz.sh: fuzzing the $reader reader for ${secs}s; crashes go to $out/"
    local rc=0
    "$build/tests/$target" "$corpus" -dict="$dict" \
        -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
        -artifact_prefix="$prefix" -print_final_stats=1 "$@" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "fuzz.sh: $reader FAILED (exit $rc); inputs that broke the reader:" >&2
        ls -1 "$prefix"crash-* "$prefix"leak-* "$prefix"timeout-* "$prefix"oom-* \
            2>/dev/null >&2 || true
        return "$rc"
    fi
    echo "fuzz.sh: $reader: no crash in ${secs}s"
}

rc=0
fuzz_one GGUF fuzz_gguf "$root/tests/fuzz/corpus" "$out/corpus" \
    "$root/tests/fuzz/gguf.dict" "$out/" "$seconds" "$@" || rc=$?
st_rc=0
fuzz_one safetensors fuzz_safetensors "$root/tests/fuzz/corpus_safetensors" \
    "$out/corpus_safetensors" "$root/tests/fuzz/safetensors.dict" "$out/st-" \
    "$st_seconds" "$@" || st_rc=$?
if [ "$rc" -ne 0 ] || [ "$st_rc" -ne 0 ]; then
    exit $(( rc != 0 ? rc : st_rc ))
fi
echo "fuzz.sh: no crash"
