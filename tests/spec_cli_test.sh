#!/usr/bin/env bash
# spec_cli_test.sh — speculative decoding (issue 36) through `spillway run`:
# greedy output with drafts is byte-identical to the output without, and
# the flags that cannot work are refused.
#   default SPILLWAY BACKEND...  the default model, six prompts (two on
#       pjrt): --draft-ngram at --draft-max 1, 3, 8, 16 and the model
#       drafting for itself (-md, its greedy drafts always right) at 2 and
#       8, on each BACKEND of cpu, sim (1G, resident), streamed (sim, 64M,
#       every layer streamed; the draft 1G, or streamed too) and pjrt; and
#       a tiny draft model refused (another vocabulary).
#   tiny SPILLWAY DATA_DIR  every tiny model (Gemma 1-4; sliding windows of
#       8 and Gemma 4's shared KV, so rewinds cross the window rings) on cpu,
#       sim and streamed sim, prompts longer than the window and -n 160:
#       n-grams, the model itself and another model with its vocabulary as
#       drafter, the Gemma 4 ones' assistants (tools/golden/make_tiny_assistant.py),
#       and -b 4 (3 drafts a verify at most).
#   refuse SPILLWAY DATA_DIR  a draft model with another vocabulary, both
#       drafters, --draft-max outside 1..16, an assistant for another target
#       or run on its own: usage errors (exit 2), one line.
# Drafting is seen in --report-json's "speculative" counters: drafted
# tokens (a draft model always drafts), and for a model drafting for
# itself greedily every draft kept.
set -uo pipefail
. "$(dirname "$0")/check.sh"
mode=${1:?usage: spec_cli_test.sh default|tiny|refuse SPILLWAY [BACKEND...|DATA_DIR]}
bin=${2:?usage: spec_cli_test.sh default|tiny|refuse SPILLWAY [BACKEND...|DATA_DIR]}
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# spec_count REPORT.json KEY: a "speculative" counter (0 if absent)
spec_count() {
    sed -n "s/.*\"speculative\":{[^}]*\"$2\":\([0-9]*\).*/\1/p" "$1" 2>/dev/null | grep . ||
        echo 0
}

# plain NAME OUT: the run without drafts ($run_flags: model, prompt,
# backend, workload) into OUT.
plain() {
    "$bin" run "${run_flags[@]}" --report-json "$tmp/rep.json" >"$2" 2>"$tmp/err"
    local rc=$?
    check "$1: plain run exits 0 ($rc: $(tail -1 "$tmp/err"))" [ $rc -eq 0 ]
    check "$1: plain run produced text" [ -s "$2" ]
    check "$1: plain run drafted nothing" [ "$(spec_count "$tmp/rep.json" drafted_tokens)" -eq 0 ]
}

# identity NAME PLAIN_OUT FLAGS...: the run with FLAGS (a drafter) exits 0
# with PLAIN_OUT's bytes; $verified gets 1 when it verified drafts, else
# 0; $drafted and $kept the counts.
identity() {
    local name=$1 plain_out=$2
    shift 2
    "$bin" run "${run_flags[@]}" "$@" --report-json "$tmp/rep.json" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    check "$name: exits 0 ($rc: $(tail -1 "$tmp/err"))" [ $rc -eq 0 ]
    if ! cmp -s "$plain_out" "$tmp/out"; then
        fail "$name: the output differs from the output without drafts"
        diff <(od -c "$plain_out") <(od -c "$tmp/out") | head -6 >&2
    fi
    drafted=$(spec_count "$tmp/rep.json" drafted_tokens)
    kept=$(spec_count "$tmp/rep.json" accepted_tokens)
    verified=0
    [ "$drafted" -gt 0 ] && verified=1
}

# model_identity NAME PLAIN_OUT FLAGS...: identity, and a draft model
# always gives drafts to verify.
model_identity() {
    identity "$@"
    check "$1: drafts were verified" [ $verified -eq 1 ]
}

# self_identity NAME PLAIN_OUT FLAGS...: model_identity for a model drafting
# for itself: its greedy drafts are the target's tokens, all kept.
self_identity() {
    model_identity "$@"
    check "$1: every draft kept ($kept of $drafted)" [ "$kept" -eq "$drafted" ]
}

# refused NAME PATTERN ARGS...: `spillway run ARGS` exits 2 with one line
# on stderr containing PATTERN, and prints no text.
refused() {
    local name=$1 pattern=$2
    shift 2
    "$bin" run "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    check "$name: exit 2 ($rc: $(tail -1 "$tmp/err"))" [ $rc -eq 2 ]
    check "$name: one line of error" [ "$(wc -l <"$tmp/err")" -eq 1 ]
    check "$name: the message" contains "$(cat "$tmp/err")" "$pattern"
    check "$name: no text" [ ! -s "$tmp/out" ]
}

