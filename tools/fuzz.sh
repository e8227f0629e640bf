#!/usr/bin/env bash
# fuzz.sh — fuzz every untrusted reader with libFuzzer + ASan + UBSan (and
# LeakSanitizer) for a bounded time each, one after the other:
#
#   harness          what it reads                               seconds (knob)
#   gguf             GGUF model files                            30 (SW_FUZZ_GGUF_SECONDS)
#   safetensors      safetensors files                           20 (SW_FUZZ_ST_SECONDS)
#   tokenizer_json   tokenizer.json (+ tokenizer_config.json,    15 (SW_FUZZ_TOKJSON_SECONDS)
#                    config.json): build, encode, decode
#   config_json      config.json of Gemma 1-4 → model_config     10 (SW_FUZZ_CONFIG_SECONDS)
#   codec            encoder and decoder on arbitrary bytes      15 (SW_FUZZ_CODEC_SECONDS)
#                    (Gemma 3's real tokenizer, Gemma 4's tiny)
#   serve_api        serve's request bodies, in-process          15 (SW_FUZZ_SERVE_SECONDS)
#
#   tools/fuzz.sh                                  # the defaults: 105 s of fuzzing, as CI
#   SW_FUZZ_SECONDS=600 tools/fuzz.sh              # every harness 600 s (its own knob wins)
#   SW_FUZZ_SECONDS=0 SW_FUZZ_CODEC_SECONDS=60 tools/fuzz.sh   # a 0 skips: the codec only
#   tools/fuzz.sh -jobs=4 -workers=4               # extra arguments go to libFuzzer
#
# Builds build-fuzz/ with clang (SPILLWAY_FUZZ=ON, SPILLWAY_SANITIZE=ON),
# copies each seed corpus (tests/fuzz/corpus for GGUF, tests/fuzz/corpus_NAME
# for the others) into fuzz-out/ (corpus, corpus_NAME) so new inputs never
# land in the repository, and runs each harness with its dictionary
# (tests/fuzz/*.dict). Exits non-zero on any crash, leak, sanitizer report,
# broken invariant, timeout or out-of-memory in any of them, after running
# the rest; the failing input is left in fuzz-out/ (crash-*, leak-*, ... for
# GGUF; st-crash-*, tokjson-crash-*, config-crash-*, codec-crash-* and
# serve-crash-* for the others). Reproduce one with
#   build-fuzz/tests/fuzz_gguf fuzz-out/crash-...
#   build-fuzz/tests/fuzz_codec fuzz-out/codec-crash-...
# and once fixed add it to the harness's seed corpus (regress_*), so CTest
# replays it (tests/fuzz.cmake). Seeds of the JSON and text harnesses are
# written by tests/fuzz/make_corpus_json.py.
# Needs clang and its libFuzzer runtime (Debian: clang + libclang-rt-14-dev
# or the libclang-rt-dev matching the clang version), and xz (the codec
# harness reads Gemma 3's tokenizer.json, which the build unpacks).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${SW_FUZZ_BUILD:-$root/build-fuzz}
out=${SW_FUZZ_OUT:-$root/fuzz-out}
all=${SW_FUZZ_SECONDS:-}
cc=${CC:-clang}

if ! command -v "$cc" >/dev/null; then
    echo "fuzz.sh: $cc not found; install clang (and its libFuzzer runtime)" >&2
    exit 2
fi

# seconds_for KNOB DEFAULT: the harness's own knob, else SW_FUZZ_SECONDS, else DEFAULT.
seconds_for() {
    local own=${!1:-}
    echo "${own:-${all:-$2}}"
}

CC=$cc cmake -S "$root" -B "$build" -DSPILLWAY_FUZZ=ON -DSPILLWAY_SANITIZE=ON \
    -DSPILLWAY_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_gguf fuzz_safetensors fuzz_tokenizer_json \
    fuzz_config_json fuzz_codec fuzz_serve_api -j"$(nproc 2>/dev/null || echo 2)"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# fuzz_one NAME TARGET SEEDS CORPUS DICT PREFIX SECONDS MAX_LEN [libFuzzer args...]
fuzz_one() {
    local name=$1 target=$2 seeds=$3 corpus=$4 dict=$5 prefix=$6 secs=$7 max_len=$8
    shift 8
    if [ "$secs" -eq 0 ]; then
        echo "fuzz.sh: skipping $name (0 s)"
        return 0
    fi
    mkdir -p "$corpus"
    cp -n "$seeds"/* "$corpus/" 2>/dev/null || true
    echo "fuzz.sh: fuzzing $name for ${secs}s; crashes go to $out/"
    local rc=0
    "$build/tests/$target" "$corpus" -dict="$dict" \
        -max_total_time="$secs" -rss_limit_mb=2048 -max_len="$max_len" -timeout=10 \
        -artifact_prefix="$prefix" -print_final_stats=1 "$@" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "fuzz.sh: $name FAILED (exit $rc); inputs that broke it:" >&2
        ls -1 "$prefix"crash-* "$prefix"leak-* "$prefix"timeout-* "$prefix"oom-* \
            2>/dev/null >&2 || true
        return "$rc"
    fi
    echo "fuzz.sh: $name: no crash in ${secs}s"
}

fz=$root/tests/fuzz
failed=()
run() { # run NAME KNOB DEFAULT_SECONDS MAX_LEN TARGET SEEDS CORPUS DICT PREFIX [args...]
    local name=$1 secs
    secs=$(seconds_for "$2" "$3")
    local max_len=$4 target=$5 seeds=$6 corpus=$7 dict=$8 prefix=$9
    shift 9
    fuzz_one "$name" "$target" "$seeds" "$corpus" "$dict" "$prefix" "$secs" "$max_len" \
        "$@" || failed+=("$name")
}
run gguf SW_FUZZ_GGUF_SECONDS 30 65536 fuzz_gguf "$fz/corpus" "$out/corpus" \
    "$fz/gguf.dict" "$out/" "$@"
run safetensors SW_FUZZ_ST_SECONDS 20 65536 fuzz_safetensors "$fz/corpus_safetensors" \
    "$out/corpus_safetensors" "$fz/safetensors.dict" "$out/st-" "$@"
run tokenizer_json SW_FUZZ_TOKJSON_SECONDS 15 4096 fuzz_tokenizer_json \
    "$fz/corpus_tokenizer_json" "$out/corpus_tokenizer_json" "$fz/tokenizer_json.dict" \
    "$out/tokjson-" "$@"
run config_json SW_FUZZ_CONFIG_SECONDS 10 4096 fuzz_config_json "$fz/corpus_config_json" \
    "$out/corpus_config_json" "$fz/config_json.dict" "$out/config-" "$@"
run codec SW_FUZZ_CODEC_SECONDS 15 1024 fuzz_codec "$fz/corpus_codec" "$out/corpus_codec" \
    "$fz/codec.dict" "$out/codec-" "$@"
run serve_api SW_FUZZ_SERVE_SECONDS 15 2048 fuzz_serve_api "$fz/corpus_serve_api" \
    "$out/corpus_serve_api" "$fz/serve_api.dict" "$out/serve-" "$@"

if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz.sh: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz.sh: no crash"