# backend_flags NAME STREAMED_DEVICE_MEM: the backend's flags into $bflags,
# the draft model's budget into $dflags.
backend_flags() {
    dflags=()
    case $1 in
    cpu) bflags=(--backend cpu) ;;
    sim) bflags=(--backend sim --device-mem 1G) ;;
    streamed) bflags=(--backend sim --device-mem "$2" --place all=streamed)
              dflags=(--draft-device-mem 1G) ;;
    pjrt) bflags=(--backend pjrt --device-mem 1G) ;;
    *) echo "unknown backend $1" >&2; exit 2 ;;
    esac
}

case $mode in
default)
    prompts=(
        "Rewrite this sentence in the past tense: The cat sits on the mat and the dog sleeps on the rug."
        "Repeat the list exactly: apple, banana, cherry, apple, banana, cherry, apple, banana,"
        $'def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n# The same function, iterative:\ndef fib_iter(n):'
        "The capital of France is"
        "Once upon a time, in a small village by the sea,"
        "Explain in one paragraph why the sky is blue."
    )
    # the path `spillway fetch` puts it at, as its help prints it
    model=$("$bin" fetch --help 2>&1 | grep -m1 -o '/[^ ]*\.gguf')
    [ -f "$model" ] || model=${XDG_CACHE_HOME:-$HOME/.cache}/spillway/gemma-3-270m-q4_k_m.gguf
    for be in "$@"; do
        backend_flags "$be" 64M
        n_prompts=${#prompts[@]}
        ngram_max=(1 3 8 16)
        model_max=(2 8)
        if [ "$be" = pjrt ]; then # XLA compiles a program per shape: slow
            n_prompts=2
            ngram_max=(3 16)
            model_max=(2)
        fi
        ngram_verified=0
        for ((i = 0; i < n_prompts; i++)); do
            run_flags=(-p "${prompts[$i]}" -n 48 --temp 0 -t 2 -c 512 "${bflags[@]}")
            name="$be, prompt $i"
            plain "$name" "$tmp/plain"
            for k in "${ngram_max[@]}"; do
                identity "$name, --draft-ngram --draft-max $k" "$tmp/plain" --draft-ngram --draft-max "$k"
                ngram_verified=$((ngram_verified + verified))
            done
            for k in "${model_max[@]}"; do
                self_identity "$name, -md itself --draft-max $k" "$tmp/plain" -md "$model" "${dflags[@]}" --draft-max "$k"
            done
            if [ "$be" = streamed ] && [ "$i" -eq 0 ]; then # the draft streamed too
                self_identity "$name, -md itself streamed too --draft-max 4" "$tmp/plain" -md "$model" --draft-max 4
            fi
        done
        check "$be: n-gram drafts were verified ($ngram_verified runs)" [ $ngram_verified -gt 0 ]
    done
    if [ $# -gt 0 ] && [ -n "${SW_TEST_DATA:-}" ] && [ -f "$SW_TEST_DATA/tiny/gemma3.gguf" ]; then
        backend_flags "$1" 64M
        # -c 256: the tiny model's trained context, so that its vocabulary is what fails
        refused "$1, a tiny draft model for the default model" vocabulary \
            -p "Hello" -n 4 --temp 0 -t 2 -c 256 "${bflags[@]}" -md "$SW_TEST_DATA/tiny/gemma3.gguf"
    fi
    ;;
tiny)
    data=${1:?usage: spec_cli_test.sh tiny SPILLWAY DATA_DIR}
    prompts=(
        "Once upon a time there was a little fox who lived in a forest. The fox liked to run. Once upon a time"
        "one two three four five six seven eight nine ten, one two three four five six seven eight nine ten, one two"
    )
    # another model of the same vocabulary (Gemma 1-3 share theirs, Gemma 4's theirs)
    declare -A other=([gemma1]=gemma2 [gemma2]=gemma3 [gemma3]=gemma1
                      [gemma4-kv]=gemma4-ple [gemma4-ple]=gemma4-moe [gemma4-moe]=gemma4-kv)
    for m in gemma1 gemma2 gemma3 gemma4-kv gemma4-ple gemma4-moe; do
        mp=$data/tiny/$m.gguf
        for be in cpu sim streamed; do
            backend_flags "$be" 1M
            ngram_verified=0
            for b in 64 4; do
                ks=(1 3 8 16)
                [ "$b" = 4 ] && ks=(16)
                for ((i = 0; i < ${#prompts[@]}; i++)); do
                    run_flags=(-m "$mp" -p "${prompts[$i]}" -n 160 --temp 0 -t 2 -c 256 -b "$b" "${bflags[@]}")
                    name="$m, $be, -b $b, prompt $i"
                    plain "$name" "$tmp/plain"
                    for k in "${ks[@]}"; do
                        identity "$name, --draft-ngram --draft-max $k" "$tmp/plain" --draft-ngram --draft-max "$k"
                        ngram_verified=$((ngram_verified + verified))
                    done
                    for k in 2 16; do
                        self_identity "$name, -md itself --draft-max $k" "$tmp/plain" -md "$mp" "${dflags[@]}" --draft-max "$k"
                    done
                    model_identity "$name, -md ${other[$m]} --draft-max 5" "$tmp/plain" \
                        -md "$data/tiny/${other[$m]}.gguf" "${dflags[@]}" --draft-max 5
                    if [ -d "$data/tiny/$m-assistant-hf" ]; then # its Gemma 4 assistant
                        for k in 3 16; do
                            model_identity "$name, -md its assistant --draft-max $k" "$tmp/plain" \
                                -md "$data/tiny/$m-assistant-hf" --draft-max "$k"
                        done
                    fi
                done
            done
            check "$m, $be: n-gram drafts were verified ($ngram_verified runs)" [ $ngram_verified -gt 0 ]
        done
    done
    ;;
refuse)
    data=${1:?usage: spec_cli_test.sh refuse SPILLWAY DATA_DIR}
    t=$data/tiny
    base=(-p "Hello there" -n 4 --temp 0 -t 2 -c 256)
    refused "Gemma 4's vocabulary drafting for Gemma 3's" vocabulary -m "$t/gemma3.gguf" "${base[@]}" -md "$t/gemma4-kv.gguf"
    refused "Gemma 3's vocabulary drafting for Gemma 4's" vocabulary -m "$t/gemma4-ple.gguf" "${base[@]}" -md "$t/gemma3.gguf"
    refused "another vocabulary on sim" vocabulary -m "$t/gemma3.gguf" "${base[@]}" --backend sim --device-mem 1G -md "$t/gemma4-moe.gguf"
    refused "--draft-ngram with --draft-model" "draft" -m "$t/gemma3.gguf" "${base[@]}" --draft-ngram -md "$t/gemma3.gguf"
    refused "--draft-model with --draft-ngram" "draft" -m "$t/gemma3.gguf" "${base[@]}" -md "$t/gemma3.gguf" --draft-ngram
    refused "an assistant for another target" "not its assistant" -m "$t/gemma4-kv.gguf" "${base[@]}" -md "$t/gemma4-ple-assistant-hf"
    refused "an assistant for a Gemma 3 target" "Gemma 4 target" -m "$t/gemma3.gguf" "${base[@]}" -md "$t/gemma4-kv-assistant-hf"
    refused "an assistant with --draft-device-mem" "--draft-device-mem" -m "$t/gemma4-kv.gguf" "${base[@]}" --backend sim --device-mem 1G -md "$t/gemma4-kv-assistant-hf" --draft-device-mem 1M
    # not a usage error: a model Spillway does not run on its own (exit 5, as
    # an unsupported architecture)
    "$bin" run -m "$t/gemma4-kv-assistant-hf" "${base[@]}" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    check "an assistant run on its own: exit 5 ($rc)" [ $rc -eq 5 ]
    check "an assistant run on its own: the message" contains "$(cat "$tmp/err")" "--draft-model"
    refused "--draft-max 0" "--draft-max" -m "$t/gemma3.gguf" "${base[@]}" --draft-ngram --draft-max 0
    refused "--draft-max 17" "--draft-max" -m "$t/gemma3.gguf" "${base[@]}" --draft-ngram --draft-max 17
    refused "--draft-max abc" "--draft-max" -m "$t/gemma3.gguf" "${base[@]}" --draft-ngram --draft-max abc
    refused "--draft-max with no value" "--draft-max" -m "$t/gemma3.gguf" "${base[@]}" --draft-ngram --draft-max
    "$bin" run -m "$t/gemma3.gguf" "${base[@]}" -md "$tmp/missing.gguf" >/dev/null 2>"$tmp/err"
    rc=$?
    check "a missing draft model is an I/O error ($rc: $(tail -1 "$tmp/err"))" [ $rc -eq 3 ]
    "$bin" run -m "$t/gemma3.gguf" "${base[@]}" -md "$t/gemma2.gguf" >/dev/null 2>"$tmp/err"
    rc=$?
    check "the same vocabulary from another model is accepted ($rc: $(tail -1 "$tmp/err"))" [ $rc -eq 0 ]
    ;;
*)
    echo "usage: spec_cli_test.sh default|tiny|refuse SPILLWAY [BACKEND...|DATA_DIR]" >&2
    exit 2
    ;;
esac
check_summary "spec_cli_test $mode $*"
